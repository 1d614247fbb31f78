//go:build race

package crashtest

// Race reports whether this binary was built with the race detector.
const Race = true
