// Command wrapbench measures `ctxkit wrap` as a whole process, for
// BENCHMARKS.md: the latency a passthrough call gains through the wrapper
// (p50 and p99 over -n calls, against calling the upstream directly), calls
// per second through the wrapper with several callers, and the time and the
// wrapper's peak RSS to offload one large result.
//
// The upstream is this same program run with -upstream: a stdio MCP server
// with an echo tool and a blob tool that returns -mb megabytes of text; with
// -http, the same server over streamable HTTP, run inside this program.
//
//	go build -o /tmp/ctxkit ./cmd/ctxkit && go run ./bench/wrapbench -ctxkit /tmp/ctxkit
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/bench/internal/harness"
	"github.com/ctxkit/ctxkit/internal/benchdata"
)

func main() {
	upstream := flag.Bool("upstream", false, "serve the benchmark's upstream MCP server on stdio")
	ctxkit := flag.String("ctxkit", "", "path to the ctxkit binary to measure")
	n := flag.Int("n", 1000, "passthrough calls per measurement")
	callers := flag.Int("callers", 4, "concurrent callers for the throughput figure")
	mb := flag.Int("mb", 50, "size of the large result, in MB")
	storeSpec := flag.String("store", "", "the wrapper's --store (default: a new SQLite file)")
	overHTTP := flag.Bool("http", false, "serve the upstream over streamable HTTP (in this process) instead of stdio")
	flag.Parse()
	ctx := context.Background()
	if *upstream {
		serve(ctx, *mb)
		return
	}
	if *ctxkit == "" {
		log.Fatal("give -ctxkit PATH")
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	up := []string{"--", self, "-upstream", "-mb", fmt.Sprint(*mb)}
	work, err := os.MkdirTemp("", "wrapbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)

	var direct *mcp.ClientSession
	if *overHTTP {
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstreamServer(*mb) }, nil))
		defer srv.Close()
		direct, err = mcp.NewClient(&mcp.Implementation{Name: "wrapbench"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxEventSize: 256 << 20}, nil)
		if err != nil {
			log.Fatal(err)
		}
		up = []string{srv.URL}
	} else {
		direct, _ = connect(ctx, up[1:])
	}
	if *storeSpec == "" {
		*storeSpec = filepath.Join(work, "ctxkit.db")
	}
	wrapArgs := append([]string{*ctxkit, "wrap", "--store", *storeSpec, "--log-file", filepath.Join(work, "wrap.log")}, up...)
	wrapped, wrapper := connect(ctx, wrapArgs)

	// Warm both paths before measuring.
	latencies(ctx, direct, 50)
	latencies(ctx, wrapped, 50)
	d := latencies(ctx, direct, *n)
	w := latencies(ctx, wrapped, *n)
	fmt.Printf("passthrough over %d calls: direct p50 %s p99 %s; wrapped p50 %s p99 %s; added p50 %s p99 %s\n",
		*n, pct(d, 50), pct(d, 99), pct(w, 50), pct(w, 99), pct(w, 50)-pct(d, 50), pct(w, 99)-pct(d, 99))

	for _, c := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"direct", direct}, {"wrapped", wrapped}} {
		fmt.Printf("throughput %s, %d callers: %.0f calls/s\n", c.name, *callers, throughput(ctx, c.cs, *callers, *n*2))
	}

	before := harness.PeakRSS(wrapper.Pid)
	start := time.Now()
	res, err := wrapped.CallTool(ctx, &mcp.CallToolParams{Name: "blob", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		log.Fatalf("blob through the wrapper: %v %v", err, res)
	}
	elapsed := time.Since(start)
	notice := res.Content[0].(*mcp.TextContent).Text
	fmt.Printf("offload %d MB: %s (notice %d chars); wrapper peak RSS %d MB before, %d MB after\n",
		*mb, elapsed.Round(time.Millisecond), len(notice), before>>20, harness.PeakRSS(wrapper.Pid)>>20)
	_ = direct.Close()
	_ = wrapped.Close()
}

// connect starts args as a stdio MCP server and returns the session and the
// server's process.
func connect(ctx context.Context, args []string) (*mcp.ClientSession, *os.Process) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "wrapbench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		log.Fatalf("connect %s: %v", strings.Join(args, " "), err)
	}
	return cs, cmd.Process
}

func latencies(ctx context.Context, cs *mcp.ClientSession, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		start := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}}); err != nil {
			log.Fatal(err)
		}
		out[i] = time.Since(start)
	}
	slices.Sort(out)
	return out
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100].Round(time.Microsecond)
}

func throughput(ctx context.Context, cs *mcp.ClientSession, callers, calls int) float64 {
	var wg sync.WaitGroup
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for range calls / callers {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}}); err != nil {
					log.Fatal(err)
				}
			}
		})
	}
	wg.Wait()
	return float64(calls/callers*callers) / time.Since(start).Seconds()
}

type echoArgs struct {
	Text string `json:"text"`
}

func serve(ctx context.Context, mb int) {
	if err := upstreamServer(mb).Run(ctx, &mcp.StdioTransport{MaxLineLength: -1}); err != nil {
		log.Fatal(err)
	}
}

// upstreamServer is the benchmark's upstream: echo, and blob (mb MB of text).
func upstreamServer(mb int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "wrapbench-upstream"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "blob"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		var b strings.Builder
		if err := benchdata.WriteText(&b, mb<<20); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil, nil
	})
	return s
}
