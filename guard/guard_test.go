package guard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/llmemu"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

const secret = "ANANAS-7734"

// serve starts h and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// newGuard starts a guard with an in-memory store over opts. Unless opts
// set a Counter, the guard counts with the emulated model's own tokenizer,
// as `ctxkit guard --tokenizer` makes it: the emulators' vocabulary (the
// tiny model's, 2.3 to 3 bytes a token on English) has too few merges for
// any estimate to bound, and these tests are about what the guard does
// with its counts. The default estimate is tested against real tokenizers
// (estimate_test.go), and against a real Ollama (realollama_test.go);
// tests of calibration set compact.Estimate, which undercounts.
func newGuard(t *testing.T, opts guard.Options) string {
	t.Helper()
	if opts.Counter == nil {
		opts.Counter = llmemu.TinyBPE()
	}
	opts.Engine = offload.New(memstore.New(memstore.Options{}))
	opts.KV = memstore.NewKV()
	g, err := guard.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, g)
}

type msg = map[string]any

// agentHistory is an overflowing agent conversation: the secret in the
// task (the first user message), then rounds of tool calls with big
// outputs, then the needle question.
func agentHistory(rounds, fillerWords int, withIDs bool) []msg {
	msgs := []msg{
		{"role": "system", "content": "You are a careful agent."},
		{"role": "user", "content": "Your task. SECRET: " + secret + "\nRemember it."},
	}
	for i := range rounds {
		call := msg{"function": msg{"name": "read_file", "arguments": msg{"path": fmt.Sprintf("f%d.txt", i)}}}
		tool := msg{"role": "tool", "content": fmt.Sprintf("file %d: %s", i, strings.Repeat("lorem ipsum dolor ", fillerWords)), "tool_name": "read_file"}
		if withIDs {
			id := fmt.Sprintf("call_%d", i)
			call = msg{"id": id, "type": "function", "function": msg{"name": "read_file", "arguments": fmt.Sprintf(`{"path":"f%d.txt"}`, i)}}
			tool = msg{"role": "tool", "tool_call_id": id, "content": tool["content"]}
		}
		msgs = append(msgs, msg{"role": "assistant", "content": "", "tool_calls": []any{call}}, tool)
	}
	return append(msgs, msg{"role": "assistant", "content": "Done reading."}, msg{"role": "user", "content": "What is the secret?"})
}

func postJSON(t *testing.T, url string, body any) (*http.Response, []byte) {
	t.Helper()
	return postWithHeaders(t, url, body, nil)
}

// postWithHeaders posts body as JSON with the headers that are not empty.
func postWithHeaders(t *testing.T, url string, body any, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

type ollamaChatResp struct {
	Message struct {
		Content string `json:"content"`
	} `json:"message"`
	Done            bool          `json:"done"`
	PromptEvalCount int           `json:"prompt_eval_count"`
	Ctxkit          *guard.Report `json:"ctxkit"`
}

// TestNeedleOllama is the reference's proof: the secret at the start of an
// overflowing prompt is lost through Ollama directly and kept through the
// guard, streaming or not, with the report in the body (the done chunk)
// and the headers, and the evicted span retrievable.
func TestNeedleOllama(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	gw := newGuard(t, guard.Options{Ollama: up})
	req := msg{"model": "llama3.2", "stream": false, "messages": agentHistory(12, 300, false)}

	_, body := postJSON(t, up+"/api/chat", req)
	var direct ollamaChatResp
	if err := json.Unmarshal(body, &direct); err != nil {
		t.Fatal(err)
	}
	if direct.Message.Content != llmemu.Dont {
		t.Fatalf("directly: %q, want the secret lost", direct.Message.Content)
	}

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			req["stream"] = stream
			resp, body := postJSON(t, gw+"/api/chat", req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var got ollamaChatResp
			text := ""
			for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
				var c ollamaChatResp
				if err := json.Unmarshal(line, &c); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				text += c.Message.Content
				if c.Ctxkit != nil && !c.Done {
					t.Errorf("report in a chunk that is not the last")
				}
				got = c
			}
			if !strings.Contains(text, secret) {
				t.Errorf("through the guard: %q, want the secret", text)
			}
			rep := got.Ctxkit
			if rep == nil {
				t.Fatalf("no report in %s", body)
			}
			if !rep.Compacted || rep.Window != 4096 || rep.EvictedTokens == 0 || rep.TokensAfter > rep.Budget || rep.ExactCounts || len(rep.Evicted) == 0 {
				t.Errorf("report %+v", rep)
			}
			if ev, _ := emu.LastEval(); ev.Truncated || ev.PromptTokens != got.PromptEvalCount {
				t.Errorf("upstream truncated %v, prompt_eval_count %d, eval %+v", ev.Truncated, got.PromptEvalCount, ev.PromptTokens)
			}
			if resp.Header.Get("X-Ctxkit-Compacted") != "true" || resp.Header.Get("X-Ctxkit-Budget") != fmt.Sprint(rep.Budget) || resp.Header.Get("X-Ctxkit-Evicted-Tokens") != fmt.Sprint(rep.EvictedTokens) {
				t.Errorf("headers %v", resp.Header)
			}
			id := rep.Evicted[0].StoreID
			r, err := http.Get(gw + "/ctxkit/evicted/" + id)
			if err != nil {
				t.Fatal(err)
			}
			span, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != http.StatusOK || !bytes.Contains(span, []byte("lorem ipsum")) {
				t.Errorf("evicted %s: %d %.200s", id, r.StatusCode, span)
			}
			last, _ := emu.LastRequest()
			if !bytes.Contains(last.Body, []byte(id)) {
				t.Errorf("the notice does not name %s", id)
			}
		})
	}
}

