package llmemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// LlamaCppOptions configure a llama.cpp server (llama-server) emulator.
// The zero value has one 4096-token window per slot and 4 slots.
type LlamaCppOptions struct {
	Timing
	// NCtx is the window of each slot (n_ctx in /props); 0 means 4096.
	NCtx int
	// Slots is total_slots; 0 means 4.
	Slots int
	// Model is the model's id in /v1/models; "" means "model.gguf".
	Model string
	// TrainedContext is n_ctx_train in /v1/models; 0 means 131072.
	TrainedContext int
	// AddBOS makes prompts start with a BOS token, counted in the prompt
	// and added by /tokenize when add_special is set.
	AddBOS bool
	// StrictTemplate emulates a strict chat template (Qwen3.x): a system
	// message anywhere but first makes chat requests and /apply-template
	// fail with HTTP 500 "Jinja Exception: System message must be at the
	// beginning.".
	StrictTemplate bool
	// InBandStreamErrors emulates older builds: a streaming request that
	// does not fit gets 200 and one SSE event data: {"error":…} instead
	// of the HTTP 400.
	InBandStreamErrors bool
	// Responder replaces the default model, Think.
	Responder Responder
	// Counter counts the prompts and replies; nil means TinyBPE(), a
	// real byte-level BPE vocabulary. RuleCounter counts as the guard's
	// default estimate does: never check the guard's counting against it.
	Counter Counter
	// Router emulates router mode (llama-server started without -m):
	// GET /models lists RouterModels with their status, POST /models/load
	// and /models/unload load and unload them, and a generation request
	// loads the model it names (autoload).
	Router bool
	// RouterModels are router mode's models; empty means Model alone.
	// None is loaded at the start.
	RouterModels []string
}

// JinjaSystemError is llama-server's error for a mid-conversation system
// message under a strict template.
const JinjaSystemError = "Jinja Exception: System message must be at the beginning."

// LlamaCpp emulates llama-server: /v1/chat/completions (OpenAI-compatible,
// SSE when stream is set), /completion, /tokenize, /apply-template,
// /props, /slots, /health, /v1/models and /v1/messages/count_tokens. It
// never truncates: a prompt of n_ctx tokens or more is refused with the
// exact 400 exceed_context_size_error body. Each response reports
// timings.cache_n, the tokens shared with the previous prompt (the prompt
// cache).
type LlamaCpp struct {
	Recorder
	opts    LlamaCppOptions
	mux     *http.ServeMux
	ids     atomic.Int64
	loading atomic.Bool

	mu     sync.Mutex
	last   []string        // the previous prompt's tokens (the slot's cache)
	routed map[string]bool // router mode: model → loaded
}

