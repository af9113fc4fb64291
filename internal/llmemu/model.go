// Package llmemu holds faithful emulators of the LLM servers that the guard
// sits in front of: Ollama ([NewOllama]), the llama.cpp server
// ([NewLlamaCpp]), an OpenAI-compatible server ([NewOpenAI]) and the
// Anthropic Messages API ([NewAnthropic]). They let the guard's tests and
// benchmarks run without model weights; the end-to-end suite checks the
// guard against a real Ollama as well.
//
// Each emulator is an [http.Handler] (run it with httptest.NewServer) that
// speaks its server's wire format, with each API's own default for
// streaming, its real stream format, and its real overflow behaviour:
//
//   - Ollama truncates silently. First whole messages go from the front
//     (system messages and the last message are kept) until the rendered
//     prompt fits num_ctx; then, on v0.17.4 (the default, compared with
//     the real server), a prompt still longer than the window keeps its
//     first num_keep tokens and its tail, exactly num_ctx tokens in all
//     (prompt_eval_count num_ctx); on v0.33
//     (OllamaOptions.Version) it keeps num_ctx − max((num_ctx−nKeep)/2, 1)
//     tokens. It answers 200 OK with prompt_eval_count equal to the tokens
//     kept.
//   - llama.cpp refuses a prompt of n_ctx tokens or more with its exact 400
//     exceed_context_size_error body naming n_prompt_tokens and n_ctx.
//   - OpenAI answers 400 context_length_exceeded; Anthropic answers 400
//     invalid_request_error "prompt is too long: N tokens > M maximum".
//
// # Tokens and template
//
// The chat messages are rendered with a ChatML-like template
// ([RenderChat]; Ollama first merges consecutive messages of one role, as
// its Go template does) and the rendered text is counted with the
// emulator's [Counter] (each Options.Counter). By default that is
// [TinyBPE]: the real byte-level BPE vocabulary of the tiny model a real
// Ollama runs in the end-to-end tests (package tinymodel), read by package
// tokenizer, so the Ollama emulator counts as that server does. The
// emulators' own rule ([Tokenize], [CountChat], [RuleCounter]) is the rule
// the guard's default estimate applies: a test that checks the guard's
// counting must never count with it.
//
// # The model
//
// The "model" ([Think]) is a few rules over what the server kept of the
// prompt: asked "what is the secret?", it answers with the value of the
// last "SECRET: value" line that survived truncation, or "I don't know"; a
// last user message that says "call tool NAME" (optionally followed by a
// JSON object of arguments), NAME being one of the tools offered, makes it
// call that tool; anything else is answered "OK". A test may replace the
// rules with its own through each server's Options.Responder.
package llmemu

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Special tokens of the emulated template; each is one token.
const (
	// ImStart opens a message in the rendered prompt.
	ImStart = "<|im_start|>"
	// ImEnd closes a message in the rendered prompt.
	ImEnd = "<|im_end|>"
)

// ImageTokens is what one image adds to a prompt's token count, as Ollama
// counts an image when a projector is present.
const ImageTokens = 768

// maxPieceBytes is the longest token piece, in bytes.
const maxPieceBytes = 4

// Tokenize splits text into its tokens by the emulators' rule and returns
// each token's text. The rule: the special tokens ImStart and ImEnd are one
// token each; otherwise a unit is a maximal run of letters and digits, or
// one other non-space character; a unit longer than 4 bytes is cut into
// pieces of at most 4 bytes at character boundaries; each piece is one
// token. Whitespace is not a token: it belongs to the token after it
// (whitespace at the very end belongs to the last token), so joining the
// tokens gives back the text exactly. Text that is only whitespace has no
// token.
func Tokenize(text string) []string {
	var out []string
	start := 0 // start of the pending whitespace plus the current piece
	for i := 0; ; {
		end, ok := nextToken(text, i)
		if !ok {
			break
		}
		out = append(out, text[start:end])
		start, i = end, end
	}
	if start < len(text) && len(out) > 0 {
		out[len(out)-1] += text[start:]
	}
	return out
}

