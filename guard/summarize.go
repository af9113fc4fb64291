package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// Defaults of the summarizer (Options.Summarize).
const (
	// DefaultSummarizeTimeout bounds the digests of one request, the whole
	// map-reduce of every new span.
	DefaultSummarizeTimeout = 30 * time.Second
	// DefaultDigestTokens is the num_predict (max_tokens) of the final
	// digest of a span.
	DefaultDigestTokens = 400
	// partialTokens is the num_predict of a chunk's summary and of an
	// intermediate reduce.
	partialTokens = 256
	// summarizeParallel is how many chunks are summarized at once.
	summarizeParallel = 2
	// maxReduceLevels bounds the reduce recursion.
	maxReduceLevels = 8
	// promptVersion is part of the cache key: a change of the prompts
	// makes new digests.
	promptVersion = "1"
	// Text markers around the text to summarize (as llmemu expects).
	beginText = "---BEGIN TEXT---"
	endText   = "---END TEXT---"
)

// summarizer writes digests of evicted spans with a model: map over the
// whole span in chunks that fit the summarizer's window, reduce the
// partial summaries (recursively when they do not fit one call), cache the
// digest in the offload store by a hash of the span, and share one
// summarization between concurrent requests with the same new span.
type summarizer struct {
	g       *Guard
	model   string   // "" : the request's model
	direct  *backend // Options.SummarizerURL, or nil to route by model
	timeout time.Duration
	tokens  int
	flight  singleflight.Group

	calls, hits, misses, failures atomic.Int64
}

func newSummarizer(g *Guard, o Options) (*summarizer, error) {
	s := &summarizer{g: g, model: o.SummarizerModel, timeout: o.SummarizeTimeout, tokens: o.DigestTokens}
	if s.timeout <= 0 {
		s.timeout = DefaultSummarizeTimeout
	}
	if s.tokens <= 0 {
		s.tokens = DefaultDigestTokens
	}
	if o.SummarizerURL != "" {
		raw := strings.TrimSuffix(o.SummarizerURL, "/")
		k := kOllama
		if strings.HasSuffix(raw, "/v1") {
			k, raw = kLlamaCpp, strings.TrimSuffix(raw, "/v1")
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("summarizer URL %q: not an http(s) URL", o.SummarizerURL)
		}
		s.direct = &backend{kind: k, base: u, client: g.client}
	}
	return s, nil
}

// digestFunc returns the compact.Options.Digest of one request (nil when
// summarizing is off): every digest it makes is bounded by ctx, which
// carries the request's summarizing deadline. Failures are logged and
// give the plain notice.
func (g *Guard) digestFunc(ctx context.Context, f *fit) func([]compact.Message) (string, error) {
	s := g.sum
	if s == nil {
		return nil
	}
	return func(span []compact.Message) (string, error) {
		d, err := s.digest(ctx, f, span)
		if err != nil {
			s.failures.Add(1)
			g.log.Warn("summarize failed: plain notice", "model", f.model, "messages", len(span), "err", err)
		}
		return d, err
	}
}

// status is the summarizer's part of /ctxkit/health: model calls, digests
// found in the store, digests made, and failures (plain notices).
func (s *summarizer) status() map[string]any {
	model := s.model
	if model == "" {
		model = "(the request's model)"
	}
	return map[string]any{"model": model, "calls": s.calls.Load(), "cache_hits": s.hits.Load(), "summarized": s.misses.Load(), "failures": s.failures.Load()}
}

// digestRecord is what the store keeps of a digest.
type digestRecord struct {
	Digest string `json:"digest"`
	Model  string `json:"model"`
}

