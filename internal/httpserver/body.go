package httpserver

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// body is a request body whose reads are bounded by the connection's read
// deadline (see the package doc). Reads may come from another goroutine
// than the handler's (a reverse proxy's transport), hence the mutex.
type body struct {
	io.ReadCloser
	rc   *http.ResponseController
	wait time.Duration
	rate int64

	mu    sync.Mutex
	start time.Time // the first read or close; zero before
	n     int64     // bytes received
	// ended is set once a read returned an error, io.EOF or a failure
	// (whose deadline stays, so the server gives up on the rest at once).
	ended bool
}

// Read reads under the deadline of bodyDeadline. At the body's end
// net/http clears it as it starts reading ahead on the connection.
func (b *body) Read(p []byte) (int, error) {
	b.arm()
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(n)
	if err != nil {
		b.ended = true
	}
	return n, err
}

// Close bounds the read of the unread rest that closing a server request's
// body may do.
func (b *body) Close() error {
	b.arm()
	return b.ReadCloser.Close()
}

// handlerDone gives the server wait to discard the rest of a body the
// handler did not read to its end.
func (b *body) handlerDone() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		_ = b.rc.SetReadDeadline(time.Now().Add(b.wait))
	}
}

// arm sets the read deadline for the bytes received so far, unless the
// body has ended.
func (b *body) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	if b.start.IsZero() {
		b.start = time.Now()
	}
	_ = b.rc.SetReadDeadline(bodyDeadline(b.start, b.n, b.wait, b.rate))
}

// bodyDeadline is when reading a body started at start, of which n bytes
// were received, must be done: wait, plus one second per rate bytes.
func bodyDeadline(start time.Time, n int64, wait time.Duration, rate int64) time.Time {
	credit := time.Duration(n/rate)*time.Second + time.Duration(n%rate)*time.Second/time.Duration(rate)
	return start.Add(wait + credit)
}
