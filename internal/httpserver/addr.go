package httpserver

import (
	"errors"
	"fmt"
	"net"
)

// ErrNotLoopback is wrapped by CheckAddr's error for an address other
// machines can reach.
var ErrNotLoopback = errors.New("accepts connections from other machines")

// Loopback reports whether a listen address (host:port) only accepts
// connections from this machine: a loopback IP or localhost. An empty
// host (":8000") listens everywhere.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAddr is the address policy of the servers: a loopback address is
// always allowed, another only when the command was told so (remote). The
// error names addr and wraps ErrNotLoopback; the caller adds how to allow
// it.
func CheckAddr(addr string, remote bool) error {
	if remote || Loopback(addr) {
		return nil
	}
	return fmt.Errorf("%s %w", addr, ErrNotLoopback)
}
