// Package harness holds what the whole-process benchmark programs under
// bench/ share: a free loopback address for a server to start on, a wait
// for it to answer, and the peak memory of the process measured.
package harness

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// FreeAddr returns a loopback address no one listens on now.
func FreeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// WaitOK polls url until it answers 200, for up to ten seconds, and exits
// the program if it never does.
func WaitOK(url string) {
	for range 100 {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatalf("%s did not answer 200", url)
}

// PeakRSS returns a process's peak resident set size in bytes (Linux's
// VmHWM), or 0 when it cannot be read.
func PeakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// Ms is d in milliseconds, for printing.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
