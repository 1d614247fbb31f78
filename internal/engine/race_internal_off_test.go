//go:build !race

package engine

// raceEnabled: the race detector's instrumentation allocates, so
// allocation counts are only checked without it.
const raceEnabled = false
