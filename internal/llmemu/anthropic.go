package llmemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// AnthropicOptions configure an Anthropic Messages API emulator. The zero
// value serves "claude-sonnet-4-5" with a 200000-token window.
type AnthropicOptions struct {
	Timing
	// MaxContext is the model's context window; 0 means 200000.
	MaxContext int
	// Models are the served model ids; empty means "claude-sonnet-4-5".
	Models []string
	// Responder replaces the default model, Think.
	Responder Responder
	// Counter counts the prompts and replies; nil means TinyBPE(), a
	// real byte-level BPE vocabulary. RuleCounter counts as the guard's
	// default estimate does: never check the guard's counting against it.
	Counter Counter
}

// Anthropic emulates the Anthropic Messages API: /v1/messages (not
// streaming unless asked; SSE events message_start, content_block_start,
// ping, content_block_delta, content_block_stop, message_delta with
// usage, message_stop), /v1/messages/count_tokens and /v1/models. A prompt
// over the window gets 400 "prompt is too long: N tokens > M maximum";
// unpaired tool_use and tool_result blocks get the API's 400s.
type Anthropic struct {
	Recorder
	opts AnthropicOptions
	mux  *http.ServeMux
	ids  atomic.Int64
}

// NewAnthropic returns an Anthropic Messages API emulator.
func NewAnthropic(opts AnthropicOptions) *Anthropic {
	if opts.MaxContext <= 0 {
		opts.MaxContext = 200000
	}
	if len(opts.Models) == 0 {
		opts.Models = []string{"claude-sonnet-4-5"}
	}
	if opts.Responder == nil {
		opts.Responder = Think
	}
	if opts.Counter == nil {
		opts.Counter = TinyBPE()
	}
	s := &Anthropic{opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/messages", s.messages)
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	s.mux.HandleFunc("GET /v1/models", s.models)
	return s
}

// ServeHTTP records the request, waits Latency, and serves it.
func (s *Anthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := s.record(r); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if s.wait(r.Context(), s.opts.Latency) != nil {
		return
	}
	s.mux.ServeHTTP(w, r)
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	type detail struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	writeJSON(w, status, "application/json", struct {
		Type  string `json:"type"`
		Error detail `json:"error"`
	}{"error", detail{typ, msg}})
}

// PromptTooLong is the message of Anthropic's 400 for a prompt of n
// tokens over max.
func PromptTooLong(n, max int) string {
	return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", n, max)
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens *int               `json:"max_tokens"`
	System    json.RawMessage    `json:"system"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// blocks decodes content that is a string or an array of blocks.
func blocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("content: want a string or an array of content blocks: %w", err)
	}
	return bs, nil
}

// renderBlocks renders content blocks as message text, collecting tool
// calls and counting images. A tool_result is rendered
// "<tool_response>\n{content}\n</tool_response>".
func renderBlocks(bs []anthropicBlock) (string, []ToolCall, int, error) {
	var b strings.Builder
	var calls []ToolCall
	images := 0
	for _, bl := range bs {
		switch bl.Type {
		case "text":
			b.WriteString(bl.Text)
		case "thinking":
			b.WriteString(bl.Thinking)
		case "image", "document":
			images++
		case "tool_use":
			calls = append(calls, ToolCall{ID: bl.ID, Name: bl.Name, Arguments: bl.Input})
		case "tool_result":
			inner, err := blocks(bl.Content)
			if err != nil {
				return "", nil, 0, err
			}
			text, _, n, err := renderBlocks(inner)
			if err != nil {
				return "", nil, 0, err
			}
			images += n
			b.WriteString("<tool_response>\n" + text + "\n</tool_response>")
		}
	}
	return b.String(), calls, images, nil
}

func (q *anthropicRequest) convert() ([]Message, []Tool, error) {
	var msgs []Message
	sys, err := blocks(q.System)
	if err != nil {
		return nil, nil, fmt.Errorf("system: %w", err)
	}
	if len(sys) > 0 {
		text, _, _, err := renderBlocks(sys)
		if err != nil {
			return nil, nil, fmt.Errorf("system: %w", err)
		}
		msgs = append(msgs, Message{Role: "system", Content: text})
	}
	for i, m := range q.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, nil, fmt.Errorf("messages.%d.%w", i, err)
		}
		text, calls, images, err := renderBlocks(bs)
		if err != nil {
			return nil, nil, fmt.Errorf("messages.%d.%w", i, err)
		}
		msgs = append(msgs, Message{Role: m.Role, Content: text, ToolCalls: calls, Images: images})
	}
	tools := make([]Tool, len(q.Tools))
	for i, t := range q.Tools {
		tools[i] = Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}
	}
	return msgs, tools, nil
}

// checkToolPairs applies the API's rule: the tool_result blocks of a user
// message answer exactly the tool_use blocks of the assistant message
// just before it. It returns the API's error message, or "".
func (q *anthropicRequest) checkToolPairs() string {
	var pending []string // tool_use ids of the previous assistant message
	pendingAt := -1
	for i, m := range q.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return fmt.Sprintf("messages.%d.%v", i, err)
		}
		answered := map[string]bool{}
		for j, b := range bs {
			if b.Type != "tool_result" {
				continue
			}
			if m.Role != "user" || !contains(pending, b.ToolUseID) {
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			}
			answered[b.ToolUseID] = true
		}
		var missing []string
		for _, id := range pending {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", pendingAt, strings.Join(missing, ", "))
		}
		pending, pendingAt = nil, -1
		if m.Role == "assistant" {
			for _, b := range bs {
				if b.Type == "tool_use" {
					pending = append(pending, b.ID)
					pendingAt = i
				}
			}
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Anthropic) known(model string) bool {
	for _, m := range s.opts.Models {
		if m == model {
			return true
		}
	}
	return false
}

// parse decodes and validates a request; on failure it has answered.
func (s *Anthropic) parse(w http.ResponseWriter, r *http.Request, needMax bool) (*anthropicRequest, []Message, []Tool, bool) {
	var req anthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "There was an issue with the JSON body of your request: "+err.Error())
		return nil, nil, nil, false
	}
	if req.Model == "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model: Field required")
		return nil, nil, nil, false
	}
	if needMax && req.MaxTokens == nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return nil, nil, nil, false
	}
	if !s.known(req.Model) {
		anthropicError(w, http.StatusNotFound, "not_found_error", "model: "+req.Model)
		return nil, nil, nil, false
	}
	if msg := req.checkToolPairs(); msg != "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return nil, nil, nil, false
	}
	msgs, tools, err := req.convert()
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return nil, nil, nil, false
	}
	return &req, msgs, tools, true
}

func (s *Anthropic) countTokens(w http.ResponseWriter, r *http.Request) {
	_, msgs, tools, ok := s.parse(w, r, false)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]int{"input_tokens": countChatWith(s.opts.Counter, msgs, tools, false)})
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type anthropicOutBlock struct {
	Type  string           `json:"type"`
	Text  *string          `json:"text,omitempty"`
	ID    string           `json:"id,omitempty"`
	Name  string           `json:"name,omitempty"`
	Input *json.RawMessage `json:"input,omitempty"`
}

type anthropicOut struct {
	ID           string              `json:"id"`
	Type         string              `json:"type"`
	Role         string              `json:"role"`
	Model        string              `json:"model"`
	Content      []anthropicOutBlock `json:"content"`
	StopReason   *string             `json:"stop_reason"`
	StopSequence *string             `json:"stop_sequence"`
	Usage        anthropicUsage      `json:"usage"`
}

func (s *Anthropic) messages(w http.ResponseWriter, r *http.Request) {
	req, msgs, tools, ok := s.parse(w, r, true)
	if !ok {
		return
	}
	n := countChatWith(s.opts.Counter, msgs, tools, false)
	prompt := RenderChat(msgs, tools)
	ev := Eval{Path: r.URL.Path, Model: req.Model, SentTokens: n, PromptTokens: n, SentMessages: len(msgs), KeptMessages: len(msgs), Prompt: prompt}
	if n > s.opts.MaxContext {
		ev.Status = http.StatusBadRequest
		s.addEval(ev)
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", PromptTooLong(n, s.opts.MaxContext))
		return
	}
	reply, finish := s.answered(&ev, s.opts.Responder(Turn{Prompt: prompt, Messages: msgs, Tools: tools}), *req.MaxTokens, s.opts.Counter)
	writeAnthropic(w, r, &s.Recorder, req, reply, finish, replyTokensWith(s.opts.Counter, reply), n, s.ids.Add(1), s.opts.ChunkDelay)
}

// writeAnthropic answers a Messages request with reply, already limited
// and recorded, its finish reason in OpenAI's words and its output token
// count: one JSON message or the SSE events. The Anthropic emulator and
// Ollama's /v1/messages share it.
func writeAnthropic(w http.ResponseWriter, r *http.Request, rec *Recorder, req *anthropicRequest, reply Reply, finish string, outTokens, inputTokens int, id int64, delay time.Duration) {
	stop := map[string]string{"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}[finish]
	var content []anthropicOutBlock
	if reply.Text != "" || len(reply.ToolCalls) == 0 {
		content = append(content, anthropicOutBlock{Type: "text", Text: &reply.Text})
	}
	for i, c := range reply.ToolCalls {
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		cid := c.ID
		if cid == "" {
			cid = fmt.Sprintf("toolu_%02d%d", id, i)
		}
		content = append(content, anthropicOutBlock{Type: "tool_use", ID: cid, Name: c.Name, Input: &args})
	}
	msg := anthropicOut{
		ID: fmt.Sprintf("msg_%024d", id), Type: "message", Role: "assistant", Model: req.Model,
		Content: content, StopReason: &stop, Usage: anthropicUsage{InputTokens: inputTokens, OutputTokens: outTokens},
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, "application/json", msg)
		return
	}
	sse := newSSE(w, r, rec, delay)
	start := msg
	start.Content, start.StopReason = []anthropicOutBlock{}, nil
	start.Usage.OutputTokens = 1
	if !sse.event("message_start", map[string]any{"type": "message_start", "message": start}) {
		return
	}
	for i, b := range content {
		head := b
		if b.Type == "text" {
			empty := ""
			head.Text = &empty
		} else {
			empty := json.RawMessage(`{}`)
			head.Input = &empty
		}
		if !sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": head}) {
			return
		}
		if i == 0 && !sse.event("ping", map[string]string{"type": "ping"}) {
			return
		}
		if b.Type == "text" {
			for _, tok := range Tokenize(*b.Text) {
				if !sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "text_delta", "text": tok}}) {
					return
				}
			}
		} else if !sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "input_json_delta", "partial_json": string(*b.Input)}}) {
			return
		}
		if !sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": outTokens}}) {
		return
	}
	sse.event("message_stop", map[string]string{"type": "message_stop"})
}

func (s *Anthropic) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	data := make([]model, len(s.opts.Models))
	for i, m := range s.opts.Models {
		data[i] = model{Type: "model", ID: m, DisplayName: m, CreatedAt: "2025-09-29T00:00:00Z"}
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]any{
		"data": data, "has_more": false, "first_id": s.opts.Models[0], "last_id": s.opts.Models[len(s.opts.Models)-1],
	})
}
