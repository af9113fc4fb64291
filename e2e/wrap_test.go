package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRestartAfterCrash crashes the stdio upstream (the Go test server's
// exit tool) under the wrapper: the crashed call fails, the wrapper keeps
// serving, later calls start a new upstream process, and while it is down
// the calls fail with an error naming the server.
func TestRestartAfterCrash(t *testing.T) {
	isolate(t)
	ctx := testContext(t)
	cs := mustStart(t, ctx, nil, ctxkitBin, wrapArgs("memory:", []string{"--name", "crashy"}, upstreamBin)...)
	before := texts(call(t, ctx, cs, "pid", nil))

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exit"})
	if err == nil && !res.IsError {
		t.Fatalf("the call that crashed the upstream succeeded: %s", asJSON(t, res))
	}

	var failures []string
	for {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid"})
		if err == nil && !res.IsError {
			if after := texts(res); after == before {
				t.Errorf("pid answered %s before and after the crash: the upstream was not restarted", after)
			}
			break
		}
		msg := texts(res)
		if err != nil {
			msg = err.Error()
		}
		failures = append(failures, msg)
		select {
		case <-ctx.Done():
			t.Fatalf("the upstream was never restarted; the calls failed with: %q", failures)
		case <-time.After(100 * time.Millisecond): // pace the retries; not a bound
		}
	}
	t.Logf("the crashed call: %v %s; %d calls failed before the restart", err, texts(res), len(failures))
	for _, f := range failures {
		if !strings.Contains(f, "crashy") {
			t.Errorf("a call failed while the upstream was down without naming the server: %q", f)
		}
	}
	if got := texts(call(t, ctx, cs, "echo", map[string]any{"text": "back"})); got != "back" {
		t.Errorf("echo after the restart answered %q", got)
	}
}

// TestSharedStore runs two wrappers on one SQLite store: a result stored
// through one of them is read through the other, with result_read_page and
// as the resource ctxkit://results/{id}.
func TestSharedStore(t *testing.T) {
	store := isolate(t)
	ctx := testContext(t)
	first := mustStart(t, ctx, nil, ctxkitBin, wrapArgs(store, []string{"--name", "first"}, upstreamBin)...)
	second := mustStart(t, ctx, nil, ctxkitBin, wrapArgs(store, []string{"--name", "second"}, upstreamBin)...)
	const line = "a line stored through the first wrapper"
	n := parseNotice(t, texts(call(t, ctx, first, "repeat", map[string]any{"text": line, "times": 1000})))
	var page struct {
		Text string `json:"text"`
	}
	callJSON(t, ctx, second, "result_read_page", map[string]any{"workspace_id": n.StoredResult, "page": 1}, &page)
	if !strings.HasPrefix(page.Text, line+"\n"+line+"\n") {
		t.Errorf("page 1 read through the second wrapper starts %.200q, want the stored lines", page.Text)
	}

	// Stored results are resources too.
	uri := "ctxkit://results/" + n.StoredResult
	res, err := second.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) == 0 || !strings.HasPrefix(res.Contents[0].Text, line+"\n") {
		t.Errorf("read %s: %.300s", uri, asJSON(t, res))
	}
}
