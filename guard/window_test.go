package guard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestWindowPerRequest: the window is the one Ollama will run this request
// in, not the last load /api/ps shows (issue 19, defect 2).
func TestWindowPerRequest(t *testing.T) {
	history := agentHistory(12, 300, true) // over 4096 tokens, under 8192
	for _, tc := range []struct {
		name    string
		emu     llmemu.OllamaOptions
		preload msg // sent straight to Ollama first
		options msg // the request's options
		window  int
		source  string
	}{
		{"loaded larger by another request's num_ctx", llmemu.OllamaOptions{NumCtx: 4096}, msg{"num_ctx": 8192}, nil, 4096, "server default (configured)"},
		{"num_ctx above the trained context", llmemu.OllamaOptions{NumCtx: 4096, TrainedContext: 2048}, nil, msg{"num_ctx": 16384}, 2048, "request options.num_ctx, capped at the trained context (/api/show)"},
		{"the request's num_ctx", llmemu.OllamaOptions{NumCtx: 4096}, msg{"num_ctx": 2048}, msg{"num_ctx": 8192}, 8192, "request options.num_ctx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu := llmemu.NewOllama(tc.emu)
			up := serve(t, emu)
			if tc.preload != nil {
				if resp, body := postJSON(t, up+"/api/chat", msg{"model": "llama3.2", "stream": false, "options": tc.preload, "messages": []msg{{"role": "user", "content": "hi"}}}); resp.StatusCode != http.StatusOK {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
			}
			gw := newGuard(t, guard.Options{Ollama: up})
			req := msg{"model": "llama3.2", "stream": false, "messages": history}
			if tc.options != nil {
				req["options"] = tc.options
			}
			resp, body := postJSON(t, gw+"/api/chat", req)
			var got ollamaChatResp
			if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || got.Ctxkit == nil {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got.Ctxkit.Window != tc.window || got.Ctxkit.WindowSource != tc.source {
				t.Errorf("window %d (%s), want %d (%s)", got.Ctxkit.Window, got.Ctxkit.WindowSource, tc.window, tc.source)
			}
			ev, ok := emu.LastEval()
			if !ok || ev.Truncated || got.Ctxkit.UpstreamTruncated {
				t.Errorf("Ollama cut the prompt: %+v, report %+v", ev, got.Ctxkit)
			}
			if got.Message.Content != secret {
				t.Errorf("answer %q, want the secret", got.Message.Content)
			}
		})
	}
}

// TestRepeatedOverflow: the same overflowing request sent again, after
// Ollama's count raised the calibration, is compacted again and answered,
// not refused forever (issue 19, defect 1).
func TestRepeatedOverflow(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	// compact.Estimate undercounts this text by about a third, so Ollama's
	// count raises the calibration after the first request, and the first
	// request's plan, replayed, no longer fits.
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Counter: compact.EstimateCounter{}})
	text := "SECRET: " + secret + "\n" + strings.Repeat("word, words, ", 2000) + "\nWhat is the secret?"
	req := msg{"model": "llama3.2", "stream": false, "options": msg{"num_ctx": 4096}, "messages": []msg{{"role": "user", "content": text}}}
	for i := range 3 {
		resp, body := postJSON(t, gw+"/api/chat", req)
		var got ollamaChatResp
		if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || got.Ctxkit == nil {
			t.Fatalf("request %d: %d %.600s", i+1, resp.StatusCode, body)
		}
		if !got.Ctxkit.Compacted || got.Ctxkit.EvictedTokens <= 0 || got.Ctxkit.UpstreamTruncated {
			t.Errorf("request %d: report %+v", i+1, got.Ctxkit)
		}
		if n := resp.Header.Get("X-Ctxkit-Evicted-Tokens"); n == "0" || n == "" {
			t.Errorf("request %d: X-Ctxkit-Evicted-Tokens %q for a message shrunk in place", i+1, n)
		}
	}
}

// TestOpenAIStreamReportAfterUsage: with stream_options.include_usage the
// usage comes in a chunk of its own after the finish chunk; the report
// rides in that last chunk, with the upstream's count (issue 19).
func TestOpenAIStreamReportAfterUsage(t *testing.T) {
	emu := llmemu.NewOpenAI(llmemu.OpenAIOptions{MaxContext: 8192, Models: []string{"gpt-4o-mini"}})
	gw := newGuard(t, guard.Options{OpenAI: serve(t, emu), Windows: map[string]int{"gpt-4o-mini": 8192}})
	for _, usage := range []bool{true, false} {
		req := msg{"model": "gpt-4o-mini", "stream": true, "messages": []msg{{"role": "user", "content": "hello"}}}
		if usage {
			req["stream_options"] = msg{"include_usage": true}
		}
		resp, body := postJSON(t, gw+"/v1/chat/completions", req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var chunks []map[string]json.RawMessage
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var c map[string]json.RawMessage
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, c)
		}
		withReport := -1
		for i, c := range chunks {
			if _, ok := c["ctxkit"]; ok {
				if withReport >= 0 {
					t.Fatalf("usage %v: two chunks carry the report", usage)
				}
				withReport = i
			}
		}
		if withReport != len(chunks)-1 {
			t.Fatalf("usage %v: the report is in chunk %d of %d: %s", usage, withReport, len(chunks), body)
		}
		var rep guard.Report
		if err := json.Unmarshal(chunks[withReport]["ctxkit"], &rep); err != nil {
			t.Fatal(err)
		}
		if usage && (rep.PromptEvalCount <= 0 || string(chunks[withReport]["choices"]) != "[]") {
			t.Errorf("the report does not ride in the usage chunk with its count: %s", body)
		}
	}
}

// TestTruncateFalseRaisesCalibration: Ollama's refusal of a prompt over
// the window ("truncate": false) carries no count; the guard recovers, and
// the calibration rises so that the same request does not pay a refused
// call again (issue 19, defect 4).
func TestTruncateFalseRaisesCalibration(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Counter: compact.EstimateCounter{}})
	// compact.Estimate counts this about half what the emulator does: it
	// fits the budget by the estimate, not the window.
	text := "SECRET: " + secret + "\n" + strings.Repeat("ab, ", 2500) + "\nWhat is the secret?"
	req := msg{"model": "llama3.2", "stream": false, "truncate": false, "options": msg{"num_ctx": 4096}, "messages": []msg{{"role": "user", "content": text}}}
	for i, wantRecovered := range []bool{true, false} {
		emu.Reset()
		resp, body := postJSON(t, gw+"/api/chat", req)
		var got ollamaChatResp
		if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || got.Ctxkit == nil {
			t.Fatalf("request %d: %d %.600s", i+1, resp.StatusCode, body)
		}
		if got.Ctxkit.Recovered != wantRecovered {
			t.Errorf("request %d: recovered %v, want %v (%d calls upstream)", i+1, got.Ctxkit.Recovered, wantRecovered, emu.RequestCount("/api/chat"))
		}
	}
}
