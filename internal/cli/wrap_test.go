package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/httpserver/httpservertest"
)

// The test binary doubles as an upstream stdio MCP server for `wrap`.
// Its list_rows tool, given a file path Release, creates Release.started
// and answers once Release exists.
func TestMain(m *testing.M) {
	if os.Getenv("CTXKIT_CLI_TEST_UPSTREAM") == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "lister"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "list_rows", Description: "Rows as JSON."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			N       int    `json:"n"`
			Release string `json:"release,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			if in.Release != "" {
				if err := os.WriteFile(in.Release+".started", nil, 0o600); err != nil {
					return nil, nil, err
				}
				if !waitFile(in.Release) {
					return nil, nil, fmt.Errorf("%s was not created", in.Release)
				}
			}
			rows := make([]map[string]any, in.N)
			for i := range rows {
				rows[i] = map[string]any{"id": i, "name": fmt.Sprintf("row %d", i)}
			}
			b, _ := json.Marshal(rows)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// waitFile waits up to httpservertest.Patience for path to exist.
func waitFile(path string) bool {
	deadline := time.Now().Add(httpservertest.Patience)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// startWrap runs `ctxkit wrap args...` in-process on pipes and connects a
// client to it.
func startWrap(t *testing.T, args ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"wrap"}, args...), IO{In: inR, Out: outW, Err: stderr})
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		inW.Close()
		cancel()
		<-done
	})
	return cs, stderr
}

// syncBuffer is a bytes.Buffer safe for the wrapper's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWrapOffloadsAndLsShowsTheServer(t *testing.T) {
	t.Setenv("CTXKIT_HOME", t.TempDir())
	t.Setenv("CTXKIT_CLI_TEST_UPSTREAM", "1")
	db := filepath.Join(t.TempDir(), "shared.db")
	cs, _ := startWrap(t, "--store", db, "--name", "rows-server", "--threshold", "500", "--", os.Args[0])

	small, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_rows", Arguments: map[string]any{"n": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := small.Content[0].(*mcp.TextContent).Text; got != `[{"id":0,"name":"row 0"},{"id":1,"name":"row 1"}]` {
		t.Errorf("small result changed: %s", got)
	}
	large, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_rows", Arguments: map[string]any{"n": 300}})
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		StoredResult string `json:"stored_result"`
		Items        int    `json:"items"`
	}
	if err := json.Unmarshal([]byte(large.Content[0].(*mcp.TextContent).Text), &n); err != nil || n.Items != 300 {
		t.Fatalf("large result: want a notice of 300 items, got %v", large.Content[0])
	}

	// A second process (here: a second command) shares the store.
	var out, errOut bytes.Buffer
	if code := Main(t.Context(), []string{"offload", "ls", "--store", db}, IO{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("ls: %s", errOut.String())
	}
	line := out.String()
	for _, want := range []string{n.StoredResult, "from list_rows", "server rows-server", "chars stored"} {
		if !strings.Contains(line, want) {
			t.Errorf("ls line %q lacks %q", line, want)
		}
	}
	out.Reset()
	if code := Main(t.Context(), []string{"offload", "call", "--store", db, "result_pipe", fmt.Sprintf(`{"workspace_id":%q,"steps":[{"count":true}]}`, n.StoredResult)}, IO{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("call: %s %s", out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "300") {
		t.Errorf("pipe over the wrapped result from another command: %s", out.String())
	}
}

func TestWrapRefusesBadInvocations(t *testing.T) {
	t.Setenv("CTXKIT_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wrap"}, "give the server to wrap"},
		{[]string{"wrap", "ftp://x"}, "want http:// or https://"},
		{[]string{"wrap", "--transport", "carrier-pigeon", "https://x"}, "unknown transport"},
		{[]string{"wrap", "-H", "Authorization: Bearer ${CTXKIT_TEST_UNSET_VAR}", "https://x"}, "${CTXKIT_TEST_UNSET_VAR}, which is not set"},
		{[]string{"wrap", "--http", "0.0.0.0:0", "--", "true"}, "--http 0.0.0.0:0 accepts connections from other machines: set --auth-token"},
	} {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), append(tc.args, "--store", "memory:"), IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code == 0 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", tc.args, code, errOut.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote %q to stdout, which belongs to the MCP client", tc.args, out.String())
		}
	}
}

func TestWrapHTTPNeedsTheToken(t *testing.T) {
	t.Setenv("CTXKIT_HOME", t.TempDir())
	t.Setenv("CTXKIT_CLI_TEST_UPSTREAM", "1")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var errOut syncBuffer
	go func() {
		done <- Main(ctx, []string{"wrap", "--store", "memory:", "--http", addr, "--auth-token", "tok", "--", os.Args[0]}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &errOut})
	}()
	defer func() { cancel(); <-done }()
	url := "http://" + addr
	waitListening(t, url)

	if resp, err := http.Post(url, "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %v %v, want 401", resp, err)
	}
	hc := &http.Client{Transport: bearer{token: "tok"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_rows", Arguments: map[string]any{"n": 1000}})
	if err != nil || res.IsError {
		t.Fatalf("call over HTTP: %v %v", res, err)
	}
	var n struct {
		StoredResult string `json:"stored_result"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &n); err != nil || n.StoredResult == "" {
		t.Fatalf("want a notice: %v", res.Content[0])
	}
	page := map[string]any{"workspace_id": n.StoredResult, "page": 1}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "result_paginate", Arguments: page}); err != nil || res.IsError {
		t.Errorf("the session that stored it pages through it: %v %v", res, err)
	}
	// Each HTTP session sees only its own results.
	other, err := mcp.NewClient(&mcp.Implementation{Name: "t2"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	res, err = other.CallTool(t.Context(), &mcp.CallToolParams{Name: "result_paginate", Arguments: page})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not_found") {
		t.Errorf("another session reads the result: %v %v", res.Content, err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func waitListening(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", url)
}
