package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/e2e/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// authServer is a streamable HTTP upstream (package upstream's server) that
// answers only requests carrying Authorization: Bearer <token>, and tells
// the test when a wait call starts and when it is cancelled.
type authServer struct {
	url       string
	started   chan struct{}
	cancelled chan error

	mu       sync.Mutex
	requests int
	rejected []string // "METHOD /path (Authorization: ...)" of refused requests
}

func newAuthServer(t *testing.T, token string) *authServer {
	t.Helper()
	a := &authServer{started: make(chan struct{}, 1), cancelled: make(chan error, 1)}
	srv := upstream.New(upstream.Hooks{
		WaitStarted: func() {
			select {
			case a.started <- struct{}{}:
			default:
			}
		},
		WaitCancelled: func(err error) {
			select {
			case a.cancelled <- err:
			default:
			}
		},
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.requests++
		ok := r.Header.Get("Authorization") == "Bearer "+token
		if !ok {
			a.rejected = append(a.rejected, fmt.Sprintf("%s %s (Authorization: %q)", r.Method, r.URL.Path, r.Header.Get("Authorization")))
		}
		a.mu.Unlock()
		if !ok {
			// A plain 401 without WWW-Authenticate: no OAuth to try.
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	a.url = ts.URL
	return a
}

func (a *authServer) counts() (requests int, rejected []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests, append([]string(nil), a.rejected...)
}

// TestStreamableHTTPHeader wraps a streamable HTTP upstream that checks a
// bearer token given with -H 'Authorization: Bearer ${E2E_TOKEN}': with the
// variable set, calls (small, offloaded and cancelled) work and every
// request carries the header; without it or with a wrong value, the failure
// names the server; the token is never written to stderr or the log file.
func TestStreamableHTTPHeader(t *testing.T) {
	const token = "e2e-secret-7f3a9c41"
	srv := newAuthServer(t, token)
	flags := func(store, logFile string) []string {
		return []string{"wrap", "--store", store, "--log-file", logFile, "--name", "authsrv",
			"-H", "Authorization: Bearer ${E2E_TOKEN}", srv.url}
	}

	t.Run("token from the environment", func(t *testing.T) {
		store := isolate(t)
		logFile := filepath.Join(t.TempDir(), "wrap.log")
		t.Setenv("E2E_TOKEN", token)
		ctx := testContext(t)
		p, err := start(ctx, nil, nil, ctxkitBin, flags(store, logFile)...)
		if err != nil {
			t.Fatalf("connect: %v\nstderr:\n%s", err, p.stderr)
		}
		defer func() {
			p.close(t, true)
			checkNoSecret(t, token, p.stderr.String(), logFile)
		}()
		cs := p.cs

		res := call(t, ctx, cs, "echo", map[string]any{"text": "through HTTP"})
		if texts(res) != "through HTTP" {
			t.Errorf("echo answered %q", texts(res))
		}

		res = call(t, ctx, cs, "repeat", map[string]any{"text": "a line of the large result", "times": 2000})
		n := parseNotice(t, texts(res))
		if n.Shape != "text" {
			t.Errorf("the offloaded repeat result has shape %q, want text", n.Shape)
		}

		// Cancellation reaches the upstream over HTTP.
		callCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
			done <- err
		}()
		select {
		case <-srv.started:
		case <-ctx.Done():
			cancel()
			t.Fatal("the wait call never reached the upstream")
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v, want context.Canceled", err)
		}
		select {
		case err := <-srv.cancelled:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the upstream's call ended with %v, want context.Canceled", err)
			}
		case <-ctx.Done():
			t.Error("the wrapper did not forward the cancellation to the upstream")
		}
		res = call(t, ctx, cs, "echo", map[string]any{"text": "after cancel"})
		if texts(res) != "after cancel" {
			t.Errorf("echo after cancellation answered %q", texts(res))
		}

		if requests, rejected := srv.counts(); requests == 0 || len(rejected) > 0 {
			t.Errorf("the upstream saw %d requests, %d without the right header: %v", requests, len(rejected), rejected)
		}
	})

	for _, c := range []struct {
		name  string
		value *string // nil: E2E_TOKEN unset
		cause []string
	}{
		{"no token", nil, []string{"E2E_TOKEN", "401", "nauthorized"}},
		{"wrong token", ptr("wrong-secret-4d2e"), []string{"401", "nauthorized"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := isolate(t)
			logFile := filepath.Join(t.TempDir(), "wrap.log")
			t.Setenv("E2E_TOKEN", "")
			if c.value == nil {
				os.Unsetenv("E2E_TOKEN") // t.Setenv restores it
			} else {
				t.Setenv("E2E_TOKEN", *c.value)
			}
			ctx := testContext(t)
			msg, stderr := failure(t, ctx, flags(store, logFile))
			all := msg + "\n" + stderr
			t.Logf("the client saw: %s", msg)
			if !strings.Contains(all, "authsrv") {
				t.Errorf("the failure does not name the server (authsrv):\nerror: %s\nstderr:\n%s", msg, stderr)
			}
			if !containsAny(all, c.cause) {
				t.Errorf("the failure does not say why (one of %q):\nerror: %s\nstderr:\n%s", c.cause, msg, stderr)
			}
			if c.value != nil {
				checkNoSecret(t, *c.value, stderr, logFile)
			}
		})
	}
}

// failure starts the wrapper and calls echo, which must fail; it returns
// the error the client saw (at connect or from the call) and the stderr.
func failure(t *testing.T, ctx context.Context, args []string) (msg, stderr string) {
	t.Helper()
	p, err := start(ctx, nil, nil, ctxkitBin, args...)
	if err != nil {
		return "connect: " + err.Error(), p.stderr.String()
	}
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	switch {
	case err != nil:
		msg = "call: " + err.Error()
	case res.IsError:
		msg = "tool error: " + texts(res)
	default:
		t.Errorf("echo succeeded without the right token: %s", asJSON(t, res))
	}
	_ = p.cs.Close()
	return msg, p.stderr.String()
}

// checkNoSecret fails if the secret appears in the wrapper's stderr or log.
func checkNoSecret(t *testing.T, secret, stderr, logFile string) {
	t.Helper()
	if strings.Contains(stderr, secret) {
		t.Errorf("the wrapper wrote the expanded header value to stderr")
	}
	b, err := os.ReadFile(logFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the wrapper wrote the expanded header value to its --log-file")
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
