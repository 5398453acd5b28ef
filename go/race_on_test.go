//go:build race

package esbulk_test

// raceEnabled: the race detector's shadow memory grows with every
// goroutine and synchronisation it sees, so RSS says nothing about leaks
// under -race (tests/go.test runs the leak tests once more without it).
const raceEnabled = true
