package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// dialect maps one API's chat messages to compact's neutral form and back.
type dialect interface {
	decode(fields map[string]json.RawMessage) (compact.Message, error)
	// setText replaces the message's text, keeping everything else.
	setText(fields map[string]json.RawMessage, text string) error
}

// chatRequest is a parsed chat request: the top-level fields and each
// message kept raw, so that what the guard does not change goes upstream
// byte for byte.
type chatRequest struct {
	top    map[string]json.RawMessage
	raw    []json.RawMessage
	fields []map[string]json.RawMessage
	conv   compact.Conversation
}

func parseChat(body []byte, d dialect) (*chatRequest, error) {
	c := &chatRequest{}
	if err := json.Unmarshal(body, &c.top); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	if m, ok := c.top["messages"]; ok && !isNull(m) {
		if err := json.Unmarshal(m, &c.raw); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
	}
	c.fields = make([]map[string]json.RawMessage, len(c.raw))
	c.conv.Messages = make([]compact.Message, len(c.raw))
	for i, m := range c.raw {
		if err := json.Unmarshal(m, &c.fields[i]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msg, err := d.decode(c.fields[i])
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		c.conv.Messages[i] = msg
	}
	if t, ok := c.top["tools"]; ok && !isNull(t) {
		var tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &tools); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		for _, t := range tools {
			c.conv.Tools = append(c.conv.Tools, compact.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: string(t.Function.Parameters)})
		}
	}
	return c, nil
}

// build returns the request body for a compaction result: kept messages
// byte for byte, changed ones with their text replaced, notices as user
// messages of their own.
func (c *chatRequest) build(res *compact.Result, d dialect) ([]byte, error) {
	out := make([]json.RawMessage, len(res.Messages))
	for i, m := range res.Messages {
		src := res.Source[i]
		if src < 0 {
			data, err := json.Marshal(map[string]string{"role": "user", "content": m.Text})
			if err != nil {
				return nil, err
			}
			out[i] = data
			continue
		}
		if m.Text == c.conv.Messages[src].Text {
			out[i] = c.raw[src]
			continue
		}
		f := make(map[string]json.RawMessage, len(c.fields[src]))
		for k, v := range c.fields[src] {
			f[k] = v
		}
		if err := d.setText(f, m.Text); err != nil {
			return nil, fmt.Errorf("message %d: %w", src, err)
		}
		data, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return c.with("messages", out)
}

// with returns the request body with one top-level field replaced.
func (c *chatRequest) with(key string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", key, err)
	}
	top := make(map[string]json.RawMessage, len(c.top))
	for k, v := range c.top {
		top[k] = v
	}
	top[key] = data
	return json.Marshal(top)
}

func isNull(m json.RawMessage) bool { return len(m) == 0 || string(m) == "null" }

func str(m json.RawMessage) string {
	var s string
	if !isNull(m) {
		_ = json.Unmarshal(m, &s)
	}
	return s
}

func role(s string) compact.Role {
	switch s {
	case "system", "developer":
		return compact.RoleSystem
	case "assistant", "model":
		return compact.RoleAssistant
	case "tool", "function", "ipython":
		return compact.RoleTool
	}
	return compact.RoleUser
}

// ollamaDialect is Ollama's /api/chat: content a string, images a list of
// base64 strings, tool_calls with arguments as an object, tool results
// matched by position (tool_name) or, in newer versions, by tool_call_id.
type ollamaDialect struct{}

func (ollamaDialect) decode(f map[string]json.RawMessage) (compact.Message, error) {
	m := compact.Message{Role: role(str(f["role"])), Text: str(f["content"]), ToolCallID: str(f["tool_call_id"]), Name: str(f["tool_name"])}
	if im, ok := f["images"]; ok && !isNull(im) {
		var images []json.RawMessage
		if err := json.Unmarshal(im, &images); err != nil {
			return m, fmt.Errorf("images: %w", err)
		}
		m.Images = len(images)
	}
	calls, err := decodeCalls(f["tool_calls"])
	m.ToolCalls = calls
	return m, err
}

func (ollamaDialect) setText(f map[string]json.RawMessage, text string) error {
	data, err := json.Marshal(text)
	f["content"] = data
	return err
}

func decodeCalls(raw json.RawMessage) ([]compact.ToolCall, error) {
	if isNull(raw) {
		return nil, nil
	}
	var calls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, fmt.Errorf("tool_calls: %w", err)
	}
	out := make([]compact.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = compact.ToolCall{ID: c.ID, Name: c.Function.Name, Args: string(c.Function.Arguments)}
	}
	return out, nil
}

// openaiDialect is OpenAI's chat completions: content a string, null or a
// list of parts (text parts are joined; others count as images), tool
// calls with ids and results with tool_call_id.
type openaiDialect struct{}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (openaiDialect) decode(f map[string]json.RawMessage) (compact.Message, error) {
	m := compact.Message{Role: role(str(f["role"])), ToolCallID: str(f["tool_call_id"]), Name: str(f["name"])}
	c := f["content"]
	switch {
	case isNull(c):
	case strings.HasPrefix(strings.TrimSpace(string(c)), "["):
		var parts []part
		if err := json.Unmarshal(c, &parts); err != nil {
			return m, fmt.Errorf("content: %w", err)
		}
		var texts []string
		for _, p := range parts {
			if p.Type == "text" || p.Type == "input_text" {
				texts = append(texts, p.Text)
			} else {
				m.Images++
			}
		}
		m.Text = strings.Join(texts, "\n")
	default:
		if err := json.Unmarshal(c, &m.Text); err != nil {
			return m, fmt.Errorf("content: %w", err)
		}
	}
	calls, err := decodeCalls(f["tool_calls"])
	m.ToolCalls = calls
	return m, err
}

func (openaiDialect) setText(f map[string]json.RawMessage, text string) error {
	c := f["content"]
	if !strings.HasPrefix(strings.TrimSpace(string(c)), "[") {
		data, err := json.Marshal(text)
		f["content"] = data
		return err
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(c, &parts); err != nil {
		return err
	}
	out := make([]json.RawMessage, 0, len(parts))
	done := false
	for _, p := range parts {
		var pp part
		if err := json.Unmarshal(p, &pp); err != nil {
			return err
		}
		if pp.Type != "text" && pp.Type != "input_text" {
			out = append(out, p)
			continue
		}
		if done {
			continue
		}
		done = true
		data, err := json.Marshal(part{Type: pp.Type, Text: text})
		if err != nil {
			return err
		}
		out = append(out, data)
	}
	if !done {
		return errors.New("no text part to replace")
	}
	data, err := json.Marshal(out)
	f["content"] = data
	return err
}
