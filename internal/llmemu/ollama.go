package llmemu

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// The Ollama releases an emulator can be (OllamaOptions.Version).
const (
	// OllamaV0174 is Ollama v0.17.4, the newest release the Go module
	// proxy serves, on its llama.cpp runner (the default); the emulator is
	// compared with the real server by TestEmulatorMatchesRealOllama.
	OllamaV0174 = "0.17.4"
	// OllamaV033 is Ollama v0.33.0 on llama-server (v0.30+): the
	// half-window cut, the 400s of models without context shift and of
	// the native chat path. Read from its sources; not run here.
	OllamaV033 = "0.33.0"
)

// OllamaOptions configure an Ollama emulator. The zero value is Ollama
// v0.17.4 with the 4096-token default window serving "llama3.2:latest".
type OllamaOptions struct {
	Timing
	// Version is the release emulated, OllamaV0174 (the default) or
	// OllamaV033; /api/version reports it. NewOllama panics on another.
	Version string
	// NumCtx is the server's default window (OLLAMA_CONTEXT_LENGTH), used
	// when neither the request's options nor the model's Modelfile set
	// num_ctx; 0 means 4096.
	NumCtx int
	// Models are the installed models ("name:tag"; a request for "name"
	// means "name:latest"); empty means "llama3.2:latest".
	Models []string
	// Parameters are the PARAMETER lines of each model's Modelfile, by
	// installed name. num_ctx, num_keep and num_predict among them are
	// that model's defaults, under the request's options; /api/show
	// lists them all in "parameters". A value must be a number or, for
	// stop, any text; NewOllama panics otherwise.
	Parameters map[string][]Parameter
	// TrainedContext is the trained window /api/show reports as
	// model_info["llama.context_length"]; 0 means 131072. A larger
	// num_ctx loads this window instead.
	TrainedContext int
	// AddBOS makes the tokenizer add a BOS token: it counts in what the
	// runner sees and in its keep (num_keep+1), as with llama and gemma.
	AddBOS bool
	// Native emulates v0.33's native chat path (hf.co GGUF imports):
	// after the message-level truncation, a prompt still too long is
	// refused with HTTP 400 whose error string is llama-server's body.
	// Only with Version OllamaV033.
	Native bool
	// NoContextShift emulates a v0.33 model without context shift
	// (deepseek2): a prompt still too long is refused with HTTP 400
	// instead of cut. Only with Version OllamaV033.
	NoContextShift bool
	// Preload lists every model in /api/ps from the start, loaded with
	// its default window; otherwise a model is loaded by its first
	// request.
	Preload bool
	// MaxLoadedModels is OLLAMA_MAX_LOADED_MODELS: loading one more
	// unloads the least recently used; 0 means no limit.
	MaxLoadedModels int
	// Counter counts and cuts the rendered prompts and measures the
	// replies; nil means TinyBPE(), the vocabulary of the tiny model a
	// real Ollama runs in the end-to-end tests, which counts as that
	// server does. RuleCounter counts as the guard's default estimate
	// does: never check the guard's counting against it.
	Counter Counter
	// Log receives what the real server logs about truncation (WARN
	// "truncating input prompt", DEBUG "truncating input messages which
	// exceed context length", WARN "requested context size too large for
	// model"); nil discards it.
	Log *slog.Logger
	// Responder replaces the default model, Think.
	Responder Responder
}

// Parameter is one Modelfile line PARAMETER Name Value.
type Parameter struct {
	// Name is the option's name, as num_ctx.
	Name string
	// Value is its value as written in the Modelfile.
	Value string
}

// OllamaInputTooLong is v0.17.4's error (its runner's) for a prompt or an
// embedding input longer than the window when truncate is false.
const OllamaInputTooLong = "the input length exceeds the context length"

// Ollama emulates an Ollama server: /api/chat and /api/generate (NDJSON
// streaming by default, silent truncation), /api/tags, /api/show, /api/ps,
// /api/embed, /api/version and "/", the OpenAI-compatible
// /v1/chat/completions and /v1/models, and the Anthropic-compatible
// /v1/messages, which run at the model's default window (they cannot set
// num_ctx) with the same silent truncation.
//
// On v0.17.4 (the default) a chat goes through two cuts:
//
//   - the server (chatPrompt) drops whole messages from the front,
//     keeping the system messages and the last message, until the rendered
//     prompt (no BOS) has at most num_ctx tokens, num_ctx as asked (not
//     capped by the trained context); only a DEBUG log says so;
//   - the runner, when what it sees (BOS included) is still longer than
//     the window the model loaded with (num_ctx capped by the trained
//     context), keeps its first num_keep tokens (+1 for BOS) and its last
//     ones, exactly a window's worth, and logs a WARN. prompt_eval_count
//     is then exactly the window; the reply goes on past it (context
//     shift), so done_reason says nothing of the cut.
//
// With "truncate": false neither cut happens and an over-long prompt gets
// 400 {"error":"the input length exceeds the context length"}. Any change
// of num_ctx reloads the model; /api/ps shows the last load. /api/embed
// keeps the head of an over-long input (num_ctx−2 tokens, plus BOS).
//
// On v0.33 the second cut keeps only about half the window (see
// HalfWindowLimit) and the window is capped before the first.
type Ollama struct {
	Recorder
	opts    OllamaOptions
	counter Counter
	log     *slog.Logger
	params  map[string][]modelParam // installed model → its Modelfile parameters
	mux     *http.ServeMux
	ids     atomic.Int64

	mu     sync.Mutex
	loaded map[string]ollamaLoad // model → its last load
	uses   int64                 // requests that used a model so far
}