// CountTokens returns len(Tokenize(text)) without building the tokens.
func CountTokens(text string) int {
	n := 0
	for i := 0; ; n++ {
		end, ok := nextToken(text, i)
		if !ok {
			return n
		}
		i = end
	}
}

// nextToken skips the whitespace at text[i:] and returns where the token
// after it ends; ok is false when only whitespace is left.
func nextToken(text string, i int) (end int, ok bool) {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
			continue
		case strings.HasPrefix(text[i:], ImStart):
			return i + len(ImStart), true
		case strings.HasPrefix(text[i:], ImEnd):
			return i + len(ImEnd), true
		case isWordRune(r):
			// One piece of at most maxPieceBytes bytes of a word run.
			n := 0
			for i < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[i:])
				if !isWordRune(r2) || (n > 0 && n+s2 > maxPieceBytes) {
					break
				}
				n += s2
				i += s2
			}
			return i, true
		default:
			return i + size, true
		}
	}
	return i, false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// TokenID is the id the emulators give a token (llama.cpp /tokenize):
// 1 for BOS, otherwise a hash of the token's text without its leading
// whitespace, in [100, 150000).
func TokenID(tok string) int {
	h := fnv.New32a()
	h.Write([]byte(strings.TrimLeftFunc(tok, unicode.IsSpace)))
	return 100 + int(h.Sum32()%149900)
}

// BOSID is the id of the beginning-of-sequence token.
const BOSID = 1

// Message is one chat message in the emulators' common form: every wire
// format is converted to it before rendering.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string
	// Content is the message's text; Anthropic content blocks and OpenAI
	// content parts are rendered into it (see RenderChat).
	Content string
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall
	// Images is the number of images attached.
	Images int
}

// ToolCall is one call of a tool by the model.
type ToolCall struct {
	// ID is the call's id (OpenAI, Anthropic); empty for Ollama.
	ID string
	// Name is the tool's name.
	Name string
	// Arguments is the arguments as a JSON object.
	Arguments json.RawMessage
}

// Tool is one tool offered to the model.
type Tool struct {
	// Name is the tool's name.
	Name string
	// Description is the tool's description.
	Description string
	// Parameters is the JSON schema of its arguments.
	Parameters json.RawMessage
}

// RenderChat renders a conversation as the emulators' template does:
//
//	<|im_start|>system\n# Tools\n{one JSON line per tool}<|im_end|>\n   (only when tools are offered)
//	<|im_start|>{role}\n{content}{tool calls}<|im_end|>\n                (one per message)
//	<|im_start|>assistant\n                                              (the generation prompt)
//
// where each tool call is rendered "\n<tool_call>\n{"name":…,"arguments":…}\n</tool_call>".
// Images are not rendered; they are counted apart (ImageTokens each).
func RenderChat(msgs []Message, tools []Tool) string {
	var b strings.Builder
	if len(tools) > 0 {
		b.WriteString(ImStart + "system\n# Tools")
		for _, t := range tools {
			b.WriteByte('\n')
			b.WriteString(toolLine(t))
		}
		b.WriteString(ImEnd + "\n")
	}
	for _, m := range msgs {
		renderMessage(&b, m)
	}
	b.WriteString(ImStart + "assistant\n")
	return b.String()
}

func renderMessage(b *strings.Builder, m Message) {
	b.WriteString(ImStart)
	b.WriteString(m.Role)
	b.WriteByte('\n')
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteString("\n<tool_call>\n")
		b.WriteString(callJSON(c))
		b.WriteString("\n</tool_call>")
	}
	b.WriteString(ImEnd + "\n")
}

func toolLine(t Tool) string {
	params := t.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	v := struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, compactJSON(params)}
	out, err := json.Marshal(v)
	if err != nil {
		return `{"name":` + quote(t.Name) + `}`
	}
	return string(out)
}

func callJSON(c ToolCall) string {
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return `{"name":` + quote(c.Name) + `,"arguments":` + string(compactJSON(args)) + `}`
}