// NewLlamaCpp returns a llama.cpp server emulator.
func NewLlamaCpp(opts LlamaCppOptions) *LlamaCpp {
	if opts.NCtx <= 0 {
		opts.NCtx = 4096
	}
	if opts.Slots <= 0 {
		opts.Slots = 4
	}
	if opts.Model == "" {
		opts.Model = "model.gguf"
	}
	if opts.TrainedContext <= 0 {
		opts.TrainedContext = 131072
	}
	if opts.Responder == nil {
		opts.Responder = Think
	}
	if opts.Counter == nil {
		opts.Counter = TinyBPE()
	}
	s := &LlamaCpp{opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /v1/health", s.health)
	s.mux.HandleFunc("GET /props", s.props)
	s.mux.HandleFunc("GET /slots", s.slots)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("POST /apply-template", s.applyTemplate)
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("POST /chat/completions", s.chat)
	s.mux.HandleFunc("POST /completion", s.completion)
	s.mux.HandleFunc("POST /completions", s.completion)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	if opts.Router {
		s.initRouter()
	} else {
		s.mux.HandleFunc("GET /models", s.models)
	}
	return s
}

// SetLoading makes /health answer 503 "Loading model" (true) or 200.
func (s *LlamaCpp) SetLoading(loading bool) { s.loading.Store(loading) }

// ServeHTTP records the request, waits Latency, and serves it.
func (s *LlamaCpp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := s.record(r)
	if err != nil {
		llamaError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	if s.wait(r.Context(), s.opts.Latency) != nil {
		return
	}
	if s.opts.Router {
		s.autoload(r, body)
	}
	s.mux.ServeHTTP(w, r)
}

const llamaJSON = "application/json; charset=utf-8"

func llamaError(w http.ResponseWriter, code int, msg, typ string) {
	writeJSON(w, code, llamaJSON, map[string]any{"error": map[string]any{"code": code, "message": msg, "type": typ}})
}

// LlamaCppOverflowBody is llama-server's exact 400 body for a prompt of
// nPrompt tokens on a slot of nCtx tokens.
func LlamaCppOverflowBody(nPrompt, nCtx int) []byte { return llamaCppOverflowBody(nPrompt, nCtx) }

func llamaCppOverflowBody(nPrompt, nCtx int) []byte {
	return fmt.Appendf(nil, `{"error":{"code":400,"message":"request (%d tokens) exceeds the available context size (%d tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, nPrompt, nCtx, nPrompt, nCtx)
}

func (s *LlamaCpp) health(w http.ResponseWriter, _ *http.Request) {
	if s.loading.Load() {
		llamaError(w, http.StatusServiceUnavailable, "Loading model", "unavailable_error")
		return
	}
	writeJSON(w, http.StatusOK, llamaJSON, map[string]string{"status": "ok"})
}

const chatTemplate = "{%- for message in messages -%}" + ImStart + "{{ message.role }}\n{{ message.content }}" + ImEnd + "\n{%- endfor -%}" + ImStart + "assistant\n"

func (s *LlamaCpp) params() map[string]any {
	return map[string]any{"n_predict": -1, "n_keep": 0, "n_discard": 0, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "cache_prompt": true}
}

func (s *LlamaCpp) props(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, llamaJSON, map[string]any{
		"default_generation_settings": map[string]any{"id": 0, "id_task": -1, "n_ctx": s.opts.NCtx, "speculative": false, "is_processing": false, "params": s.params()},
		"total_slots":                 s.opts.Slots,
		"model_path":                  "/models/" + s.opts.Model,
		"chat_template":               chatTemplate,
		"chat_template_caps":          map[string]any{"supports_tools": true, "supports_system_role": true},
		"modalities":                  map[string]bool{"vision": false, "audio": false},
		"build_info":                  "b7000-llmemu",
		"is_sleeping":                 false,
	})
}

func (s *LlamaCpp) slots(w http.ResponseWriter, _ *http.Request) {
	out := make([]map[string]any, s.opts.Slots)
	for i := range out {
		out[i] = map[string]any{"id": i, "id_task": -1, "n_ctx": s.opts.NCtx, "speculative": false, "is_processing": false,
			"params": s.params(), "next_token": map[string]any{"has_next_token": true, "n_remain": -1, "n_decoded": 0}}
	}
	writeJSON(w, http.StatusOK, llamaJSON, out)
}

func (s *LlamaCpp) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content    string `json:"content"`
		AddSpecial bool   `json:"add_special"`
		WithPieces bool   `json:"with_pieces"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		llamaError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	// A piece is its text, or its bytes when it is not whole UTF-8 (a
	// byte-level token may hold part of a character), as llama-server
	// writes it.
	type piece struct {
		ID    int `json:"id"`
		Piece any `json:"piece"`
	}
	pieceOf := func(t string) any {
		if utf8.ValidString(t) {
			return t
		}
		b := make([]int, len(t))
		for i := range len(t) {
			b[i] = int(t[i])
		}
		return b
	}
	ids := []int{}
	pieces := []piece{}
	if req.AddSpecial && s.opts.AddBOS {
		ids = append(ids, BOSID)
		pieces = append(pieces, piece{BOSID, "<s>"})
	}
	toks := s.opts.Counter.Split(req.Content)
	tokIDs := tokenIDs(s.opts.Counter, req.Content, toks)
	for i, t := range toks {
		ids = append(ids, tokIDs[i])
		pieces = append(pieces, piece{tokIDs[i], pieceOf(t)})
	}
	if req.WithPieces {
		writeJSON(w, http.StatusOK, llamaJSON, map[string]any{"tokens": pieces})
		return
	}
	writeJSON(w, http.StatusOK, llamaJSON, map[string]any{"tokens": ids})
}

func (s *LlamaCpp) applyTemplate(w http.ResponseWriter, r *http.Request) {
	var req oaiChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		llamaError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	msgs, tools := req.convert()
	if s.strictFails(msgs) {
		llamaError(w, http.StatusInternalServerError, JinjaSystemError, "server_error")
		return
	}
	writeJSON(w, http.StatusOK, llamaJSON, map[string]string{"prompt": RenderChat(msgs, tools)})
}

// llamaTimings is llama-server's timings object.
type llamaTimings struct {
	CacheN              int     `json:"cache_n"`
	PromptN             int     `json:"prompt_n"`
	PromptMS            float64 `json:"prompt_ms"`
	PromptPerTokenMS    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMS         float64 `json:"predicted_ms"`
	PredictedPerTokenMS float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
}

func timings(cacheN, promptN, predicted int) *llamaTimings {
	return &llamaTimings{
		CacheN: cacheN, PromptN: promptN, PromptMS: float64(promptN) * 0.1, PromptPerTokenMS: 0.1, PromptPerSecond: 10000,
		PredictedN: predicted, PredictedMS: float64(predicted) * 10, PredictedPerTokenMS: 10, PredictedPerSecond: 100,
	}
}

// evaluate counts a prompt, refuses it when it does not fit the slot, and
// otherwise updates the prompt cache and returns the cached token count.
func (s *LlamaCpp) evaluate(prompt string, images int) (n, cached int, ok bool) {
	toks := s.opts.Counter.Split(prompt)
	if s.opts.AddBOS {
		toks = append([]string{"<s>"}, toks...)
	}
	n = len(toks) + images*ImageTokens
	if n >= s.opts.NCtx {
		return n, 0, false
	}
	s.mu.Lock()
	cached = commonPrefix(s.last, toks)
	if cached == len(toks) && cached > 0 {
		cached-- // the last token is always evaluated again
	}
	s.last = toks
	s.mu.Unlock()
	return n, cached, true
}

// strictFails tells whether a strict template refuses msgs.
func (s *LlamaCpp) strictFails(msgs []Message) bool {
	if !s.opts.StrictTemplate {
		return false
	}
	for i, m := range msgs {
		if m.Role == "system" && i > 0 {
			return true
		}
	}
	return false
}

func (s *LlamaCpp) overflow(w http.ResponseWriter, ev Eval) {
	ev.Status = http.StatusBadRequest
	s.addEval(ev)
	writeRaw(w, http.StatusBadRequest, llamaJSON, llamaCppOverflowBody(ev.SentTokens, s.opts.NCtx))
}

// generationLimit is how many tokens may be generated: the request's
// limit, and never past the slot's end (context shift is off by default).
func (s *LlamaCpp) generationLimit(n, max int) int {
	room := s.opts.NCtx - n
	if max <= 0 || max > room {
		return room
	}
	return max
}

func (s *LlamaCpp) chat(w http.ResponseWriter, r *http.Request) {
	var req oaiChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		llamaError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	msgs, tools := req.convert()
	if s.strictFails(msgs) {
		llamaError(w, http.StatusInternalServerError, JinjaSystemError, "server_error")
		return
	}
	prompt := RenderChat(msgs, tools)
	images := 0
	for _, m := range msgs {
		images += m.Images
	}
	n, cached, ok := s.evaluate(prompt, images)
	ev := Eval{Path: r.URL.Path, Model: req.Model, SentTokens: n, PromptTokens: n, SentMessages: len(msgs), KeptMessages: len(msgs), Prompt: prompt}
	if !ok && req.Stream && s.opts.InBandStreamErrors {
		ev.Status = http.StatusOK
		s.addEval(ev)
		newSSE(w, r, &s.Recorder, 0).raw("data: " + string(llamaCppOverflowBody(n, s.opts.NCtx)) + "\n\n")
		return
	}
	if !ok {
		s.overflow(w, ev)
		return
	}
	reply, finish := s.answered(&ev, s.opts.Responder(Turn{Prompt: prompt, Messages: msgs, Tools: tools}), s.generationLimit(n, req.maxTokens()), s.opts.Counter)
	model := req.Model
	if model == "" {
		model = s.opts.Model
	}
	out := replyTokensWith(s.opts.Counter, reply)
	writeOAIChat(w, r, &s.Recorder, req.Stream, req.includeUsage(), oaiResult{
		id: fmt.Sprintf("chatcmpl-%d", s.ids.Add(1)), model: model, reply: reply, finish: finish,
		promptTokens: n, completionTokens: out, cached: cached, callIDs: &s.ids,
		timings: timings(cached, n-cached, out),
	}, s.opts.ChunkDelay)
}

func (s *LlamaCpp) completion(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt   json.RawMessage `json:"prompt"`
		NPredict *int            `json:"n_predict"`
		Stream   bool            `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		llamaError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	var prompt string
	if err := json.Unmarshal(req.Prompt, &prompt); err != nil {
		llamaError(w, http.StatusBadRequest, "\"prompt\" must be a string", "invalid_request_error")
		return
	}
	n, cached, ok := s.evaluate(prompt, 0)
	ev := Eval{Path: r.URL.Path, Model: s.opts.Model, SentTokens: n, PromptTokens: n, Prompt: prompt}
	if !ok {
		s.overflow(w, ev)
		return
	}
	max := -1
	if req.NPredict != nil {
		max = *req.NPredict
	}
	reply := s.opts.Responder(Turn{Prompt: prompt})
	text, short := limitReplyWith(s.opts.Counter, reply.Text, s.generationLimit(n, max))
	ev.Status, ev.Reply = http.StatusOK, Reply{Text: text}
	s.addEval(ev)
	stopType := "eos"
	if short {
		stopType = "limit"
	}
	predicted := s.opts.Counter.Count(text)
	final := map[string]any{
		"index": 0, "content": text, "tokens": []int{}, "id_slot": 0, "stop": true, "model": s.opts.Model,
		"tokens_predicted": predicted, "tokens_evaluated": n,
		"generation_settings": map[string]any{"n_ctx": s.opts.NCtx, "params": s.params()},
		"prompt":              prompt, "has_new_line": strings.Contains(text, "\n"), "truncated": false,
		"stop_type": stopType, "stopping_word": "", "tokens_cached": n + predicted - 1,
		"timings": timings(cached, n-cached, predicted),
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, llamaJSON, final)
		return
	}
	sse := newSSE(w, r, &s.Recorder, s.opts.ChunkDelay)
	for i, t := range Tokenize(text) { // streamed in word-sized pieces, whole characters each
		if !sse.data(map[string]any{"index": 0, "content": t, "tokens": []int{TokenID(t)}, "stop": false, "id_slot": 0, "tokens_predicted": i + 1, "tokens_evaluated": n}) {
			return
		}
	}
	final["content"] = ""
	sse.data(final)
}

func (s *LlamaCpp) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, llamaJSON, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.opts.Model, "object": "model", "created": time.Now().Unix(), "owned_by": "llamacpp",
			"meta": map[string]any{"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": s.opts.TrainedContext, "n_embd": 2048, "n_params": 3085938688, "size": 1929903104},
		}},
	})
}

func (s *LlamaCpp) countTokens(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		llamaError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	msgs, tools, err := req.convert()
	if err != nil {
		llamaError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	writeJSON(w, http.StatusOK, llamaJSON, map[string]int{"input_tokens": countChatWith(s.opts.Counter, msgs, tools, s.opts.AddBOS)})
}
