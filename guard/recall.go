package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// RecallTool is the name of the tool Options.Recall adds.
const RecallTool = "context_recall"

// DefaultRecallRounds is how many context_recall rounds the guard answers
// for one client request when Options.RecallRounds is 0.
const DefaultRecallRounds = 4

const (
	recallDesc = "Read back part of this conversation that was removed to fit the context window. " +
		"A removal notice in the chat names the stored id. Long content comes back in pages: " +
		"call again with the offset the previous page gives."
	recallSchema = `{"type":"object","properties":{` +
		`"id":{"type":"string","description":"the stored id a removal notice names"},` +
		`"offset":{"type":"integer","description":"where to continue reading (0 or absent: the start)"},` +
		`"max_tokens":{"type":"integer","description":"the most tokens to return in this page"}},` +
		`"required":["id"]}`
	// minRecallPage is the smallest page cap, in tokens.
	minRecallPage = 64
)

// rdKind is the wire format of a recall loop.
type rdKind int

const (
	rdOllama rdKind = iota
	rdOpenAI
	rdAnthropic
)

// recallArgs are the parsed arguments of a context_recall call.
type recallArgs struct {
	ID        string
	Offset    int
	MaxTokens int
}

// parseRecallArgs parses a model's context_recall arguments: a JSON object
// (or a JSON string holding one, as OpenAI sends them) with a string id and
// optional integer offset and max_tokens (numbers or numeric strings;
// negative values are 0).
func parseRecallArgs(raw string) (recallArgs, error) {
	var a recallArgs
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, `"`) {
		var s string
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return a, fmt.Errorf("arguments: %w", err)
		}
		raw = strings.TrimSpace(s)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return a, errors.New(`arguments must be a JSON object like {"id":"evicted_…"}`)
	}
	if err := json.Unmarshal(m["id"], &a.ID); err != nil || strings.TrimSpace(a.ID) == "" {
		return a, errors.New(`missing "id": pass the id a removal notice names`)
	}
	a.ID = strings.TrimSpace(a.ID)
	num := func(key string) (int, error) {
		v, ok := m[key]
		if !ok || isNull(v) {
			return 0, nil
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return 0, fmt.Errorf("%q must be an integer", key)
			}
			if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
				return 0, fmt.Errorf("%q must be an integer", key)
			}
		}
		if f < 0 || f != f {
			return 0, nil
		}
		if f > 1<<40 {
			f = 1 << 40
		}
		return int(f), nil
	}
	var err error
	if a.Offset, err = num("offset"); err != nil {
		return a, err
	}
	if a.MaxTokens, err = num("max_tokens"); err != nil {
		return a, err
	}
	return a, nil
}

// recallToolDef is the context_recall tool in a dialect's schema format.
func recallToolDef(k rdKind) json.RawMessage {
	if k == rdAnthropic {
		data, _ := json.Marshal(map[string]any{"name": RecallTool, "description": recallDesc, "input_schema": json.RawMessage(recallSchema)})
		return data
	}
	data, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": RecallTool, "description": recallDesc, "parameters": json.RawMessage(recallSchema)}})
	return data
}

// withRecallTool returns body with the context_recall tool appended to
// its tools, when recall is on, the request's policy compacts, and the request
// already carries tools (none of them context_recall). ok is false when
// the body is unchanged. The tool is spliced into the body as received,
// which is otherwise kept byte for byte.
func (g *Guard) withRecallTool(policy Policy, body []byte, k rdKind) ([]byte, bool) {
	if !g.opts.Recall || policy != PolicyCompact {
		return body, false
	}
	fields, ok := jsonscan.ObjectSpans(body)
	if !ok {
		return body, false
	}
	ts, ok := fields["tools"]
	if !ok {
		return body, false
	}
	tools := body[ts.Start:ts.End]
	els, ok := jsonscan.ArraySpans(tools)
	if !ok || len(els) == 0 {
		return body, false
	}
	for _, e := range els {
		if toolName(tools[e.Start:e.End]) == RecallTool {
			return body, false
		}
	}
	def := recallToolDef(k)
	at := ts.Start + els[len(els)-1].End // just past the last tool
	out := make([]byte, 0, len(body)+1+len(def))
	out = append(out, body[:at]...)
	out = append(out, ',')
	out = append(out, def...)
	return append(out, body[at:]...), true
}

