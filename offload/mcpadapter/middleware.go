package mcpadapter

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Install makes s offload its large results: it registers the exploration
// tools and the stored-results resource template, and adds Middleware. Add
// a.Instructions() to the server's instructions as well, so the model knows
// what a notice is.
func (a *Adapter) Install(s *mcp.Server) {
	a.AddTo(s)
	s.AddReceivingMiddleware(a.Middleware())
}

// Middleware returns receiving middleware that offloads large tools/call
// results and widens the output schemas announced by tools/list, so that
// offloaded results still validate (see WidenOutputSchema).
func (a *Adapter) Middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			switch r := res.(type) {
			case *mcp.CallToolResult:
				call, _ := req.(*mcp.CallToolRequest)
				return a.Offload(ctx, call, r), nil
			case *mcp.ListToolsResult:
				return a.widenList(r), nil
			}
			return res, nil
		}
	}
}

// widenList returns a copy of r in which every tool that may be offloaded
// announces a widened output schema. The server's own tools are not touched.
func (a *Adapter) widenList(r *mcp.ListToolsResult) *mcp.ListToolsResult {
	out := *r
	out.Tools = make([]*mcp.Tool, len(r.Tools))
	for i, t := range r.Tools {
		out.Tools[i] = a.Announce(t)
	}
	return &out
}

// Announce returns the tool as it should be listed to clients: unchanged
// unless it declares an output schema, which is then widened. A schema that
// cannot be widened is announced as it is, and offloaded results of that
// tool may not validate against it; the failure is logged.
func (a *Adapter) Announce(t *mcp.Tool) *mcp.Tool {
	if t == nil || t.OutputSchema == nil || a.names[t.Name] {
		return t
	}
	widened, err := WidenOutputSchema(t.OutputSchema)
	if err != nil {
		a.opts.Logger.Warn("output schema kept as announced", "tool", t.Name, "err", err)
		return t
	}
	c := *t
	c.OutputSchema = widened
	return &c
}
