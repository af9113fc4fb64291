// Package httpserver runs ctxkit's long-running HTTP servers (serve, guard,
// wrap --http, the OAuth redirect listener) with one set of limits and one
// shutdown.
//
// What a client may hold, and for how long:
//
//   - Request headers must arrive within ReadHeader (10 s), at most
//     MaxHeaderBytes (64 KiB).
//   - A request body must arrive at an average rate of BodyRate
//     (128 KiB/s) after a start of BodyWait (30 s): its reads may last
//     BodyWait plus one second per BodyRate bytes received so far, counted
//     from the handler's first read (so a handler may queue a request
//     before reading it). The guard's largest body, 256 MiB, may take
//     about 35 minutes. A body the handler leaves unread (a request
//     refused before authentication) gets BodyWait for the server to
//     discard it. Past the bound the read fails and the connection is
//     closed (over HTTP/2, the stream).
//   - An idle keep-alive connection is closed after Idle (2 min).
//   - Responses have no time limit: an MCP event stream or an LLM token
//     stream may last as long as the handler writes.
//
// Why not http.Server.ReadTimeout: it is the connection's read deadline for
// the whole request, left in force while the handler runs. Once the body is
// read net/http keeps a read pending on the connection to notice a client
// that leaves, and that read failing at the deadline cancels the request's
// context: a stream would be cut after ReadTimeout. Without any read
// deadline a body that never arrives blocks forever: in the handler, or,
// when the handler returned without reading it, in the server, which reads
// what is left (up to 256 KiB) to reuse the connection. So the bound here
// is a read deadline set per request through http.ResponseController while
// the body is read, moved on as bytes arrive; at the body's end net/http
// clears it as it starts its own read ahead. Requests without a body get
// no deadline.
//
// Run stops gracefully: it stops accepting connections, lets requests in
// flight finish for up to Grace, then cancels the requests still running
// and closes their connections, and returns only once every handler has
// returned, so a caller may close what the handlers use (stores) after it.
package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bound what a client may hold; a zero field takes its default
// (see the package doc).
type Limits struct {
	// ReadHeader is how long a request's headers may take to arrive.
	ReadHeader time.Duration
	// BodyWait is how long a request body may take to arrive on top of
	// what BodyRate allows.
	BodyWait time.Duration
	// BodyRate is the lowest average rate, in bytes per second, at which
	// a request body is received.
	BodyRate int64
	// Idle is how long a keep-alive connection may wait for its next
	// request.
	Idle time.Duration
	// MaxHeaderBytes bounds the size of a request's headers.
	MaxHeaderBytes int
}

// The defaults of Limits.
const (
	DefaultReadHeader     = 10 * time.Second
	DefaultBodyWait       = 30 * time.Second
	DefaultBodyRate       = 128 << 10
	DefaultIdle           = 2 * time.Minute
	DefaultMaxHeaderBytes = 64 << 10
)

// withDefaults returns l with its zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	if l.ReadHeader <= 0 {
		l.ReadHeader = DefaultReadHeader
	}
	if l.BodyWait <= 0 {
		l.BodyWait = DefaultBodyWait
	}
	if l.BodyRate <= 0 {
		l.BodyRate = DefaultBodyRate
	}
	if l.Idle <= 0 {
		l.Idle = DefaultIdle
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return l
}

// Options configure a Server.
type Options struct {
	// Addr is the address to listen on (host:port; port 0 picks one).
	Addr string
	// Handler serves the requests.
	Handler http.Handler
	// Logger receives the server's errors and shutdown; nil discards them.
	Logger *slog.Logger
	// TLSCert and TLSKey are PEM files; when set the server speaks HTTPS
	// (HTTP/2 included).
	TLSCert, TLSKey string
	// Grace is how long requests in flight may take to finish at
	// shutdown before they are cancelled (0: cancelled at once).
	Grace time.Duration
	// Limits bound what clients may hold (zero fields: the defaults).
	Limits Limits
}

// forcedWait is how long Run waits for handlers to return once their
// requests are cancelled and their connections closed.
const forcedWait = 5 * time.Second

