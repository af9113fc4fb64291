// Package mcpwrap is the MCP proxy behind `ctxkit wrap`: it serves, to one
// client over stdio (Proxy) or to each client of a streamable HTTP endpoint
// (HTTPHandler: a Proxy per session), everything one upstream MCP server
// offers — instructions, tools, resources and templates, subscriptions,
// prompts, completions, logging, progress, cancellation, and the upstream's
// own requests for sampling, elicitation and roots — and offloads the
// upstream's large tool results through offload/mcpadapter.
//
// It builds on the official Go SDK on both sides. The upstream's features
// are re-registered on a downstream mcp.Server (the SDK's only way to emit
// list_changed), re-synchronised when the upstream says its lists changed,
// and each one is checked first: upstream data is untrusted, and a feature
// the SDK would refuse is skipped and reported rather than allowed to crash
// the wrapper. The upstream is connected when the client initializes, with
// the client's capabilities, remade on the next call after it stops, and
// backed off while it keeps failing; a call that cannot reach it gets a
// tool error naming the server and cause. A stdio upstream runs through the
// package's own transport, which lets large tool results be stored from
// their bytes before the SDK decodes them (commandTransport).
package mcpwrap

//lint:file-ignore SA1019 a proxy forwards the features its client and upstream still use, deprecated ones (sampling, roots, logging) included

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/offload/mcpadapter"
)