// TestToolPairsNeverOrphaned checks every request that reached the
// upstream: each assistant tool call is followed by its results and no
// result is left without its call.
func TestToolPairsNeverOrphaned(t *testing.T) {
	for _, rounds := range []int{3, 8, 20, 40} {
		emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
		gw := newGuard(t, guard.Options{Ollama: serve(t, emu), KeepRecent: 3})
		resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": agentHistory(rounds, 120, false)})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d rounds: %d %s", rounds, resp.StatusCode, body)
		}
		last, _ := emu.LastRequest()
		var sent struct {
			Messages []struct {
				Role      string            `json:"role"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(last.Body, &sent); err != nil {
			t.Fatal(err)
		}
		pending := 0
		for i, m := range sent.Messages {
			if m.Role == "tool" {
				if pending == 0 {
					t.Fatalf("%d rounds: orphan tool result at %d", rounds, i)
				}
				pending--
				continue
			}
			if pending != 0 {
				t.Fatalf("%d rounds: call without its result before %d", rounds, i)
			}
			pending = len(m.ToolCalls)
		}
	}
}

// TestLlamaCppOverflow: llama.cpp answers 400 directly and 200 through the
// guard, with openai-go as the client.
func TestLlamaCppOverflow(t *testing.T) {
	emu := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{NCtx: 4096})
	up := serve(t, emu)
	gw := newGuard(t, guard.Options{LlamaCpp: up})
	req := msg{"model": "model.gguf", "messages": agentHistory(12, 300, true)}
	resp, body := postJSON(t, up+"/v1/chat/completions", req)
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("exceed_context_size_error")) {
		t.Fatalf("directly: %d %s", resp.StatusCode, body)
	}
	text, rep := openaiChat(t, gw, req["messages"].([]msg), false)
	if !strings.Contains(text, secret) || rep == nil || !rep.Compacted || rep.Window != 4096 {
		t.Errorf("through the guard: %q %+v", text, rep)
	}
	text, rep = openaiChat(t, gw, req["messages"].([]msg), true)
	if !strings.Contains(text, secret) || rep == nil || !rep.Compacted {
		t.Errorf("streamed through the guard: %q %+v", text, rep)
	}
}

// TestRecoverFromUpstream400: with an estimate that undercounts
// punctuation (compact.Estimate, 3.6 bytes a token, where the tokenizer
// gives one per character), llama.cpp refuses the first try; the guard
// recalibrates from the error's numbers and the retry succeeds. With exact
// counts (the default), /apply-template and /tokenize catch it before
// anything is sent.
func TestRecoverFromUpstream400(t *testing.T) {
	for _, noExact := range []bool{true, false} {
		emu := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{NCtx: 4096})
		gw := newGuard(t, guard.Options{LlamaCpp: serve(t, emu), Counter: compact.EstimateCounter{}, NoExact: noExact})
		msgs := []msg{{"role": "user", "content": "SECRET: " + secret}}
		for i := range 8 {
			msgs = append(msgs, msg{"role": "assistant", "content": fmt.Sprint("turn ", i)}, msg{"role": "user", "content": strings.Repeat(".,;:!?", 150)})
		}
		msgs = append(msgs, msg{"role": "assistant", "content": "ok"}, msg{"role": "user", "content": "What is the secret?"})
		resp, body := postJSON(t, gw+"/v1/chat/completions", msg{"model": "model.gguf", "messages": msgs})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
			Ctxkit guard.Report `json:"ctxkit"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.Choices[0].Message.Content, secret) {
			t.Errorf("no exact %v: %s", noExact, body)
		}
		tries := emu.RequestCount("/v1/chat/completions")
		if noExact && (!out.Ctxkit.Recovered || !strings.Contains(out.Ctxkit.UpstreamError, "exceed_context_size_error") || tries != 2) {
			t.Errorf("%d tries: %s", tries, body)
		}
		if !noExact && (out.Ctxkit.Recovered || !out.Ctxkit.ExactCounts || out.Ctxkit.TokensAfter != out.Usage.PromptTokens || tries != 1) {
			t.Errorf("exact: %d tries: %s", tries, body)
		}
	}
}

