//go:build !race

package esbulk_test

const raceEnabled = false
