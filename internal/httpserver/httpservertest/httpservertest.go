// Package httpservertest helps test servers run by httpserver: whether
// they close a connection whose request body stops coming, and when they
// stop accepting connections.
package httpservertest

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// Patience is how long ReadUntilClosed waits for the server: far more
// than any bound a test configures, so that only a missing bound makes
// it fail.
const Patience = time.Minute

// ReadUntilClosed sends raw (an HTTP/1.1 request, its body typically cut
// short) on a new connection to addr and returns what the server answers
// until it closes the connection; it fails t if the connection is still
// open after Patience.
func ReadUntilClosed(t testing.TB, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(Patience)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("%s: the connection is still open after %v (read %q)", addr, Patience, got)
	}
	return string(got)
}

// WaitRefused waits until nothing accepts connections on addr (a server
// shutting down closes its listener first); it fails t after Patience.
func WaitRefused(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s still accepts connections after %v", addr, Patience)
}