// toolName is a tool schema's name in any dialect.
func toolName(raw json.RawMessage) string {
	var t struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &t)
	if t.Function.Name != "" {
		return t.Function.Name
	}
	return t.Name
}

// withoutRecallTool returns body with the context_recall tool removed.
func withoutRecallTool(body []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	dropRecall(top, "tools")
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}

// dropRecall removes context_recall from the list obj[key], tool schemas
// or tool calls (and the key, when nothing is left).
func dropRecall(obj map[string]json.RawMessage, key string) {
	var list []json.RawMessage
	if json.Unmarshal(obj[key], &list) != nil {
		return
	}
	list = slices.DeleteFunc(list, func(t json.RawMessage) bool { return toolName(t) == RecallTool })
	if len(list) == 0 {
		delete(obj, key)
	} else {
		obj[key], _ = json.Marshal(list)
	}
}

// call is one tool call of a model's answer.
type call struct {
	ID, Name string
	Args     json.RawMessage // a JSON object (Ollama, Anthropic) or string (OpenAI)
	index    int             // the call's index in its stream (OpenAI), or block index (Anthropic)
}

// answer is a model's answer, as far as the recall loop needs it.
type answer struct {
	text  strings.Builder
	calls []*call
	// thinking are Anthropic's thinking and redacted_thinking blocks,
	// whole: the API wants them back before the tool_use they led to.
	thinking []json.RawMessage
}

func (a *answer) recalls() (rec []*call, others int) {
	for _, c := range a.calls {
		if c.Name == RecallTool {
			rec = append(rec, c)
		} else {
			others++
		}
	}
	return rec, others
}

// ollamaAnswer is the message of an Ollama answer, whole or a stream's
// chunk, as the recall loop reads it.
type ollamaAnswer struct {
	Content   string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// parseAnswer reads a whole (non-streamed) answer.
func parseAnswer(k rdKind, body []byte) *answer {
	a := &answer{}
	switch k {
	case rdOllama:
		var o struct {
			Message ollamaAnswer `json:"message"`
		}
		_ = json.Unmarshal(body, &o)
		a.text.WriteString(o.Message.Content)
		for i, c := range o.Message.ToolCalls {
			a.calls = append(a.calls, &call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments, index: i})
		}
	case rdOpenAI:
		var o struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		_ = json.Unmarshal(body, &o)
		if len(o.Choices) > 0 {
			m := o.Choices[0].Message
			if m.Content != nil {
				a.text.WriteString(*m.Content)
			}
			for i, c := range m.ToolCalls {
				args, _ := json.Marshal(c.Function.Arguments)
				a.calls = append(a.calls, &call{ID: c.ID, Name: c.Function.Name, Args: args, index: i})
			}
		}
	case rdAnthropic:
		var o struct {
			Content []json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(body, &o)
		for i, raw := range o.Content {
			var b anthBlock
			_ = json.Unmarshal(raw, &b)
			switch b.Type {
			case "text":
				a.text.WriteString(b.Text)
			case "tool_use":
				a.calls = append(a.calls, &call{ID: b.ID, Name: b.Name, Args: b.Input, index: i})
			case "thinking", "redacted_thinking":
				a.thinking = append(a.thinking, raw)
			}
		}
	}
	return a
}

// argString is a call's arguments as a JSON object text.
func (c *call) argString() string {
	s := strings.TrimSpace(string(c.Args))
	if strings.HasPrefix(s, `"`) {
		var inner string
		if json.Unmarshal([]byte(s), &inner) == nil {
			return inner
		}
	}
	if s == "" {
		return "{}"
	}
	return s
}

// roundMessages are the messages one recall round appends: the
// assistant's turn with its context_recall calls only (other calls are
// dropped: see doc.go), then one tool result per call.
func roundMessages(k rdKind, text string, thinking []json.RawMessage, calls []*call, results []string) ([]json.RawMessage, error) {
	var out []any
	switch k {
	case rdOllama:
		tc := make([]any, len(calls))
		for i, c := range calls {
			args := json.RawMessage(c.argString())
			if !json.Valid(args) {
				args = json.RawMessage(`{}`)
			}
			fn := map[string]any{"name": c.Name, "arguments": args}
			m := map[string]any{"function": fn}
			if c.ID != "" {
				m["id"] = c.ID
			}
			tc[i] = m
		}
		out = append(out, map[string]any{"role": "assistant", "content": text, "tool_calls": tc})
		for i, c := range calls {
			m := map[string]any{"role": "tool", "content": results[i], "tool_name": RecallTool}
			if c.ID != "" {
				m["tool_call_id"] = c.ID
			}
			out = append(out, m)
		}
	case rdOpenAI:
		tc := make([]any, len(calls))
		for i, c := range calls {
			tc[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.argString()}}
		}
		var content any
		if text != "" {
			content = text
		}
		out = append(out, map[string]any{"role": "assistant", "content": content, "tool_calls": tc})
		for i, c := range calls {
			out = append(out, map[string]any{"role": "tool", "tool_call_id": c.ID, "content": results[i]})
		}
	case rdAnthropic:
		var blocks, res []any
		for _, t := range thinking {
			blocks = append(blocks, t)
		}
		if strings.TrimSpace(text) != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": text})
		}
		for i, c := range calls {
			args := json.RawMessage(c.argString())
			if !json.Valid(args) || !strings.HasPrefix(strings.TrimSpace(string(args)), "{") {
				args = json.RawMessage(`{}`)
			}
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": args})
			res = append(res, map[string]any{"type": "tool_result", "tool_use_id": c.ID, "content": results[i]})
		}
		out = append(out, map[string]any{"role": "assistant", "content": blocks}, map[string]any{"role": "user", "content": res})
	}
	msgs := make([]json.RawMessage, len(out))
	for i, m := range out {
		data, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode recall turn: %w", err)
		}
		msgs[i] = data
	}
	return msgs, nil
}

