//go:build race

package sql_test

const raceEnabled = true
