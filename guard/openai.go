package guard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// defaultV1 is the backend of /v1 requests that name no known model:
// llama.cpp, else the OpenAI-compatible server, else Ollama, else
// Anthropic.
func (g *Guard) defaultV1() *backend {
	for _, k := range []kind{kLlamaCpp, kOpenAI, kOllama, kAnthropic} {
		if b := g.backends[k]; b != nil {
			return b
		}
	}
	return nil
}

// route picks the backend serving model: the one Options.Routes names,
// else the one whose model list
// (/api/tags, /v1/models) names it, else defaultV1. Lists are read again
// when a model is unknown, at most every few seconds.
func (g *Guard) route(ctx context.Context, model string) *backend {
	if model == "" || len(g.backends) == 1 {
		return g.defaultV1()
	}
	if k, ok := g.opts.Routes[model]; ok {
		return g.backends[kind(k)]
	}
	g.routeMu.Lock()
	k, ok := g.routes[model]
	stale := time.Since(g.routed) > 5*time.Second
	g.routeMu.Unlock()
	if !ok && stale {
		routes := map[string]kind{}
		for _, k := range []kind{kAnthropic, kOllama, kOpenAI, kLlamaCpp} {
			b := g.backends[k]
			if b == nil {
				continue
			}
			if k == kOllama {
				var tags struct {
					Models []struct{ Name, Model string } `json:"models"`
				}
				if g.getJSON(ctx, b, "/api/tags", &tags) == nil {
					for _, m := range tags.Models {
						routes[m.Name], routes[m.Model] = k, k
						if n, ok := bytes.CutSuffix([]byte(m.Name), []byte(":latest")); ok {
							routes[string(n)] = k
						}
					}
				}
				continue
			}
			var list struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if g.getJSON(ctx, b, "/v1/models", &list) == nil {
				for _, m := range list.Data {
					routes[m.ID] = k
				}
			}
		}
		g.routeMu.Lock()
		g.routes, g.routed = routes, time.Now()
		g.routeMu.Unlock()
		k, ok = routes[model]
	}
	if ok {
		return g.backends[k]
	}
	return g.defaultV1()
}