// renderSpan renders an evicted span (JSON compact.Messages) as text.
func renderSpan(data []byte) (string, error) {
	var msgs []compact.Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		return "", fmt.Errorf("stored span: %w", err)
	}
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("[" + string(m.Role))
		if m.Role == compact.RoleTool && m.Name != "" {
			b.WriteString(" " + m.Name)
		}
		b.WriteString("]\n")
		b.WriteString(m.Text)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "\n(calls %s %s)", c.Name, c.Args)
		}
		if m.Images > 0 {
			fmt.Fprintf(&b, "\n(%d images not shown)", m.Images)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// recallResult answers one context_recall call: the span as text, from
// args.Offset, at most a page of tokens, with where to continue; or an
// error message the model can act on.
func (g *Guard) recallResult(ctx context.Context, f *fit, c *call) (string, string) {
	args, err := parseRecallArgs(string(c.Args))
	if err != nil {
		return fmt.Sprintf("context_recall error: %v.", err), ""
	}
	if g.opts.Engine == nil {
		return "context_recall error: removed content is not kept on this server; answer from what you have.", args.ID
	}
	if !strings.HasPrefix(args.ID, "evicted_") {
		return fmt.Sprintf("context_recall error: %q is not a removal id; use the id a removal notice names (it starts with \"evicted_\").", args.ID), args.ID
	}
	data, err := g.evictedSpan(ctx, args.ID)
	if err != nil && !errors.Is(err, errNoSpan) {
		g.log.Warn("read an evicted span", "id", args.ID, "err", err)
		return fmt.Sprintf("context_recall error: %q could not be read back (the store failed); answer from what you have.", args.ID), args.ID
	}
	if err != nil {
		return fmt.Sprintf("context_recall error: nothing is stored under %q (it may have expired, or the id is mistyped); use an id a removal notice names, or answer from what you have.", args.ID), args.ID
	}
	text, err := renderSpan(data)
	if err != nil {
		return fmt.Sprintf("context_recall error: %q cannot be read back: %v.", args.ID, err), args.ID
	}
	pageCap := max(minRecallPage, f.rep.Budget/4)
	limit := pageCap
	if args.MaxTokens > 0 && args.MaxTokens < limit {
		limit = args.MaxTokens
	}
	start := min(args.Offset, len(text))
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start--
	}
	end := pageEnd(text, start, limit, f.cnt.c)
	var b strings.Builder
	fmt.Fprintf(&b, "[context_recall %s: characters %d to %d of %d]\n", args.ID, start, end, len(text))
	b.WriteString(text[start:end])
	if end < len(text) {
		next, _ := json.Marshal(map[string]any{"id": args.ID, "offset": end})
		fmt.Fprintf(&b, "\n[more: call context_recall with %s]", next)
	} else {
		b.WriteString("\n[end of the removed content]")
	}
	return b.String(), args.ID
}

