// Command e2e-upstream serves package upstream's test server over stdio, as
// the Go upstream of the end-to-end benchmarks and of the restart and
// shared-store tests (its exit tool crashes it).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/ctxkit/ctxkit/e2e/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := upstream.New(upstream.Hooks{Exit: os.Exit}).Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "e2e-upstream:", err)
		os.Exit(1)
	}
}
