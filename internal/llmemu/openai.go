package llmemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// OpenAIOptions configure an OpenAI-compatible emulator. The zero value
// serves "gpt-4o-mini" with a 128000-token window.
type OpenAIOptions struct {
	Timing
	// MaxContext is the model's context length; 0 means 128000.
	MaxContext int
	// Models are the served model ids; empty means "gpt-4o-mini".
	Models []string
	// EmbeddingDimensions is the default /v1/embeddings size; 0 means 1536.
	EmbeddingDimensions int
	// Responder replaces the default model, Think.
	Responder Responder
	// Flavor is the server imitated (FlavorOpenAI by default): it decides
	// the shape of the overflow error.
	Flavor Flavor
	// Counter counts the prompts and replies; nil means TinyBPE(), a
	// real byte-level BPE vocabulary. RuleCounter counts as the guard's
	// default estimate does: never check the guard's counting against it.
	Counter Counter
}

// OpenAI emulates an OpenAI-compatible server: /v1/chat/completions (not
// streaming unless asked; SSE ending in data: [DONE], with a usage chunk
// when stream_options.include_usage is set), /v1/completions, /v1/models,
// /v1/models/{id} and /v1/embeddings. Over-long prompts get the 400
// context_length_exceeded error; tool messages without their call, and
// calls without their results, get OpenAI's 400s.
type OpenAI struct {
	Recorder
	opts OpenAIOptions
	mux  *http.ServeMux
	ids  atomic.Int64
}

// NewOpenAI returns an OpenAI-compatible emulator.
func NewOpenAI(opts OpenAIOptions) *OpenAI {
	if opts.MaxContext <= 0 {
		opts.MaxContext = 128000
	}
	if len(opts.Models) == 0 {
		opts.Models = []string{"gpt-4o-mini"}
	}
	if opts.EmbeddingDimensions <= 0 {
		opts.EmbeddingDimensions = 1536
	}
	if opts.Responder == nil {
		opts.Responder = Think
	}
	if opts.Counter == nil {
		opts.Counter = TinyBPE()
	}
	s := &OpenAI{opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /v1/models/{id...}", s.model)
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	return s
}

// ServeHTTP records the request, waits Latency, and serves it.
func (s *OpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := s.record(r); err != nil {
		openaiError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", nil, nil)
		return
	}
	if s.wait(r.Context(), s.opts.Latency) != nil {
		return
	}
	s.mux.ServeHTTP(w, r)
}

type openaiErrBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func openaiError(w http.ResponseWriter, status int, msg, typ string, param, code *string) {
	var b openaiErrBody
	b.Error.Message, b.Error.Type, b.Error.Param, b.Error.Code = msg, typ, param, code
	writeJSON(w, status, "application/json", b)
}

func strp(s string) *string { return &s }

func (s *OpenAI) known(model string) bool {
	for _, m := range s.opts.Models {
		if m == model {
			return true
		}
	}
	return false
}

type oaiToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaiToolCall   `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

type oaiChatRequest struct {
	Model         string            `json:"model"`
	Messages      []oaiMessage      `json:"messages"`
	Tools         []openaiStyleTool `json:"tools"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	NPredict            *int `json:"n_predict"`
}

func (q *oaiChatRequest) maxTokens() int {
	for _, p := range []*int{q.MaxCompletionTokens, q.MaxTokens, q.NPredict} {
		if p != nil && *p > 0 {
			return *p
		}
	}
	return 0
}

func (q *oaiChatRequest) includeUsage() bool {
	return q.StreamOptions != nil && q.StreamOptions.IncludeUsage
}

// oaiContent renders OpenAI message content (a string, null, or an array
// of parts) as text, counting image parts.
func oaiContent(raw json.RawMessage) (string, int) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, 0
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw), 0
	}
	var b strings.Builder
	images := 0
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text":
			b.WriteString(p.Text)
		case "image_url", "input_image", "image":
			images++
		}
	}
	return b.String(), images
}

// oaiArgs turns an arguments string into a JSON object for rendering.
func oaiArgs(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return json.RawMessage(quote(args))
}

