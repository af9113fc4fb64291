//go:build !race

package episodic_test

// raceEnabled says the race detector is on: the property and process
// tests run fewer cases, the SQLite driver being many times slower then.
const raceEnabled = false
