package llmemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OllamaOptions configure an Ollama emulator. The zero value is a server
// with the 4096-token default window serving "llama3.2:latest".
type OllamaOptions struct {
	Timing
	// NumCtx is the server's default window (OLLAMA_CONTEXT_LENGTH), used
	// when a request has no options.num_ctx; 0 means 4096.
	NumCtx int
	// Models are the installed models ("name:tag"; a request for "name"
	// means "name:latest"); empty means "llama3.2:latest".
	Models []string
	// TrainedContext is the trained window /api/show reports as
	// model_info["llama.context_length"]; 0 means 131072. A larger
	// num_ctx is clamped to it.
	TrainedContext int
	// AddBOS makes the tokenizer add a BOS token: it counts in the prompt
	// and in nKeep (num_keep+1), as with gemma.
	AddBOS bool
	// Native emulates the native chat path (hf.co GGUF imports): after the
	// message-level truncation, a prompt still too long is refused with
	// HTTP 400 whose error string is llama-server's body.
	Native bool
	// NoContextShift emulates a model without context shift (deepseek2):
	// a prompt still too long is refused with HTTP 400 instead of cut.
	NoContextShift bool
	// Preload lists every model in /api/ps from the start, loaded with
	// NumCtx; otherwise a model is loaded by its first request.
	Preload bool
	// Responder replaces the default model, Think.
	Responder Responder
}

// OllamaVersion is the version /api/version reports.
const OllamaVersion = "0.33.0"

// Ollama emulates an Ollama server: /api/chat and /api/generate (NDJSON
// streaming by default, silent truncation), /api/tags, /api/show, /api/ps,
// /api/embed, /api/version and "/", the OpenAI-compatible
// /v1/chat/completions and /v1/models, and the Anthropic-compatible
// /v1/messages, which run at the server's default window (they cannot set
// num_ctx) with the same silent truncation.
type Ollama struct {
	Recorder
	opts OllamaOptions
	mux  *http.ServeMux
	ids  atomic.Int64

	mu     sync.Mutex
	loaded map[string]int // model → loaded num_ctx
}

// NewOllama returns an Ollama emulator.
func NewOllama(opts OllamaOptions) *Ollama {
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
	s := &Ollama{opts: opts, mux: http.NewServeMux(), loaded: map[string]int{}}
	if opts.Preload {
		for _, m := range opts.Models {
			s.loaded[m] = opts.NumCtx
		}
	}
	s.mux.HandleFunc("POST /api/chat", s.chat)
	s.mux.HandleFunc("POST /api/generate", s.generate)
	s.mux.HandleFunc("GET /api/tags", s.tags)
	s.mux.HandleFunc("POST /api/show", s.show)
	s.mux.HandleFunc("GET /api/ps", s.ps)
	s.mux.HandleFunc("POST /api/embed", s.embed)
	s.mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, "application/json; charset=utf-8", map[string]string{"version": OllamaVersion})
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

// Loaded returns the loaded models and their num_ctx, as /api/ps shows.
func (s *Ollama) Loaded() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.loaded))
	for k, v := range s.loaded {
		out[k] = v
	}
	return out
}

// OllamaPromptTooLong is Ollama's error for a prompt it will not cut.
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
	sent, eval int    // tokens before and after
	sentMsgs   int    // messages before layer 1
	truncated  bool
	status     int    // non-zero: refuse with this status
	errMsg     string // and this error string
}

// truncateChat applies layer 1 (whole messages from the front, keeping
// system messages and the last message) and then layer 2.
func (s *Ollama) truncateChat(msgs []Message, tools []Tool, numCtx, numKeep int, truncate, shift bool) ollamaCut {
	bos := 0
	if s.opts.AddBOS {
		bos = 1
	}
	// Rendering is additive at message boundaries (each message starts
	// with the ImStart token), so the count of any list is the sum of its
	// parts' counts.
	head := CountTokens(RenderChat(nil, tools)) + bos // tools block and generation prompt
	counts := make([]int, len(msgs))
	total := head
	for i, m := range msgs {
		var b strings.Builder
		renderMessage(&b, m)
		counts[i] = CountTokens(b.String()) + m.Images*ImageTokens
		total += counts[i]
	}
	cut := ollamaCut{sent: total, sentMsgs: len(msgs)}
	kept := msgs
	if truncate && len(msgs) > 0 {
		sys := 0 // tokens of the system messages before i
		rest := total - head
		for i := 0; i < len(msgs); i++ {
			if i == len(msgs)-1 || head+sys+rest <= numCtx {
				if i > 0 {
					kept = nil
					for _, m := range msgs[:i] {
						if m.Role == "system" {
							kept = append(kept, m)
						}
					}
					kept = append(kept, msgs[i:]...)
				}
				break
			}
			if msgs[i].Role == "system" {
				sys += counts[i]
			}
			rest -= counts[i]
		}
	}
	cut.kept = kept
	cut.truncated = len(kept) < len(msgs)
	images := 0
	for _, m := range kept {
		images += m.Images
	}
	prompt := RenderChat(kept, tools)
	n := CountTokens(prompt) + images*ImageTokens + bos
	if !truncate && n >= numCtx {
		cut.status, cut.errMsg = http.StatusBadRequest, OllamaPromptTooLong
		return cut
	}
	if s.opts.Native {
		if n >= numCtx {
			cut.status, cut.errMsg = http.StatusBadRequest, string(llamaCppOverflowBody(n, numCtx))
			return cut
		}
		cut.prompt, cut.eval = prompt, n
		return cut
	}
	s.layer2(&cut, prompt, n, images > 0, numCtx, numKeep, truncate, shift)
	return cut
}