func (q *oaiChatRequest) convert() ([]Message, []Tool) {
	msgs := make([]Message, len(q.Messages))
	for i, m := range q.Messages {
		text, images := oaiContent(m.Content)
		msgs[i] = Message{Role: m.Role, Content: text, Images: images}
		if m.Role == "developer" {
			msgs[i].Role = "system"
		}
		for _, c := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: oaiArgs(c.Function.Arguments)})
		}
	}
	tools := make([]Tool, len(q.Tools))
	for i, t := range q.Tools {
		tools[i] = t.tool()
	}
	return msgs, tools
}

// checkToolPairs applies OpenAI's rule that every tool message answers a
// call of the assistant message before its run of tool messages, and
// that every call is answered. It returns the error message and param.
func checkToolPairs(ms []oaiMessage) (msg, param string, ok bool) {
	for i := 0; i < len(ms); i++ {
		if ms[i].Role == "tool" {
			return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", fmt.Sprintf("messages.[%d].role", i), false
		}
		if ms[i].Role != "assistant" || len(ms[i].ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, c := range ms[i].ToolCalls {
			want[c.ID] = true
		}
		j := i + 1
		for ; j < len(ms) && ms[j].Role == "tool"; j++ {
			if !want[ms[j].ToolCallID] {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", fmt.Sprintf("messages.[%d].role", j), false
			}
			delete(want, ms[j].ToolCallID)
		}
		if len(want) > 0 {
			var missing []string
			for _, c := range ms[i].ToolCalls {
				if want[c.ID] {
					missing = append(missing, c.ID)
				}
			}
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(missing, ", "), "messages", false
		}
		i = j - 1
	}
	return "", "", true
}

// ContextLengthExceeded is the message of OpenAI's 400 for a prompt of
// prompt tokens, over max.
func ContextLengthExceeded(max, prompt int) string {
	return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", max, prompt)
}

func (s *OpenAI) chat(w http.ResponseWriter, r *http.Request) {
	var req oaiChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openaiError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", nil, nil)
		return
	}
	if !s.known(req.Model) {
		openaiError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error", nil, strp("model_not_found"))
		return
	}
	if msg, param, ok := checkToolPairs(req.Messages); !ok {
		openaiError(w, http.StatusBadRequest, msg, "invalid_request_error", strp(param), nil)
		return
	}
	msgs, tools := req.convert()
	n := countChatWith(s.opts.Counter, msgs, tools, false)
	ev := Eval{Path: r.URL.Path, Model: req.Model, SentTokens: n, PromptTokens: n, SentMessages: len(msgs), KeptMessages: len(msgs), Prompt: RenderChat(msgs, tools)}
	max := s.opts.MaxContext
	if mt := req.maxTokens(); n > max || (mt > 0 && n+mt > max) {
		ev.Status = http.StatusBadRequest
		s.addEval(ev)
		s.opts.Flavor.overflow(w, max, n, mt, req.Stream)
		return
	}
	reply, finish := s.answered(&ev, s.opts.Responder(Turn{Prompt: ev.Prompt, Messages: msgs, Tools: tools}), req.maxTokens(), s.opts.Counter)
	res := oaiResult{
		id: fmt.Sprintf("chatcmpl-%d", s.ids.Add(1)), model: req.Model, reply: reply, finish: finish,
		promptTokens: n, completionTokens: replyTokensWith(s.opts.Counter, reply), callIDs: &s.ids,
	}
	writeOAIChat(w, r, &s.Recorder, req.Stream, req.includeUsage(), res, s.opts.ChunkDelay)
}

// oaiResult is a finished chat completion to write.
type oaiResult struct {
	id, model                      string
	reply                          Reply
	finish                         string
	promptTokens, completionTokens int
	cached                         int
	callIDs                        *atomic.Int64
	timings                        *llamaTimings // llama.cpp only
}

type oaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type oaiOutMessage struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []oaiToolCall `json:"tool_calls,omitempty"`
}

