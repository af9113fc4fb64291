package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/httpserver"
	"github.com/ctxkit/ctxkit/internal/httpserver/httpservertest"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// shortBody is the body bound the tests give the servers: far below
// httpservertest.Patience.
var shortBody = httpserver.Limits{BodyWait: 200 * time.Millisecond}

// stalledPost is a JSON POST to path (with the bearer token, if any) that
// announces 100 bytes of body and sends 9.
func stalledPost(path, token string) string {
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"partial"
}

// startRun runs a command's run function until the test ends (then
// checks it ended without error) and returns the address it listens on.
func startRun(t *testing.T, run func(ctx context.Context, ready func(addr string)) error) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
		return a
	case err := <-done:
		cancel()
		t.Fatal(err)
		return ""
	}
}

// startWrapHTTP runs `ctxkit wrap --http` in-process with opts (the
// upstream: this test binary) and returns its address, and done, which
// receives runWrap's error once ctx ends.
func startWrapHTTP(ctx context.Context, t *testing.T, opts WrapOptions) (addr string, done chan error) {
	t.Helper()
	t.Setenv("CTXKIT_HOME", t.TempDir())
	return startWrapHTTPOn(ctx, t, "memory:", opts)
}

// startWrapHTTPOn is startWrapHTTP on the store at url.
func startWrapHTTPOn(ctx context.Context, t *testing.T, url string, opts WrapOptions) (addr string, done chan error) {
	t.Helper()
	t.Setenv("CTXKIT_CLI_TEST_UPSTREAM", "1")
	opts.HTTPAddr = freeAddr(t)
	opts.Upstream.Command = []string{os.Args[0]}
	done = make(chan error, 1)
	go func() {
		done <- runWrap(ctx, &globals{store: url}, &opts, IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	}()
	waitListening(t, "http://"+opts.HTTPAddr)
	return opts.HTTPAddr, done
}

// TestServersCutBodiesThatNeverArrive: serve, guard and wrap --http close
// the connection of a request whose body stops coming, whether it is
// refused before authentication or its handler reads the body.
func TestServersCutBodiesThatNeverArrive(t *testing.T) {
	t.Run("serve", func(t *testing.T) {
		token := agentVaults(t)
		addr := startRun(t, func(ctx context.Context, ready func(string)) error {
			return runServe(ctx, &globals{}, &ServeOptions{Addr: "127.0.0.1:0", Grace: time.Minute, Limits: shortBody},
				IO{Err: io.Discard}, ready)
		})
		for _, tc := range []struct{ path, token string }{
			{"/v1/vaults", ""},
			{"/ctxvault/vaults", ""},
			{"/mcp", ""},
			{"/v1/vaults/notes/query", token},
			{"/mcp", token},
		} {
			t.Run(fmt.Sprintf("%s token %v", tc.path, tc.token != ""), func(t *testing.T) {
				answerIsRefusal(t, httpservertest.ReadUntilClosed(t, addr, stalledPost(tc.path, tc.token)))
			})
		}
	})
	t.Run("guard", func(t *testing.T) {
		emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{}))
		defer emu.Close()
		addr := startRun(t, func(ctx context.Context, ready func(string)) error {
			return runGuard(ctx, &globals{store: "memory:"}, &GuardOptions{Listen: "127.0.0.1:0", Ollama: emu.URL, Policy: "compact", Grace: time.Minute, Limits: shortBody},
				IO{Err: io.Discard}, ready)
		})
		for _, path := range []string{"/api/chat", "/v1/chat/completions", "/v1/messages", "/api/pull"} {
			t.Run(path, func(t *testing.T) {
				answerIsRefusal(t, httpservertest.ReadUntilClosed(t, addr, stalledPost(path, "")))
			})
		}
	})
	t.Run("wrap --http", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		addr, done := startWrapHTTP(ctx, t, WrapOptions{AuthToken: "tok", Grace: time.Minute, Limits: shortBody})
		for _, token := range []string{"", "wrong", "tok"} {
			t.Run("token "+token, func(t *testing.T) {
				answerIsRefusal(t, httpservertest.ReadUntilClosed(t, addr, stalledPost("/", token)))
			})
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
}

// answerIsRefusal checks what a server answered to a request whose body
// never came: nothing, or an error.
func answerIsRefusal(t *testing.T, got string) {
	t.Helper()
	if got != "" && !strings.HasPrefix(got, "HTTP/1.1 4") && !strings.HasPrefix(got, "HTTP/1.1 5") {
		t.Errorf("answered %.200q", got)
	}
}

// TestWrapHTTPWaitsForRequestsInFlight: a tool call in flight when wrap
// --http is told to stop still gets its result stored and answered; the
// store is closed only after.
func TestWrapHTTPWaitsForRequestsInFlight(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, done := startWrapHTTP(ctx, t, WrapOptions{AuthToken: "tok", Threshold: 500, Grace: httpservertest.Patience})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr, HTTPClient: &http.Client{Transport: bearer{token: "tok"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_rows", Arguments: map[string]any{"n": 300, "release": release}})
		answered <- answer{res, err}
	}()
	if !waitFile(release + ".started") {
		t.Fatal("the upstream never got the call")
	}
	cancel()
	httpservertest.WaitRefused(t, addr)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := <-answered
	if a.err != nil || a.res.IsError {
		t.Fatalf("the call in flight at shutdown: %v %v", a.res, a.err)
	}
	var n struct {
		StoredResult string `json:"stored_result"`
		Items        int    `json:"items"`
	}
	if err := json.Unmarshal([]byte(a.res.Content[0].(*mcp.TextContent).Text), &n); err != nil || n.StoredResult == "" || n.Items != 300 {
		t.Errorf("want a notice of the 300 rows stored, got %.200s", a.res.Content[0].(*mcp.TextContent).Text)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
