package mcpauth_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/internal/mcpauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How the wrapper connects to an upstream that may ask for OAuth: one
// Handler per upstream URL, as the OAuthHandler of the streamable transport,
// or as the HTTP transport of the legacy SSE one.
func Example() {
	ctx := context.Background()
	dir, err := home.Dir()
	if err != nil {
		return
	}
	upstream := "https://mcp.example.com/mcp"
	h, err := mcpauth.NewHandler(mcpauth.Config{
		ServerURL: upstream,
		TokenDir:  filepath.Join(dir, "oauth"),
		Stderr:    os.Stderr,
		Logger:    slog.Default(),
	})
	if err != nil {
		return
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ctxkit", Version: "dev"}, nil)
	session, err := client.Connect(ctx, upstreamTransport(upstream, h, false), nil)
	if err != nil {
		return
	}
	defer session.Close()
}

// upstreamTransport is the transport to upstream with h's authorization.
// Only one of the two hooks is used per transport: the streamable transport
// must not also get h.Transport, or a 401 would be handled twice.
func upstreamTransport(upstream string, h *mcpauth.Handler, sseOnly bool) mcp.Transport {
	if sseOnly {
		return &mcp.SSEClientTransport{Endpoint: upstream, HTTPClient: &http.Client{Transport: h.Transport(nil)}}
	}
	return &mcp.StreamableClientTransport{Endpoint: upstream, OAuthHandler: h}
}
