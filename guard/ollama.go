package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// ollamaWindow is the window Ollama will run a request in, resolved per
// request as Ollama resolves it: options.num_ctx, else the model's
// Modelfile PARAMETER num_ctx, else the server's default (learned from a
// load the guard observed, else Options.Windows or DefaultWindow), capped
// by the model's trained context; /api/show gives the last two. /api/ps is
// not asked: it shows the last load, which a request with another num_ctx
// replaces.
func (g *Guard) ollamaWindow(ctx context.Context, b *backend, model string, o ollamaOptions) (int, string) {
	info := g.showModel(ctx, b, model)
	n, source := 0, ""
	switch {
	case o.NumCtx > 0:
		n, source = o.NumCtx, "request options.num_ctx"
	case info.numCtx > 0:
		n, source = info.numCtx, "Modelfile num_ctx (/api/show)"
	default:
		n, source = g.ollamaDefault(ctx, b, model)
	}
	if info.trained > 0 && n > info.trained {
		n, source = info.trained, source+", capped at the trained context (/api/show)"
	}
	return max(n, 4), source
}

// Sources of an Ollama window that is the server's default.
const (
	sourceLearned    = "server default (learned from a load)"
	sourceConfigured = "server default (configured)"
	sourceLoaded     = "server default (configured), or the smaller loaded window (/api/ps)"
)

// ollamaDefault is the window Ollama gives a model when neither the
// request nor the Modelfile sets one: what a load of the guard's showed
// (learnDefault), else the configured one. Until a load showed it, a model
// loaded at a smaller window counts: that load may have been the server's
// default, and fitting to the smaller window is safe. A larger one does
// not: a request with a larger num_ctx may have loaded it, and this one
// would reload it at the default.
func (g *Guard) ollamaDefault(ctx context.Context, b *backend, model string) (int, string) {
	if w := g.opts.Windows[model]; w > 0 {
		return w, "config"
	}
	b.mu.Lock()
	learned := b.serverDefault
	b.mu.Unlock()
	if learned > 0 {
		return learned, sourceLearned
	}
	for _, m := range g.loaded(ctx, b) {
		if sameModel(m, model) && m.ContextLength > 0 && m.ContextLength < g.opts.DefaultWindow {
			return m.ContextLength, sourceLoaded
		}
	}
	return g.opts.DefaultWindow, sourceConfigured
}

// learnDefault reads, after a request that ran at the server's default,
// the window Ollama loaded the model with: under the trained context it is
// the server's default (OLLAMA_CONTEXT_LENGTH, or the VRAM tier), which
// later requests are fitted to. A load at the trained context says only
// that the default is at least that, and teaches nothing. It asks at most
// every learnEvery.
func (g *Guard) learnDefault(ctx context.Context, b *backend, model, source string) {
	if source != sourceLearned && source != sourceConfigured && source != sourceLoaded {
		return
	}
	b.mu.Lock()
	if time.Since(b.learnedAt) < learnEvery {
		b.mu.Unlock()
		return
	}
	b.learnedAt = time.Now()
	b.mu.Unlock()
	n, _ := g.loadedWindow(ctx, b, model)
	if trained := g.showModel(ctx, b, model).trained; n <= 0 || trained > 0 && n >= trained {
		return
	}
	b.mu.Lock()
	old := b.serverDefault
	b.serverDefault = n
	b.mu.Unlock()
	if old != n {
		g.log.Info("learned Ollama's default window from a load", "backend", b.kind, "model", model, "window", n, "configured", g.opts.DefaultWindow)
	}
}

// loadedWindow is the window /api/ps shows a model loaded with, read
// afresh; 0 when it is not loaded.
func (g *Guard) loadedWindow(ctx context.Context, b *backend, model string) (int, string) {
	b.mu.Lock()
	b.psAt = time.Time{}
	b.mu.Unlock()
	for _, m := range g.loaded(ctx, b) {
		if sameModel(m, model) && m.ContextLength > 0 {
			return m.ContextLength, "loaded (/api/ps)"
		}
	}
	return 0, ""
}

// learnEvery is how often the server's default is read again.
const learnEvery = time.Minute

// sameModel says whether a loaded model is the one a request named ("name"
// means "name:latest").
func sameModel(m psEntry, model string) bool {
	want := model
	if !strings.Contains(want, ":") {
		want += ":latest"
	}
	return m.Name == want || m.Model == want || m.Name == model
}

// ollamaShow is what Ollama's /api/show says of a model's window.
type ollamaShow struct {
	trained int // model_info["<arch>.context_length"], the cap
	numCtx  int // the Modelfile's PARAMETER num_ctx
	at      time.Time
}

// showTTL is how long an /api/show answer is reused (a model re-created
// with another Modelfile shows within it).
const showTTL = 10 * time.Second

// showModel asks /api/show, at most every showTTL per model; a failure
// leaves both numbers unknown (0) and is logged.
func (g *Guard) showModel(ctx context.Context, b *backend, model string) ollamaShow {
	b.mu.Lock()
	s, ok := b.shows[model]
	b.mu.Unlock()
	if ok && time.Since(s.at) < showTTL {
		return s
	}
	s = ollamaShow{at: time.Now()}
	var resp struct {
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
		Parameters string                     `json:"parameters"`
	}
	body, _ := json.Marshal(map[string]string{"model": model})
	if err := g.postJSON(ctx, b, "/api/show", body, &resp); err != nil {
		g.log.Warn("cannot read the model's window from Ollama's /api/show; fitting to the server default", "model", model, "err", err)
	} else {
		_ = json.Unmarshal(resp.ModelInfo[str(resp.ModelInfo["general.architecture"])+".context_length"], &s.trained)
		s.numCtx = modelfileNumCtx(resp.Parameters)
	}
	b.mu.Lock()
	if b.shows == nil {
		b.shows = map[string]ollamaShow{}
	}
	b.shows[model] = s
	b.mu.Unlock()
	return s
}

// modelfileNumCtx reads num_ctx from /api/show's parameters, one
// "name value" pair a line as Ollama writes them; 0 when absent.
func modelfileNumCtx(params string) int {
	for line := range strings.Lines(params) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
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
	g.learnDefault(r.Context(), f.b, f.model, f.rep.WindowSource)
}

// relayOllama relays an Ollama answer, its done chunk (or whole body)
// carrying the report; prompt_eval_count calibrates and reveals silent
// truncation.
func (g *Guard) relayOllama(w http.ResponseWriter, r *http.Request, f *fit, resp *http.Response) {
	var last answerFacts // relay observes an object before it asks whether it is final
	observe := func(obj []byte) { last = g.observeAnswer(rdOllama, f, obj) }
	isDone := func([]byte) bool { return last.final }
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
