//go:build !race

package cep

const raceEnabled = false
