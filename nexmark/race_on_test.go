//go:build race

package nexmark_test

const raceEnabled = true
