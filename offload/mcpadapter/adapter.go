// Package mcpadapter connects the offload engine to MCP servers built on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk). It is used twice:
// by `ctxkit wrap`, which proxies any MCP server, and by Go programs that
// serve MCP themselves and want their large results offloaded without
// changing their tools (Middleware).
//
// A tool result is offloaded when its text — every text block, the text of
// embedded text resources, and the structured content serialised as JSON —
// is longer than the threshold. What is stored is the text the model would
// have read (one block as it is, several as a JSON list when each is JSON,
// else joined by blank lines), except that JSON text gives way to the
// structured content, which holds the same data. The model gets the notice as text; images,
// audio, resource links and binary resources pass through; error results are
// never offloaded.
//
// Tools that declare an outputSchema must keep returning structured content
// that validates against what tools/list announced. The adapter therefore
// announces such schemas widened to "the original, or a notice"
// (WidenOutputSchema) and returns the notice object as the structured
// content of an offloaded result. A client that validates sees a valid
// result, and one that reads structured content sees where the data went.
package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/offload"
)

// DefaultThreshold is the number of chars above which a result is stored.
const DefaultThreshold = 8000

// ResultURITemplate is the URI template under which stored results are
// readable as MCP resources.
const ResultURITemplate = "ctxkit://results/{id}"

const resultURIPrefix = "ctxkit://results/"

// maxResultSizeMeta tells Claude Code how large an exploration tool's output
// may be before the client persists it to a file itself; the engine caps
// outputs far below this, so pages are never persisted twice.
const maxResultSizeMeta = "anthropic/maxResultSizeChars"

// Options configure an Adapter.
type Options struct {
	// Threshold is the text size, in chars, above which a result is stored;
	// 0 means DefaultThreshold.
	Threshold int
	// Server names the server whose results are stored; it is kept in each
	// workspace's metadata under "server" (ctxkit offload ls shows it).
	Server string
	// PerSession makes stored results private to the MCP session that
	// produced them (offload.WithPrivateSession): a client sees neither
	// another's results nor those stored outside any session. Sessions
	// without an id (stdio) share their results.
	PerSession bool
	// Logger receives failures to store a result; nil discards them.
	Logger *slog.Logger
}

// Adapter offloads MCP tool results into an offload.Engine and serves the
// exploration tools over MCP.
type Adapter struct {
	engine *offload.Engine
	opts   Options
	// names holds the exploration tools' names, which are never offloaded.
	names map[string]bool
}

// New returns an Adapter storing into e.
func New(e *offload.Engine, opts Options) *Adapter {
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultThreshold
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Adapter{engine: e, opts: opts, names: map[string]bool{}}
	for _, t := range e.Tools() {
		a.names[t.Name] = true
	}
	return a
}

// Engine returns the engine results are stored in.
func (a *Adapter) Engine() *offload.Engine { return a.engine }

// IsExplorationTool reports whether name is one of the adapter's tools.
func (a *Adapter) IsExplorationTool(name string) bool { return a.names[name] }

// Instructions is the line a server adds to its instructions so the model
// knows what a notice is and which tools explore it.
func (a *Adapter) Instructions() string {
	return fmt.Sprintf("Tool results over %d chars are stored by ctxkit and replaced by a notice naming a stored_result id; "+
		"explore them with the result_* tools (result_search, result_pipe, result_paginate, result_search_in_text, result_read_page) instead of calling the tool again.",
		a.opts.Threshold)
}

// Tools returns the exploration tools as MCP tools, for servers that list
// them themselves.
func (a *Adapter) Tools() []*mcp.Tool {
	var out []*mcp.Tool
	for _, t := range a.engine.Tools() {
		out = append(out, &mcp.Tool{
			Name:        t.Name,
			Description: t.Description,
			InputSchema: t.InputSchema,
			Meta:        mcp.Meta{maxResultSizeMeta: 500000},
		})
	}
	return out
}

// AddTo registers the exploration tools and the stored-results resource
// template on s.
func (a *Adapter) AddTo(s *mcp.Server) {
	for _, t := range a.Tools() {
		s.AddTool(t, a.CallExplorationTool)
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "stored_result",
		Title:       "Stored tool result",
		Description: "A large tool result stored by ctxkit, in its original form. The id is the stored_result of a notice.",
		URITemplate: ResultURITemplate,
	}, a.ReadResult)
}

// CallExplorationTool runs one exploration tool for an MCP client.
func (a *Adapter) CallExplorationTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args json.RawMessage
	if req.Params != nil {
		args = req.Params.Arguments
	}
	r := a.engine.Dispatch(a.sessionContext(ctx, req), req.Params.Name, args)
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: string(r.Output)}},
		IsError: r.IsError,
	}, nil
}