// serveModels answers /v1/models with every backend's models (Ollama's
// and Anthropic's too), each once, in backend order, asked with the
// client's credentials. Each model says the window its backend has loaded
// (as the guard finds it for a request): context_length when the backend
// gave none (Ollama's and llama.cpp's lists do not; their trained maximum is
// not what a client may send), and a ctxkit object with the window, where it
// comes from and the budget left after the default reserve, so that a client
// sizing its own prompts sizes them to what will fit.
func (g *Guard) serveModels(w http.ResponseWriter, r *http.Request) {
	creds := http.Header{}
	for _, k := range []string{"Authorization", "X-Api-Key", "Anthropic-Version"} {
		if v := r.Header.Get(k); v != "" {
			creds.Set(k, v)
		}
	}
	seen := map[string]bool{}
	data := []json.RawMessage{}
	for _, k := range []kind{kLlamaCpp, kOpenAI, kOllama, kAnthropic} {
		b := g.backends[k]
		if b == nil {
			continue
		}
		var list struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := g.getJSONWith(r.Context(), b, "/v1/models", creds, &list); err != nil {
			g.log.Warn("model list", "backend", k, "err", err)
			continue
		}
		for _, m := range list.Data {
			var obj map[string]json.RawMessage
			var id string
			if json.Unmarshal(m, &obj) != nil || json.Unmarshal(obj["id"], &id) != nil || seen[id] {
				continue
			}
			seen[id] = true
			window, source := g.openaiWindow(r.Context(), b, id)
			if _, ok := obj["context_length"]; !ok {
				obj["context_length"] = json.RawMessage(strconv.Itoa(window))
			}
			info, err := json.Marshal(map[string]any{"backend": k, "window": window, "window_source": source, "budget": g.budget(window, g.opts.Reserve)})
			if err != nil {
				continue
			}
			obj["ctxkit"] = info
			out, err := json.Marshal(obj)
			if err != nil {
				continue
			}
			data = append(data, out)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// openaiRoute reads the model of a /v1 request, picks its backend and
// either hands it to h or passes it through.
func (g *Guard) openaiRoute(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request, *backend, []byte)) {
	var body []byte
	model := ""
	if r.Method == http.MethodPost {
		var err error
		if body, err = readBody(r); err != nil {
			writeBodyError(w, err)
			return
		}
		var m struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &m)
		model = m.Model
		r = withBody(r, body)
	}
	messages := strings.HasPrefix(r.URL.Path, "/v1/messages")
	b := g.v1Backend(r.Context(), r.URL.Path, model)
	if h == nil || g.policy(r) == PolicyOff || (b.kind == kAnthropic && !messages) {
		b.proxy.ServeHTTP(w, r)
		return
	}
	h(w, r, b, body)
}

// v1Backend is the backend of a /v1 request for model. The Messages API
// goes to the Anthropic backend when there is one (unless a route says
// otherwise), else to the model's backend: Ollama and llama.cpp serve it
// too. Other paths go to the model's backend.
func (g *Guard) v1Backend(ctx context.Context, path, model string) *backend {
	if b := g.backends[kAnthropic]; b != nil && strings.HasPrefix(path, "/v1/messages") {
		if _, routed := g.opts.Routes[model]; !routed {
			return b
		}
	}
	return g.route(ctx, model)
}

// openaiParams are the fields of a chat or completion request the guard
// reads.
type openaiParams struct {
	Model               string `json:"model"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	NPredict            int    `json:"n_predict"`
	Stream              bool   `json:"stream"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// includeUsage says whether a stream was asked for its usage chunk.
func (p openaiParams) includeUsage() bool { return p.Stream && p.StreamOptions.IncludeUsage }

func (p openaiParams) reserve() int {
	switch {
	case p.MaxCompletionTokens > 0:
		return p.MaxCompletionTokens
	case p.MaxTokens > 0:
		return p.MaxTokens
	}
	return p.NPredict
}

// openaiWindow is the window of a /v1 request: llama.cpp's per-slot n_ctx
// (/props), Ollama's loaded window (its /v1 cannot set num_ctx), an
// Anthropic model's configured window or 200,000, else the configured one.
func (g *Guard) openaiWindow(ctx context.Context, b *backend, model string) (int, string) {
	switch b.kind {
	case kLlamaCpp:
		b.mu.Lock()
		n := b.nCtx
		b.mu.Unlock()
		if n > 0 {
			return n, "llama.cpp /props n_ctx"
		}
		var props struct {
			Settings struct {
				NCtx int `json:"n_ctx"`
			} `json:"default_generation_settings"`
		}
		if g.getJSON(ctx, b, "/props", &props) == nil && props.Settings.NCtx > 0 {
			b.mu.Lock()
			b.nCtx = props.Settings.NCtx
			b.mu.Unlock()
			return props.Settings.NCtx, "llama.cpp /props n_ctx"
		}
	case kOllama:
		return g.ollamaWindow(ctx, b, model, ollamaOptions{})
	case kAnthropic:
		if w := g.opts.Windows[model]; w > 0 {
			return w, "config"
		}
		return DefaultAnthropicWindow, "default"
	}
	return g.configWindow(model), "config"
}

// openaiChat serves /v1/chat/completions, retrying once after an upstream
// context error with the budget recalibrated from the error's numbers.
func (g *Guard) openaiChat(w http.ResponseWriter, r *http.Request, b *backend, body []byte) {
	body, added := g.withRecallTool(g.policy(r), body, rdOpenAI)
	rc := g.recallFor(added, rdOpenAI, body)
	req, err := parseChat(body, openaiDialect{})
	if err != nil {
		b.proxy.ServeHTTP(w, withBody(r, body))
		return
	}
	var p openaiParams
	_ = json.Unmarshal(body, &p)
	f := &fit{b: b, d: openaiDialect{}, req: req, model: p.Model, reserve: g.reserveOr(p.reserve()), includeUsage: p.includeUsage(),
		rep: &Report{Policy: g.policy(r), Backend: string(b.kind)}, cal: g.calibrationFor(b.kind, p.Model)}
	f.window, f.rep.WindowSource = g.openaiWindow(r.Context(), b, p.Model)
	if !g.apply(r.Context(), w, f, body) {
		return
	}
	if b.kind == kLlamaCpp && !g.opts.NoExact && f.rep.Policy == PolicyCompact && 2*f.sent >= f.rep.Budget && !hasImages(f.req.conv) {
		if !g.exactFit(w, r, f) {
			return
		}
	}
	g.forwardRetry(w, r, f, rc.wrap(g.relayOpenAI))
}

func hasImages(c compact.Conversation) bool {
	for _, m := range c.Messages {
		if m.Images > 0 {
			return true
		}
	}
	return false
}

// exactFit counts the body about to be sent exactly with llama.cpp's own
// template and tokenizer; over the budget, the estimate is recalibrated
// from it and the request recompacted (once). It returns false when it
// answered the client.
func (g *Guard) exactFit(w http.ResponseWriter, r *http.Request, f *fit) bool {
	for range 2 {
		n, err := g.exactCount(r.Context(), f.b, f.body)
		if err != nil {
			g.log.Debug("exact count unavailable", "backend", f.b.kind, "err", err)
			return true
		}
		f.rep.ExactCounts, f.rep.TokensAfter = true, n
		if n <= f.rep.Budget {
			f.sent = n
			return true
		}
		f.cal.observe(f.cnt, minSampleChars, f.sent, n)
		f.cnt = f.cal.snapshot(g.base)
		f.rep.ExactCounts = false
		if !g.compactInto(r.Context(), w, f) {
			return false
		}
	}
	return true
}

// exactCount renders body with the server's chat template and tokenizes
// the prompt.
func (g *Guard) exactCount(ctx context.Context, b *backend, body []byte) (int, error) {
	var tmpl struct {
		Prompt *string `json:"prompt"`
	}
	if err := g.postJSON(ctx, b, "/apply-template", body, &tmpl); err != nil {
		return 0, err
	}
	if tmpl.Prompt == nil {
		return 0, errors.New("apply-template: no prompt")
	}
	req, err := json.Marshal(map[string]any{"content": *tmpl.Prompt, "add_special": true})
	if err != nil {
		return 0, err
	}
	var tok struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := g.postJSON(ctx, b, "/tokenize", req, &tok); err != nil {
		return 0, err
	}
	return len(tok.Tokens), nil
}

// forwardRetry sends f.body and relays the answer; an upstream context
// error is recognised once: the estimate is recalibrated from its numbers,
// the window set to the one it names, the request recompacted and sent
// again. A second failure is relayed as it is, with the report.
func (g *Guard) forwardRetry(w http.ResponseWriter, r *http.Request, f *fit, relayFn func(http.ResponseWriter, *http.Request, *fit, *http.Response)) {
	b := f.b
	for attempt := 0; ; attempt++ {
		resp, err := g.send(r.Context(), r, b, f.body)
		if err != nil {
			g.writeUpstreamError(w, r, err, f.rep)
			return
		}
		retryable := resp.StatusCode >= 400 && resp.StatusCode < 500
		var errBody []byte
		inBand := false
		if f.rep.Policy == PolicyCompact && resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			// Older llama.cpp builds and SGLang answer 200 and one
			// in-band event data: {"error":...}; look at the first line.
			if first, ok := inBandError(resp); ok {
				retryable, errBody, inBand = true, first, true
			}
		}
		if attempt == 0 && f.rep.Policy == PolicyCompact && retryable {
			if errBody == nil {
				errBody, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			}
			resp.Body.Close()
			if nPrompt, nCtx, ok := contextError(errBody); ok {
				g.stats.retried.Add(1)
				f.rep.UpstreamError = string(bytes.TrimSpace(errBody))
				g.log.Warn("upstream context error, recompacting", "backend", b.kind, "model", f.model, "n_prompt", nPrompt, "n_ctx", nCtx, "sent", f.sent)
				if nPrompt > f.sent {
					f.cal.observe(f.cnt, minSampleChars, f.sent, nPrompt)
				}
				if nCtx > 0 {
					f.window = nCtx
					if b.kind == kLlamaCpp {
						b.mu.Lock()
						b.nCtx = nCtx
						b.mu.Unlock()
					}
				}
				f.rep.Recovered = true
				f.cnt = f.cal.snapshot(g.base)
				if nPrompt <= f.sent {
					// No count in the error (Ollama's own message): the
					// estimate was short by an unknown amount, up to
					// fourfold (one token per byte). The prompt was over
					// the window, which is all the error says: the
					// calibration rises that far, so that a repeat does
					// not pay a failed call again; this retry alone
					// counts four times as much, or up to the window.
					if f.sent <= f.window {
						f.cal.observe(f.cnt, max(f.chars, minSampleChars), f.sent, f.window+1)
					}
					s := f.cnt.scale * max(4, float64(f.window)/float64(max(f.sent, 1)))
					f.cnt = counter{scale: s, cache: compact.NewCache(0), c: scaled(g.base, s)}
				}
				f.rep.Budget = g.budget(f.window, f.reserve)
				f.rep.Window = f.window
				if !g.compactInto(r.Context(), w, f) {
					return
				}
				continue
			}
			if !inBand {
				resp.Body = io.NopCloser(bytes.NewReader(errBody))
			}
		}
		if inBand {
			// Relayed as it came, with the report.
			resp.Body = io.NopCloser(bytes.NewReader(append(append([]byte("data: "), errBody...), "\n\n"...)))
		}
		if attempt > 0 && (resp.StatusCode >= 400 || inBand) {
			f.rep.Recovered = false
		}
		relayFn(w, r, f, resp)
		if b.kind == kOllama {
			g.learnDefault(r.Context(), b, f.model, f.rep.WindowSource)
		}
		return
	}
}

// inBandError reads the first line of an SSE answer: an error event's
// JSON is returned and the body closed (the caller relays the event
// itself); anything else is put back in front of the body.
func inBandError(resp *http.Response) ([]byte, bool) {
	br := bufio.NewReader(resp.Body)
	line, err := readLine(br)
	if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok && !isTooLarge(err) && isErrorEvent(rest) {
		resp.Body.Close()
		return bytes.TrimSpace(rest), true
	}
	var tail io.Reader = br
	if err != nil {
		tail = eofReader{err}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(line), tail), resp.Body}
	return nil, false
}

