//go:build !linux

package engine

import "time"

// threadCPU is not measured on this system (threadcpu_linux_test.go).
func threadCPU() time.Duration { return 0 }