// Server is an HTTP server listening on its address; Run serves it.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	tls   bool
	grace time.Duration
	log   *slog.Logger

	// running counts the handlers that have not returned; active is
	// the same count, for the log.
	running sync.WaitGroup
	active  atomic.Int64
}

// Listen checks opts, loads the TLS certificate if any, and listens on
// opts.Addr. Run must follow: it serves and closes the listener.
func Listen(opts Options) (*Server, error) {
	if opts.Handler == nil {
		return nil, errors.New("httpserver: no handler")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lim := opts.Limits.withDefaults()
	s := &Server{grace: max(opts.Grace, 0), log: log}
	s.srv = &http.Server{
		Handler:           &handler{next: opts.Handler, s: s, wait: lim.BodyWait, rate: lim.BodyRate},
		ReadHeaderTimeout: lim.ReadHeader,
		IdleTimeout:       lim.Idle,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if opts.TLSCert != "" || opts.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("load TLS certificate: %w", err)
		}
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		s.tls = true
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	s.ln = ln
	return s, nil
}

// Addr is the address listened on (with the port chosen for port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the server's base URL: http:// or https:// and Addr.
func (s *Server) URL() string {
	if s.tls {
		return "https://" + s.Addr().String()
	}
	return "http://" + s.Addr().String()
}

// Run serves until ctx ends or serving fails, then stops as the package
// doc says. Requests' contexts do not end with ctx, only when their
// grace is over. It returns nil after a shutdown, even one that had to
// cancel requests, and an error when serving failed or handlers were
// still running after being cancelled.
func (s *Server) Run(ctx context.Context) error {
	base, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	s.srv.BaseContext = func(net.Listener) context.Context { return base }
	served := make(chan error, 1)
	go func() {
		if s.tls {
			served <- s.srv.ServeTLS(s.ln, "", "")
		} else {
			served <- s.srv.Serve(s.ln)
		}
	}()
	select {
	case err := <-served:
		// Serving failed; the requests it accepted still get their grace.
		return errors.Join(fmt.Errorf("serve %s: %w", s.Addr(), err), s.stop(ctx, cancelRequests))
	case <-ctx.Done():
	}
	err := s.stop(ctx, cancelRequests)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(fmt.Errorf("serve %s: %w", s.Addr(), serr), err)
	}
	return err
}

// stop shuts the server down: in-flight requests get the grace period,
// then are cancelled; it returns once every handler has returned, or
// forcedWait after they were cancelled.
func (s *Server) stop(ctx context.Context, cancelRequests context.CancelFunc) error {
	if n := s.active.Load(); n > 0 {
		s.log.Info("shutting down: letting requests in flight finish", "addr", s.Addr().String(), "requests", n, "grace", s.grace)
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace)
	defer cancel()
	if err := s.srv.Shutdown(gctx); err != nil {
		s.log.Warn("grace period over: cancelling the requests still running", "addr", s.Addr().String(), "requests", s.active.Load(), "err", err)
		cancelRequests()
		_ = s.srv.Close()
	}
	returned := make(chan struct{})
	go func() {
		s.running.Wait()
		close(returned)
	}()
	t := time.NewTimer(forcedWait)
	defer t.Stop()
	select {
	case <-returned:
		return nil
	case <-t.C:
		return fmt.Errorf("shut down %s: %d requests still running %v after they were cancelled", s.Addr(), s.active.Load(), forcedWait)
	}
}

// handler counts the running handlers and bounds how long request bodies
// take to arrive.
type handler struct {
	next http.Handler
	s    *Server
	wait time.Duration
	rate int64
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.s.running.Add(1)
	h.s.active.Add(1)
	defer func() {
		h.s.active.Add(-1)
		h.s.running.Done()
	}()
	if r.Body == nil || r.Body == http.NoBody {
		// No deadline: net/http is already reading ahead to notice a
		// client that leaves, and a deadline would end the request.
		h.next.ServeHTTP(w, r)
		return
	}
	b := &body{ReadCloser: r.Body, rc: http.NewResponseController(w), wait: h.wait, rate: h.rate}
	// A copy: net/http looks at its own request's body after the
	// handler to decide whether the connection can be reused.
	r = r.WithContext(r.Context())
	r.Body = b
	defer b.handlerDone()
	h.next.ServeHTTP(w, r)
}
