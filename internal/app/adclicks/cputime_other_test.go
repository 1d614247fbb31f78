//go:build !unix

package adclicks

import "time"

// cpuTime is not measured here: cpu-ns/event reads 0.
func cpuTime() time.Duration { return 0 }