// modelParam is a Modelfile parameter with its value read: a float64 (as
// Ollama reads it back from the model's config) or, for stop, a string.
type modelParam struct {
	name  string
	value any
}

// ollamaLoad is one load of a model.
type ollamaLoad struct {
	asked  int   // num_ctx asked for (the scheduler compares these)
	numCtx int   // the window loaded: asked, capped by the trained context; 0: not loaded
	count  int   // loads of this model so far
	used   int64 // when it was last used, in requests
}

// NewOllama returns an Ollama emulator. It panics on an unknown Version,
// on Native or NoContextShift without OllamaV033, and on a Modelfile
// parameter whose value is not a number (stop excepted).
func NewOllama(opts OllamaOptions) *Ollama {
	if opts.Version == "" {
		opts.Version = OllamaV0174
	}
	if opts.Version != OllamaV0174 && opts.Version != OllamaV033 {
		panic(fmt.Sprintf("llmemu: Ollama version %q: want %q or %q", opts.Version, OllamaV0174, OllamaV033))
	}
	if (opts.Native || opts.NoContextShift) && opts.Version != OllamaV033 {
		panic("llmemu: OllamaOptions.Native and NoContextShift model v0.33 only; set Version: OllamaV033")
	}
	if opts.NumCtx <= 0 {
		opts.NumCtx = 4096
	}
	if len(opts.Models) == 0 {
		opts.Models = []string{"llama3.2:latest"}
	}
	if opts.TrainedContext <= 0 {
		opts.TrainedContext = 131072
	}
	if opts.Responder == nil {
		opts.Responder = Think
	}
	s := &Ollama{opts: opts, counter: opts.Counter, log: opts.Log, mux: http.NewServeMux(),
		params: map[string][]modelParam{}, loaded: map[string]ollamaLoad{}}
	if s.counter == nil {
		s.counter = TinyBPE()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for model, lines := range opts.Parameters {
		installed := s.resolve(model)
		if installed == "" {
			panic(fmt.Sprintf("llmemu: Modelfile parameters for %q, which is not among the installed models", model))
		}
		for _, p := range lines {
			mp, err := readParam(p)
			if err != nil {
				panic("llmemu: " + err.Error())
			}
			s.params[installed] = append(s.params[installed], mp)
		}
	}
	if opts.Preload {
		for _, m := range opts.Models {
			s.load(m, s.options(m, ollamaOptions{}))
		}
	}
	s.mux.HandleFunc("POST /api/chat", s.chat)
	s.mux.HandleFunc("POST /api/generate", s.generate)
	s.mux.HandleFunc("GET /api/tags", s.tags)
	s.mux.HandleFunc("POST /api/show", s.show)
	s.mux.HandleFunc("GET /api/ps", s.ps)
	s.mux.HandleFunc("POST /api/embed", s.embed)
	s.mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, "application/json; charset=utf-8", map[string]string{"version": s.opts.Version})
	})
	s.mux.HandleFunc("POST /v1/chat/completions", s.openaiChat)
	s.mux.HandleFunc("GET /v1/models", s.openaiModels)
	s.mux.HandleFunc("POST /v1/messages", s.anthropicMessages)
	root := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("Ollama is running"))
	}
	s.mux.HandleFunc("GET /{$}", root)
	s.mux.HandleFunc("HEAD /{$}", root)
	return s
}

// readParam reads a Modelfile parameter's value as Ollama stores it.
func readParam(p Parameter) (modelParam, error) {
	if p.Name == "stop" {
		return modelParam{name: p.Name, value: p.Value}, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(p.Value), 64)
	if err != nil {
		return modelParam{}, fmt.Errorf("the Modelfile line PARAMETER %s %q: not a number", p.Name, p.Value)
	}
	return modelParam{name: p.Name, value: f}, nil
}

// v0174 tells whether the emulator is v0.17.4.
func (s *Ollama) v0174() bool { return s.opts.Version == OllamaV0174 }

// Version returns the release emulated.
func (s *Ollama) Version() string { return s.opts.Version }

// CountChat returns the rendered prompt's token count as this emulator
// counts it (collated and rendered, by its Counter; ImageTokens per image;
// no BOS): what the server compares with num_ctx when it drops messages.
func (s *Ollama) CountChat(msgs []Message, tools []Tool) int {
	n := s.counter.Count(renderOllama(msgs, tools))
	for _, m := range msgs {
		n += m.Images * ImageTokens
	}
	return n
}

// Counter returns the emulator's Counter.
func (s *Ollama) Counter() Counter { return s.counter }

// ServeHTTP records the request, waits Latency, and serves it.
func (s *Ollama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := s.record(r); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.wait(r.Context(), s.opts.Latency) != nil {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Loaded returns the loaded models and the window each loaded with, as
// /api/ps shows.
func (s *Ollama) Loaded() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.loaded))
	for k, v := range s.loaded {
		if v.numCtx > 0 {
			out[k] = v.numCtx
		}
	}
	return out
}

