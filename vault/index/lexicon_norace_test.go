//go:build !race

package index_test

// underRace makes the tests that run SQLite many times smaller: the race
// detector slows modernc's SQLite about tenfold.
const underRace = false
