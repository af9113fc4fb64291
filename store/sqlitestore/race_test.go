//go:build race

package sqlitestore

// raceEnabled says the race detector is on: the differential tests check
// a rotating share of their cases then, the SQLite driver being many
// times slower under it.
const raceEnabled = true
