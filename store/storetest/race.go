//go:build race

package storetest

// raceEnabled says the race detector is on: the pipeline tests then check
// fewer pipelines, each as thoroughly.
const raceEnabled = true
