package guard_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestMetrics: /metrics counts requests and compactions, the tokens
// evicted (as the report says), upstream latency per backend and
// endpoint, and upstream failures, in Prometheus' text format.
func TestMetrics(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu)})
	_, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": agentHistory(12, 300, false)})
	var out struct {
		Ctxkit guard.Report `json:"ctxkit"`
	}
	if err := json.Unmarshal(body, &out); err != nil || !out.Ctxkit.Compacted {
		t.Fatalf("not compacted: %v %s", err, body)
	}

	dead := newGuard(t, guard.Options{Ollama: "http://127.0.0.1:1"})
	if resp, _ := postJSON(t, dead+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": "hi"}}}); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("dead upstream: %d", resp.StatusCode)
	}

	for _, tc := range []struct {
		gw   string
		want []string
	}{
		{gw, []string{
			"ctxkit_guard_requests_total 1\n",
			"ctxkit_guard_compactions_total 1\n",
			fmt.Sprintf("ctxkit_guard_evicted_tokens_total{backend=\"ollama\"} %d\n", out.Ctxkit.EvictedTokens),
			`ctxkit_guard_upstream_seconds_count{backend="ollama",endpoint="/api/chat"} 1` + "\n",
			"# TYPE ctxkit_guard_upstream_seconds histogram\n",
			"go_goroutines ",
		}},
		{dead, []string{
			`ctxkit_guard_upstream_failures_total{backend="ollama"} `,
			"ctxkit_guard_compactions_total 0\n",
		}},
	} {
		resp, err := http.Get(tc.gw + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("content type %q", ct)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(text), w) {
				t.Errorf("metrics lack %q:\n%s", w, text)
			}
		}
	}
}

// TestMetricsOfFeatures: recall, the summarizer and the arbiter add their
// counters when they are on.
func TestMetricsOfFeatures(t *testing.T) {
	oll, lcpp := serve(t, llmemu.NewOllama(llmemu.OllamaOptions{})), serve(t, llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{}))
	gw := newGuard(t, guard.Options{Ollama: oll, LlamaCpp: lcpp, Recall: true, Summarize: true, Arbitrate: true})
	resp, err := http.Get(gw + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"recall_rounds_total", "summarizer_calls_total", "summarizer_cache_hits_total", "summarizer_failures_total",
		"runtime_switches_total", "runtime_queued_total", "runtime_timeouts_total", "runtime_switch_failures_total"} {
		if !strings.Contains(string(text), "\nctxkit_guard_"+name+" 0\n") {
			t.Errorf("no %s", name)
		}
	}
}
