package mcpwrap_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/mcpwrap"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/mcpadapter"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// A -H header must not follow a redirect to another host.
func TestHeadersStayWithTheUpstreamOrigin(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host name
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer up.Close()

	engine := offload.New(memstore.New(memstore.Options{}))
	a := mcpadapter.New(engine, mcpadapter.Options{})
	p, err := mcpwrap.New(mcpwrap.Options{
		Upstream:  mcpwrap.Upstream{URL: up.URL + "/mcp", Transport: mcpwrap.TransportHTTP, Headers: []string{"Authorization: Bearer ${TOK}"}},
		Adapter:   a,
		LookupEnv: func(string) (string, bool) { return "s3cret", true },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Start(t.Context())
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, h := range seen {
		if strings.Contains(h, "s3cret") {
			t.Errorf("the redirect target %s received Authorization %q", otherURL, h)
			return
		}
	}
	if len(seen) == 0 {
		t.Error("the redirect was not followed; the test proves nothing")
	}
}

// Results stored by a stdio wrapper (no session) sharing the store are
// invisible to an --http session.
func TestHTTPSessionsDoNotSeeSharedResults(t *testing.T) {
	engine := offload.New(memstore.New(memstore.Options{}))
	n, err := engine.Put(t.Context(), []byte(strings.Repeat("private data ", 2000)), offload.PutOptions{Producer: "gh"})
	if err != nil {
		t.Fatal(err)
	}
	remote := offload.WithPrivateSession(t.Context(), "http-session-1")
	if _, err := engine.Workspace(remote, n.StoredResult); err == nil {
		t.Errorf("an HTTP session reads %s, stored outside any session", n.StoredResult)
	}
	list, _ := engine.List(remote)
	if len(list) > 0 {
		t.Errorf("an HTTP session lists %d workspaces stored outside any session", len(list))
	}
}

// After Close, a call must not start a new upstream process.
func TestNoUpstreamAfterClose(t *testing.T) {
	cs, p := wrapped(t, stdioUpstream(t), nil)
	if _, isErr := callText(t, cs, "echo", map[string]any{"text": "hi"}); isErr {
		t.Fatal("first call failed")
	}
	p.Close()
	text, isErr := callText(t, cs, "echo", map[string]any{"text": "after close"})
	if !isErr {
		t.Errorf("a call after Close reached a new upstream: %q (a process started after Close is never stopped by it)", text)
	}
}

// Over --http, an upstream elicitation made while serving session A's call
// reaches A, not the session that called last: each session has its own
// upstream connection.
func TestHTTPSessionsHaveTheirOwnUpstream(t *testing.T) {
	release := make(chan struct{})
	upSrv := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
	upSrv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-release
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "A's private question", RequestedSchema: map[string]any{"type": "object"}})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer: " + res.Action}}}, nil
	})
	upSrv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upSrv }, nil))
	defer up.Close()

	engine := offload.New(memstore.New(memstore.Options{}))
	a := mcpadapter.New(engine, mcpadapter.Options{PerSession: true})
	h, err := mcpwrap.HTTPHandler(t.Context(), mcpwrap.Options{Upstream: mcpwrap.Upstream{URL: up.URL, Transport: mcpwrap.TransportHTTP}, Adapter: a})
	if err != nil {
		t.Fatal(err)
	}
	down := httptest.NewServer(h)
	defer down.Close()

	var mu sync.Mutex
	asked := map[string]string{}
	client := func(name string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: name}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked[name] = req.Params.Message
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept-from-" + name}, nil
			},
		})
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: down.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	A, B := client("A"), client("B")
	defer A.Close()
	defer B.Close()
	done := make(chan string, 1)
	go func() {
		res, err := A.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- res.Content[0].(*mcp.TextContent).Text
	}()
	time.Sleep(200 * time.Millisecond) // A's call is upstream
	if _, err := B.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	close(release)
	got := <-done
	mu.Lock()
	defer mu.Unlock()
	if asked["B"] != "" || asked["A"] == "" {
		t.Errorf("elicitation for A's call went to: %v; A's call got %q", asked, got)
	}
}

// A server that prints a stray line to stdout before serving (common with
// Python servers) keeps working, as with the TypeScript SDK's clients.
func TestStrayStdoutLineIsIgnored(t *testing.T) {
	t.Setenv("MCPWRAP_UPSTREAM", "stdio")
	up := mcpwrap.Upstream{Name: "up", Command: []string{"sh", "-c", `echo "Server starting..."; exec "$0"`, os.Args[0]}}
	cs, _ := wrapped(t, up, nil)
	text, isErr := callText(t, cs, "echo", map[string]any{"text": "hi"})
	if isErr {
		t.Errorf("a stray stdout line broke the upstream: %s", text)
	}
}

// A call that fails on the wire after the upstream was reached is a tool
// error naming the server, without the URL's key.
func TestCallErrorHidesURLSecret(t *testing.T) {
	upSrv := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
	upSrv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upSrv }, nil))
	cs, _ := wrapped(t, mcpwrap.Upstream{Name: "keyed", URL: up.URL + "/mcp?api_key=SECRET123", Transport: mcpwrap.TransportHTTP}, nil)
	if _, isErr := callText(t, cs, "echo", map[string]any{}); isErr {
		t.Fatal("first call failed")
	}
	up.CloseClientConnections()
	up.Close()
	msg, isErr := callText(t, cs, "echo", map[string]any{})
	if !isErr || !strings.Contains(msg, `"keyed"`) || strings.Contains(msg, "SECRET123") {
		t.Errorf("want a tool error naming the server without its key: %s", msg)
	}
}
