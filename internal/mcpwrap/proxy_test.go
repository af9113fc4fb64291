//lint:file-ignore SA1019 a proxy forwards the features its client and upstream still use, deprecated ones (sampling, roots, logging) included

package mcpwrap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
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

// The test binary doubles as the upstream stdio server: run with
// MCPWRAP_UPSTREAM=stdio it serves testUpstream on stdin and stdout.
func TestMain(m *testing.M) {
	if os.Getenv("MCPWRAP_UPSTREAM") == "stdio" {
		if err := testUpstream().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const upstreamInstructions = "Upstream instructions: call echo first."

type textArgs struct {
	Text string `json:"text"`
}

type linesArgs struct {
	N int `json:"n"`
}

// testUpstream is the server the tests wrap.
func testUpstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{
		Instructions: upstreamInstructions,
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "-done"}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text."}, func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "lines", Description: "Return n numbered lines."}, func(_ context.Context, _ *mcp.CallToolRequest, in linesArgs) (*mcp.CallToolResult, any, error) {
		var b strings.Builder
		for i := range in.N {
			fmt.Fprintf(&b, "line %d of the long result\n", i)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Report progress, then wait to be cancelled."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for i := range 3 {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
		}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the client's model."}, func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.CreateMessageParams{
				MaxTokens: 10,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}},
			}}}, nil, nil
		}
		res, ok := req.Params.InputResponses["q"].(*mcp.CreateMessageWithToolsResult)
		if !ok || len(res.Content) == 0 {
			return nil, nil, fmt.Errorf("no answer to q: %v", req.Params.InputResponses)
		}
		return &mcp.CallToolResult{Content: res.Content}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Add a tool named text."}, func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		s.AddTool(&mcp.Tool{Name: in.Text, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new tool"}}}, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "caps", Description: "The client's capabilities as this server sees them."}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		caps := req.Session.InitializeParams().Capabilities
		b, _ := json.Marshal(map[string]bool{"roots": caps.RootsV2 != nil, "sampling": caps.Sampling != nil, "elicitation": caps.Elicitation != nil})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	s.AddResource(&mcp.Resource{Name: "readme", URI: "test://readme", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "read me"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "item", URITemplate: "test://items/{id}"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item " + strings.TrimPrefix(req.Params.URI, "test://items/")}}}, nil
	})
	// A tool the SDK would refuse to serve: the wrapper must skip it, not crash.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				c := *lt
				c.Tools = append(slices.Clone(lt.Tools), &mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"string"}`)})
				return &c, nil
			}
			return res, err
		}
	})
	return s
}

// wrapped starts a Proxy in front of up and connects a client to it.
func wrapped(t *testing.T, up mcpwrap.Upstream, copts *mcp.ClientOptions) (*mcp.ClientSession, *mcpwrap.Proxy) {
	t.Helper()
	return wrappedVersion(t, up, copts, "")
}

// wrappedVersion is wrapped with a client that asks for protocol version
// ("" for the newest).
func wrappedVersion(t *testing.T, up mcpwrap.Upstream, copts *mcp.ClientOptions, version string) (*mcp.ClientSession, *mcpwrap.Proxy) {
	t.Helper()
	engine := offload.New(memstore.New(memstore.Options{}))
	a := mcpadapter.New(engine, mcpadapter.Options{Threshold: 1000, Server: "test"})
	p, err := mcpwrap.New(mcpwrap.Options{Upstream: up, Adapter: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Start(t.Context())
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	var sopts *mcp.ClientSessionOptions
	if version != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client"}, copts).Connect(t.Context(), ct, sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, p
}

func stdioUpstream(t *testing.T) mcpwrap.Upstream {
	t.Setenv("MCPWRAP_UPSTREAM", "stdio")
	return mcpwrap.Upstream{Name: "up", Command: []string{os.Args[0]}}
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func TestMirrorsToolsAndInstructions(t *testing.T) {
	cs, _ := wrapped(t, stdioUpstream(t), nil)
	names := toolNames(t, cs)
	for _, want := range []string{"echo", "lines", "slow", "result_pipe", "result_read_page", "result_search_in_text"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s missing from %v", want, names)
		}
	}
	if slices.Contains(names, "bad") {
		t.Error("the malformed upstream tool is listed")
	}
	inst := cs.InitializeResult().Instructions
	if !strings.HasPrefix(inst, upstreamInstructions) || !strings.Contains(inst, "result_") {
		t.Errorf("instructions: %q", inst)
	}
}

func TestSmallPassesLargeIsOffloaded(t *testing.T) {
	cs, _ := wrapped(t, stdioUpstream(t), nil)
	if got, _ := callText(t, cs, "echo", map[string]any{"text": "hi there"}); got != "hi there" {
		t.Errorf("small result: %q", got)
	}
	got, isErr := callText(t, cs, "lines", map[string]any{"n": 500})
	var n struct {
		StoredResult string `json:"stored_result"`
		Tool         string `json:"tool"`
	}
	if err := json.Unmarshal([]byte(got), &n); err != nil || n.StoredResult == "" || isErr || n.Tool != "lines" {
		t.Fatalf("large result: want a notice, got %.200q", got)
	}
	page, _ := callText(t, cs, "result_search_in_text", map[string]any{"workspace_id": n.StoredResult, "query": "line 321"})
	if !strings.Contains(page, "line 321 of the long result") {
		t.Errorf("search in the stored result: %.300s", page)
	}
	// Errors of the upstream's argument validation come back as they are.
	if _, isErr := callText(t, cs, "lines", map[string]any{"n": "many"}); !isErr {
		t.Error("bad arguments: want a tool error")
	}
}

func TestProgressAndCancellation(t *testing.T) {
	var mu sync.Mutex
	var got []float64
	three := make(chan struct{})
	cs, _ := wrapped(t, stdioUpstream(t), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			if req.Params.ProgressToken != "mine" {
				t.Errorf("progress token %v, want the client's own", req.Params.ProgressToken)
			}
			got = append(got, req.Params.Progress)
			if len(got) == 3 {
				close(three)
			}
		},
	})
	ctx, cancel := context.WithCancel(t.Context())
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}
	params.SetProgressToken("mine")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	select {
	case <-three:
	case <-time.After(time.Minute):
		t.Fatal("no progress through the wrapper")
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("cancelled call: want an error")
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call did not end")
	}
	if s, _ := callText(t, cs, "echo", map[string]any{"text": "still here"}); s != "still here" {
		t.Errorf("after a cancellation: %q", s)
	}
}

func TestCrashedUpstreamRestartsOnNextCall(t *testing.T) {
	cs, _ := wrapped(t, stdioUpstream(t), nil)
	msg, isErr := callText(t, cs, "crash", map[string]any{})
	if !isErr || !strings.Contains(msg, `"up"`) {
		t.Errorf("call that crashed the server: isError=%v %q; want a tool error naming the server", isErr, msg)
	}
	var got string
	for range 50 { // the exit is noticed asynchronously
		got, _ = callText(t, cs, "echo", map[string]any{"text": "back"})
		if got == "back" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got != "back" {
		t.Errorf("after the crash: %q", got)
	}
}

func TestUpstreamThatDoesNotStart(t *testing.T) {
	cs, _ := wrapped(t, mcpwrap.Upstream{Name: "ghost", Command: []string{"/nonexistent/ghost-server"}}, nil)
	names := toolNames(t, cs)
	if !slices.Contains(names, "result_pipe") {
		t.Errorf("exploration tools should still be served: %v", names)
	}
	msg, isErr := callText(t, cs, "whatever", map[string]any{})
	if !isErr || !strings.Contains(msg, `"ghost"`) || !strings.Contains(msg, "ghost-server") {
		t.Errorf("call while the server cannot start: isError=%v %q", isErr, msg)
	}
}

func TestListChangedAndSampling(t *testing.T) {
	changed := make(chan struct{}, 10)
	cs, _ := wrapped(t, stdioUpstream(t), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			q := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "answer to " + q}}, nil
		},
	})
	if got, _ := callText(t, cs, "ask", map[string]any{"text": "why"}); got != "answer to why" {
		t.Errorf("sampling through the wrapper: %q", got)
	}
	callText(t, cs, "add_tool", map[string]any{"text": "fresh"})
	deadline := time.After(time.Minute)
	for !slices.Contains(toolNames(t, cs), "fresh") {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the new upstream tool never appeared: %v", toolNames(t, cs))
		}
	}
	if got, _ := callText(t, cs, "fresh", map[string]any{}); got != "new tool" {
		t.Errorf("new tool: %q", got)
	}
}

func TestPromptsResourcesCompletions(t *testing.T) {
	cs, _ := wrapped(t, stdioUpstream(t), nil)
	pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello ann" {
		t.Errorf("prompt: %v %v", pr, err)
	}
	for _, tc := range []struct{ uri, want string }{{"test://readme", "read me"}, {"test://items/7", "item 7"}} {
		rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: tc.uri})
		if err != nil || rr.Contents[0].Text != tc.want {
			t.Errorf("read %s: %v %v", tc.uri, rr, err)
		}
	}
	var templates []string
	for rt, err := range cs.ResourceTemplates(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, rt.URITemplate)
	}
	if !slices.Contains(templates, "test://items/{id}") || !slices.Contains(templates, mcpadapter.ResultURITemplate) {
		t.Errorf("templates: %v", templates)
	}
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "test://readme"}); err != nil {
		t.Errorf("subscribe: %v", err)
	}
	cr, err := cs.Complete(t.Context(), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "an"},
	})
	if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != "an-done" {
		t.Errorf("completion: %v %v", cr, err)
	}
}

func TestHTTPUpstreamWithHeaderFromEnvironment(t *testing.T) {
	const token = "s3cret-token"
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testUpstream() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	// Registered before the proxies' cleanups, so it runs after them: the
	// upstream connections must be closed before the server can be.
	t.Cleanup(srv.Close)

	t.Setenv("WRAP_TEST_TOKEN", token)
	cs, _ := wrapped(t, mcpwrap.Upstream{Name: "remote", URL: srv.URL, Headers: []string{"Authorization: Bearer ${WRAP_TEST_TOKEN}"}}, nil)
	if got, _ := callText(t, cs, "echo", map[string]any{"text": "over http"}); got != "over http" {
		t.Errorf("call over HTTP: %q", got)
	}

	t.Setenv("WRAP_TEST_AUTH", "Bearer "+token)
	cs, _ = wrapped(t, mcpwrap.Upstream{Name: "remote", URL: srv.URL, HeaderEnv: []string{"Authorization=WRAP_TEST_AUTH"}}, nil)
	if got, _ := callText(t, cs, "echo", map[string]any{"text": "via header-env"}); got != "via header-env" {
		t.Errorf("call with --header-env: %q", got)
	}

	t.Setenv("WRAP_TEST_TOKEN", "wrong")
	cs, _ = wrapped(t, mcpwrap.Upstream{Name: "remote", URL: srv.URL, Transport: mcpwrap.TransportHTTP, Headers: []string{"Authorization: Bearer ${WRAP_TEST_TOKEN}"}}, nil)
	msg, isErr := callText(t, cs, "echo", map[string]any{"text": "x"})
	if !isErr || !strings.Contains(msg, `"remote"`) || strings.Contains(msg, "wrong") {
		t.Errorf("wrong token: isError=%v %q (want the server named, the token not shown)", isErr, msg)
	}
}

func TestParseHeaders(t *testing.T) {
	env := map[string]string{"TOKEN": "abc", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		in      string
		name    string
		want    string
		wantErr string
	}{
		{in: "Authorization: Bearer ${TOKEN}", name: "Authorization", want: "Bearer abc"},
		{in: "X-Key:${TOKEN}", name: "X-Key", want: "abc"},
		{in: "X-Price: $5 and ${EMPTY}", name: "X-Price", want: "$5 and"},
		{in: "X-Key: ${MISSING}", wantErr: "${MISSING}"},
		{in: "no colon", wantErr: "want 'Name: value'"},
		{in: "Bad Name: v", wantErr: "want 'Name: value'"},
	} {
		h, err := mcpwrap.ParseHeaders([]string{tc.in}, lookup)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || h.Get(tc.name) != tc.want {
			t.Errorf("%q: %v %v, want %s=%q", tc.in, h, err, tc.name, tc.want)
		}
	}
}

func TestDefaultName(t *testing.T) {
	for _, tc := range []struct {
		up   mcpwrap.Upstream
		want string
	}{
		{mcpwrap.Upstream{URL: "https://api.example.com/mcp"}, "api.example.com"},
		{mcpwrap.Upstream{Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"}}, "server-filesystem"},
		{mcpwrap.Upstream{Command: []string{"/usr/local/bin/github-mcp"}}, "github-mcp"},
		{mcpwrap.Upstream{Command: []string{`C:\tools\npx.cmd`, "-y", "srv"}}, "srv"},
	} {
		if got := mcpwrap.DefaultName(tc.up); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.up, got, tc.want)
		}
	}
}

// The upstream is offered exactly the capabilities the client declared.
func TestUpstreamSeesTheClientsCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *mcp.ClientOptions
		want string
	}{
		{"defaults", nil, `{"elicitation":false,"roots":true,"sampling":false}`},
		{"sampling and elicitation", &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, nil
			},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil },
		}, `{"elicitation":true,"roots":false,"sampling":true}`},
	} {
		for _, version := range []string{"", "2025-06-18"} {
			t.Run(tc.name+" "+version, func(t *testing.T) {
				cs, _ := wrappedVersion(t, stdioUpstream(t), tc.opts, version)
				if got, _ := callText(t, cs, "caps", map[string]any{}); got != tc.want {
					t.Errorf("upstream sees %s, want %s", got, tc.want)
				}
			})
		}
	}
}

func TestErrorsDoNotShowURLSecrets(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // connection refused, an error that quotes the URL
	for name, base := range map[string]string{"404": notFound.URL, "refused": closed.URL} {
		t.Run(name, func(t *testing.T) {
			u := strings.Replace(base, "http://", "http://user:pa55word@", 1) + "/mcp?api_key=SECRET123&x=1"
			cs, _ := wrapped(t, mcpwrap.Upstream{Name: "keyed", URL: u, Transport: mcpwrap.TransportHTTP}, nil)
			msg, isErr := callText(t, cs, "anything", map[string]any{})
			if !isErr || !strings.Contains(msg, `"keyed"`) {
				t.Fatalf("want a tool error naming the server: %q", msg)
			}
			for _, secret := range []string{"SECRET123", "pa55word"} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error shows %s: %s", secret, msg)
				}
			}
		})
	}
}
