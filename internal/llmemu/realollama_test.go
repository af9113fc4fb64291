package llmemu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/realollama"
	"github.com/ctxkit/ctxkit/internal/tinymodel"
)

// realDeadline bounds one request to the real server (a model load and a
// generation that may run to its num_predict on a CPU).
const realDeadline = 3 * time.Minute

// outcome is what a server did with one request, as far as the emulator
// claims to model it: the model's text is not compared (the real model's
// weights are random).
type outcome struct {
	Status int
	Error  string // the error body's "error", when not 200
	// PromptEvalCount is the done chunk's prompt_eval_count (chat,
	// generate, embed) or the usage chunk's prompt_tokens (/v1).
	PromptEvalCount int
	// DoneReason and EvalCount, when the case compares them (the real
	// model's replies are noise: only a reply the window cuts is alike).
	DoneReason string
	EvalCount  int
	// Cut is the runner's WARN "truncating input prompt", as
	// "limit=… prompt=… keep=… new=…", or "".
	Cut string
	// Loaded is /api/ps after the request: model → context_length.
	Loaded string
	// UsageAfterFinish: a /v1 stream's usage chunk came after the finish
	// chunk, with no choices.
	UsageAfterFinish bool
}

type realCase struct {
	name   string
	path   string
	body   map[string]any
	reason bool // compare done_reason and eval_count
}

// TestEmulatorMatchesRealOllama sends the same requests to a real Ollama
// v0.17.4 running the tiny model (internal/realollama; skipped without
// $CTXKIT_TEST_OLLAMA, failed under CI) and to the emulator configured
// alike, and compares what each did: status and error, prompt_eval_count,
// the runner's cut (its WARN line), /api/ps, /v1's usage chunk, and
// /api/show's parameters and context length.
func TestEmulatorMatchesRealOllama(t *testing.T) {
	real := realollama.Start(t, realollama.Options{})
	real.Create(t, realollama.Model{Name: "tuned", NumCtx: 2048})
	sink := newLogSink()
	emu := NewOllama(OllamaOptions{
		Models:         []string{"tiny:latest", "tuned:latest"},
		TrainedContext: tinymodel.ContextLength,
		// realollama's Modelfiles set num_thread 1 (fast on a busy CPU).
		Parameters: map[string][]Parameter{"tiny": {{"num_thread", "1"}}, "tuned": {{"num_ctx", "2048"}, {"num_thread", "1"}}},
		Log:        slog.New(sink),
		// realollama runs OLLAMA_MAX_LOADED_MODELS=1.
		MaxLoadedModels: 1,
	})
	esrv := httptest.NewServer(emu)
	t.Cleanup(esrv.Close)
	c := emu.Counter()

	user := func(content string) []map[string]any { return []map[string]any{{"role": "user", "content": content}} }
	var six []map[string]any
	six = append(six, map[string]any{"role": "system", "content": "You are careful."})
	for i := range 5 {
		six = append(six, map[string]any{"role": "user", "content": fmt.Sprintf("part %d:%s", i, fill(t, c, 1200))})
	}
	six = append(six, map[string]any{"role": "user", "content": "What is the secret?"})
	long := varied(t, c, 6000)
	cases := []realCase{
		{"generate fits", "/api/generate", map[string]any{"model": "tiny", "raw": true, "prompt": varied(t, c, 1000), "options": map[string]any{"num_ctx": 2048, "num_predict": 4}}, false},
		{"generate over num_ctx", "/api/generate", map[string]any{"model": "tiny", "raw": true, "prompt": long, "options": map[string]any{"num_ctx": 2048, "num_predict": 4}}, false},
		{"chat, one message over num_ctx", "/api/chat", map[string]any{"model": "tiny", "messages": user(long), "options": map[string]any{"num_ctx": 2048, "num_predict": 4}}, false},
		{"chat, one message over num_ctx, shift false", "/api/chat", map[string]any{"model": "tiny", "messages": user(long), "shift": false, "options": map[string]any{"num_ctx": 2048}}, true},
		{"chat, num_keep 0", "/api/chat", map[string]any{"model": "tiny", "messages": user(long), "options": map[string]any{"num_ctx": 2048, "num_keep": 0, "num_predict": 4}}, false},
		{"chat, six messages over num_ctx", "/api/chat", map[string]any{"model": "tiny", "messages": six, "options": map[string]any{"num_ctx": 2048, "num_predict": 4}}, false},
		{"chat, truncate false", "/api/chat", map[string]any{"model": "tiny", "messages": six, "truncate": false, "options": map[string]any{"num_ctx": 2048}}, false},
		{"chat, truncate false, streaming", "/api/chat", map[string]any{"model": "tiny", "messages": user(long), "truncate": false, "stream": true, "options": map[string]any{"num_ctx": 2048}}, false},
		{"chat, num_ctx over the trained context", "/api/chat", map[string]any{"model": "tiny", "messages": user(varied(t, c, 9000)), "options": map[string]any{"num_ctx": 16384, "num_predict": 4}}, false},
		{"chat, no num_ctx", "/api/chat", map[string]any{"model": "tiny", "messages": user(long), "options": map[string]any{"num_predict": 4}}, false},
		{"chat, Modelfile num_ctx", "/api/chat", map[string]any{"model": "tuned", "messages": user(long), "options": map[string]any{"num_predict": 4}}, false},
		{"embed over num_ctx", "/api/embed", map[string]any{"model": "tiny", "input": long, "options": map[string]any{"num_ctx": 1000}}, false},
		{"embed, truncate false", "/api/embed", map[string]any{"model": "tiny", "input": long, "truncate": false, "options": map[string]any{"num_ctx": 1000}}, false},
		{"/v1 stream with usage", "/v1/chat/completions", map[string]any{"model": "tiny", "stream": true, "max_tokens": 4,
			"stream_options": map[string]any{"include_usage": true}, "messages": user(long)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mark := real.Log().Len()
			got := runOutcome(t, real.URL(), tc)
			for _, r := range real.Log().Records(mark) {
				if r.Msg == "truncating input prompt" {
					got.Cut = fmt.Sprintf("limit=%s prompt=%s keep=%s new=%s", r.Attrs["limit"], r.Attrs["prompt"], r.Attrs["keep"], r.Attrs["new"])
				}
			}
			before := len(sink.find("truncating input prompt"))
			want := runOutcome(t, esrv.URL, tc)
			if cuts := sink.find("truncating input prompt"); len(cuts) > before {
				a := cuts[len(cuts)-1].attrs
				want.Cut = fmt.Sprintf("limit=%v prompt=%v keep=%v new=%v", a["limit"], a["prompt"], a["keep"], a["new"])
			}
			if got != want {
				t.Errorf("real Ollama:\n  %+v\nemulator:\n  %+v", got, want)
			} else {
				t.Logf("both: %+v", got)
			}
		})
	}

	var version struct {
		Version string `json:"version"`
	}
	realGet(t, real.URL()+"/api/version", &version)
	t.Logf("the real server's /api/version: %q (the emulator's: %q)", version.Version, emu.Version())

	// /api/show: the cap and the Modelfile's parameters, formatted alike.
	for _, model := range []string{"tiny", "tuned"} {
		var r, e struct {
			Parameters string         `json:"parameters"`
			ModelInfo  map[string]any `json:"model_info"`
		}
		realPost(t, real.URL()+"/api/show", map[string]any{"model": model}, &r)
		realPost(t, esrv.URL+"/api/show", map[string]any{"model": model}, &e)
		if realollama.SortedParameters(r.Parameters) != realollama.SortedParameters(e.Parameters) || r.ModelInfo["llama.context_length"] != e.ModelInfo["llama.context_length"] {
			t.Errorf("/api/show %s: real %q %v, emulator %q %v", model, r.Parameters, r.ModelInfo["llama.context_length"], e.Parameters, e.ModelInfo["llama.context_length"])
		}
	}
}

