package mcpwrap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigServer has one tool whose result is far over interceptMin.
func bigServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "big"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("large result line\n", 20000)}}}, nil, nil
	})
	return s
}

// Large results of the wrapper's own calls reach the hook in wire form over
// every HTTP transport the SDK speaks, and the SDK decodes the replacement.
func TestInterceptTransportOverHTTP(t *testing.T) {
	for name, handler := range map[string]http.Handler{
		"streamable, SSE responses":  mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bigServer() }, nil),
		"streamable, JSON responses": mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bigServer() }, &mcp.StreamableHTTPOptions{JSONResponse: true}),
		"legacy SSE":                 mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return bigServer() }, nil),
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			t.Cleanup(srv.Close)
			var hooked atomic.Int32
			ic := &interceptor{onResult: func(token string, result []byte) func() []byte {
				if token != tokenPrefix+"7" || len(result) < interceptMin {
					t.Errorf("hook got token %q and %d bytes", token, len(result))
				}
				hooked.Add(1)
				return func() []byte { return []byte(`{"content":[{"type":"text","text":"replaced"}]}`) }
			}}
			hc := &http.Client{Transport: &interceptTransport{base: http.DefaultTransport, ic: ic}}
			var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxEventSize: MaxMessageBytes}
			if name == "legacy SSE" {
				tr = &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxEventSize: MaxMessageBytes}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })

			params := &mcp.CallToolParams{Name: "big", Arguments: map[string]any{}}
			params.SetProgressToken(tokenPrefix + "7")
			res, err := cs.CallTool(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != "replaced" || hooked.Load() != 1 {
				t.Errorf("result %.40q, hook called %d times; want the replacement, once", got, hooked.Load())
			}
			// A call without the wrapper's token is not touched.
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(got, "large result line") || hooked.Load() != 1 {
				t.Errorf("a call that is not the wrapper's was rewritten: %.40q", got)
			}
		})
	}
}