type oaiChoice struct {
	Index        int            `json:"index"`
	Message      *oaiOutMessage `json:"message,omitempty"`
	Delta        *oaiOutMessage `json:"delta,omitempty"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason *string        `json:"finish_reason"`
}

type oaiCompletion struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint,omitempty"`
	Choices           []oaiChoice   `json:"choices"`
	Usage             *oaiUsage     `json:"usage,omitempty"`
	Timings           *llamaTimings `json:"timings,omitempty"`
}

// oaiStreamChunk is a chunk whose usage is written as null when absent
// (only with include_usage, as OpenAI does).
type oaiStreamChunk struct {
	oaiCompletion
	Usage *oaiUsage `json:"usage"`
}

func writeOAIChat(w http.ResponseWriter, r *http.Request, rec *Recorder, stream, includeUsage bool, res oaiResult, delay time.Duration) {
	usage := &oaiUsage{PromptTokens: res.promptTokens, CompletionTokens: res.completionTokens, TotalTokens: res.promptTokens + res.completionTokens}
	usage.PromptTokensDetails.CachedTokens = res.cached
	created := time.Now().Unix()
	calls := make([]oaiToolCall, len(res.reply.ToolCalls))
	for i, c := range res.reply.ToolCalls {
		calls[i].ID = c.ID
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d", res.callIDs.Add(1))
		}
		calls[i].Type = "function"
		calls[i].Function.Name = c.Name
		calls[i].Function.Arguments = string(c.Arguments)
	}
	finish := res.finish
	if !stream {
		msg := &oaiOutMessage{Role: "assistant", ToolCalls: calls}
		if len(calls) == 0 || res.reply.Text != "" {
			msg.Content = &res.reply.Text
		}
		writeJSON(w, http.StatusOK, "application/json", oaiCompletion{
			ID: res.id, Object: "chat.completion", Created: created, Model: res.model,
			Choices: []oaiChoice{{Message: msg, FinishReason: &finish}},
			Usage:   usage, Timings: res.timings,
		})
		return
	}
	sse := newSSE(w, r, rec, delay)
	chunk := func(delta *oaiOutMessage, fin *string) any {
		c := oaiCompletion{ID: res.id, Object: "chat.completion.chunk", Created: created, Model: res.model,
			Choices: []oaiChoice{{Delta: delta, FinishReason: fin}}}
		if includeUsage {
			return oaiStreamChunk{oaiCompletion: c}
		}
		return c
	}
	empty := ""
	if !sse.data(chunk(&oaiOutMessage{Role: "assistant", Content: &empty}, nil)) {
		return
	}
	for _, tok := range Tokenize(res.reply.Text) {
		if !sse.data(chunk(&oaiOutMessage{Content: &tok}, nil)) {
			return
		}
	}
	for i, c := range calls {
		head := oaiToolCall{Index: &i, ID: c.ID, Type: "function"}
		head.Function.Name = c.Function.Name
		if !sse.data(chunk(&oaiOutMessage{ToolCalls: []oaiToolCall{head}}, nil)) {
			return
		}
		args := oaiToolCall{Index: &i}
		args.Function.Arguments = c.Function.Arguments
		if !sse.data(chunk(&oaiOutMessage{ToolCalls: []oaiToolCall{args}}, nil)) {
			return
		}
	}
	last := oaiCompletion{ID: res.id, Object: "chat.completion.chunk", Created: created, Model: res.model,
		Choices: []oaiChoice{{Delta: &oaiOutMessage{}, FinishReason: &finish}}, Timings: res.timings}
	var lastv any = last
	if includeUsage {
		lastv = oaiStreamChunk{oaiCompletion: last}
	}
	if !sse.data(lastv) {
		return
	}
	if includeUsage {
		u := oaiStreamChunk{oaiCompletion: oaiCompletion{ID: res.id, Object: "chat.completion.chunk", Created: created, Model: res.model, Choices: []oaiChoice{}}, Usage: usage}
		if !sse.data(u) {
			return
		}
	}
	sse.raw("data: [DONE]\n\n")
}

