// Package upstream is the small MCP server that the end-to-end tests and
// benchmarks put behind `ctxkit wrap` when they need an upstream written in
// Go: over stdio (the e2e-upstream command) for the passthrough benchmark,
// and over streamable HTTP inside a test for the header and cancellation
// tests. Its tools answer deterministically so that a result seen through
// the wrapper can be compared with the same call made directly.
package upstream

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hooks lets a test that runs the server in its own process observe calls
// of the wait tool. Nil fields are not called.
type Hooks struct {
	// WaitStarted is called when a call of the wait tool starts.
	WaitStarted func()
	// WaitCancelled is called when a call of the wait tool sees its
	// context end, which is how a forwarded notifications/cancelled arrives.
	WaitCancelled func(err error)
	// Exit, when set, adds the tool exit, which calls it: the stdio command
	// passes os.Exit so that a test can crash the upstream.
	Exit func(code int)
}

// EchoArgs are the arguments of the echo tool.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"Text to send back."`
}

// RepeatArgs are the arguments of the repeat tool.
type RepeatArgs struct {
	Text  string `json:"text" jsonschema:"Text to repeat."`
	Times int    `json:"times" jsonschema:"How many times, each copy on its own line."`
}

// WaitArgs are the arguments of the tools that take none (wait, pid, exit).
type WaitArgs struct{}

// New returns the server with the tools echo (a small result), repeat (a
// result as large as asked), wait (blocks until the call is cancelled), pid
// (the serving process's id) and, with Hooks.Exit, exit.
func New(h Hooks) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e-upstream", Version: "1.0.0"},
		&mcp.ServerOptions{Instructions: "Test server for ctxkit's end-to-end tests."})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text unchanged."},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "repeat", Description: "Return the text repeated, one copy per line."},
		func(_ context.Context, _ *mcp.CallToolRequest, in RepeatArgs) (*mcp.CallToolResult, any, error) {
			text := strings.Repeat(in.Text+"\n", max(in.Times, 0))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Block until the call is cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ WaitArgs) (*mcp.CallToolResult, any, error) {
			if h.WaitStarted != nil {
				h.WaitStarted()
			}
			<-ctx.Done()
			if h.WaitCancelled != nil {
				h.WaitCancelled(ctx.Err())
			}
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Return the id of the serving process."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ WaitArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	if h.Exit != nil {
		mcp.AddTool(s, &mcp.Tool{Name: "exit", Description: "Exit the serving process at once (a crash)."},
			func(_ context.Context, _ *mcp.CallToolRequest, _ WaitArgs) (*mcp.CallToolResult, any, error) {
				h.Exit(3)
				return nil, nil, errors.New("exit returned")
			})
	}
	return s
}