// LoadCount returns how many times model (its installed name) was loaded:
// its first request and each change of num_ctx load it again.
func (s *Ollama) LoadCount(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded[model].count
}

// OllamaPromptTooLong is v0.33's error for a prompt it will not cut.
const OllamaPromptTooLong = "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length"

func ollamaError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, "application/json; charset=utf-8", map[string]string{"error": msg})
}

// installed answers, as Ollama does, a request without a model (400) or
// with one that is not installed (404); otherwise it returns the installed
// name.
func (s *Ollama) installed(w http.ResponseWriter, name string) (string, bool) {
	if name == "" {
		ollamaError(w, http.StatusBadRequest, "model is required")
		return "", false
	}
	model := s.resolve(name)
	if model == "" {
		ollamaError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", name))
		return "", false
	}
	return model, true
}

// resolve returns the installed name of model, or "" if none.
func (s *Ollama) resolve(model string) string {
	if !strings.Contains(model, ":") {
		model += ":latest"
	}
	for _, m := range s.opts.Models {
		if m == model {
			return m
		}
	}
	return ""
}

type ollamaOptions struct {
	NumCtx     *int `json:"num_ctx"`
	NumKeep    *int `json:"num_keep"`
	NumPredict *int `json:"num_predict"`
}

type ollamaToolCall struct {
	Function struct {
		Index     *int            `json:"index,omitempty"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	Thinking   string           `json:"thinking,omitempty"`
	Images     []string         `json:"images,omitempty"`
	ToolCalls  []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName   string           `json:"tool_name,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openaiStyleTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (t openaiStyleTool) tool() Tool {
	return Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
}

type ollamaChatRequest struct {
	Model     string            `json:"model"`
	Messages  []ollamaMessage   `json:"messages"`
	Tools     []openaiStyleTool `json:"tools"`
	Stream    *bool             `json:"stream"`
	KeepAlive json.RawMessage   `json:"keep_alive"`
	Options   ollamaOptions     `json:"options"`
	Truncate  *bool             `json:"truncate"`
	Shift     *bool             `json:"shift"`
}

type ollamaGenerateRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	System    string          `json:"system"`
	Raw       bool            `json:"raw"`
	Images    []string        `json:"images"`
	Stream    *bool           `json:"stream"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	Options   ollamaOptions   `json:"options"`
	Truncate  *bool           `json:"truncate"`
	Shift     *bool           `json:"shift"`
}

// unloads tells whether keep_alive is zero.
func unloads(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n == 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f == 0
		}
		if d, err := time.ParseDuration(s); err == nil {
			return d == 0
		}
	}
	return false
}

// ollamaCut is the result of Ollama's two truncation layers.
type ollamaCut struct {
	kept       []Message
	prompt     string // the kept rendered prompt
	sent, eval int    // tokens before and after (BOS and images included)
	sentMsgs   int    // messages before layer 1
	truncated  bool
	status     int    // non-zero: refuse with this status
	errMsg     string // and this error string
}

// ollamaRun is the options a request runs with.
type ollamaRun struct {
	asked      int // num_ctx: the request's, else the Modelfile's, else the server's default
	numCtx     int // the window the model loads with: asked, capped by the trained context
	numKeep    int
	numPredict int
}

// options resolves a request's options for model: the request's, else the
// model's Modelfile parameter, else the server's default.
func (s *Ollama) options(model string, o ollamaOptions) ollamaRun {
	run := ollamaRun{asked: s.opts.NumCtx, numKeep: 4, numPredict: -1}
	for _, p := range s.params[model] {
		f, ok := p.value.(float64)
		if !ok {
			continue
		}
		switch p.name {
		case "num_ctx":
			run.asked = int(f)
		case "num_keep":
			run.numKeep = int(f)
		case "num_predict":
			run.numPredict = int(f)
		}
	}
	if o.NumCtx != nil && *o.NumCtx != 0 {
		run.asked = *o.NumCtx
	}
	if o.NumKeep != nil {
		run.numKeep = *o.NumKeep
	}
	if o.NumPredict != nil {
		run.numPredict = *o.NumPredict
	}
	// The scheduler loads at least 4; the runner at most the trained
	// context.
	run.numCtx = min(max(run.asked, 4), s.opts.TrainedContext)
	if !s.v0174() {
		// v0.33's optionsForPrompt caps num_ctx before the first cut.
		run.asked = run.numCtx
	}
	return run
}

func (s *Ollama) bos() int {
	if s.opts.AddBOS {
		return 1
	}
	return 0
}

// collate merges consecutive messages of one role, tool messages
// excepted, as Ollama's Go template does before rendering: their contents
// joined by a blank line (the later messages' tool calls and images are
// not carried over).
func collate(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role && m.Role != "tool" {
			out[n-1].Content += "\n\n" + m.Content
			continue
		}
		out = append(out, m)
	}
	return out
}

// renderOllama renders msgs as Ollama does: collated, then the template.
func renderOllama(msgs []Message, tools []Tool) string { return RenderChat(collate(msgs), tools) }

// layer1 drops whole messages from the front, keeping the system messages
// and the last message, until the rendered prompt has at most numCtx
// tokens, images of the messages from the first kept on counting
// ImageTokens each (server/prompt.go chatPrompt; no BOS is counted there).
// It returns the kept messages and the count of all of them.
//
// Each candidate is counted as Ollama renders it, collated, without
// rendering it whole: every collated message starts with the ImStart
// special token, which the tokenizer splits out before anything else, so
// no token spans two of them and a candidate's count is the sum of its
// collated messages' counts. A candidate is the system messages before i
// (one collated message, with the run at i when that is a system run too),
// the rest of the run at i, and the runs after it, as in the whole list.
func (s *Ollama) layer1(msgs []Message, tools []Tool, numCtx int, truncate bool) ([]Message, int) {
	n := len(msgs)
	head := s.counter.Count(RenderChat(nil, tools)) // tools block and generation prompt
	group := func(ms []Message) int {               // one collated message
		if len(ms) == 0 {
			return 0
		}
		var b strings.Builder
		renderMessage(&b, collate(ms)[0])
		return s.counter.Count(b.String())
	}
	runEnd := make([]int, n) // the last message of the run that goes on from i
	for i := n - 1; i >= 0; i-- {
		runEnd[i] = i
		if i+1 < n && msgs[i+1].Role == msgs[i].Role && msgs[i].Role != "tool" {
			runEnd[i] = runEnd[i+1]
		}
	}
	after := make([]int, n+1)  // tokens of the runs from i, i a run's start
	images := make([]int, n+1) // ImageTokens of the messages from i
	for i := n - 1; i >= 0; i-- {
		images[i] = images[i+1] + msgs[i].Images*ImageTokens
		if i == 0 || runEnd[i-1] != runEnd[i] {
			after[i] = group(msgs[i:runEnd[i]+1]) + after[runEnd[i]+1]
		}
	}
	var sys []Message // system messages before i
	sysCount := 0
	candidate := func(i int) int {
		rest := after[runEnd[i]+1]
		if msgs[i].Role == "system" {
			return head + group(append(slices.Clip(sys), msgs[i:runEnd[i]+1]...)) + rest + images[i]
		}
		run := after[i]
		if i > 0 && runEnd[i-1] == runEnd[i] { // i is inside a run
			run = group(msgs[i:runEnd[i]+1]) + rest
		}
		return head + sysCount + run + images[i]
	}
	if n == 0 {
		return msgs, head
	}
	total := candidate(0)
	if !truncate {
		return msgs, total
	}
	for i := range msgs {
		if i == n-1 || candidate(i) <= numCtx {
			if i == 0 {
				return msgs, total
			}
			var kept []Message
			kept = append(kept, sys...)
			s.log.Debug("truncating input messages which exceed context length", "truncated", n-i)
			return append(kept, msgs[i:]...), total
		}
		if msgs[i].Role == "system" {
			sys = append(sys, msgs[i])
			sysCount = group(sys)
		}
	}
	return msgs, total
}

// cutChat applies both truncation layers of the emulated version.
func (s *Ollama) cutChat(msgs []Message, tools []Tool, run ollamaRun, truncate, shift bool) ollamaCut {
	kept, total := s.layer1(msgs, tools, run.asked, truncate)
	cut := ollamaCut{kept: kept, sent: total + s.bos(), sentMsgs: len(msgs), truncated: len(kept) < len(msgs)}
	images := 0
	for _, m := range kept {
		images += m.Images
	}
	prompt := renderOllama(kept, tools)
	n := s.counter.Count(prompt) + images*ImageTokens + s.bos()
	if s.v0174() {
		s.runnerCut(&cut, prompt, n, run, truncate)
		return cut
	}
	if !truncate && n >= run.numCtx {
		cut.status, cut.errMsg = http.StatusBadRequest, OllamaPromptTooLong
		return cut
	}
	if s.opts.Native {
		if n >= run.numCtx {
			cut.status, cut.errMsg = http.StatusBadRequest, string(llamaCppOverflowBody(n, run.numCtx))
			return cut
		}
		cut.prompt, cut.eval = prompt, n
		return cut
	}
	s.halfWindowCut(&cut, prompt, n, images > 0, run, truncate, shift)
	return cut
}

// runnerCut is v0.17.4's llama.cpp runner (runner/llamarunner
// NewSequence): a prompt of n tokens (BOS included) longer than the loaded
// window keeps its first num_keep tokens (+1 for BOS; all when num_keep is
// negative; at most window−1) and its last ones, exactly a window's worth;
// with truncate false it is refused.
func (s *Ollama) runnerCut(cut *ollamaCut, prompt string, n int, run ollamaRun, truncate bool) {
	cut.prompt, cut.eval = prompt, n
	if n <= run.numCtx {
		return
	}
	if !truncate {
		cut.status, cut.errMsg = http.StatusBadRequest, OllamaInputTooLong
		return
	}
	bos := s.bos()
	keep := run.numKeep
	if keep < 0 {
		keep = n
	}
	keep = min(keep+bos, run.numCtx-1)
	discard := n - run.numCtx
	s.log.Warn("truncating input prompt", "limit", run.numCtx, "prompt", n, "keep", keep, "new", run.numCtx)
	toks := s.counter.Split(prompt)
	head := min(max(keep-bos, 0), len(toks)) // BOS has no text
	from := min(head+discard, len(toks))     // images are not text: they may make up the rest
	cut.prompt = strings.Join(toks[:head], "") + strings.Join(toks[from:], "")
	cut.eval = run.numCtx
	cut.truncated = true
}

// halfWindowCut is v0.33's token-level cut (llm/llama_server.go
// completionPromptForRequest) with the half-window rule.
func (s *Ollama) halfWindowCut(cut *ollamaCut, prompt string, n int, media bool, run ollamaRun, truncate, shift bool) {
	cut.prompt, cut.eval = prompt, n
	if !truncate || media || run.numCtx <= 1 || len(prompt) < run.numCtx || n <= run.numCtx-1 {
		return
	}
	if !shift || s.opts.NoContextShift {
		cut.status, cut.errMsg = http.StatusBadRequest, OllamaPromptTooLong
		return
	}
	bos := s.bos()
	nKeep := run.numKeep
	if nKeep < 0 {
		nKeep = n
	} else {
		nKeep += bos
	}
	limit := HalfWindowLimit(run.numCtx, nKeep)
	if nKeep > limit {
		nKeep = limit
	}
	toks := s.counter.Split(prompt)
	headToks := min(max(nKeep-bos, 0), len(toks)) // the BOS token has no text
	tail := min(limit-nKeep, len(toks)-headToks)
	s.log.Warn("truncating input prompt", "limit", limit, "prompt", n, "keep", nKeep, "new", limit)
	cut.prompt = strings.Join(toks[:headToks], "") + strings.Join(toks[len(toks)-tail:], "")
	cut.eval = limit
	cut.truncated = true
}

// HalfWindowLimit is Ollama's layer-2 prompt length (v0.30.11+):
// num_ctx − max((num_ctx − nKeep)/2, 1), integer division. nKeep is
// num_keep, plus 1 when the tokenizer adds BOS.
func HalfWindowLimit(numCtx, nKeep int) int {
	return numCtx - max((numCtx-nKeep)/2, 1)
}

// load loads model for run, as the scheduler does: again when num_ctx
// changed (its needsReload compares the options asked for).
func (s *Ollama) load(model string, run ollamaRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uses++
	l := s.loaded[model]
	if l.numCtx > 0 && l.asked == run.asked {
		l.used = s.uses
		s.loaded[model] = l
		return
	}
	if run.asked > s.opts.TrainedContext {
		s.log.Warn("requested context size too large for model", "num_ctx", run.asked, "n_ctx_train", s.opts.TrainedContext)
	}
	if max := s.opts.MaxLoadedModels; max > 0 && l.numCtx == 0 {
		for s.loadedCount() >= max {
			s.evictLRU()
		}
	}
	s.loaded[model] = ollamaLoad{asked: run.asked, numCtx: run.numCtx, count: l.count + 1, used: s.uses}
}

// loadedCount is the number of models loaded; s.mu is held.
func (s *Ollama) loadedCount() int {
	n := 0
	for _, l := range s.loaded {
		if l.numCtx > 0 {
			n++
		}
	}
	return n
}

// evictLRU unloads the least recently used model; s.mu is held.
func (s *Ollama) evictLRU() {
	victim := ""
	for m, l := range s.loaded {
		if l.numCtx > 0 && (victim == "" || l.used < s.loaded[victim].used) {
			victim = m
		}
	}
	l := s.loaded[victim]
	s.loaded[victim] = ollamaLoad{count: l.count}
}

// loadOrUnload answers a request with nothing to generate, which Ollama
// uses to load a model (or, with keep_alive 0, to unload it), and returns
// the done_reason it gives.
func (s *Ollama) loadOrUnload(model string, run ollamaRun, keepAlive json.RawMessage) string {
	if unloads(keepAlive) {
		s.unload(model)
		return "unload"
	}
	s.load(model, run)
	return "load"
}

func (s *Ollama) unload(model string) {
	s.mu.Lock()
	l := s.loaded[model]
	s.loaded[model] = ollamaLoad{count: l.count}
	s.mu.Unlock()
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func (s *Ollama) chat(w http.ResponseWriter, r *http.Request) {
	var req ollamaChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	model, ok := s.installed(w, req.Model)
	if !ok {
		return
	}
	run := s.options(model, req.Options)
	if len(req.Messages) == 0 {
		reason := s.loadOrUnload(model, run, req.KeepAlive)
		writeJSON(w, http.StatusOK, "application/json; charset=utf-8", map[string]any{
			"model": req.Model, "created_at": now(), "message": map[string]string{"role": "assistant", "content": ""},
			"done": true, "done_reason": reason,
		})
		return
	}
	msgs := make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = Message{Role: m.Role, Content: m.Content, Images: len(m.Images)}
		for _, c := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	tools := make([]Tool, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = t.tool()
	}
	s.load(model, run)
	shift := boolOr(req.Shift, true)
	cut := s.cutChat(msgs, tools, run, boolOr(req.Truncate, true), shift)
	s.respond(w, r, respondArgs{
		path: "/api/chat", model: req.Model, cut: cut, tools: tools, chat: true, run: run, shift: shift,
		stream: boolOr(req.Stream, true), unload: unloads(req.KeepAlive), installed: model,
	})
}

func (s *Ollama) generate(w http.ResponseWriter, r *http.Request) {
	var req ollamaGenerateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	model, ok := s.installed(w, req.Model)
	if !ok {
		return
	}
	run := s.options(model, req.Options)
	if req.Prompt == "" && len(req.Images) == 0 {
		reason := s.loadOrUnload(model, run, req.KeepAlive)
		writeJSON(w, http.StatusOK, "application/json; charset=utf-8", map[string]any{
			"model": req.Model, "created_at": now(), "response": "", "done": true, "done_reason": reason,
		})
		return
	}
	prompt := req.Prompt
	if !req.Raw {
		var msgs []Message
		if req.System != "" {
			msgs = append(msgs, Message{Role: "system", Content: req.System})
		}
		msgs = append(msgs, Message{Role: "user", Content: req.Prompt})
		prompt = RenderChat(msgs, nil)
	}
	n := s.counter.Count(prompt) + len(req.Images)*ImageTokens + s.bos()
	cut := ollamaCut{sent: n}
	truncate, shift := boolOr(req.Truncate, true), boolOr(req.Shift, true)
	switch {
	case s.v0174():
		s.runnerCut(&cut, prompt, n, run, truncate)
	case !truncate && n >= run.numCtx:
		cut.status, cut.errMsg = http.StatusBadRequest, OllamaPromptTooLong
	default:
		s.halfWindowCut(&cut, prompt, n, len(req.Images) > 0, run, truncate, shift)
	}
	s.load(model, run)
	s.respond(w, r, respondArgs{
		path: "/api/generate", model: req.Model, cut: cut, run: run, shift: shift,
		stream: boolOr(req.Stream, true), unload: unloads(req.KeepAlive), installed: model,
	})
}

type respondArgs struct {
	path, model, installed string
	cut                    ollamaCut
	tools                  []Tool
	run                    ollamaRun
	chat, stream, unload   bool
	shift                  bool
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// ollamaOut is one chat or generate response object; fields are in
// Ollama's order.
type ollamaOut struct {
	Model              string         `json:"model"`
	CreatedAt          string         `json:"created_at"`
	Message            *ollamaMessage `json:"message,omitempty"`
	Response           *string        `json:"response,omitempty"`
	Done               bool           `json:"done"`
	DoneReason         string         `json:"done_reason,omitempty"`
	TotalDuration      int64          `json:"total_duration,omitempty"`
	LoadDuration       int64          `json:"load_duration,omitempty"`
	PromptEvalCount    int            `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64          `json:"prompt_eval_duration,omitempty"`
	EvalCount          int            `json:"eval_count,omitempty"`
	EvalDuration       int64          `json:"eval_duration,omitempty"`
}

