// Command mcpserver is an MCP server, written with the official Go SDK, whose
// large tool results are offloaded by ctxkit's middleware
// (offload/mcpadapter): its list_issues tool returns all 400 issues of
// examples/data/issues.json (about 170 KB), and clients get a notice plus the
// result_* tools to search, filter and group the stored issues instead.
//
// It serves MCP on stdio, so any client can run it; from the repository root:
//
//	go run ./examples/mcpserver
//
// or, to see it answer once, with -demo: it connects a client in memory,
// calls list_issues, then counts the open issues per team with result_pipe.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/mcpadapter"
	"github.com/ctxkit/ctxkit/store/memstore"
)

func main() {
	data := flag.String("data", "examples/data/issues.json", "the issues to serve")
	demo := flag.Bool("demo", false, "call the server once from an in-memory client and print what the model would see")
	flag.Parse()
	issues, err := os.ReadFile(*data)
	if err != nil {
		log.Fatal(err)
	}
	server := newServer(issues)
	ctx := context.Background()
	if *demo {
		if err := runDemo(ctx, server, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// newServer builds the MCP server with offloading installed. A real server
// would keep the store in a SQLite file (store/sqlitestore) to share it
// across processes; memory is enough here.
func newServer(issues []byte) *mcp.Server {
	engine := offload.New(memstore.New(memstore.Options{}))
	adapter := mcpadapter.New(engine, mcpadapter.Options{Server: "issues"})
	server := mcp.NewServer(&mcp.Implementation{Name: "issues"}, &mcp.ServerOptions{
		Instructions: "Issues of the tracker. " + adapter.Instructions(),
	})
	mcp.AddTool(server, &mcp.Tool{Name: "list_issues", Description: "Every issue of the tracker, as JSON."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(issues)}}}, nil, nil
		})
	adapter.Install(server)
	return server
}

func runDemo(ctx context.Context, server *mcp.Server, out io.Writer) error {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "demo"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_issues"})
	if err != nil {
		return err
	}
	notice := res.Content[0].(*mcp.TextContent).Text
	fmt.Fprintf(out, "list_issues gave the model %d chars:\n%s\n\n", len(notice), notice)
	var n struct {
		StoredResult string `json:"stored_result"`
	}
	if err := json.Unmarshal([]byte(notice), &n); err != nil {
		return fmt.Errorf("read the notice: %w", err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "result_pipe", Arguments: map[string]any{
		"workspace_id": n.StoredResult,
		"steps": []any{
			map[string]any{"filter": map[string]any{"state": "open"}},
			map[string]any{"group_by": map[string]any{"field": "author.team", "metrics": map[string]any{"open": "count"}}},
			map[string]any{"sort": map[string]any{"field": "open", "order": "desc"}},
		},
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "result_pipe (open issues per team):\n%s\n", res.Content[0].(*mcp.TextContent).Text)
	return nil
}