func quote(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}

// compactJSON returns raw without insignificant whitespace, or raw itself
// when it is not valid JSON.
func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return json.RawMessage(buf.Bytes())
}

// CountChat returns a conversation's prompt token count by the emulators'
// rule (RuleCounter): the tokens of RenderChat(msgs, tools), plus
// ImageTokens per image, plus 1 when bos is set. The emulators count with
// their Counter, by default not this rule.
func CountChat(msgs []Message, tools []Tool, bos bool) int {
	return countChatWith(RuleCounter{}, msgs, tools, bos)
}

// countChatWith is CountChat by c.
func countChatWith(c Counter, msgs []Message, tools []Tool, bos bool) int {
	n := c.Count(RenderChat(msgs, tools))
	for _, m := range msgs {
		n += m.Images * ImageTokens
	}
	if bos {
		n++
	}
	return n
}

// Turn is what the model sees: the prompt as the server kept it after any
// truncation, the messages it kept (nil for raw prompts), and the tools
// offered.
type Turn struct {
	// Prompt is the kept rendered prompt text.
	Prompt string
	// Messages are the kept messages (nil for a raw prompt).
	Messages []Message
	// Tools are the tools offered.
	Tools []Tool
}

// Reply is what the model answers: text, or tool calls.
type Reply struct {
	// Text is the answer's text.
	Text string
	// ToolCalls are the calls the model makes instead of answering.
	ToolCalls []ToolCall
}

// Responder decides the model's reply to a turn.
type Responder func(Turn) Reply

var (
	secretRe   = regexp.MustCompile(`SECRET: ([\w-]+)`)
	questionRe = regexp.MustCompile(`(?i)what is the secret`)
	callRe     = regexp.MustCompile(`(?i)call tool ([A-Za-z0-9_.-]+)`)
)

// Don't is the needle answer when the secret was lost.
const Dont = "I don't know"

// Think is the default model. In order:
//  0. A question asking for a summary of a marked text is answered with
//     Summarize (see there).
//  1. If the last kept message is a user message saying "call tool NAME"
//     and NAME is an offered tool, it calls NAME with the JSON object that
//     follows on the same line, or {}.
//  2. If the question (the last user message that is not only tool results,
//     or for a raw prompt the prompt itself) asks "what is the secret", it
//     answers with the value of the last "SECRET: value" in the kept
//     prompt. Failing that, when a context_recall tool is offered, it
//     reads removed content back: it calls context_recall with the
//     arguments a last tool result's "[more: call context_recall with
//     {...}]" gives, else with {"id": ID} for the first id a removal
//     notice names (stored as "ID") that it has not asked for yet.
//     Otherwise it answers Dont.
//  3. Otherwise it answers "OK".
func Think(t Turn) Reply {
	question := t.Prompt
	if t.Messages != nil {
		question = ""
		for i := len(t.Messages) - 1; i >= 0; i-- {
			if t.Messages[i].Role == "user" && !onlyToolResults(t.Messages[i].Content) {
				question = t.Messages[i].Content
				break
			}
		}
	}
	if r, ok := summaryReply(question); ok {
		return r
	}
	if t.Messages != nil {
		if last := t.Messages[len(t.Messages)-1]; last.Role == "user" && len(t.Tools) > 0 {
			if c, ok := askedCall(last.Content, t.Tools); ok {
				return Reply{ToolCalls: []ToolCall{c}}
			}
		}
	}
	if questionRe.MatchString(question) {
		// The question itself never matches secretRe ("SECRET:" is
		// upper case with a colon), so any match is a surviving needle.
		all := secretRe.FindAllStringSubmatch(t.Prompt, -1)
		if len(all) == 0 {
			if c, ok := recallCall(t); ok {
				return Reply{ToolCalls: []ToolCall{c}}
			}
			return Reply{Text: Dont}
		}
		return Reply{Text: all[len(all)-1][1]}
	}
	return Reply{Text: "OK"}
}

// RecallTool is the name of the guard's tool that reads removed content
// back.
const RecallTool = "context_recall"

