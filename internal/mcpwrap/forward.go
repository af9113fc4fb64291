//lint:file-ignore SA1019 a proxy forwards the features its client and upstream still use, deprecated ones (sampling, roots, logging) included

package mcpwrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// middleware handles what the per-feature handlers cannot: calls to tools
// the wrapper does not know (the upstream may be down, or may have gained
// the tool since the last listing), and logging levels, which it forwards.
func (p *Proxy) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "initialize" || method == "server/discover" {
			return p.initialize(ctx, method, req, next)
		}
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			if name := r.Params.Name; !p.adapter.IsExplorationTool(name) && !p.hasTool(name) {
				if _, err := p.link.session(ctx); err != nil {
					return toolError(fmt.Sprintf("%v. The tool %q cannot be called until the server is available; it is retried on the next call.", err, name)), nil
				}
			}
		}
		if params, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" {
			if cs, _ := p.link.status(); cs != nil && hasLogging(cs) {
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: params.Level}); err != nil {
					p.log.Warn("forward logging level", "err", err)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// initialize connects the upstream when the first client introduces itself,
// with that client's capabilities, and puts the upstream's instructions
// (and what of the upstream was not served) before the wrapper's in the
// answer. It waits at most initWait for the upstream, since clients time
// initialize out; a slower upstream (an OAuth sign-in, a first npx
// download) is connected in the background and its tools arrive with
// list_changed.
func (p *Proxy) initialize(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	var caps *mcp.ClientCapabilities
	if params, ok := req.GetParams().(*mcp.InitializeParams); ok && params != nil {
		caps = params.Capabilities
	} else if r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		caps = r.ClientCapabilities()
	}
	if caps == nil {
		// A discovery probe that says nothing about the client (one that
		// falls back to initialize does this): answer it without starting
		// the upstream with capabilities that may be wrong.
		return next(ctx, method, req)
	}
	if p.downCaps.CompareAndSwap(nil, caps) && p.ownSession {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			go func() {
				_ = ss.Wait()
				p.Close()
			}()
		}
	}
	connected := make(chan *mcp.ClientSession, 1)
	go func() {
		cs, err := p.link.session(p.link.life)
		if err != nil {
			p.log.Error("upstream not available; retrying on the next call", "err", err)
		}
		connected <- cs
	}()
	var cs *mcp.ClientSession
	select {
	case cs = <-connected:
	case <-time.After(initWait):
		p.log.Warn("the upstream is slow to start; answering without it for now")
	case <-ctx.Done():
	}
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	var parts []string
	if cs != nil {
		if ir := cs.InitializeResult(); ir != nil && strings.TrimSpace(ir.Instructions) != "" {
			parts = append(parts, strings.TrimSpace(ir.Instructions))
		}
	}
	if skipped := p.skippedNote(); skipped != "" {
		parts = append(parts, skipped)
	}
	if len(parts) == 0 {
		return res, nil
	}
	prefix := strings.Join(parts, "\n\n") + "\n\n"
	switch r := res.(type) {
	case *mcp.InitializeResult:
		r.Instructions = prefix + r.Instructions
	case *mcp.DiscoverResult:
		r.Instructions = prefix + r.Instructions
	}
	return res, nil
}

// initWait bounds how long initialize waits for the upstream.
const initWait = 10 * time.Second

func hasLogging(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil
}

func (p *Proxy) hasTool(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tools[name]
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// callTool forwards a tool call upstream and offloads a large result. Input
// requests (sampling, elicitation, roots in the multi-round-trip form) pass
// through both ways, so each side's SDK speaks its own protocol era. Only
// the progress token crosses from the client's _meta (rewritten, since
// tokens of different clients may collide), and only the result's content,
// structured content, error flag and non-protocol _meta come back.
func (p *Proxy) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cs, err := p.link.session(ctx)
	if err != nil {
		return toolError(err.Error()), nil
	}
	params := &mcp.CallToolParams{
		Name:           req.Params.Name,
		Arguments:      req.Params.Arguments,
		InputResponses: req.Params.InputResponses,
		RequestState:   req.Params.RequestState,
	}
	// Every call carries a token of ours: it routes the client's progress
	// back and identifies the call when its result is offloaded from the wire.
	up := fmt.Sprintf("%s%d", tokenPrefix, p.nextToken.Add(1))
	params.SetProgressToken(up)
	p.calls.Store(up, pendingCall{ctx: ctx, req: req})
	defer p.calls.Delete(up)
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		p.progress.Store(up, progressRoute{session: req.Session, token: tok})
		// A notification sent just before the result may be handled just
		// after it; keep the route a little longer.
		defer time.AfterFunc(progressGrace, func() { p.progress.Delete(up) })
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil || isServerError(err) {
			return nil, p.opts.Upstream.scrub(err)
		}
		return toolError(fmt.Sprintf("%s: %v", p.opts.Upstream.describe(), p.opts.Upstream.scrub(err))), nil
	}
	if res.NeedsInput() {
		// The upstream asks the client for input (SEP-2322): pass the
		// requests down; the client retries with its answers, which go up.
		return &mcp.CallToolResult{InputRequests: res.InputRequests, RequestState: res.RequestState}, nil
	}
	out := &mcp.CallToolResult{
		Meta:              ownMeta(res.Meta),
		Content:           res.Content,
		StructuredContent: res.StructuredContent,
		IsError:           res.IsError,
	}
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	return p.adapter.Offload(ctx, req, out), nil
}