// Options configure a Proxy.
type Options struct {
	// Upstream is the server to wrap.
	Upstream Upstream
	// Adapter stores large results and serves the exploration tools.
	Adapter *mcpadapter.Adapter
	// Version is reported to both sides.
	Version string
	// Logger receives what the client's log should show; nil discards.
	Logger *slog.Logger
	// LookupEnv expands ${VAR} in headers; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Proxy serves one upstream MCP server, with offloading, to MCP clients.
type Proxy struct {
	opts    Options
	log     *slog.Logger
	link    *link
	server  *mcp.Server
	adapter *mcpadapter.Adapter

	nextToken atomic.Int64
	progress  sync.Map // upstream progress token → progressRoute

	mu        sync.Mutex
	tools     map[string]bool // upstream tool names registered downstream
	prompts   map[string]bool
	resources map[string]bool
	templates map[string]bool
	resyncing map[string]*resync
	roots     []*mcp.Root // the client's roots, given to the upstream
	downCaps  atomic.Pointer[mcp.ClientCapabilities]
	calls     sync.Map // upstream progress token → pendingCall
	skipped   []string // why upstream features were not served
	// ownSession makes the Proxy end with its one downstream session (HTTP).
	ownSession bool
}

// pendingCall is a tools/call in flight upstream, for offloading its result
// from the wire.
type pendingCall struct {
	ctx context.Context
	req *mcp.CallToolRequest
}

// progressRoute says where an upstream progress notification goes.
type progressRoute struct {
	session *mcp.ServerSession
	token   any
}

// resync coalesces re-listings of one kind of feature.
type resync struct{ again bool }

// New returns a Proxy; Start builds its server, and the upstream is
// connected when the client initializes.
func New(opts Options) (*Proxy, error) {
	if err := opts.Upstream.Validate(); err != nil {
		return nil, err
	}
	if opts.Adapter == nil {
		return nil, errors.New("mcpwrap: no adapter")
	}
	if opts.Upstream.Name == "" {
		opts.Upstream.Name = DefaultName(opts.Upstream)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	header, err := ParseHeaders(opts.Upstream.Headers, lookup)
	if err == nil {
		err = parseHeaderEnv(header, opts.Upstream.HeaderEnv, lookup)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Upstream.describe(), err)
	}
	p := &Proxy{
		opts:      opts,
		log:       opts.Logger.With("server", opts.Upstream.Name),
		adapter:   opts.Adapter,
		tools:     map[string]bool{},
		prompts:   map[string]bool{},
		resources: map[string]bool{},
		templates: map[string]bool{},
		resyncing: map[string]*resync{},
	}
	p.link = &link{up: &p.opts.Upstream, header: header, logger: p.log, now: time.Now, onConnect: p.mirror, newClient: p.newClient, onResult: p.offloadWire}
	return p, nil
}

// DefaultName names an upstream when no name is given: the URL's host or
// the command's base name, skipping launchers such as npx.
func DefaultName(u Upstream) string {
	if u.URL != "" {
		if parsed, err := url.Parse(u.URL); err == nil && parsed.Host != "" {
			return parsed.Host // never the user info, which may hold a password
		}
		return "upstream"
	}
	for _, arg := range u.Command {
		base := arg[strings.LastIndexAny(arg, `/\`)+1:]
		switch strings.TrimSuffix(strings.ToLower(base), ".cmd") {
		case "npx", "uvx", "node", "python", "python3", "uv", "deno", "bun", "bunx", "docker", "cmd", "/c", "-y", "--yes", "run", "-i", "--rm":
			continue
		}
		if strings.HasPrefix(base, "-") {
			continue
		}
		return base
	}
	return "upstream"
}

// newClient makes the client for one upstream connection. It claims
// exactly the capabilities the downstream client declared (sampling,
// elicitation, roots), since it forwards those requests to it: an upstream
// must not offer features that depend on capabilities nobody has.
func (p *Proxy) newClient() *mcp.Client {
	down := p.downCaps.Load()
	if down == nil {
		down = &mcp.ClientCapabilities{}
	}
	opts := &mcp.ClientOptions{
		Logger:                      p.log,
		Capabilities:                &mcp.ClientCapabilities{RootsV2: down.RootsV2, Sampling: down.Sampling, Elicitation: down.Elicitation},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { p.resyncLater("tools") },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { p.resyncLater("prompts") },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { p.resyncLater("resources") },
		ResourceUpdatedHandler:      p.resourceUpdated,
		LoggingMessageHandler:       p.logMessage,
		ProgressNotificationHandler: p.forwardProgress,
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
	}
	if down.Sampling != nil {
		if down.Sampling.Tools != nil {
			opts.CreateMessageWithToolsHandler = p.createMessageWithTools
		} else {
			opts.CreateMessageHandler = p.createMessage
		}
	}
	if down.Elicitation != nil {
		opts.ElicitationHandler = p.elicit
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "ctxkit-wrap", Version: p.opts.Version}, opts)
	p.mu.Lock()
	c.AddRoots(p.roots...)
	p.mu.Unlock()
	return c
}

// Start builds the downstream server. The upstream is connected when the
// first client initializes, so that it can be offered exactly that client's
// capabilities; until it is reachable, the Proxy serves the exploration
// tools and retries the upstream on each call.
func (p *Proxy) Start(ctx context.Context) {
	p.link.life = context.WithoutCancel(ctx)
	p.server = mcp.NewServer(&mcp.Implementation{Name: "ctxkit-wrap/" + p.opts.Upstream.Name, Version: p.opts.Version}, &mcp.ServerOptions{
		Instructions:            p.adapter.Instructions(),
		Logger:                  p.log,
		CompletionHandler:       p.complete,
		SubscribeHandler:        p.subscribe,
		UnsubscribeHandler:      p.unsubscribe,
		InitializedHandler:      func(ctx context.Context, req *mcp.InitializedRequest) { p.syncRoots(ctx, req.Session) },
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) { p.syncRoots(ctx, req.Session) },
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Completions: &mcp.CompletionCapabilities{},
			Logging:     &mcp.LoggingCapabilities{},
		},
	})
	p.adapter.AddTo(p.server)
	p.server.AddReceivingMiddleware(p.middleware)
}

// Server returns the downstream server (after Start).
func (p *Proxy) Server() *mcp.Server { return p.server }

// Run serves one client over t (for example stdio) until it disconnects.
func (p *Proxy) Run(ctx context.Context, t mcp.Transport) error {
	return p.server.Run(ctx, t)
}

// HTTPHandler serves clients over streamable HTTP. Each client session
// gets a Proxy of its own, with its own upstream connection (for a command,
// its own process), ended with the session: one client's sampling,
// elicitation, roots, subscriptions and logs never reach another, and with
// a PerSession adapter neither do its stored results. Idle sessions end
// after sessionTimeout.
func HTTPHandler(ctx context.Context, opts Options) (http.Handler, error) {
	if _, err := New(opts); err != nil { // the options are checked once, up front
		return nil, err
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		p, err := New(opts)
		if err != nil {
			return nil
		}
		p.ownSession = true
		p.Start(ctx)
		return p.server
	}, &mcp.StreamableHTTPOptions{Logger: opts.Logger, SessionTimeout: sessionTimeout}), nil
}

// sessionTimeout ends an HTTP session, and its upstream, after this long
// without a request.
const sessionTimeout = 30 * time.Minute

// Close ends the upstream connection (a stdio server is stopped).
func (p *Proxy) Close() { p.link.close() }