// digest returns the digest of span, from the store's cache or made by
// the model (once for all concurrent requests with this span).
func (s *summarizer) digest(ctx context.Context, f *fit, span []compact.Message) (string, error) {
	model := s.model
	if model == "" {
		model = f.model
	}
	data, err := json.Marshal(span)
	if err != nil {
		return "", fmt.Errorf("encode span: %w", err)
	}
	// A copy: the summarization may outlive the request (below), whose
	// fit its handler goes on changing.
	on := requestOn{b: f.b, model: f.model, window: f.window}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", promptVersion, model, s.tokens)
	h.Write(data)
	id := "digest_" + hex.EncodeToString(h.Sum(nil)[:8])
	if d, ok := s.cached(ctx, id); ok {
		s.hits.Add(1)
		return d, nil
	}
	ch := s.flight.DoChan(id, func() (any, error) {
		// detached from the request that started it, so that a client
		// that leaves does not fail the others waiting for it
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		if d, ok := s.cached(wctx, id); ok {
			s.hits.Add(1)
			return d, nil
		}
		s.misses.Add(1)
		d, err := s.mapReduce(wctx, model, on, span)
		if err != nil {
			return "", err
		}
		s.keep(wctx, id, model, d)
		return d, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("summarize: %w", context.Cause(ctx))
	}
}

// digestKey is the key-value store's key of a digest or a chunk's summary.
func digestKey(id string) string { return "guard/" + id }

// keep caches a digest or a chunk's summary in the key-value store, for as
// long as the evicted spans are kept.
func (s *summarizer) keep(ctx context.Context, id, model, d string) {
	kv := s.g.opts.KV
	if kv == nil {
		return
	}
	b, err := json.Marshal(digestRecord{Digest: d, Model: model})
	if err == nil {
		err = kv.Put(ctx, digestKey(id), b, time.Now(), EvictedTTL)
	}
	if err != nil {
		s.g.log.Warn("digest not cached", "id", id, "err", err)
	}
}

func (s *summarizer) cached(ctx context.Context, id string) (string, bool) {
	kv := s.g.opts.KV
	if kv == nil {
		return "", false
	}
	raw, err := kv.Get(ctx, digestKey(id), time.Now())
	if err != nil {
		return "", false
	}
	var rec digestRecord
	if json.Unmarshal(raw, &rec) != nil || strings.TrimSpace(rec.Digest) == "" {
		return "", false
	}
	return rec.Digest, true
}

// target is where the summarizer's calls go and what fits one call.
type target struct {
	b      *backend
	model  string
	window int
	chunk  int // tokens of text per call
	count  func(string) int
}

// requestOn is what the summarizer needs of the request it summarizes
// for: the backend and model it runs on, and its window.
type requestOn struct {
	b      *backend
	model  string
	window int
}

// target is where model's summarizing calls go for a request on f, and
// how much text one call takes.
func (s *summarizer) target(ctx context.Context, model string, f requestOn) (*target, error) {
	b := s.direct
	if b == nil {
		b = s.g.route(ctx, model)
	}
	if s.g.arb != nil && b != s.direct && b != f.b && b.kind != kOpenAI && f.b.kind != kOpenAI && f.b.kind != kAnthropic {
		// the request holds its runtime: the other one may not load a
		// model on the GPU now
		return nil, fmt.Errorf("summarizer model %q runs on %s while the request holds %s (--arbitrate): use the request's runtime or --summarizer-url", model, b.kind, f.b.kind)
	}
	t := &target{b: b, model: model}
	switch {
	case b == f.b && model == f.model && f.window > 0:
		// the request's own model: its window, so that Ollama does not
		// reload it for another num_ctx
		t.window = f.window
	case b == s.direct:
		t.window = s.directWindow(ctx, model)
	case b.kind == kOllama:
		t.window, _ = s.g.ollamaWindow(ctx, b, model, ollamaOptions{})
	case b.kind == kLlamaCpp || b.kind == kOpenAI:
		t.window, _ = s.g.openaiWindow(ctx, b, model)
	default:
		return nil, fmt.Errorf("summarizer model %q is served by the %s backend, which the summarizer does not speak", model, b.kind)
	}
	// Text is counted with the base counter against a room divided by the
	// calibration rounded up past the next eighth: a calibration that
	// creeps up by a few percent does not move the chunk boundaries, so a
	// chunk's cached summary is found again.
	scale := s.g.calibrationFor(b.kind, model).snapshot(s.g.base).scale
	q := (math.Floor(scale*8) + 1) / 8
	t.count = s.g.base.Count
	out := max(s.tokens, partialTokens)
	overhead := t.count(mapPrompt("")) + templateOverhead + 16
	t.chunk = int(float64(t.window-out-s.g.opts.Margin)/q) - overhead
	if t.chunk < 2*partialTokens+64 {
		return nil, fmt.Errorf("summarizer window %d of %q is too small for chunks and a %d-token digest", t.window, model, out)
	}
	return t, nil
}

// directWindow is the window of the model at Options.SummarizerURL: the
// context_length Ollama's /api/ps gives it loaded, llama.cpp's n_ctx
// (/props), else the configured window.
func (s *summarizer) directWindow(ctx context.Context, model string) int {
	get := func(path string, v any) error { return s.g.getJSON(ctx, s.direct, path, v) }
	if s.direct.kind == kOllama {
		var ps struct {
			Models []psEntry `json:"models"`
		}
		if get("/api/ps", &ps) == nil {
			for _, m := range ps.Models {
				if (m.Name == model || m.Model == model || m.Name == model+":latest") && m.ContextLength > 0 {
					return m.ContextLength
				}
			}
		}
	} else {
		var props struct {
			Settings struct {
				NCtx int `json:"n_ctx"`
			} `json:"default_generation_settings"`
		}
		if get("/props", &props) == nil && props.Settings.NCtx > 0 {
			return props.Settings.NCtx
		}
	}
	return s.g.configWindow(model)
}

// mapReduce summarizes the whole span: every chunk (map), then the partial
// summaries together (reduce), recursively while they do not fit one call.
// Any failed call fails the digest: a digest with a hole would lose part
// of the span without saying so.
func (s *summarizer) mapReduce(ctx context.Context, model string, f requestOn, span []compact.Message) (string, error) {
	t, err := s.target(ctx, model, f)
	if err != nil {
		return "", err
	}
	chunks := chunkText(spanText(span), t.chunk, t.count)
	if len(chunks) == 1 {
		return s.call(ctx, t, mapPrompt(chunks[0]), s.tokens)
	}
	parts := make([]string, len(chunks))
	grp, gctx := errgroup.WithContext(ctx)
	grp.SetLimit(summarizeParallel)
	for i, c := range chunks {
		grp.Go(func() error {
			// a chunk's summary is cached too: a span that grows from
			// turn to turn starts with the same chunks
			prompt := mapPrompt(c)
			sum := sha256.Sum256([]byte(promptVersion + "\x00" + model + "\x00" + prompt))
			id := "digest_part_" + hex.EncodeToString(sum[:8])
			if p, ok := s.cached(gctx, id); ok {
				parts[i] = p
				return nil
			}
			p, err := s.call(gctx, t, prompt, partialTokens)
			if err == nil {
				s.keep(gctx, id, model, p)
			}
			parts[i] = p
			return err
		})
	}
	if err := grp.Wait(); err != nil {
		return "", err
	}
	for level := 0; level < maxReduceLevels; level++ {
		groups := groupParts(parts, t.chunk, t.count)
		if len(groups) == 1 {
			return s.call(ctx, t, reducePrompt(groups[0]), s.tokens)
		}
		if len(groups) == len(parts) {
			return "", fmt.Errorf("summarize: %d partial summaries too long to combine in a %d-token window", len(parts), t.window)
		}
		next := make([]string, len(groups))
		for i, g := range groups {
			if len(g) == 1 { // nothing to combine it with at this level
				next[i] = g[0]
				continue
			}
			p, err := s.call(ctx, t, reducePrompt(g), partialTokens)
			if err != nil {
				return "", err
			}
			next[i] = p
		}
		parts = next
	}
	return "", fmt.Errorf("summarize: no digest after %d reduce levels", maxReduceLevels)
}

// spanText writes evicted messages as plain text, one message a
// paragraph, tool calls and results named.
func spanText(span []compact.Message) string {
	var b strings.Builder
	for _, m := range span {
		switch {
		case m.Role == compact.RoleTool && m.Name != "":
			fmt.Fprintf(&b, "tool %s result:\n", m.Name)
		case m.Role == compact.RoleTool:
			b.WriteString("tool result:\n")
		default:
			fmt.Fprintf(&b, "%s:\n", m.Role)
		}
		if t := strings.TrimSpace(m.Text); t != "" {
			b.WriteString(t)
			b.WriteByte('\n')
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "(called %s %s)\n", c.Name, c.Args)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// chunkText cuts text into chunks of at most limit tokens, at line ends
// where it can; a line that does not fit the room left is cut (at a space
// where it can) to fill the chunk, and goes on in the next.
func chunkText(text string, limit int, count func(string) int) []string {
	var chunks []string
	var cur strings.Builder
	curN := 0
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			chunks = append(chunks, cur.String())
		}
		cur.Reset()
		curN = 0
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		n := count(line)
		for curN+n > limit {
			room := limit - curN
			if room < limit/8 {
				flush()
				continue
			}
			piece := cutLine(line, room, count)
			cur.WriteString(piece)
			flush()
			line = line[len(piece):]
			n = count(line)
		}
		cur.WriteString(line)
		curN += n
	}
	flush()
	if len(chunks) == 0 {
		chunks = []string{""}
	}
	return chunks
}

// cutLine returns the longest head of line (ending at a space when there
// is one in its second half) that counts at most limit tokens, and at
// least one character.
func cutLine(line string, limit int, count func(string) int) string {
	lo, hi := 1, len(line) // the head line[:lo] fits, line[:hi+1] may not
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if count(line[:mid]) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for lo < len(line) && !utf8.RuneStart(line[lo]) {
		lo--
	}
	if lo == 0 {
		_, size := utf8.DecodeRuneInString(line)
		return line[:size]
	}
	if sp := strings.LastIndexByte(line[:lo], ' '); sp > lo/2 {
		lo = sp + 1
	}
	return line[:lo]
}

// groupParts groups consecutive partial summaries so that each group's
// reduce prompt fits limit tokens.
func groupParts(parts []string, limit int, count func(string) int) [][]string {
	var groups [][]string
	var cur []string
	n := 0
	for _, p := range parts {
		pn := count(p) + 8
		if len(cur) > 0 && n+pn > limit {
			groups = append(groups, cur)
			cur, n = nil, 0
		}
		cur = append(cur, p)
		n += pn
	}
	return append(groups, cur)
}

const factsToKeep = "Keep every fact, verbatim where you can: names, numbers, ids, paths, commands, error messages, decisions and open questions. " +
	"Write plain short lines, no preamble, no commentary."

// mapPrompt asks for the summary of one chunk; it does not say which
// chunk, so that a chunk's summary is the same in a span that grew.
func mapPrompt(text string) string {
	return "Summarize this part of a conversation (between the markers) that was removed from a language model's context window: your summary stands in for it. " +
		factsToKeep + "\n" + beginText + "\n" + text + "\n" + endText + "\n"
}

func reducePrompt(parts []string) string {
	var b strings.Builder
	b.WriteString("Summarize these summaries of consecutive parts of a conversation (between the markers) into one, in order, dropping only repetition. ")
	b.WriteString(factsToKeep)
	b.WriteString("\n" + beginText + "\n")
	for _, p := range parts {
		b.WriteString(strings.TrimSpace(p))
		b.WriteString("\n\n")
	}
	b.WriteString(endText + "\n")
	return b.String()
}

// call asks the summarizer model once: Ollama's /api/generate (with
// num_ctx set to the window the chunks were cut for, so that a model
// loaded by this call is loaded with it), or /v1/chat/completions for a
// llama.cpp or OpenAI-compatible backend.
func (s *summarizer) call(ctx context.Context, t *target, prompt string, numPredict int) (string, error) {
	s.calls.Add(1)
	var body any
	path := "/api/generate"
	if t.b.kind == kOllama {
		body = map[string]any{"model": t.model, "prompt": prompt, "stream": false, "think": false, "keep_alive": "10m",
			"options": map[string]any{"num_predict": numPredict, "temperature": 0.1, "num_ctx": t.window}}
	} else {
		path = "/v1/chat/completions"
		body = map[string]any{"model": t.model, "messages": []map[string]string{{"role": "user", "content": prompt}},
			"stream": false, "max_tokens": numPredict, "temperature": 0.1}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("summarize: encode request: %w", err)
	}
	u := *t.b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("summarize: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.g.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("summarize: %s %s: %w", t.b.kind, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", fmt.Errorf("summarize: %s %s: %w", t.b.kind, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("summarize: %s %s: status %d: %s", t.b.kind, path, resp.StatusCode, bytes.TrimSpace(raw[:min(len(raw), 300)]))
	}
	var out struct {
		Response        string `json:"response"`
		PromptEvalCount int    `json:"prompt_eval_count"`
		Choices         []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("summarize: %s %s: %w", t.b.kind, path, err)
	}
	// The backend's count calibrates the chunks' size; Ollama's
	// evaluating the whole window means it cut the chunk, whose summary
	// would leave out its end without saying so.
	cal := s.g.calibrationFor(t.b.kind, t.model)
	snap := cal.snapshot(s.g.base)
	counted := snap.c.Count(prompt) + templateOverhead
	if n := max(out.PromptEvalCount, out.Usage.PromptTokens); t.b.kind == kOllama && n >= t.window {
		cal.observe(snap, max(len(prompt), minSampleChars), counted, max(n, t.window+1))
		return "", fmt.Errorf("summarize: Ollama cut the chunk to its window (prompt_eval_count %d of %d); the guard counted %d", n, t.window, counted)
	} else if n > 0 {
		cal.observe(snap, len(prompt), counted, n)
	}
	text := out.Response
	if len(out.Choices) > 0 {
		text = out.Choices[0].Message.Content
	}
	if text = strings.TrimSpace(text); text == "" {
		return "", errors.New("summarize: the model answered nothing")
	}
	return text, nil
}