// pageEnd is the largest end such that text[start:end] counts at most
// limit tokens (at least one rune), on a rune boundary.
func pageEnd(text string, start, limit int, c compact.Counter) int {
	if c.Count(text[start:]) <= limit {
		return len(text)
	}
	lo, hi := start, len(text)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		for mid > lo && mid < len(text) && !utf8.RuneStart(text[mid]) {
			mid--
		}
		if mid == lo {
			break
		}
		if c.Count(text[start:mid]) <= limit {
			lo = mid
		} else {
			hi = mid - 1
			for hi > lo && hi < len(text) && !utf8.RuneStart(text[hi]) {
				hi--
			}
		}
	}
	if lo == start && start < len(text) {
		_, size := utf8.DecodeRuneInString(text[start:])
		lo = start + size
	}
	return lo
}

// recaller runs the recall loop of one client request.
type recaller struct {
	g    *Guard
	k    rdKind
	base []byte // the client's request with the tool added
	// turns are the recall turns appended so far; the request carries
	// turns[from:] (older ones are dropped when they take more than half
	// the budget).
	turns []recallTurn
	from  int
	// tail is how many neutral messages the client's request has from its
	// last user message on (set at the first round).
	tail int
	// top and msgs are the client's request (with the tool) parsed at
	// the first round.
	top    map[string]json.RawMessage
	msgs   []json.RawMessage
	rounds int
	max    int
	// stream state, kept across upstream responses
	started  bool   // headers written
	cont     bool   // a continuation response: drop its opening
	nextIdx  int    // Anthropic: the next block index the client sees
	roleSent bool   // OpenAI: the client saw the role chunk
	streamID string // OpenAI: the first answer's chunk id, which later ones take
}

// recallTurn is one round's messages: the assistant's calls and their
// results.
type recallTurn struct {
	msgs    []json.RawMessage
	neutral int // neutral messages (1 + calls)
	tokens  int // the results' tokens
}

// recallFor returns the recall loop of a request whose body got the tool,
// or nil.
func (g *Guard) recallFor(added bool, k rdKind, body []byte) *recaller {
	if !added {
		return nil
	}
	n := g.opts.RecallRounds
	if n <= 0 {
		n = DefaultRecallRounds
	}
	return &recaller{g: g, k: k, base: body, max: n}
}

// clientTail is how many neutral messages of the client's request come
// from its last user message on (at least 1).
func clientTail(conv compact.Conversation) int {
	for i := len(conv.Messages) - 1; i >= 0; i-- {
		if conv.Messages[i].Role == compact.RoleUser {
			return len(conv.Messages) - i
		}
	}
	return 1
}

type relayFunc = func(http.ResponseWriter, *http.Request, *fit, *http.Response)

// wrap returns the relay that runs the recall loop before handing the
// final answer to next.
func (rc *recaller) wrap(next relayFunc) relayFunc {
	if rc == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request, f *fit, resp *http.Response) {
		rc.loop(w, r, f, resp, next)
	}
}

func (rc *recaller) loop(w http.ResponseWriter, r *http.Request, f *fit, resp *http.Response, next relayFunc) {
	g := rc.g
	for {
		if resp.StatusCode != http.StatusOK {
			if rc.started {
				detail, _ := readLimited(resp.Body, 4<<10, "upstream error")
				resp.Body.Close()
				g.log.Warn("recall round failed upstream", "backend", f.b.kind, "status", resp.StatusCode)
				rc.failStream(w, f, fmt.Sprintf("a context_recall round failed upstream: %d %s", resp.StatusCode, bytes.TrimSpace(detail)))
				return
			}
			next(w, r, f, resp)
			return
		}
		var a *answer
		if isStream(resp) {
			var done bool
			a, done = rc.stream(w, r, f, resp)
			if done {
				return
			}
		} else {
			body, err := readWhole(resp)
			if err != nil {
				g.relayEnded(r, f, failBody(w, resp, f.rep, err))
				resp.Body.Close()
				return
			}
			resp.Body.Close()
			a = parseAnswer(rc.k, body)
			rec, others := a.recalls()
			if len(rec) == 0 || rc.rounds >= rc.max {
				if len(rec) > 0 {
					f.rep.RecallLimitReached = true
					body = stripRecall(rc.k, body, others)
				}
				resp.Body = io.NopCloser(bytes.NewReader(body))
				next(w, r, f, resp)
				return
			}
			g.observeAnswer(rc.k, f, body)
		}
		var err error
		if resp, err = rc.round(r, f, a); err != nil {
			if r.Context().Err() != nil {
				return
			}
			g.log.Warn("recall round failed", "backend", f.b.kind, "err", err)
			switch {
			case rc.started:
				rc.failStream(w, f, "a context_recall round failed: "+err.Error())
			case isUpstreamTimeout(err):
				g.writeUpstreamError(w, r, err, f.rep)
			default:
				writeError(w, http.StatusBadGateway, "recall_failed", err.Error(), f.rep)
			}
			return
		}
	}
}

