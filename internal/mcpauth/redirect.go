package mcpauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/ctxkit/ctxkit/internal/httpserver"
)

// callbackPath is the path of the loopback redirect URI.
const callbackPath = "/callback"

// ErrDenied is wrapped by the error of a flow the authorization server ended
// with an error response (RFC 6749 §4.1.2.1), typically access_denied when
// the user refused.
var ErrDenied = errors.New("authorization refused")

// ErrNoOAuth is wrapped by the error of a flow against a server that
// answered 401 or 403 but offers no way to authorize with OAuth: no
// metadata, and no registration at the default endpoint.
var ErrNoOAuth = errors.New("server does not offer OAuth")

// redirectURI is the loopback redirect URI on port (RFC 8252 §7.3).
func redirectURI(port int) string {
	return "http://127.0.0.1:" + strconv.Itoa(port) + callbackPath
}

// redirectPort returns the port of a loopback redirect URI written by
// redirectURI, or false if uri is not one.
func redirectPort(uri string) (int, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Path != callbackPath {
		return 0, false
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p <= 0 || p > 65535 {
		return 0, false
	}
	return p, true
}

// callbackServer receives the authorization response on the loopback
// interface. It accepts exactly one response carrying the expected state;
// anything else is answered with 400 and ignored.
type callbackServer struct {
	srv     *httpserver.Server
	stop    context.CancelFunc // ends srv.Run
	stopped chan struct{}      // closed when srv.Run has returned
	results chan callbackResult

	mu    sync.Mutex
	state string // expected state; "" once a response has been accepted
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// callbackGrace is how long close lets a browser's request in flight
// finish (a connection a browser opened ahead, with no request yet, holds
// close for as long).
const callbackGrace = time.Second

// listenCallback binds 127.0.0.1:port (0 = any free port) and serves the
// redirect endpoint until close or the end of ctx.
func listenCallback(ctx context.Context, port int, log *slog.Logger) (*callbackServer, error) {
	c := &callbackServer{results: make(chan callbackResult, 1), stopped: make(chan struct{})}
	srv, err := httpserver.Listen(httpserver.Options{
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Handler: http.HandlerFunc(c.serve),
		Logger:  log,
		Grace:   callbackGrace,
	})
	if err != nil {
		return nil, fmt.Errorf("listen for the OAuth redirect on 127.0.0.1:%d: %w", port, err)
	}
	c.srv = srv
	ctx, c.stop = context.WithCancel(ctx)
	go func() {
		defer close(c.stopped)
		if err := srv.Run(ctx); err != nil {
			log.Warn("oauth: redirect listener", "err", err)
		}
	}()
	return c, nil
}

// port is the bound port.
func (c *callbackServer) port() int { return c.srv.Addr().(*net.TCPAddr).Port }

// expect sets the state the next response must carry.
func (c *callbackServer) expect(state string) {
	c.mu.Lock()
	c.state = state
	c.mu.Unlock()
}

// close stops the listener and returns once its connections are closed.
func (c *callbackServer) close() {
	c.stop()
	<-c.stopped
}

func (c *callbackServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.URL.Path != callbackPath || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	c.mu.Lock()
	want := c.state
	ok := want != "" && subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(want)) == 1
	if ok {
		c.state = "" // one response per flow; replays are refused
	}
	c.mu.Unlock()
	if !ok {
		http.Error(w, "ctxkit: this authorization response does not match a pending sign-in (state mismatch); it was ignored.", http.StatusBadRequest)
		return
	}
	var res callbackResult
	switch {
	case q.Get("error") != "":
		res.err = fmt.Errorf("%w by the authorization server: %s", ErrDenied, describeOAuthError(q.Get("error"), q.Get("error_description")))
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "ctxkit: authorization failed (%s). You can close this tab.\n", describeOAuthError(q.Get("error"), q.Get("error_description")))
	case q.Get("code") == "":
		res.err = errors.New("the authorization response carries neither a code nor an error")
		http.Error(w, "ctxkit: the authorization response carries no code.", http.StatusBadRequest)
	default:
		res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		fmt.Fprintln(w, "ctxkit: authorization complete. You can close this tab.")
	}
	select {
	case c.results <- res:
	default:
	}
}

// wait returns the accepted response, or an error when ctx ends first.
func (c *callbackServer) wait(ctx context.Context) (*auth.AuthorizationResult, error) {
	select {
	case r := <-c.results:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// describeOAuthError renders an error code and description received from the
// authorization server (untrusted) for a message: quoted, bounded.
func describeOAuthError(code, desc string) string {
	s := strconv.Quote(clip(code, 64))
	if desc != "" {
		s += ": " + strconv.Quote(clip(desc, 300))
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// errNoBrowser says there is no display to open a browser on.
var errNoBrowser = errors.New("no display to open a browser on")

// openSystemBrowser opens u with the platform's URL opener (open, rundll32,
// or xdg-open when DISPLAY or WAYLAND_DISPLAY is set). It does not wait for
// the browser.
func openSystemBrowser(u string) error {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") {
		return fmt.Errorf("refusing to open %q: not an http(s) URL", clip(u, 80))
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errNoBrowser
		}
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
