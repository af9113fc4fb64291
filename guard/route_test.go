package guard_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestRouting sends /v1 requests to the backend that serves the model
// (discovered from /api/tags and /v1/models) and passes the other /v1
// endpoints through.
func TestRouting(t *testing.T) {
	oll := llmemu.NewOllama(llmemu.OllamaOptions{})
	lcp := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{Model: "qwen.gguf"})
	oai := llmemu.NewOpenAI(llmemu.OpenAIOptions{Models: []string{"gpt-4o-mini"}})
	gw := newGuard(t, guard.Options{Ollama: serve(t, oll), LlamaCpp: serve(t, lcp), OpenAI: serve(t, oai)})
	tests := []struct {
		model string
		rec   *llmemu.Recorder
		back  string
	}{
		{"llama3.2", &oll.Recorder, "ollama"},
		{"qwen.gguf", &lcp.Recorder, "llamacpp"},
		{"gpt-4o-mini", &oai.Recorder, "openai"},
		{"unknown", &lcp.Recorder, "llamacpp"},
	}
	for _, tt := range tests {
		before := tt.rec.RequestCount("/v1/chat/completions")
		resp, body := postJSON(t, gw+"/v1/chat/completions", msg{"model": tt.model, "messages": []msg{{"role": "user", "content": "hi"}}})
		var out struct {
			Ctxkit guard.Report `json:"ctxkit"`
		}
		_ = json.Unmarshal(body, &out)
		if tt.model != "unknown" && resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", tt.model, resp.StatusCode, body)
		}
		if tt.rec.RequestCount("/v1/chat/completions") != before+1 || out.Ctxkit.Backend != tt.back {
			t.Errorf("%s went elsewhere: %s", tt.model, body)
		}
	}
	resp, body := postJSON(t, gw+"/v1/embeddings", msg{"model": "gpt-4o-mini", "input": "hello"})
	if resp.StatusCode != http.StatusOK || oai.RequestCount("/v1/embeddings") != 1 {
		t.Errorf("embeddings: %d %s", resp.StatusCode, body)
	}
	r, err := http.Get(gw + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err = json.NewDecoder(r.Body).Decode(&models)
	r.Body.Close()
	ids := map[string]bool{}
	for _, m := range models.Data {
		ids[m.ID] = true
	}
	if err != nil || r.StatusCode != http.StatusOK || !ids["qwen.gguf"] || !ids["gpt-4o-mini"] || !ids["llama3.2:latest"] {
		t.Errorf("/v1/models: %d %v %v", r.StatusCode, ids, err)
	}
}

// TestOpenAIContextLengthExceeded: the configured window is larger than
// the server's; its overflow error, in the words and envelope of OpenAI,
// vLLM (current and older) or SGLang (also in-band in a 200 stream), gives
// the real limit and the retry fits.
func TestOpenAIContextLengthExceeded(t *testing.T) {
	for _, tc := range []struct {
		flavor llmemu.Flavor
		stream bool
		window int // the window the guard learns from the error
	}{
		{llmemu.FlavorOpenAI, false, 4096},
		{llmemu.FlavorVLLM, false, 4096},
		{llmemu.FlavorVLLMLegacy, false, 4096},
		{llmemu.FlavorSGLang, false, 4095},
		{llmemu.FlavorSGLang, true, 4095},
	} {
		t.Run(fmt.Sprintf("%s/stream=%v", cmp.Or(string(tc.flavor), "openai"), tc.stream), func(t *testing.T) {
			emu := llmemu.NewOpenAI(llmemu.OpenAIOptions{MaxContext: 4096, Flavor: tc.flavor})
			gw := newGuard(t, guard.Options{OpenAI: serve(t, emu), DefaultWindow: 32768})
			msgs := agentHistory(12, 300, true)
			resp, body := postJSON(t, gw+"/v1/chat/completions", msg{"model": "gpt-4o-mini", "messages": msgs, "stream": tc.stream})
			if tc.stream {
				if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"recovered_from_upstream_error":true`)) || bytes.Contains(body, []byte(`data: {"error"`)) {
					t.Errorf("%d %s", resp.StatusCode, body)
				}
				if ev, _ := emu.LastEval(); !strings.Contains(ev.Reply.Text, secret) {
					t.Errorf("reply %q", ev.Reply.Text)
				}
				return
			}
			var out struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
				Ctxkit guard.Report `json:"ctxkit"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || !out.Ctxkit.Recovered || out.Ctxkit.Window != tc.window || !strings.Contains(out.Choices[0].Message.Content, secret) {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		})
	}
}

// TestRawPrompts: /api/generate (Ollama) and /v1/completions (an
// OpenAI-compatible server) keep head and tail.
func TestRawPrompts(t *testing.T) {
	oll := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 2048})
	oai := llmemu.NewOpenAI(llmemu.OpenAIOptions{MaxContext: 2048})
	gw := newGuard(t, guard.Options{Ollama: serve(t, oll), OpenAI: serve(t, oai), Windows: map[string]int{"gpt-4o-mini": 2048}})
	prompt := "SECRET: " + secret + "\n" + strings.Repeat("filler text ", 3000) + "\nWhat is the secret?"

	_, body := postJSON(t, serve(t, oll)+"/api/generate", msg{"model": "llama3.2", "stream": false, "prompt": prompt})
	if !strings.Contains(string(body), llmemu.Dont) {
		t.Fatalf("directly: %s", body)
	}
	for _, tc := range []struct{ path, field string }{{"/api/generate", "response"}, {"/v1/completions", "choices"}} {
		req := msg{"model": "llama3.2", "stream": false, "prompt": prompt}
		if tc.path == "/v1/completions" {
			req = msg{"model": "gpt-4o-mini", "prompt": prompt}
		}
		resp, body := postJSON(t, gw+tc.path, req)
		var out map[string]json.RawMessage
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%s: %v: %.500s", tc.path, err, body)
		}
		var rep guard.Report
		_ = json.Unmarshal(out["ctxkit"], &rep)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out[tc.field]), secret) || !rep.Compacted || rep.Strategy != "middle-out" {
			t.Errorf("%s: %d %.300s %+v", tc.path, resp.StatusCode, out[tc.field], rep)
		}
	}
}

