package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// ollamaOptions are the fields of Ollama's options the guard reads.
type ollamaOptions struct {
	NumCtx     int `json:"num_ctx"`
	NumPredict int `json:"num_predict"`
}

func ollamaOpts(top map[string]json.RawMessage) ollamaOptions {
	var o ollamaOptions
	if raw, ok := top["options"]; ok {
		_ = json.Unmarshal(raw, &o)
	}
	return o
}

// ollamaWindow is the window a request will run in: options.num_ctx, else
// the context_length of the loaded model (/api/ps), else the default.
func (g *Guard) ollamaWindow(ctx context.Context, b *backend, model string, o ollamaOptions) (int, string) {
	if o.NumCtx > 0 {
		return o.NumCtx, "request options.num_ctx"
	}
	want := model
	if !strings.Contains(want, ":") {
		want += ":latest"
	}
	for _, m := range g.loaded(ctx, b) {
		if (m.Name == want || m.Model == want || m.Name == model) && m.ContextLength > 0 {
			return m.ContextLength, "loaded (/api/ps)"
		}
	}
	return g.configWindow(model), "default"
}

// psEntry is one loaded model in Ollama's /api/ps.
type psEntry struct {
	Name          string `json:"name"`
	Model         string `json:"model"`
	ContextLength int    `json:"context_length"`
}

// psTTL is how long an /api/ps answer is reused: a model loaded with
// another num_ctx shows within it.
const psTTL = time.Second

// loaded returns Ollama's loaded models, read at most every psTTL.
func (g *Guard) loaded(ctx context.Context, b *backend) []psEntry {
	b.mu.Lock()
	if time.Since(b.psAt) < psTTL {
		ps := b.ps
		b.mu.Unlock()
		return ps
	}
	b.mu.Unlock()
	var ps struct {
		Models []psEntry `json:"models"`
	}
	if err := g.getJSON(ctx, b, "/api/ps", &ps); err != nil {
		return nil
	}
	b.mu.Lock()
	b.ps, b.psAt = ps.Models, time.Now()
	b.mu.Unlock()
	return ps.Models
}

func (g *Guard) configWindow(model string) int {
	if w := g.opts.Windows[model]; w > 0 {
		return w
	}
	return g.opts.DefaultWindow
}

func (g *Guard) reserveOr(n int) int {
	if n > 0 {
		return n
	}
	return g.opts.Reserve
}

// ollamaChat serves /api/chat.
func (g *Guard) ollamaChat(w http.ResponseWriter, r *http.Request, b *backend, body []byte) {
	body, added := g.withRecallTool(g.policy(r), body, rdOllama)
	rc := g.recallFor(added, rdOllama, body)
	req, err := parseChat(body, ollamaDialect{})
	if err != nil {
		b.proxy.ServeHTTP(w, withBody(r, body))
		return
	}
	model := str(req.top["model"])
	o := ollamaOpts(req.top)
	f := &fit{b: b, d: ollamaDialect{}, req: req, model: model, reserve: g.reserveOr(o.NumPredict),
		rep: &Report{Policy: g.policy(r), Backend: string(b.kind)}, cal: g.calibrationFor(b.kind, model)}
	f.window, f.rep.WindowSource = g.ollamaWindow(r.Context(), b, model, o)
	if !g.apply(r.Context(), w, f, body) {
		return
	}
	g.forwardRetry(w, r, f, rc.wrap(g.relayOllama))
}

// forwardOllama sends f.body (a raw prompt, no retry) and relays the
// answer.
func (g *Guard) forwardOllama(w http.ResponseWriter, r *http.Request, f *fit) {
	resp, err := g.send(r.Context(), r, f.b, f.body)
	if err != nil {
		g.writeUpstreamError(w, r, err, f.rep)
		return
	}
	g.relayOllama(w, r, f, resp)
}

// relayOllama relays an Ollama answer, its done chunk (or whole body)
// carrying the report; prompt_eval_count calibrates and reveals silent
// truncation.
func (g *Guard) relayOllama(w http.ResponseWriter, r *http.Request, f *fit, resp *http.Response) {
	isDone := func(obj []byte) bool { return bytes.Contains(obj, []byte(`"done":true`)) }
	observe := func(obj []byte) {
		if isDone(obj) {
			g.observed(f, jsonInt(obj, "prompt_eval_count"), true)
		}
	}
	g.relayEnded(r, f, relay(w, resp, f.rep, rdOllama, isDone, observe, f.rep.inject))
}

