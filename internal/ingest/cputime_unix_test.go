//go:build unix

package ingest

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used.
// Benchmarks report it beside wall time because the machines they run on
// are shared: wall time grows with other load, CPU time much less.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
