//go:build race

package textsearch

// underRace makes the tests that run SQLite many times smaller: the race
// detector slows modernc's SQLite about tenfold.
const underRace = true
