package guard_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestOllamaRecovers: with an estimate that undercounts punctuation
// (compact.Estimate), a last message too big for the window even after
// Ollama dropped every earlier message is refused by Ollama v0.33: on the
// native path with llama-server's 400 inside Ollama's error string,
// without context shift with Ollama's own message. The guard
// recalibrates, shrinks the message in place and retries once.
func TestOllamaRecovers(t *testing.T) {
	for _, o := range []llmemu.OllamaOptions{{Version: llmemu.OllamaV033, NumCtx: 4096, Native: true}, {Version: llmemu.OllamaV033, NumCtx: 4096, NoContextShift: true}} {
		emu := llmemu.NewOllama(o)
		gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Counter: compact.EstimateCounter{}})
		msgs := []msg{
			{"role": "user", "content": "SECRET: " + secret},
			{"role": "assistant", "content": "ok"},
			{"role": "user", "content": strings.Repeat(".,;:!?", 1000) + "\nWhat is the secret?"},
		}
		resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": msgs})
		var out ollamaChatResp
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || out.Ctxkit == nil || !out.Ctxkit.Recovered || out.Message.Content != secret {
			t.Errorf("%+v: %d %.600s", o, resp.StatusCode, body)
		}
		if n := emu.RequestCount("/api/chat"); n != 2 {
			t.Errorf("%d upstream tries, want 2", n)
		}
	}
}

// TestPreservesUnknownFields: fields the guard does not know, of the
// request and of each kept message, reach the upstream as they were sent.
func TestPreservesUnknownFields(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu)})
	msgs := agentHistory(12, 300, false)
	msgs[len(msgs)-2]["thinking"] = "let me think"
	msgs[len(msgs)-1]["x_custom"] = map[string]any{"a": []int{1, 2}}
	req := msg{"model": "llama3.2", "stream": false, "format": "json", "keep_alive": "5m", "think": false, "x_extra": map[string]any{"z": 1, "a": "b"}, "messages": msgs}
	data, _ := json.Marshal(req)
	resp, err := http.Post(gw+"/api/chat", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	last, _ := emu.LastRequest()
	for _, want := range []string{`"format":"json"`, `"keep_alive":"5m"`, `"think":false`, `"x_extra":{"a":"b","z":1}`} {
		if !bytes.Contains(last.Body, []byte(want)) {
			t.Errorf("lost %s", want)
		}
	}
	for _, m := range msgs[len(msgs)-4:] {
		raw, _ := json.Marshal(m)
		if !bytes.Contains(last.Body, raw) {
			t.Errorf("kept message changed: %s", raw)
		}
	}
}

// TestPolicyOff and an uncompactable prompt.
func TestPolicyOffAndUncompactable(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	data, _ := json.Marshal(msg{"model": "llama3.2", "stream": false, "messages": agentHistory(12, 300, false)})
	off := newGuard(t, guard.Options{Ollama: up, Policy: guard.PolicyOff})
	resp, err := http.Post(off+"/api/chat", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if last, _ := emu.LastRequest(); !bytes.Equal(last.Body, data) || resp.Header.Get("X-Ctxkit-Compacted") != "" {
		t.Errorf("off changed the request or reported")
	}

	gw := newGuard(t, guard.Options{Ollama: up})
	resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "messages": []msg{{"role": "system", "content": strings.Repeat("rules ", 5000)}, {"role": "user", "content": "hi"}}})
	var e struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
		Ctxkit *guard.Report `json:"ctxkit"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Type != "context_overflow_uncompactable" || e.Ctxkit == nil {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

// TestInBandStreamError: an older llama.cpp answers a stream that does not
// fit with 200 and one event data: {"error":...}; the guard recognises it
// before relaying anything, recompacts and retries.
func TestInBandStreamError(t *testing.T) {
	emu := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{NCtx: 4096, InBandStreamErrors: true})
	gw := newGuard(t, guard.Options{LlamaCpp: serve(t, emu), Counter: compact.EstimateCounter{}})
	msgs := []msg{{"role": "user", "content": "SECRET: " + secret}}
	for i := range 6 {
		msgs = append(msgs, msg{"role": "assistant", "content": strings.Repeat("ok ", i+1)}, msg{"role": "user", "content": strings.Repeat(".,;:!?", 150)})
	}
	msgs = append(msgs, msg{"role": "assistant", "content": "ok"}, msg{"role": "user", "content": "What is the secret?"})
	resp, body := postJSON(t, gw+"/v1/chat/completions", msg{"model": "model.gguf", "stream": true, "messages": msgs})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"recovered_from_upstream_error":true`)) || bytes.Contains(body, []byte(`data: {"error"`)) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if ev, _ := emu.LastEval(); ev.Reply.Text != secret {
		t.Errorf("reply %q", ev.Reply.Text)
	}
}