// isServerError reports whether err is the upstream's own JSON-RPC error
// (such as an unknown tool), which goes to the client as it is, rather than
// a failure to reach the upstream, which becomes a tool error naming it.
// The SDK reports transport failures as JSON-RPC errors too, with codes of
// the implementation-defined range.
func isServerError(err error) bool {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		return false
	}
	return rpcErr.Code > -32000 || rpcErr.Code < -32099
}

// tokenPrefix starts the progress tokens the wrapper sends upstream.
const tokenPrefix = "ctxkit-"

// progressGrace is how long a call's progress route outlives the call.
const progressGrace = 5 * time.Second

// offloadWire prepares a large tools/call result for offloading before the
// SDK decodes it (see resultHook).
func (p *Proxy) offloadWire(token string, result []byte) func() []byte {
	v, ok := p.calls.Load(token)
	if !ok {
		return nil
	}
	call := v.(pendingCall)
	pending := p.adapter.PrepareJSON(call.req, result)
	if pending == nil {
		return nil
	}
	return func() []byte {
		out, err := pending.Store(call.ctx)
		if err != nil {
			p.log.Warn("store large tool result; passing it through", "tool", call.req.Params.Name, "err", err)
		}
		return out
	}
}

// ownMeta drops the protocol's reserved _meta keys (the upstream's server
// info, protocol version and the like), which are not the upstream's to
// send the client through a proxy.
func ownMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if reservedMetaKey(k) {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// reservedMetaKey reports whether a _meta key belongs to the protocol: its
// prefix (before the slash) has a label "modelcontextprotocol" or "mcp", as
// in io.modelcontextprotocol/ or mcp.dev/.
func reservedMetaKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for label := range strings.SplitSeq(prefix, ".") {
		if label == "modelcontextprotocol" || label == "mcp" {
			return true
		}
	}
	return false
}

func (p *Proxy) forwardProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	key, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := p.progress.Load(key)
	if !ok {
		return
	}
	route := v.(progressRoute)
	params := *req.Params
	params.Meta = nil
	params.ProgressToken = route.token
	if err := route.session.NotifyProgress(ctx, &params); err != nil {
		p.log.Debug("forward progress", "err", err)
	}
}

func (p *Proxy) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	cs, err := p.link.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{Description: res.Description, Messages: res.Messages, Meta: ownMeta(res.Meta)}, nil
}

func (p *Proxy) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	cs, err := p.link.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: res.Contents, Meta: ownMeta(res.Meta)}, nil
}

func (p *Proxy) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	cs, err := p.link.session(ctx)
	if err != nil {
		return nil, err
	}
	params := *req.Params
	params.Meta = nil
	res, err := cs.Complete(ctx, &params)
	if err != nil {
		return nil, err
	}
	return &mcp.CompleteResult{Completion: res.Completion, Meta: ownMeta(res.Meta)}, nil
}

func (p *Proxy) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	cs, err := p.link.session(ctx)
	if err != nil {
		return err
	}
	return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: req.Params.URI})
}

func (p *Proxy) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	cs, err := p.link.session(ctx)
	if err != nil {
		return err
	}
	return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: req.Params.URI})
}

func (p *Proxy) resourceUpdated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if p.server == nil {
		return
	}
	if err := p.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: req.Params.URI}); err != nil {
		p.log.Debug("forward resource update", "err", err)
	}
}

func (p *Proxy) logMessage(ctx context.Context, req *mcp.LoggingMessageRequest) {
	if p.server == nil {
		return
	}
	params := *req.Params
	params.Meta = nil
	for ss := range p.server.Sessions() {
		_ = ss.Log(ctx, &params)
	}
}

// caller returns the downstream session that should answer an upstream
// request: a Proxy serves one client (stdio, or one HTTP session).
func (p *Proxy) caller() (*mcp.ServerSession, error) {
	if p.server != nil {
		for ss := range p.server.Sessions() {
			return ss, nil
		}
	}
	return nil, errors.New("no client is connected")
}

func clientCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
		return ip.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

// The upstream's requests for the client are forwarded as they are; the
// handlers exist only when the client declared the capability (newClient).

func (p *Proxy) createMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ss, err := p.caller()
	if err != nil {
		return nil, err
	}
	params := *req.Params
	params.Meta = nil
	return ss.CreateMessage(ctx, &params)
}

func (p *Proxy) createMessageWithTools(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	ss, err := p.caller()
	if err != nil {
		return nil, err
	}
	params := *req.Params
	params.Meta = nil
	return ss.CreateMessageWithTools(ctx, &params)
}

func (p *Proxy) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ss, err := p.caller()
	if err != nil {
		return nil, err
	}
	params := *req.Params
	params.Meta = nil
	return ss.Elicit(ctx, &params)
}

// syncRoots gives the upstream the client's roots, when the client has them.
func (p *Proxy) syncRoots(ctx context.Context, ss *mcp.ServerSession) {
	if ss == nil || clientCaps(ss).RootsV2 == nil {
		return
	}
	go func() {
		res, err := ss.ListRoots(context.WithoutCancel(ctx), nil)
		if err != nil {
			p.log.Debug("list the client's roots", "err", err)
			return
		}
		p.mu.Lock()
		old := p.roots
		p.roots = res.Roots
		p.mu.Unlock()
		if c := p.link.currentClient(); c != nil {
			var uris []string
			for _, r := range old {
				uris = append(uris, r.URI)
			}
			c.RemoveRoots(uris...)
			c.AddRoots(res.Roots...)
		}
	}()
}
