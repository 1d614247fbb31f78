//go:build race

package weir_test

// raceEnabled: tests that are slow under the race detector shrink.
const raceEnabled = true