// TestStrict refuses with 413 and a machine-readable body, sending nothing
// upstream.
func TestStrict(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Policy: guard.PolicyStrict})
	resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "messages": agentHistory(12, 300, false)})
	var e struct {
		Error struct {
			Type          string `json:"type"`
			NPromptTokens int    `json:"n_prompt_tokens"`
			Budget        int    `json:"budget"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Type != "context_overflow" || e.Error.NPromptTokens <= e.Error.Budget {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if n := emu.RequestCount("/api/chat"); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	// A prompt that fits goes through.
	resp, body = postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": "hi"}}})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

// TestObserve passes the request through unchanged and detects Ollama's
// silent truncation from prompt_eval_count.
func TestObserve(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Policy: guard.PolicyObserve})
	data, _ := json.Marshal(msg{"model": "llama3.2", "stream": false, "messages": agentHistory(12, 300, false)})
	resp, err := http.Post(gw+"/api/chat", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got ollamaChatResp
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if last, _ := emu.LastRequest(); !bytes.Equal(last.Body, data) {
		t.Errorf("observe changed the request")
	}
	rep := got.Ctxkit
	if rep == nil || rep.Compacted || !rep.UpstreamTruncated || rep.WouldEvictTokens == 0 || got.Message.Content != llmemu.Dont {
		t.Errorf("%s", body)
	}
}

// TestStreamFlushedAndCancelled: the first chunk reaches the client while
// the upstream still streams (its next chunk is an hour away), and a client
// that leaves cancels the upstream request.
func TestStreamFlushedAndCancelled(t *testing.T) {
	tests := []struct {
		name, path, body string
		emu              interface {
			http.Handler
			Aborted() int
		}
		ollama bool
		policy guard.Policy
	}{
		{"ollama chat", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"SECRET: A-LONG-ANSWER-OF-MANY-TOKENS what is the secret?"}]}`,
			llmemu.NewOllama(llmemu.OllamaOptions{Timing: llmemu.Timing{ChunkDelay: time.Hour}}), true, ""},
		{"ollama generate", "/api/generate", `{"model":"llama3.2","prompt":"SECRET: A-LONG-ANSWER-OF-MANY-TOKENS what is the secret?"}`,
			llmemu.NewOllama(llmemu.OllamaOptions{Timing: llmemu.Timing{ChunkDelay: time.Hour}}), true, ""},
		{"ollama chat passed through (policy off)", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"SECRET: A-LONG-ANSWER-OF-MANY-TOKENS what is the secret?"}]}`,
			llmemu.NewOllama(llmemu.OllamaOptions{Timing: llmemu.Timing{ChunkDelay: time.Hour}}), true, guard.PolicyOff},
		{"llama.cpp sse", "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"SECRET: A-LONG-ANSWER-OF-MANY-TOKENS what is the secret?"}]}`,
			llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{Timing: llmemu.Timing{ChunkDelay: time.Hour}}), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := guard.Options{LlamaCpp: serve(t, tt.emu), Policy: tt.policy}
			if tt.ollama {
				opts = guard.Options{Ollama: opts.LlamaCpp, Policy: tt.policy}
			}
			gw := newGuard(t, opts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line == "" {
				t.Fatalf("first line %q: %v", line, err)
			}
			cancel()
			for tt.emu.Aborted() != 1 {
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestPassthrough: other endpoints reach the upstream unchanged.
func TestPassthrough(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{Preload: true, NumCtx: 8192})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu)})
	for _, p := range []string{"/api/tags", "/api/ps", "/api/version", "/"} {
		resp, err := http.Get(gw + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || emu.RequestCount(p) == 0 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
	// A model loaded at a larger window than the configured default does
	// not say what the server's default is (a request with a larger
	// num_ctx may have loaded it): the first chat is fitted to the
	// configured default; its load shows the server's default, which the
	// next chat is fitted to.
	for _, want := range []struct {
		window int
		source string
	}{{guard.DefaultWindow, "server default (configured)"}, {8192, "server default (learned from a load)"}} {
		_, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": "hi"}}})
		var got ollamaChatResp
		if err := json.Unmarshal(body, &got); err != nil || got.Ctxkit == nil || got.Ctxkit.Window != want.window || got.Ctxkit.WindowSource != want.source || got.Ctxkit.Compacted {
			t.Errorf("want window %d (%s): %s", want.window, want.source, body)
		}
	}
}

// TestHealth reports the policy, the backends and the counters.
func TestHealth(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Policy: guard.PolicyStrict})
	postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "messages": agentHistory(12, 300, false)})
	r, err := http.Get(gw + "/ctxkit/health")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var h struct {
		Status   string `json:"status"`
		Policy   string `json:"policy"`
		Backends map[string]struct {
			URL, State, Version string
		} `json:"backends"`
		Stats map[string]int `json:"stats"`
	}
	if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	o := h.Backends["ollama"]
	if r.StatusCode != http.StatusOK || h.Status != "ok" || h.Policy != "strict" || o.URL == "" || o.State != "up" || o.Version != llmemu.OllamaV0174 ||
		h.Stats["refused"] != 1 || h.Stats["requests"] != 1 {
		t.Errorf("%d %+v", r.StatusCode, h)
	}
}

