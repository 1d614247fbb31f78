//go:build race

package weir

// raceDetector: the race detector's instrumentation allocates, so
// allocation counts are only checked without it.
const raceDetector = true