// eofReader returns its error (io.EOF or the read error) at once.
type eofReader struct{ err error }

func (r eofReader) Read([]byte) (int, error) { return 0, r.err }

func (g *Guard) relayOpenAI(w http.ResponseWriter, r *http.Request, f *fit, resp *http.Response) {
	var last answerFacts // relay observes an object before it asks whether it is final
	observe := func(obj []byte) { last = g.observeAnswer(rdOpenAI, f, obj) }
	isFinal := func([]byte) bool { return last.final }
	g.relayEnded(r, f, relay(w, resp, f.rep, rdOpenAI, isFinal, observe, f.rep.inject))
}

var (
	// reWindow finds the window in OpenAI's and vLLM's messages.
	reWindow = regexp.MustCompile(`maximum context length is (\d+) tokens`)
	// rePrompt finds the prompt's size, most precise first: vLLM's older
	// "(P in the messages, C in the completion)", vLLM's "at least P input
	// tokens", OpenAI's "resulted in P tokens", and a total "requested T
	// tokens" last.
	rePrompt = []*regexp.Regexp{
		regexp.MustCompile(`\((\d+) in the messages`),
		regexp.MustCompile(`prompt contains at least (\d+) input tokens`),
		regexp.MustCompile(`resulted in (\d+) tokens`),
		regexp.MustCompile(`requested (\d+) tokens`),
	}
	reTooLong = regexp.MustCompile(`prompt is too long: (\d+) tokens > (\d+) maximum`)
	reSGLang  = regexp.MustCompile(`Input length \((\d+) tokens\) exceeds the maximum allowed length \((\d+) tokens\)`)
)