// layer2 is the token-level cut of llm/llama_server.go
// completionPromptForRequest with the half-window rule.
func (s *Ollama) layer2(cut *ollamaCut, prompt string, n int, media bool, numCtx, numKeep int, truncate, shift bool) {
	cut.prompt, cut.eval = prompt, n
	if !truncate || media || numCtx <= 1 || len(prompt) < numCtx || n <= numCtx-1 {
		return
	}
	if !shift || s.opts.NoContextShift {
		cut.status, cut.errMsg = http.StatusBadRequest, OllamaPromptTooLong
		return
	}
	bos := 0
	if s.opts.AddBOS {
		bos = 1
	}
	nKeep := numKeep
	if nKeep < 0 {
		nKeep = n
	} else {
		nKeep += bos
	}
	limit := HalfWindowLimit(numCtx, nKeep)
	if nKeep > limit {
		nKeep = limit
	}
	toks := Tokenize(prompt)
	headToks := nKeep - bos // the BOS token has no text
	if headToks < 0 {
		headToks = 0
	}
	tail := limit - nKeep
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

func (s *Ollama) window(o ollamaOptions) (numCtx, numKeep, numPredict int) {
	numCtx, numKeep, numPredict = s.opts.NumCtx, 4, -1
	if o.NumCtx != nil && *o.NumCtx > 0 {
		numCtx = *o.NumCtx
	}
	// optionsForPrompt clamps num_ctx to what the model can hold.
	numCtx = min(numCtx, s.opts.TrainedContext)
	if o.NumKeep != nil {
		numKeep = *o.NumKeep
	}
	if o.NumPredict != nil {
		numPredict = *o.NumPredict
	}
	return numCtx, numKeep, numPredict
}

func (s *Ollama) load(model string, numCtx int) {
	s.mu.Lock()
	s.loaded[model] = numCtx
	s.mu.Unlock()
}

// loadOrUnload answers a request with nothing to generate, which Ollama
// uses to load a model (or, with keep_alive 0, to unload it), and returns
// the done_reason it gives.
func (s *Ollama) loadOrUnload(model string, numCtx int, keepAlive json.RawMessage) string {
	if unloads(keepAlive) {
		s.unload(model)
		return "unload"
	}
	s.load(model, numCtx)
	return "load"
}

func (s *Ollama) unload(model string) {
	s.mu.Lock()
	delete(s.loaded, model)
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
	numCtx, numKeep, numPredict := s.window(req.Options)
	if len(req.Messages) == 0 {
		reason := s.loadOrUnload(model, numCtx, req.KeepAlive)
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
	s.load(model, numCtx)
	cut := s.truncateChat(msgs, tools, numCtx, numKeep, boolOr(req.Truncate, true), boolOr(req.Shift, true))
	s.respond(w, r, respondArgs{
		path: "/api/chat", model: req.Model, cut: cut, tools: tools, chat: true,
		stream: boolOr(req.Stream, true), numPredict: numPredict, unload: unloads(req.KeepAlive), installed: model,
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
	numCtx, numKeep, numPredict := s.window(req.Options)
	if req.Prompt == "" && len(req.Images) == 0 {
		reason := s.loadOrUnload(model, numCtx, req.KeepAlive)
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
	n := CountTokens(prompt) + len(req.Images)*ImageTokens
	if s.opts.AddBOS {
		n++
	}
	cut := ollamaCut{sent: n}
	truncate := boolOr(req.Truncate, true)
	if !truncate && n >= numCtx {
		cut.status, cut.errMsg = http.StatusBadRequest, OllamaPromptTooLong
	} else {
		s.layer2(&cut, prompt, n, len(req.Images) > 0, numCtx, numKeep, truncate, boolOr(req.Shift, true))
	}
	s.load(model, numCtx)
	s.respond(w, r, respondArgs{
		path: "/api/generate", model: req.Model, cut: cut,
		stream: boolOr(req.Stream, true), numPredict: numPredict, unload: unloads(req.KeepAlive), installed: model,
	})
}

type respondArgs struct {
	path, model, installed string
	cut                    ollamaCut
	tools                  []Tool
	chat, stream, unload   bool
	numPredict             int
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

func (s *Ollama) respond(w http.ResponseWriter, r *http.Request, a respondArgs) {
	ev := Eval{Path: a.path, Model: a.model, SentTokens: a.cut.sent, PromptTokens: a.cut.eval, Truncated: a.cut.truncated, Prompt: a.cut.prompt}
	if a.chat {
		ev.SentMessages, ev.KeptMessages = a.cut.sentMsgs, len(a.cut.kept)
	}
	if a.cut.status != 0 {
		ev.Status = a.cut.status
		s.addEval(ev)
		ollamaError(w, a.cut.status, a.cut.errMsg)
		return
	}
	turn := Turn{Prompt: a.cut.prompt, Tools: a.tools}
	if a.chat {
		turn.Messages = a.cut.kept
	}
	reply := s.opts.Responder(turn)
	text, cutShort := limitReply(reply.Text, a.numPredict)
	reply.Text = text
	ev.Status, ev.Reply = http.StatusOK, reply
	s.addEval(ev)
	if a.unload {
		defer s.unload(a.installed)
	}
	reason := "stop"
	if cutShort {
		reason = "length"
	}
	evalCount := replyTokens(reply)
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
	writeJSON(w, http.StatusOK, "application/json; charset=utf-8", map[string]any{
		"modelfile":  "# Modelfile generated by \"ollama show\"\nFROM /root/.ollama/models/blobs/sha256-" + digest(model) + "\n",
		"parameters": "num_keep 4\nstop \"" + ImEnd + "\"",
		"template":   "{{- range .Messages }}" + ImStart + "{{ .Role }}\n{{ .Content }}" + ImEnd + "\n{{ end }}" + ImStart + "assistant\n",
		"details":    emuDetails,
		"model_info": map[string]any{
			"general.architecture":    "llama",
			"llama.context_length":    s.opts.TrainedContext,
			"llama.embedding_length":  3072,
			"tokenizer.ggml.model":    "gpt2",
			"general.parameter_count": 3212749888,
		},
		"capabilities": []string{"completion", "tools"},
		"modified_at":  "2026-01-01T00:00:00Z",
	})
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
	numCtx, _, _ := s.window(req.Options)
	truncate := boolOr(req.Truncate, true)
	embs := make([][]float32, 0, len(req.Input))
	count := 0
	for _, in := range req.Input {
		toks := Tokenize(in)
		if len(toks) > numCtx {
			if !truncate {
				ollamaError(w, http.StatusBadRequest, "the input length exceeds the context length")
				return
			}
			toks = toks[:numCtx] // the end is cut, silently
		}
		count += len(toks)
		embs = append(embs, embed(strings.Join(toks, ""), req.Dimensions))
	}
	s.load(model, numCtx)
	writeJSON(w, http.StatusOK, "application/json; charset=utf-8", map[string]any{
		"model": req.Model, "embeddings": embs, "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": count,
	})
}

// compatChat runs a chat that came through a compatibility endpoint
// (/v1/chat/completions, /v1/messages), which cannot set num_ctx: the
// server's default window, the same two truncation layers as /api/chat.
// ev is the request's Eval, not recorded yet.
func (s *Ollama) compatChat(path, reqModel, model string, msgs []Message, tools []Tool) (ollamaCut, Eval) {
	numCtx, numKeep, _ := s.window(ollamaOptions{})
	s.load(model, numCtx)
	cut := s.truncateChat(msgs, tools, numCtx, numKeep, true, true)
	ev := Eval{Path: path, Model: reqModel, SentTokens: cut.sent, PromptTokens: cut.eval, SentMessages: len(msgs),
		KeptMessages: len(cut.kept), Truncated: cut.truncated, Prompt: cut.prompt}
	return cut, ev
}

// openaiChat is Ollama's OpenAI-compatible chat: the default window, the
// same two truncation layers, usage.prompt_tokens = prompt_eval_count.
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
	cut, ev := s.compatChat(r.URL.Path, req.Model, model, msgs, tools)
	if cut.status != 0 {
		ev.Status = cut.status
		s.addEval(ev)
		openaiError(w, cut.status, cut.errMsg, "invalid_request_error", nil, nil)
		return
	}
	reply, finish := s.answered(&ev, s.opts.Responder(Turn{Prompt: cut.prompt, Messages: cut.kept, Tools: tools}), req.maxTokens())
	writeOAIChat(w, r, &s.Recorder, req.Stream, req.includeUsage(), oaiResult{
		id: fmt.Sprintf("chatcmpl-%d", s.ids.Add(1)), model: req.Model, reply: reply, finish: finish,
		promptTokens: cut.eval, completionTokens: replyTokens(reply), callIDs: &s.ids,
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