// ReadResult serves resources/read for ctxkit://results/{id}: the stored
// result's original bytes.
func (a *Adapter) ReadResult(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, resultURIPrefix)
	if !ok || id == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ctx = a.sessionContext(ctx, req)
	ws, raw, err := a.engine.Raw(ctx, id)
	var te *offload.ToolError
	if errors.As(err, &te) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	mime := "text/plain"
	if ws.Shape != "text" {
		mime = "application/json"
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: string(raw)}}}, nil
}

// sessionContext puts the MCP session into ctx as the offload session when
// results are per session.
func (a *Adapter) sessionContext(ctx context.Context, req mcp.Request) context.Context {
	if !a.opts.PerSession || req == nil {
		return ctx
	}
	if s, ok := req.GetSession().(*mcp.ServerSession); ok && s != nil && s.ID() != "" {
		return offload.WithPrivateSession(ctx, s.ID())
	}
	return ctx
}

// Offload returns res unchanged when it is an error or its text is within
// the threshold; otherwise it stores the result and returns a result that
// holds the notice in its place. req describes the call, so an expired
// result can say what to re-run. If storing fails, the original result is
// returned and the failure logged: losing the offload must never lose the
// result.
func (a *Adapter) Offload(ctx context.Context, req *mcp.CallToolRequest, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil || res.IsError || res.NeedsInput() {
		return res
	}
	if tool, _ := callInfo(req); a.names[tool] {
		return res
	}
	data, size := payload(res)
	if size <= a.opts.Threshold {
		return res
	}
	n, err := a.store(ctx, req, data, size)
	if err != nil {
		return res
	}
	out := &mcp.CallToolResult{Meta: res.Meta, Content: []mcp.Content{&mcp.TextContent{Text: n.String()}}}
	for _, c := range res.Content {
		if !isText(c) {
			out.Content = append(out.Content, c)
		}
	}
	if res.StructuredContent != nil {
		out.StructuredContent = n
	}
	return out
}

func callInfo(req *mcp.CallToolRequest) (tool string, args json.RawMessage) {
	if req != nil && req.Params != nil {
		return req.Params.Name, req.Params.Arguments
	}
	return "", nil
}

// store keeps data, the payload of the call req, and returns its notice.
// data is always a copy made for storing, so it is handed over.
func (a *Adapter) store(ctx context.Context, req *mcp.CallToolRequest, data []byte, chars int) (*offload.Notice, error) {
	tool, args := callInfo(req)
	opts := offload.PutOptions{Producer: tool, Args: args, Owned: true}
	if a.opts.Server != "" {
		opts.Meta = map[string]any{"server": a.opts.Server}
	}
	n, err := a.engine.Put(a.sessionContext(ctx, req), data, opts)
	if err != nil {
		a.opts.Logger.Warn("store large tool result; passing it through", "tool", tool, "chars", chars, "err", err)
		return nil, err
	}
	return n, nil
}

// payload returns what to store for res and the size that decides whether
// to: all text plus the structured content.
func payload(res *mcp.CallToolResult) (data []byte, chars int) {
	var texts [][]byte
	for _, c := range res.Content {
		if t, ok := textOf(c); ok {
			texts = append(texts, []byte(t))
			chars += utf8.RuneCountInString(t)
		}
	}
	var structured []byte
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			structured = b
			chars += utf8.RuneCount(b)
		}
	}
	return choosePayload(texts, structured), chars
}

// choosePayload picks what to store of a result: the text the model would
// have read, unless that text is JSON (usually the structured content
// serialised) or absent and there is structured content, which then holds
// the same data in its better shape. A file server's {"content": <file>}
// thus stores the file as text, to be searched and paged.
func choosePayload(texts [][]byte, structured []byte) []byte {
	text := joinTexts(texts)
	if structured == nil || (len(texts) > 0 && !json.Valid(text)) {
		return text
	}
	return structured
}

// joinTexts makes one payload of a result's text blocks: one block as it
// is, several as a JSON list when each is JSON, else joined by blank lines.
func joinTexts(texts [][]byte) []byte {
	switch {
	case len(texts) == 1:
		return texts[0]
	case allJSON(texts):
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i, t := range texts {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(bytes.TrimSpace(t))
		}
		buf.WriteByte(']')
		return buf.Bytes()
	default:
		return bytes.Join(texts, []byte("\n\n"))
	}
}

func allJSON(texts [][]byte) bool {
	for _, t := range texts {
		t = bytes.TrimSpace(t)
		if len(t) == 0 || (t[0] != '{' && t[0] != '[') || !json.Valid(t) {
			return false
		}
	}
	return len(texts) > 0
}

// textOf returns the text a content block puts into the context: a text
// block's text, or an embedded text resource's text.
func textOf(c mcp.Content) (string, bool) {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text, true
	case *mcp.EmbeddedResource:
		if c.Resource != nil && c.Resource.Blob == nil {
			return c.Resource.Text, true
		}
	}
	return "", false
}

func isText(c mcp.Content) bool {
	_, ok := textOf(c)
	return ok
}