// runOutcome sends tc to the server at base and reads what it did.
func runOutcome(t *testing.T, base string, tc realCase) outcome {
	t.Helper()
	body := tc.body
	if _, ok := body["stream"]; !ok && tc.path != "/v1/chat/completions" {
		body["stream"] = false
	}
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), realDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+tc.path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := outcome{Status: resp.StatusCode}
	// Every line is a JSON object (NDJSON, one object) or an SSE data line.
	var last map[string]any
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			line = d
		}
		if line == "" || line == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %q: %v", base, line, err)
		}
		events = append(events, m)
		last = m
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if last == nil {
		t.Fatalf("%s: empty answer, status %d", base, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		out.Error = fmt.Sprint(last["error"])
		return out
	}
	if tc.path == "/v1/chat/completions" {
		n := len(events)
		if n >= 2 {
			usage, _ := events[n-1]["usage"].(map[string]any)
			choices, _ := events[n-1]["choices"].([]any)
			fin, _ := events[n-2]["choices"].([]any)
			if usage != nil && len(choices) == 0 && len(fin) == 1 {
				if f, _ := fin[0].(map[string]any); f["finish_reason"] != nil {
					out.UsageAfterFinish = true
				}
			}
			if usage != nil {
				out.PromptEvalCount = int(num(usage["prompt_tokens"]))
			}
		}
	} else {
		out.PromptEvalCount = int(num(last["prompt_eval_count"]))
		if tc.reason {
			out.DoneReason, out.EvalCount = fmt.Sprint(last["done_reason"]), int(num(last["eval_count"]))
		}
	}
	var ps struct {
		Models []struct {
			Name          string `json:"name"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	realGet(t, base+"/api/ps", &ps)
	for _, m := range ps.Models {
		out.Loaded += fmt.Sprintf("%s=%d ", m.Name, m.ContextLength)
	}
	return out
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func realPost(t *testing.T, url string, body, out any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), realDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

func realGet(t *testing.T, url string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), realDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}
