package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// DefaultAnthropicWindow is an Anthropic model's window when
// Options.Windows does not name it.
const DefaultAnthropicWindow = 200000

// anthropicRequest is a parsed /v1/messages request. Its messages do not
// map one to one to neutral ones: a user message's tool_result blocks
// become one tool message each (matched to their tool_use by id), and
// its other blocks one user message; the system prompt is a neutral
// system message that is never sent back as a message.
type anthropicRequest struct {
	top    map[string]json.RawMessage
	raw    []json.RawMessage
	role   []string
	blocks [][]json.RawMessage // nil when content is a string
	parts  []anthPart          // per neutral message
	conv   compact.Conversation
}

// anthPart says where a neutral message comes from: message msg (-1: the
// system prompt), and its blocks (nil: the whole string content).
type anthPart struct {
	msg    int
	blocks []int
	result bool // a tool_result block
}

type anthBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// blockText is the text of a string or a list of blocks, and the number
// of non-text blocks.
func blockText(raw json.RawMessage) (string, int) {
	if isNull(raw) {
		return "", 0
	}
	if !strings.HasPrefix(strings.TrimSpace(string(raw)), "[") {
		return str(raw), 0
	}
	var bs []anthBlock
	_ = json.Unmarshal(raw, &bs)
	var texts []string
	images := 0
	for _, b := range bs {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		} else {
			images++
		}
	}
	return strings.Join(texts, "\n"), images
}

func parseAnthropic(body []byte) (*anthropicRequest, error) {
	a := &anthropicRequest{}
	if err := json.Unmarshal(body, &a.top); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	if err := json.Unmarshal(a.top["messages"], &a.raw); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	if sys, ok := a.top["system"]; ok && !isNull(sys) {
		text, _ := blockText(sys)
		a.conv.Messages = append(a.conv.Messages, compact.Message{Role: compact.RoleSystem, Text: text})
		a.parts = append(a.parts, anthPart{msg: -1})
	}
	a.role = make([]string, len(a.raw))
	a.blocks = make([][]json.RawMessage, len(a.raw))
	for i, m := range a.raw {
		var f struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m, &f); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		a.role[i] = f.Role
		if !strings.HasPrefix(strings.TrimSpace(string(f.Content)), "[") {
			a.conv.Messages = append(a.conv.Messages, compact.Message{Role: role(f.Role), Text: str(f.Content)})
			a.parts = append(a.parts, anthPart{msg: i})
			continue
		}
		if err := json.Unmarshal(f.Content, &a.blocks[i]); err != nil {
			return nil, fmt.Errorf("message %d content: %w", i, err)
		}
		rest := compact.Message{Role: role(f.Role)}
		var restBlocks []int
		var texts []string
		for j, raw := range a.blocks[i] {
			var b anthBlock
			if err := json.Unmarshal(raw, &b); err != nil {
				return nil, fmt.Errorf("message %d block %d: %w", i, j, err)
			}
			switch b.Type {
			case "tool_result":
				text, images := blockText(b.Content)
				a.conv.Messages = append(a.conv.Messages, compact.Message{Role: compact.RoleTool, Text: text, Images: images, ToolCallID: b.ToolUseID})
				a.parts = append(a.parts, anthPart{msg: i, blocks: []int{j}, result: true})
				continue
			case "tool_use":
				rest.ToolCalls = append(rest.ToolCalls, compact.ToolCall{ID: b.ID, Name: b.Name, Args: string(b.Input)})
			case "text":
				texts = append(texts, b.Text)
			case "thinking", "redacted_thinking":
			default:
				rest.Images++
			}
			restBlocks = append(restBlocks, j)
		}
		if len(restBlocks) > 0 {
			rest.Text = strings.Join(texts, "\n")
			a.conv.Messages = append(a.conv.Messages, rest)
			a.parts = append(a.parts, anthPart{msg: i, blocks: restBlocks})
		}
	}
	if t, ok := a.top["tools"]; ok && !isNull(t) {
		var tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(t, &tools); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		for _, t := range tools {
			a.conv.Tools = append(a.conv.Tools, compact.Tool{Name: t.Name, Description: t.Description, Schema: string(t.InputSchema)})
		}
	}
	return a, nil
}