// round answers the context_recall calls of a, appends the turn to the
// request, fits it into the budget and sends it.
func (rc *recaller) round(r *http.Request, f *fit, a *answer) (*http.Response, error) {
	g := rc.g
	ctx := r.Context()
	rec, _ := a.recalls()
	if rc.tail == 0 {
		rc.tail = clientTail(f.req.conv)
	}
	rc.rounds++
	f.rep.RecallRounds = rc.rounds
	g.stats.recallRounds.Add(1)
	results := make([]string, len(rec))
	for i, c := range rec {
		var id string
		results[i], id = g.recallResult(ctx, f, c)
		if c.ID == "" && rc.k != rdOllama {
			c.ID = fmt.Sprintf("ctxkit_recall_%d_%d", rc.rounds, i)
		}
		if id != "" {
			f.rep.Recalled = append(f.rep.Recalled, id)
		}
	}
	msgs, err := roundMessages(rc.k, a.text.String(), a.thinking, rec, results)
	if err != nil {
		return nil, err
	}
	turn := recallTurn{msgs: msgs, neutral: 1 + len(rec)}
	for _, res := range results {
		turn.tokens += f.cnt.c.Count(res)
	}
	rc.turns = append(rc.turns, turn)
	// The pages read before go, oldest first, when the turns would take
	// more than half the budget; the latest always stays.
	sum := 0
	for _, t := range rc.turns[rc.from:] {
		sum += t.tokens
	}
	for ; rc.from < len(rc.turns)-1 && sum > f.rep.Budget/2; rc.from++ {
		sum -= rc.turns[rc.from].tokens
	}
	keep := rc.tail
	for _, t := range rc.turns[rc.from:] {
		keep += t.neutral
	}
	// The last round's request goes without the tool, so the model
	// answers.
	body, err := g.fitRound(ctx, f, rc, rc.rounds >= rc.max, keep)
	if err != nil {
		return nil, err
	}
	f.body = body
	g.log.Info("context_recall round", "backend", f.b.kind, "model", f.model, "round", rc.rounds, "calls", len(rec), "tokens", f.sent)
	return g.send(ctx, r, f.b, body)
}

// extend is the client's parsed request (Ollama, OpenAI) with the recall
// turns appended, without parsing the client's messages again; last
// withdraws the tool.
func (rc *recaller) extend(f *fit, last bool) (*chatRequest, error) {
	base := f.req
	c := &chatRequest{keys: base.keys, top: base.top, msgs: slices.Clone(base.msgs)}
	c.conv.Messages = slices.Clone(base.conv.Messages)
	c.conv.Tools = base.conv.Tools
	for _, t := range rc.turns[rc.from:] {
		for _, m := range t.msgs {
			raw, err := parseMsg(m)
			if err != nil {
				return nil, fmt.Errorf("recall turn: %w", err)
			}
			msg, err := f.d.decode(raw)
			if err != nil {
				return nil, fmt.Errorf("recall turn: %w", err)
			}
			c.msgs = append(c.msgs, raw)
			c.conv.Messages = append(c.conv.Messages, msg)
		}
	}
	if last {
		c.top = maps.Clone(base.top)
		dropRecall(c.top, "tools")
		c.conv.Tools = nil
		for _, t := range base.conv.Tools {
			if t.Name != RecallTool {
				c.conv.Tools = append(c.conv.Tools, t)
			}
		}
	}
	return c, nil
}

// body is the client's request with the rounds' messages appended
// (Anthropic).
func (rc *recaller) body() ([]byte, error) {
	if rc.top == nil {
		if err := json.Unmarshal(rc.base, &rc.top); err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		if err := json.Unmarshal(rc.top["messages"], &rc.msgs); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
	}
	msgs := slices.Clone(rc.msgs)
	for _, t := range rc.turns[rc.from:] {
		msgs = append(msgs, t.msgs...)
	}
	data, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	top := maps.Clone(rc.top)
	top["messages"] = data
	return json.Marshal(top)
}