// TestCtxkitPaths: the guard's own paths never reach the backend (but
// for the health check's probe): a wrong method is 405, an unknown path
// 404; /ctxkit/health does not show a backend URL's password.
func TestCtxkitPaths(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{})
	up := strings.Replace(serve(t, emu), "http://", "http://user:hunter2@", 1)
	gw := newGuard(t, guard.Options{Ollama: up})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/ctxkit/health", http.StatusOK},
		{http.MethodPost, "/ctxkit/health", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/ctxkit/runtime", http.StatusMethodNotAllowed},
		{http.MethodPost, "/ctxkit/evicted/evicted_0", http.StatusMethodNotAllowed},
		{http.MethodGet, "/ctxkit/nothing", http.StatusNotFound},
		{http.MethodGet, "/metrics", http.StatusOK},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
	} {
		req, err := http.NewRequest(tc.method, gw+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || bytes.Contains(body, []byte("hunter2")) || (resp.StatusCode == http.StatusMethodNotAllowed) != (resp.Header.Get("Allow") != "") {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.status)
		}
	}
	for _, req := range emu.Requests() {
		if req.Method != http.MethodGet || req.Path != "/api/version" {
			t.Errorf("%s %s reached the backend", req.Method, req.Path)
		}
	}
}

// TestEvictedSpanExpires: an evicted span is read back through the
// engine, which drops it once it has expired (it was read straight from
// the store, expired or not).
func TestEvictedSpanExpires(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	engine := offload.New(memstore.New(memstore.Options{}), offload.WithClock(clock))
	g, err := guard.New(guard.Options{Ollama: serve(t, emu), Engine: engine, KV: memstore.NewKV()})
	if err != nil {
		t.Fatal(err)
	}
	gw := serve(t, g)
	resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": agentHistory(20, 120, false)})
	var got ollamaChatResp
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || got.Ctxkit == nil || len(got.Ctxkit.Evicted) == 0 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	get := func(id string) int {
		r, err := http.Get(gw + "/ctxkit/evicted/" + id)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	id := got.Ctxkit.Evicted[0].StoreID
	if code := get(id); code != http.StatusOK {
		t.Fatalf("a fresh span: %d", code)
	}
	mu.Lock()
	now = now.Add(guard.EvictedTTL + time.Minute)
	mu.Unlock()
	if code := get(id); code != http.StatusNotFound {
		t.Fatalf("an expired span: %d, want 404", code)
	}
}