// contextError recognises an upstream's context-overflow error and the
// numbers it gives (0 when it gives none):
//   - llama.cpp: exceed_context_size_error with n_prompt_tokens and n_ctx,
//     also wrapped as a string by Ollama's native path;
//   - Ollama: "the prompt is longer than the context length", "the input
//     length exceeds the context length" (no numbers);
//   - OpenAI: context_length_exceeded, numbers in its message;
//   - vLLM, current and older envelopes: "maximum context length is M
//     tokens ... at least N input tokens" or "(N in the messages, ...)";
//   - SGLang: "Input length (N tokens) exceeds the maximum allowed length
//     (M tokens)", where M is the input limit, used as the window (the
//     budget then errs small);
//   - Anthropic: "prompt is too long: N tokens > M maximum".
func contextError(body []byte) (nPrompt, nCtx int, ok bool) {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"` // vLLM's older and SGLang's envelope
	}
	if json.Unmarshal(body, &e) != nil {
		return 0, 0, false
	}
	var inner struct {
		Type          string `json:"type"`
		Code          any    `json:"code"`
		Message       string `json:"message"`
		NPromptTokens int    `json:"n_prompt_tokens"`
		NCtx          int    `json:"n_ctx"`
	}
	var text string
	switch {
	case json.Unmarshal(e.Error, &text) == nil && text != "":
		// Ollama: its own message, or llama-server's body as a string
		// (the native path).
		if strings.Contains(text, "exceed_context_size_error") {
			return contextError([]byte(text))
		}
		return 0, 0, strings.Contains(text, "prompt is longer than the context length") ||
			strings.Contains(text, "input length exceeds the context length")
	case json.Unmarshal(e.Error, &inner) == nil:
		if inner.Type == "exceed_context_size_error" {
			return inner.NPromptTokens, inner.NCtx, true
		}
	default:
		inner.Message = e.Message
	}
	msg := inner.Message
	if m := reTooLong.FindStringSubmatch(msg); m != nil {
		nPrompt, _ = strconv.Atoi(m[1])
		nCtx, _ = strconv.Atoi(m[2])
		return nPrompt, nCtx, true
	}
	if m := reSGLang.FindStringSubmatch(msg); m != nil {
		nPrompt, _ = strconv.Atoi(m[1])
		nCtx, _ = strconv.Atoi(m[2])
		return nPrompt, nCtx, true
	}
	if inner.Code != "context_length_exceeded" && !reWindow.MatchString(msg) {
		return 0, 0, false
	}
	if m := reWindow.FindStringSubmatch(msg); m != nil {
		nCtx, _ = strconv.Atoi(m[1])
	}
	for _, re := range rePrompt {
		if m := re.FindStringSubmatch(msg); m != nil {
			nPrompt, _ = strconv.Atoi(m[1])
			break
		}
	}
	return nPrompt, nCtx, true
}

// openaiCompletion serves /v1/completions: a raw string prompt keeps its
// head and tail.
func (g *Guard) openaiCompletion(w http.ResponseWriter, r *http.Request, b *backend, body []byte) {
	var top map[string]json.RawMessage
	var prompt string
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(top["prompt"], &prompt) != nil {
		b.proxy.ServeHTTP(w, withBody(r, body))
		return
	}
	var p openaiParams
	_ = json.Unmarshal(body, &p)
	f := &fit{b: b, model: p.Model, reserve: g.reserveOr(p.reserve()), includeUsage: p.includeUsage(),
		rep: &Report{Policy: g.policy(r), Backend: string(b.kind)}, cal: g.calibrationFor(b.kind, p.Model)}
	f.window, f.rep.WindowSource = g.openaiWindow(r.Context(), b, p.Model)
	f.body = body
	if !g.fitPrompt(r.Context(), w, f, top, "prompt", prompt, templateOverhead) {
		return
	}
	resp, err := g.send(r.Context(), r, b, f.body)
	if err != nil {
		g.writeUpstreamError(w, r, err, f.rep)
		return
	}
	g.relayOpenAI(w, r, f, resp)
}
