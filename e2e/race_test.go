//go:build race

package e2e

// raceEnabled builds the binaries under test with -race too.
const raceEnabled = true