var (
	noticeIDRe   = regexp.MustCompile(`stored as "([^"]+)"`)
	recallMoreRe = regexp.MustCompile(`call context_recall with (\{[^\n]*?\})\]`)
)

var (
	toolResponseRe = regexp.MustCompile(`(?s)<tool_response>.*?</tool_response>`)
	noticeRe       = regexp.MustCompile(`(?s)\[ctxkit:.*?\]`)
)

// onlyToolResults reports whether a user message (Anthropic's) holds only
// tool results, and perhaps removal notices: it asks no question.
func onlyToolResults(content string) bool {
	if !strings.Contains(content, "<tool_response>") {
		return false
	}
	rest := noticeRe.ReplaceAllString(toolResponseRe.ReplaceAllString(content, ""), "")
	return strings.TrimSpace(rest) == ""
}

// recallCall is the context_recall call the model makes to find a lost
// secret, if any (see Think, rule 2).
func recallCall(t Turn) (ToolCall, bool) {
	offered := false
	for _, tool := range t.Tools {
		offered = offered || tool.Name == RecallTool
	}
	if !offered || len(t.Messages) == 0 {
		return ToolCall{}, false
	}
	if last := t.Messages[len(t.Messages)-1]; last.Role == "tool" || strings.Contains(last.Content, "<tool_response>") {
		if m := recallMoreRe.FindStringSubmatch(last.Content); m != nil && json.Valid([]byte(m[1])) {
			return ToolCall{Name: RecallTool, Arguments: json.RawMessage(m[1])}, true
		}
	}
	asked := map[string]bool{}
	for _, m := range t.Messages {
		for _, c := range m.ToolCalls {
			var args struct {
				ID string `json:"id"`
			}
			if c.Name == RecallTool && json.Unmarshal(c.Arguments, &args) == nil {
				asked[args.ID] = true
			}
		}
	}
	for _, m := range noticeIDRe.FindAllStringSubmatch(t.Prompt, -1) {
		if !asked[m[1]] {
			return ToolCall{Name: RecallTool, Arguments: json.RawMessage(`{"id":` + quote(m[1]) + `}`)}, true
		}
	}
	return ToolCall{}, false
}

func askedCall(content string, tools []Tool) (ToolCall, bool) {
	loc := callRe.FindStringSubmatchIndex(content)
	if loc == nil {
		return ToolCall{}, false
	}
	name := content[loc[2]:loc[3]]
	found := false
	for _, t := range tools {
		if t.Name == name {
			found = true
		}
	}
	if !found {
		return ToolCall{}, false
	}
	rest := content[loc[1]:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	rest = strings.TrimSpace(rest)
	args := json.RawMessage(`{}`)
	var obj map[string]any
	if strings.HasPrefix(rest, "{") && json.Unmarshal([]byte(rest), &obj) == nil {
		args = compactJSON(json.RawMessage(rest))
	}
	return ToolCall{Name: name, Arguments: args}, true
}

// limitReply cuts a text reply to at most max tokens by the emulators'
// rule (max <= 0: no limit) and tells whether it was cut.
func limitReply(text string, max int) (string, bool) {
	return limitReplyWith(RuleCounter{}, text, max)
}

// limitReplyWith cuts a text reply to at most max tokens of c (max <= 0:
// no limit), never inside a character, and tells whether it was cut.
func limitReplyWith(c Counter, text string, max int) (string, bool) {
	if max <= 0 {
		return text, false
	}
	toks := c.Split(text)
	if len(toks) <= max {
		return text, false
	}
	out := strings.Join(toks[:max], "")
	for len(out) > 0 && !utf8.ValidString(out) {
		out = out[:len(out)-1] // a byte-level token may end inside a character
	}
	return out, true
}

// replyTokensWith is the output token count of a reply by c.
func replyTokensWith(c Counter, r Reply) int {
	n := c.Count(r.Text)
	for _, call := range r.ToolCalls {
		n += c.Count(callJSON(call))
	}
	return n
}
