//go:build !race

package expr

// raceEnabled: the test binary has the race detector, which makes the
// long randomized tests several times slower (they run fewer cases).
const raceEnabled = false