// fitRound compacts a round's request into the budget; the last keep
// neutral messages (the client's last question and the recall turns
// after it) are never evicted.
func (g *Guard) fitRound(ctx context.Context, f *fit, rc *recaller, last bool, keep int) ([]byte, error) {
	var conv compact.Conversation
	var build func(*compact.Result) ([]byte, error)
	var whole func() ([]byte, error)
	if rc.k == rdAnthropic {
		body, err := rc.body()
		if err != nil {
			return nil, err
		}
		if last {
			body = withoutRecallTool(body)
		}
		a, err := parseAnthropic(body)
		if err != nil {
			return nil, err
		}
		conv, build = a.conv, a.build
		whole = func() ([]byte, error) { return body, nil }
	} else {
		req, err := rc.extend(f, last)
		if err != nil {
			return nil, err
		}
		conv = req.conv
		build = func(res *compact.Result) ([]byte, error) { return req.build(res, f.d) }
		whole = func() ([]byte, error) { return req.with("messages", req.rawMessages()) }
	}
	opts := g.compactOptions(f, g.storeFunc(ctx))
	kr := opts.KeepRecent
	switch {
	case kr == 0:
		kr = compact.DefaultKeepRecent
	case kr < 0:
		kr = 0
	}
	opts.KeepRecent = max(kr, keep)
	res, err := compact.Compact(conv, compact.Budget{Limit: f.rep.Budget, Overhead: templateOverhead}, opts)
	if err != nil {
		return nil, fmt.Errorf("fit recall round: %w", err)
	}
	f.sent, f.chars = res.TokensAfter, 0
	for _, m := range res.Messages {
		f.chars += len(m.Text)
	}
	f.rep.TokensAfter = res.TokensAfter
	if !res.Compacted {
		return whole()
	}
	f.rep.RecallCompactions++
	g.compacted(f, res.EvictedTokens)
	return build(res)
}

// observeAnswer reads the upstream's count of the prompt in an answer, or
// in one object of its stream (Anthropic's comes in message_start, OpenAI's
// in a usage chunk after the finish chunk): it calibrates the estimate and
// detects a silent truncation (Ollama truncates on every path). It returns
// the facts read.
func (g *Guard) observeAnswer(k rdKind, f *fit, data []byte) answerFacts {
	a := readAnswer(k, data, f.includeUsage)
	g.observed(f, a.promptTokens, f.b.kind == kOllama)
	return a
}

// stripRecall removes context_recall calls from a whole answer (the round
// limit was reached); with no other call left, the finish reason says the
// model stopped.
func stripRecall(k rdKind, body []byte, others int) []byte {
	var top map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if d.Decode(&top) != nil {
		return body
	}
	keep := func(list []any) []any {
		out := []any{}
		for _, c := range list {
			m, _ := c.(map[string]any)
			fn, _ := m["function"].(map[string]any)
			name, _ := fn["name"].(string)
			if m["type"] == "tool_use" {
				name, _ = m["name"].(string)
			}
			if name != RecallTool {
				out = append(out, c)
			}
		}
		return out
	}
	switch k {
	case rdOllama:
		if m, ok := top["message"].(map[string]any); ok {
			if tc := keep(asList(m["tool_calls"])); len(tc) > 0 {
				m["tool_calls"] = tc
			} else {
				delete(m, "tool_calls")
			}
		}
	case rdOpenAI:
		for _, ch := range asList(top["choices"]) {
			c, _ := ch.(map[string]any)
			m, _ := c["message"].(map[string]any)
			if m == nil {
				continue
			}
			if tc := keep(asList(m["tool_calls"])); len(tc) > 0 {
				m["tool_calls"] = tc
			} else {
				delete(m, "tool_calls")
				if m["content"] == nil {
					m["content"] = ""
				}
			}
			if others == 0 && c["finish_reason"] == "tool_calls" {
				c["finish_reason"] = "stop"
			}
		}
	case rdAnthropic:
		content := keep(asList(top["content"]))
		if len(content) == 0 {
			content = append(content, map[string]any{"type": "text", "text": ""})
		}
		top["content"] = content
		if others == 0 && top["stop_reason"] == "tool_use" {
			top["stop_reason"] = "end_turn"
		}
	}
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