// build regroups the neutral result into Anthropic messages: a message
// whose parts all survive unchanged is sent byte for byte; others are
// rebuilt from their surviving blocks, a changed text replacing the text
// blocks; a notice joins the user message before it, or is a user message
// of its own.
func (a *anthropicRequest) build(res *compact.Result) ([]byte, error) {
	type group struct {
		msg   int // -2: a notice of its own
		parts []int
		texts []string
		role  string
	}
	var groups []*group
	for i, m := range res.Messages {
		src := res.Source[i]
		if src >= 0 && a.parts[src].msg < 0 {
			continue // the system prompt stays where it is
		}
		if src < 0 {
			if n := len(groups); n > 0 && groups[n-1].role == "user" {
				groups[n-1].parts = append(groups[n-1].parts, -1)
				groups[n-1].texts = append(groups[n-1].texts, m.Text)
				continue
			}
			groups = append(groups, &group{msg: -2, parts: []int{-1}, texts: []string{m.Text}, role: "user"})
			continue
		}
		mi := a.parts[src].msg
		if n := len(groups); n == 0 || groups[n-1].msg != mi {
			groups = append(groups, &group{msg: mi, role: a.role[mi]})
		}
		g := groups[len(groups)-1]
		g.parts = append(g.parts, src)
		g.texts = append(g.texts, m.Text)
	}
	out := make([]json.RawMessage, 0, len(groups))
	for _, g := range groups {
		if g.msg >= 0 && a.unchanged(g.msg, g.parts, g.texts) {
			out = append(out, a.raw[g.msg])
			continue
		}
		var blocks []json.RawMessage
		for k, p := range g.parts {
			text := g.texts[k]
			if p < 0 {
				blocks = append(blocks, textBlock(text))
				continue
			}
			part := a.parts[p]
			if part.blocks == nil {
				blocks = append(blocks, textBlock(text))
				continue
			}
			changed := text != a.conv.Messages[p].Text
			if part.result {
				raw := a.blocks[part.msg][part.blocks[0]]
				if changed {
					var f map[string]json.RawMessage
					if err := json.Unmarshal(raw, &f); err != nil {
						return nil, err
					}
					f["content"], _ = json.Marshal(text)
					raw, _ = json.Marshal(f)
				}
				blocks = append(blocks, raw)
				continue
			}
			placed := false
			for _, j := range part.blocks {
				raw := a.blocks[part.msg][j]
				if changed && bytes.Contains(raw, []byte(`"text"`)) {
					var b anthBlock
					if json.Unmarshal(raw, &b) == nil && b.Type == "text" {
						if !placed {
							blocks = append(blocks, textBlock(text))
							placed = true
						}
						continue
					}
				}
				blocks = append(blocks, raw)
			}
			if changed && !placed {
				blocks = append(blocks, textBlock(text))
			}
		}
		data, err := json.Marshal(map[string]any{"role": g.role, "content": blocks})
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	top := make(map[string]json.RawMessage, len(a.top))
	for k, v := range a.top {
		top[k] = v
	}
	top["messages"] = data
	return json.Marshal(top)
}

// unchanged reports whether every neutral part of message mi survived
// with its text.
func (a *anthropicRequest) unchanged(mi int, parts []int, texts []string) bool {
	n := 0
	for _, p := range a.parts {
		if p.msg == mi {
			n++
		}
	}
	if n != len(parts) {
		return false
	}
	for k, p := range parts {
		if p < 0 || texts[k] != a.conv.Messages[p].Text {
			return false
		}
	}
	return true
}

func textBlock(text string) json.RawMessage {
	data, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return data
}

// anthropicMessages serves /v1/messages.
func (g *Guard) anthropicMessages(w http.ResponseWriter, r *http.Request, b *backend, body []byte) {
	body, added := g.withRecallTool(g.policy(r), body, rdAnthropic)
	rc := g.recallFor(added, rdAnthropic, body)
	a, err := parseAnthropic(body)
	if err != nil {
		b.proxy.ServeHTTP(w, withBody(r, body))
		return
	}
	var p struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
	}
	_ = json.Unmarshal(body, &p)
	f := &fit{b: b, req: &chatRequest{conv: a.conv}, model: p.Model, reserve: g.reserveOr(p.MaxTokens), rebuild: a.build,
		rep: &Report{Policy: g.policy(r), Backend: string(b.kind)}, cal: g.calibrationFor(b.kind, p.Model)}
	f.window, f.rep.WindowSource = g.openaiWindow(r.Context(), b, p.Model)
	if !g.apply(r.Context(), w, f, body) {
		return
	}
	g.forwardRetry(w, r, f, rc.wrap(g.relayAnthropic))
}

func (g *Guard) relayAnthropic(w http.ResponseWriter, r *http.Request, f *fit, resp *http.Response) {
	// Ollama's /v1/messages truncates silently, as its /api/chat.
	var last answerFacts // relay observes an object before it asks whether it is final
	observe := func(obj []byte) { last = g.observeAnswer(rdAnthropic, f, obj) }
	isFinal := func([]byte) bool { return last.final }
	g.relayEnded(r, f, relay(w, resp, f.rep, rdAnthropic, isFinal, observe, f.rep.inject))
}

// anthropicCountTokens serves /v1/messages/count_tokens: Ollama has no
// such endpoint, so the guard answers for it with its own count of the
// request (calibrated from Ollama's counts, template overhead included;
// an estimate unless a tokenizer is set); other backends answer
// themselves.
func (g *Guard) anthropicCountTokens(w http.ResponseWriter, r *http.Request, b *backend, body []byte) {
	if b.kind != kOllama {
		b.proxy.ServeHTTP(w, withBody(r, body))
		return
	}
	a, err := parseAnthropic(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": err.Error()}})
		return
	}
	var p struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &p)
	cnt := g.calibrationFor(b.kind, p.Model).snapshot(g.base)
	n, _ := countConversation(a.conv, cnt.c, templateOverhead)
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": n})
}