// TestInBandErrorCarriesReport: when the retry fails too, the in-band
// error event is relayed as it is, with the report in it (the stream ends
// there, so it is the last object the client sees).
func TestInBandErrorCarriesReport(t *testing.T) {
	const event = `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`
	// With --recall the answer goes through the recall loop's relay.
	for _, recall := range []bool{false, true} {
		t.Run(fmt.Sprintf("recall=%v", recall), func(t *testing.T) {
			tries := 0
			up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/chat/completions" {
					http.NotFound(w, r)
					return
				}
				tries++
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("data: " + event + "\n\n"))
			}))
			gw := newGuard(t, guard.Options{LlamaCpp: up, NoExact: true, DefaultWindow: 4096, Recall: recall})
			req := msg{"model": "m", "stream": true, "messages": agentHistory(3, 50, true),
				"tools": []msg{{"type": "function", "function": msg{"name": "read_file", "parameters": msg{"type": "object"}}}}}
			resp, body := postJSON(t, gw+"/v1/chat/completions", req)
			line, _, _ := bytes.Cut(bytes.TrimPrefix(body, []byte("data: ")), []byte("\n"))
			var out struct {
				Error  map[string]any `json:"error"`
				Ctxkit *guard.Report  `json:"ctxkit"`
			}
			if err := json.Unmarshal(line, &out); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if resp.StatusCode != http.StatusOK || tries != 2 || out.Error["type"] != "exceed_context_size_error" || out.Ctxkit == nil || out.Ctxkit.Recovered || out.Ctxkit.UpstreamError == "" {
				t.Errorf("%d tries=%d %s", resp.StatusCode, tries, body)
			}
		})
	}
}

// TestInBandErrorClosesBodies: the guard closes every upstream body it
// opens, the retry's in-band error included (its event is relayed from a
// copy).
func TestInBandErrorClosesBodies(t *testing.T) {
	const event = `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: " + event + "\n\n"))
	}))
	tr := &bodyCounter{base: http.DefaultTransport}
	gw := newGuard(t, guard.Options{LlamaCpp: up, NoExact: true, DefaultWindow: 4096, Client: &http.Client{Transport: tr}})
	resp, body := postJSON(t, gw+"/v1/chat/completions", msg{"model": "m", "stream": true, "messages": agentHistory(3, 50, true)})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`exceed_context_size_error`)) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if opened, closed := tr.opened.Load(), tr.closed.Load(); opened != 2 || closed != opened {
		t.Errorf("upstream bodies: %d opened, %d closed; want 2 and 2", opened, closed)
	}
}

// bodyCounter counts the chat response bodies its transport hands out and
// those closed.
type bodyCounter struct {
	base           http.RoundTripper
	opened, closed atomic.Int64
}

func (c *bodyCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil || req.URL.Path != "/v1/chat/completions" {
		return resp, err
	}
	c.opened.Add(1)
	resp.Body = &countedBody{ReadCloser: resp.Body, closed: &c.closed}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	once   sync.Once
	closed *atomic.Int64
}

func (b *countedBody) Close() error {
	b.once.Do(func() { b.closed.Add(1) })
	return b.ReadCloser.Close()
}
