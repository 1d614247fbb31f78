//go:build race

package cep

// raceEnabled: tests that are slow under the race detector shrink.
const raceEnabled = true