// TestCalibration: Ollama's prompt_eval_count raises the estimate of a
// model (here compact.Estimate, which undercounts punctuation), never
// lowers it, and ignores short prompts.
func TestCalibration(t *testing.T) {
	oll := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 8192})
	gw := newGuard(t, guard.Options{Ollama: serve(t, oll), Counter: compact.EstimateCounter{}})
	scale := func() float64 {
		r, err := http.Get(gw + "/ctxkit/health")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var h struct {
			Calibration map[string]struct{ Scale float64 } `json:"calibration"`
		}
		if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h.Calibration["ollama/llama3.2"].Scale
	}
	chat := func(text string) {
		resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": text}}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	chat(strings.Repeat("!?", 50)) // 100 chars of one-token characters
	if s := scale(); s != 1 {
		t.Errorf("a short prompt moved the scale to %v", s)
	}
	chat(strings.Repeat("!?.,", 500))
	high := scale()
	if high <= 1 {
		t.Errorf("scale %v after an undercounted prompt", high)
	}
	chat(strings.Repeat("plain words ", 200))
	if s := scale(); s != high {
		t.Errorf("scale moved from %v to %v on an overcounted prompt", high, s)
	}
}

// TestPrefixStable: turn after turn of a growing agent conversation, the
// compacted prompt's head stays byte-identical (the eviction plan holds),
// so llama.cpp's prompt cache keeps hitting: most turns reuse most of the
// previous prompt (timings.cache_n). A turn that extends the plan changes
// the removal notice near the head, and only the prefix before it is
// reused; the hysteresis (compact's low-water mark, 80% of the budget)
// makes that one turn in several.
func TestPrefixStable(t *testing.T) {
	emu := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{NCtx: 16384, Slots: 1})
	gw := newGuard(t, guard.Options{LlamaCpp: serve(t, emu)})
	msgs := agentHistory(40, 150, true)
	msgs = msgs[:len(msgs)-2]
	hits, compacted := 0, 0
	const turns = 30
	for i := range turns {
		id := "call_t" + strings.Repeat("x", i%3) + string(rune('a'+i))
		msgs = append(msgs,
			msg{"role": "assistant", "content": "", "tool_calls": []any{msg{"id": id, "type": "function", "function": msg{"name": "read_file", "arguments": "{}"}}}},
			msg{"role": "tool", "tool_call_id": id, "content": strings.Repeat("lorem ipsum dolor ", 75)})
		resp, body := postJSON(t, gw+"/v1/chat/completions", msg{"model": "model.gguf", "messages": msgs})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, resp.StatusCode, body)
		}
		var out struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
			Timings struct {
				CacheN int `json:"cache_n"`
			} `json:"timings"`
			Ctxkit guard.Report `json:"ctxkit"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if out.Ctxkit.Compacted {
			compacted++
		}
		if out.Timings.CacheN >= out.Usage.PromptTokens/2 {
			hits++
		}
	}
	if compacted < turns/2 || hits < turns*2/3 {
		t.Errorf("%d of %d turns compacted, %d reused most of the previous prompt", compacted, turns, hits)
	}
	t.Logf("%d of %d turns compacted, %d reused most of the previous prompt", compacted, turns, hits)
}

// TestOllamaOpenAIEndpoint: Ollama's own /v1/chat/completions runs at the
// server's window (it cannot set num_ctx) and truncates silently; through
// the guard the history is compacted into that window instead.
func TestOllamaOpenAIEndpoint(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096, Preload: true})
	up := serve(t, emu)
	gw := newGuard(t, guard.Options{Ollama: up, DefaultWindow: 32768})
	req := msg{"model": "llama3.2", "messages": agentHistory(12, 300, true)}
	for _, base := range []string{up, gw} {
		_, body := postJSON(t, base+"/v1/chat/completions", req)
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
			Ctxkit *guard.Report `json:"ctxkit"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		want := secret
		if base == up {
			want = llmemu.Dont
		}
		if len(out.Choices) == 0 || out.Choices[0].Message.Content != want {
			t.Errorf("%s: %s", base, body)
		}
		if base == gw && (out.Ctxkit == nil || out.Ctxkit.Window != 4096 || !out.Ctxkit.Compacted) {
			t.Errorf("report %+v", out.Ctxkit)
		}
	}
}