// sse writes Server-Sent Events, flushing each.
type sse struct {
	w     http.ResponseWriter
	r     *http.Request
	rec   *Recorder
	delay time.Duration
	n     int
}

func newSSE(w http.ResponseWriter, r *http.Request, rec *Recorder, delay time.Duration) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, r: r, rec: rec, delay: delay}
}

func (s *sse) raw(text string) bool {
	if s.n > 0 && s.rec.wait(s.r.Context(), s.delay) != nil {
		return false
	}
	s.n++
	if _, err := s.w.Write([]byte(text)); err != nil {
		s.rec.abort()
		return false
	}
	flush(s.w)
	return true
}

func (s *sse) data(v any) bool {
	b, err := marshal(v)
	if err != nil {
		return false
	}
	return s.raw("data: " + string(b) + "\n\n")
}

func (s *sse) event(name string, v any) bool {
	b, err := marshal(v)
	if err != nil {
		return false
	}
	return s.raw("event: " + name + "\ndata: " + string(b) + "\n\n")
}

func (s *OpenAI) completions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model     string       `json:"model"`
		Prompt    stringOrList `json:"prompt"`
		MaxTokens *int         `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openaiError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", nil, nil)
		return
	}
	if !s.known(req.Model) {
		openaiError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error", nil, strp("model_not_found"))
		return
	}
	prompt := strings.Join(req.Prompt, "")
	n := s.opts.Counter.Count(prompt)
	ev := Eval{Path: r.URL.Path, Model: req.Model, SentTokens: n, PromptTokens: n, Prompt: prompt}
	if n > s.opts.MaxContext {
		ev.Status = http.StatusBadRequest
		s.addEval(ev)
		s.opts.Flavor.overflow(w, s.opts.MaxContext, n, 0, false)
		return
	}
	max := 16 // the legacy endpoint's default max_tokens
	if req.MaxTokens != nil {
		max = *req.MaxTokens
	}
	reply := s.opts.Responder(Turn{Prompt: prompt})
	text, short := limitReplyWith(s.opts.Counter, reply.Text, max)
	ev.Status, ev.Reply = http.StatusOK, Reply{Text: text}
	s.addEval(ev)
	finish := "stop"
	if short {
		finish = "length"
	}
	c := s.opts.Counter.Count(text)
	writeJSON(w, http.StatusOK, "application/json", map[string]any{
		"id": fmt.Sprintf("cmpl-%d", s.ids.Add(1)), "object": "text_completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"text": text, "index": 0, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": n, "completion_tokens": c, "total_tokens": n + c},
	})
}

type oaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *OpenAI) models(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Object string     `json:"object"`
		Data   []oaiModel `json:"data"`
	}{Object: "list"}
	for _, m := range s.opts.Models {
		out.Data = append(out.Data, oaiModel{ID: m, Object: "model", Created: 1700000000, OwnedBy: "system"})
	}
	writeJSON(w, http.StatusOK, "application/json", out)
}

func (s *OpenAI) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.known(id) {
		openaiError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", id), "invalid_request_error", nil, strp("model_not_found"))
		return
	}
	writeJSON(w, http.StatusOK, "application/json", oaiModel{ID: id, Object: "model", Created: 1700000000, OwnedBy: "system"})
}

func (s *OpenAI) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model      string       `json:"model"`
		Input      stringOrList `json:"input"`
		Dimensions int          `json:"dimensions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openaiError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", nil, nil)
		return
	}
	dim := req.Dimensions
	if dim <= 0 {
		dim = s.opts.EmbeddingDimensions
	}
	writeOAIEmbeddings(w, s.opts.Counter, req.Model, req.Input, dim)
}

func writeOAIEmbeddings(w http.ResponseWriter, c Counter, model string, input []string, dim int) {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(input))
	n := 0
	for i, in := range input {
		data[i] = item{Object: "embedding", Index: i, Embedding: embed(in, dim)}
		n += c.Count(in)
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]any{
		"object": "list", "data": data, "model": model,
		"usage": map[string]int{"prompt_tokens": n, "total_tokens": n},
	})
}