// answer asks the model for its reply to what the server kept and limits
// it as the emulated version does. It returns the reply and the
// done_reason, "stop" or "length".
//
// On v0.17.4 the runner (runner/llamarunner) emits a sampled token before
// it feeds the token back, and checks its limits before feeding: a reply
// of num_predict tokens or more ends "length" after num_predict tokens;
// with shift false a reply that reaches the window's end ends "length"
// after num_ctx − prompt + 1 tokens. With shift (the default) a full
// window is shifted and the reply goes on. On v0.33 num_predict alone cuts
// the reply ("length" when it is longer).
func (s *Ollama) answer(cut ollamaCut, tools []Tool, run ollamaRun, maxTokens int, shift bool) (Reply, string) {
	turn := Turn{Prompt: cut.prompt, Tools: tools, Messages: cut.kept}
	reply := s.opts.Responder(turn)
	if !s.v0174() {
		text, short := limitReplyWith(s.counter, reply.Text, maxTokens)
		reply.Text = text
		return reply, reason(short)
	}
	toks := s.counter.Split(reply.Text)
	emitted, length := len(toks), false
	if maxTokens > 0 && len(toks) >= maxTokens {
		emitted, length = maxTokens, true
	}
	if room := run.numCtx - cut.eval + 1; !shift && len(toks) >= room {
		emitted, length = min(emitted, room), true
	}
	if emitted < len(toks) {
		text := strings.Join(toks[:emitted], "")
		for len(text) > 0 && !utf8.ValidString(text) {
			text = text[:len(text)-1] // the runner holds back a partial character
		}
		reply.Text = text
	}
	return reply, reason(length)
}

