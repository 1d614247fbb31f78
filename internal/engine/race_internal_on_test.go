//go:build race

package weir

// raceEnabled: the race detector's instrumentation allocates, so
// allocation counts are only checked without it.
const raceEnabled = true