// ollamaGenerate serves /api/generate: a raw prompt keeps its head and
// tail.
func (g *Guard) ollamaGenerate(w http.ResponseWriter, r *http.Request, b *backend, body []byte) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		b.proxy.ServeHTTP(w, withBody(r, body))
		return
	}
	model := str(top["model"])
	o := ollamaOpts(top)
	var images []json.RawMessage
	_ = json.Unmarshal(top["images"], &images)
	f := &fit{b: b, model: model, reserve: g.reserveOr(o.NumPredict), rep: &Report{Policy: g.policy(r), Backend: string(b.kind)}, cal: g.calibrationFor(b.kind, model)}
	f.window, f.rep.WindowSource = g.ollamaWindow(r.Context(), b, model, o)
	f.body = body
	overhead := templateOverhead + len(images)*compact.DefaultImageTokens
	if !g.fitPrompt(r.Context(), w, f, top, "prompt", str(top["prompt"]), overhead+f.cal.snapshot(g.base).c.Count(str(top["system"]))) {
		return
	}
	g.forwardOllama(w, r, f)
}

// fitPrompt applies the policy to a raw prompt in top[key].
func (g *Guard) fitPrompt(ctx context.Context, w http.ResponseWriter, f *fit, top map[string]json.RawMessage, key, prompt string, overhead int) bool {
	f.cnt = f.cal.snapshot(g.base)
	f.rep.Window = f.window
	f.rep.Budget = g.budget(f.window, f.reserve)
	f.rep.Strategy = "none"
	tokens := f.cnt.c.Count(prompt) + overhead
	f.sent, f.chars = tokens, len(prompt)
	f.rep.TokensBefore, f.rep.TokensAfter = tokens, tokens
	if tokens <= f.rep.Budget || f.rep.Policy == PolicyObserve {
		if tokens > f.rep.Budget {
			f.rep.WouldEvictTokens = tokens - f.rep.Budget
		}
		return true
	}
	if f.rep.Policy == PolicyStrict {
		g.stats.refused.Add(1)
		writeError(w, http.StatusRequestEntityTooLarge, "context_overflow",
			fmt.Sprintf("prompt is about %d tokens, budget is %d (window %d); refusing rather than truncating silently", tokens, f.rep.Budget, f.window),
			f.rep, "n_prompt_tokens", tokens, "budget", f.rep.Budget, "window", f.window)
		return false
	}
	opts := compact.Options{Counter: f.cnt.c, Cache: f.cnt.cache, RecallHint: g.recallHint}
	if store := g.storeFunc(ctx); store != nil {
		opts.Store = store
	}
	res, err := compact.CompactPrompt(prompt, compact.Budget{Limit: f.rep.Budget, Overhead: overhead}, opts)
	if err != nil {
		status, typ := http.StatusInternalServerError, "compaction_failed"
		if errors.Is(err, compact.ErrTooLarge) {
			status, typ = http.StatusRequestEntityTooLarge, "context_overflow_uncompactable"
		}
		g.stats.refused.Add(1)
		writeError(w, status, typ, err.Error(), f.rep)
		return false
	}
	f.rep.Compacted, f.rep.TokensAfter, f.rep.EvictedTokens, f.rep.Strategy = res.Compacted, res.TokensAfter, res.EvictedTokens, res.Strategy
	if res.StoreID != "" || res.StoreErr != "" {
		f.rep.Evicted = []SpanReport{{Tokens: res.EvictedTokens, StoreID: res.StoreID, StoreErr: res.StoreErr}}
	}
	if !res.Compacted {
		return true
	}
	data, err := json.Marshal(res.Prompt)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "compaction_failed", err.Error(), f.rep)
		return false
	}
	top[key] = data
	body, err := json.Marshal(top)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "compaction_failed", err.Error(), f.rep)
		return false
	}
	f.body, f.sent, f.chars = body, res.TokensAfter, len(res.Prompt)
	g.compacted(f, res.EvictedTokens)
	return true
}

// withBody gives r its body back after the guard read it.
func withBody(r *http.Request, body []byte) *http.Request {
	r2 := r.Clone(r.Context())
	r2.Body = http.NoBody
	if len(body) > 0 {
		r2.Body = io.NopCloser(bytes.NewReader(body))
	}
	r2.ContentLength = int64(len(body))
	return r2
}