func reason(length bool) string {
	if length {
		return "length"
	}
	return "stop"
}

func (s *Ollama) respond(w http.ResponseWriter, r *http.Request, a respondArgs) {
	ev := Eval{Path: a.path, Model: a.model, SentTokens: a.cut.sent, PromptTokens: a.cut.eval, Truncated: a.cut.truncated,
		Prompt: a.cut.prompt, NumCtx: a.run.numCtx}
	if a.chat {
		ev.SentMessages, ev.KeptMessages = a.cut.sentMsgs, len(a.cut.kept)
	}
	if a.cut.status != 0 {
		ev.Status = a.cut.status
		s.addEval(ev)
		ollamaError(w, a.cut.status, a.cut.errMsg)
		return
	}
	cut := a.cut
	if !a.chat {
		cut.kept = nil
	}
	reply, reason := s.answer(cut, a.tools, a.run, a.run.numPredict, a.shift)
	ev.Status, ev.Reply = http.StatusOK, reply
	s.addEval(ev)
	if a.unload {
		defer s.unload(a.installed)
	}
	evalCount := replyTokensWith(s.counter, reply)
	final := ollamaOut{
		Model: a.model, Done: true, DoneReason: reason,
		TotalDuration: int64(a.cut.eval+evalCount)*1e5 + 1e6, LoadDuration: 1e6,
		PromptEvalCount: a.cut.eval, PromptEvalDuration: int64(a.cut.eval) * 1e5,
		EvalCount: evalCount, EvalDuration: int64(evalCount) * 1e5,
	}
	calls := make([]ollamaToolCall, len(reply.ToolCalls))
	for i, c := range reply.ToolCalls {
		calls[i].Function.Index = &i
		calls[i].Function.Name = c.Name
		calls[i].Function.Arguments = c.Arguments
	}
	msg := func(content string, tc []ollamaToolCall) ollamaOut {
		o := ollamaOut{Model: a.model, CreatedAt: now()}
		if a.chat {
			o.Message = &ollamaMessage{Role: "assistant", Content: content, ToolCalls: tc}
		} else {
			o.Response = &content
		}
		return o
	}
	if !a.stream {
		out := msg(reply.Text, calls)
		final.CreatedAt, final.Message, final.Response = out.CreatedAt, out.Message, out.Response
		writeJSON(w, http.StatusOK, "application/json; charset=utf-8", final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w) // one object per line
	first := true
	send := func(o ollamaOut) bool {
		if !first && s.wait(r.Context(), s.opts.ChunkDelay) != nil {
			return false
		}
		first = false
		if enc.Encode(o) != nil {
			s.abort()
			return false
		}
		flush(w)
		return true
	}
	// Streamed in word-sized pieces, whole characters each.
	for _, tok := range Tokenize(reply.Text) {
		if !send(msg(tok, nil)) {
			return
		}
	}
	if len(calls) > 0 && !send(msg("", calls)) {
		return
	}
	done := msg("", nil)
	final.CreatedAt, final.Message, final.Response = done.CreatedAt, done.Message, done.Response
	send(final)
}

type ollamaDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

var emuDetails = ollamaDetails{Format: "gguf", Family: "llama", Families: []string{"llama"}, ParameterSize: "3.2B", QuantizationLevel: "Q4_K_M"}

func digest(model string) string {
	h := TokenID(model)
	return fmt.Sprintf("%064x", h)
}

func (s *Ollama) tags(w http.ResponseWriter, _ *http.Request) {
	type entry struct {
		Name       string        `json:"name"`
		Model      string        `json:"model"`
		ModifiedAt string        `json:"modified_at"`
		Size       int64         `json:"size"`
		Digest     string        `json:"digest"`
		Details    ollamaDetails `json:"details"`
	}
	out := struct {
		Models []entry `json:"models"`
	}{Models: []entry{}}
	for _, m := range s.opts.Models {
		out.Models = append(out.Models, entry{Name: m, Model: m, ModifiedAt: "2026-01-01T00:00:00Z", Size: 2019393189, Digest: digest(m), Details: emuDetails})
	}
	writeJSON(w, http.StatusOK, "application/json; charset=utf-8", out)
}

// showParameters formats a model's Modelfile parameters as /api/show's
// "parameters": one line each (one per value of a list), the name padded
// to 30 columns, then the value in Go syntax (a number as is, a string
// quoted).
func showParameters(params []modelParam) string {
	lines := make([]string, len(params))
	for i, p := range params {
		lines[i] = fmt.Sprintf("%-*s %#v", 30, p.name, p.value)
	}
	return strings.Join(lines, "\n")
}

// modelfile is /api/show's "modelfile" for model: FROM, TEMPLATE and the
// PARAMETER lines.
func (s *Ollama) modelfile(model string) string {
	var b strings.Builder
	b.WriteString("# Modelfile generated by \"ollama show\"\n# To build a new Modelfile based on this, replace FROM with:\n# FROM " + model + "\n\n")
	b.WriteString("FROM /root/.ollama/models/blobs/sha256-" + digest(model) + "\n")
	b.WriteString("TEMPLATE \"" + ollamaTemplate + "\"\n")
	for _, p := range s.params[model] {
		v := fmt.Sprint(p.value)
		if strings.HasPrefix(v, " ") || strings.HasSuffix(v, " ") || strings.Contains(v, "\n") {
			v = `"` + v + `"`
		}
		b.WriteString("PARAMETER " + p.name + " " + v + "\n")
	}
	return b.String()
}

// ollamaTemplate is the Go template equivalent to RenderChat without tools.
const ollamaTemplate = "{{- range .Messages }}" + ImStart + "{{ .Role }}\n{{ .Content }}" + ImEnd + "\n{{ end }}" + ImStart + "assistant\n"

func (s *Ollama) show(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Model == "" {
		req.Model = req.Name
	}
	model := s.resolve(req.Model)
	if model == "" {
		ollamaError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
		return
	}
	out := map[string]any{
		"modelfile": s.modelfile(model),
		"template":  ollamaTemplate,
		"details":   emuDetails,
		"model_info": map[string]any{
			"general.architecture":    "llama",
			"llama.context_length":    s.opts.TrainedContext,
			"llama.embedding_length":  3072,
			"tokenizer.ggml.model":    "gpt2",
			"general.parameter_count": 3212749888,
		},
		"capabilities": []string{"completion", "tools"},
		"modified_at":  "2026-01-01T00:00:00Z",
	}
	if p := showParameters(s.params[model]); p != "" {
		out["parameters"] = p // omitted when empty, as Ollama does
	}
	writeJSON(w, http.StatusOK, "application/json; charset=utf-8", out)
}

func (s *Ollama) ps(w http.ResponseWriter, _ *http.Request) {
	type entry struct {
		Name          string        `json:"name"`
		Model         string        `json:"model"`
		Size          int64         `json:"size"`
		Digest        string        `json:"digest"`
		Details       ollamaDetails `json:"details"`
		ExpiresAt     string        `json:"expires_at"`
		SizeVRAM      int64         `json:"size_vram"`
		ContextLength int           `json:"context_length"`
	}
	out := struct {
		Models []entry `json:"models"`
	}{Models: []entry{}}
	loaded := s.Loaded()
	for _, m := range s.opts.Models { // installed order: deterministic
		if n, ok := loaded[m]; ok {
			out.Models = append(out.Models, entry{
				Name: m, Model: m, Size: 3400000000, Digest: digest(m), Details: emuDetails,
				ExpiresAt: time.Now().Add(5 * time.Minute).Format(time.RFC3339Nano), SizeVRAM: 3400000000, ContextLength: n,
			})
		}
	}
	writeJSON(w, http.StatusOK, "application/json; charset=utf-8", out)
}

func (s *Ollama) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model      string        `json:"model"`
		Input      stringOrList  `json:"input"`
		Truncate   *bool         `json:"truncate"`
		Dimensions int           `json:"dimensions"`
		Options    ollamaOptions `json:"options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	model, ok := s.installed(w, req.Model)
	if !ok {
		return
	}
	run := s.options(model, req.Options)
	s.load(model, run)
	truncate := boolOr(req.Truncate, true)
	embs := make([][]float32, 0, len(req.Input))
	count := 0
	for _, in := range req.Input {
		toks := s.counter.Split(in)
		n := len(toks)
		if s.v0174() {
			// The runner refuses an input longer than the window (BOS
			// included); the server then cuts the input to the window
			// less one for BOS and one for EOS (it assumes the model adds
			// both) and embeds the head.
			n += s.bos()
			if n > run.numCtx {
				if !truncate {
					ollamaError(w, http.StatusBadRequest, OllamaInputTooLong)
					return
				}
				toks = toks[:max(run.numCtx-2, 0)]
				n = len(toks) + s.bos()
			}
		} else if n > run.numCtx {
			if !truncate {
				ollamaError(w, http.StatusBadRequest, OllamaInputTooLong)
				return
			}
			toks = toks[:run.numCtx] // the end is cut, silently
			n = len(toks)
		}
		count += n
		embs = append(embs, embed(strings.Join(toks, ""), req.Dimensions))
	}
	writeJSON(w, http.StatusOK, "application/json; charset=utf-8", map[string]any{
		"model": req.Model, "embeddings": embs, "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": count,
	})
}

// compatChat runs a chat that came through a compatibility endpoint
// (/v1/chat/completions, /v1/messages), which cannot set num_ctx: the
// model's default window (its Modelfile's num_ctx, else the server's),
// the same two truncation layers as /api/chat. ev is the request's Eval,
// not recorded yet.
func (s *Ollama) compatChat(path, reqModel, model string, msgs []Message, tools []Tool) (ollamaCut, ollamaRun, Eval) {
	run := s.options(model, ollamaOptions{})
	s.load(model, run)
	cut := s.cutChat(msgs, tools, run, true, true)
	ev := Eval{Path: path, Model: reqModel, SentTokens: cut.sent, PromptTokens: cut.eval, SentMessages: len(msgs),
		KeptMessages: len(cut.kept), Truncated: cut.truncated, Prompt: cut.prompt, NumCtx: run.numCtx}
	return cut, run, ev
}

// openaiChat is Ollama's OpenAI-compatible chat: the default window, the
// same two truncation layers, usage.prompt_tokens = prompt_eval_count; a
// streamed usage (stream_options.include_usage) comes in its own chunk,
// with no choices, after the finish chunk.
func (s *Ollama) openaiChat(w http.ResponseWriter, r *http.Request) {
	var req oaiChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openaiError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", nil, nil)
		return
	}
	model := s.resolve(req.Model)
	if model == "" {
		openaiError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model), "not_found_error", nil, nil)
		return
	}
	msgs, tools := req.convert()
	cut, run, ev := s.compatChat(r.URL.Path, req.Model, model, msgs, tools)
	if cut.status != 0 {
		ev.Status = cut.status
		s.addEval(ev)
		openaiError(w, cut.status, cut.errMsg, "invalid_request_error", nil, nil)
		return
	}
	reply, finish := s.answer(cut, tools, run, req.maxTokens(), true)
	ev.Status, ev.Reply = http.StatusOK, reply
	s.addEval(ev)
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	writeOAIChat(w, r, &s.Recorder, req.Stream, req.includeUsage(), oaiResult{
		id: fmt.Sprintf("chatcmpl-%d", s.ids.Add(1)), model: req.Model, reply: reply, finish: finish,
		promptTokens: cut.eval, completionTokens: replyTokensWith(s.counter, reply), callIDs: &s.ids,
	}, s.opts.ChunkDelay)
}

func (s *Ollama) openaiModels(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Object string     `json:"object"`
		Data   []oaiModel `json:"data"`
	}{Object: "list", Data: []oaiModel{}}
	for _, m := range s.opts.Models {
		out.Data = append(out.Data, oaiModel{ID: m, Object: "model", Created: 1700000000, OwnedBy: "library"})
	}
	writeJSON(w, http.StatusOK, "application/json", out)
}
