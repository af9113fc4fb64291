package guard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// latencies runs b.N requests made by do and reports p50 and p99.
func latencies(b *testing.B, do func()) {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		do()
		d = append(d, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

func benchPost(b *testing.B, client *http.Client, url string, body []byte) func() {
	return func() {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func benchGuard(b *testing.B, opts guard.Options) string {
	opts.Engine = offload.New(memstore.New(memstore.Options{}))
	g, err := guard.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(g)
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkPassthrough compares a small chat that fits (parsed, counted,
// sent unchanged, report injected) and a passed-through endpoint, through
// the guard and directly to the Ollama emulator.
func BenchmarkPassthrough(b *testing.B) {
	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{Preload: true}))
	defer emu.Close()
	gw := benchGuard(b, guard.Options{Ollama: emu.URL})
	chat, _ := json.Marshal(msg{"model": "llama3.2", "stream": false, "messages": agentHistory(3, 20, false)})
	stream, _ := json.Marshal(msg{"model": "llama3.2", "messages": agentHistory(3, 20, false)})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, tc := range []struct {
		name, path string
		body       []byte
	}{{"chat", "/api/chat", chat}, {"chat-stream", "/api/chat", stream}, {"show", "/api/show", []byte(`{"model":"llama3.2"}`)}} {
		for _, target := range []struct{ name, url string }{{"direct", emu.URL}, {"guard", gw}} {
			b.Run(tc.name+"/"+target.name, func(b *testing.B) {
				b.ReportAllocs()
				latencies(b, benchPost(b, client, target.url+tc.path, tc.body))
			})
		}
	}
}

// BenchmarkTimeToFirstByte measures, for a streamed chat, the time to the
// first NDJSON line through the guard and directly.
func BenchmarkTimeToFirstByte(b *testing.B) {
	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{Preload: true}))
	defer emu.Close()
	gw := benchGuard(b, guard.Options{Ollama: emu.URL})
	body, _ := json.Marshal(msg{"model": "llama3.2", "messages": agentHistory(3, 20, false)})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, target := range []struct{ name, url string }{{"direct", emu.URL}, {"guard", gw}} {
		b.Run(target.name, func(b *testing.B) {
			b.ReportAllocs()
			d := make([]time.Duration, 0, b.N)
			for range b.N {
				t := time.Now()
				resp, err := client.Post(target.url+"/api/chat", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := bufio.NewReader(resp.Body).ReadBytes('\n'); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2].Microseconds()), "ttfb-p50-µs")
			b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "ttfb-p99-µs")
		})
	}
}

// BenchmarkCompactThroughProxy sends a 400-message agent history of about
// 160k tokens to a 64k window through the guard (the emulator renders
// and tokenizes only what is kept), against the same compacted request
// sent directly.
func BenchmarkCompactThroughProxy(b *testing.B) {
	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{}))
	defer emu.Close()
	gw := benchGuard(b, guard.Options{Ollama: emu.URL})
	msgs := agentHistory(199, 60, false)
	for i := range msgs {
		if c, ok := msgs[i]["content"].(string); ok && strings.HasPrefix(c, "file ") {
			msgs[i]["content"] = c + strings.Repeat(fmt.Sprintf(" line %d of output;", i), 60)
		}
	}
	body, _ := json.Marshal(msg{"model": "llama3.2", "stream": false, "options": msg{"num_ctx": 65536}, "messages": msgs})
	client := &http.Client{}
	resp, err := client.Post(gw+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	var out struct {
		Ctxkit guard.Report `json:"ctxkit"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	b.Logf("tokens before %d, after %d, budget %d, %d bytes", out.Ctxkit.TokensBefore, out.Ctxkit.TokensAfter, out.Ctxkit.Budget, len(body))
	b.Run("guard", func(b *testing.B) {
		b.ReportAllocs()
		latencies(b, benchPost(b, client, gw+"/api/chat", body))
	})
}
