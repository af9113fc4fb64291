package guard

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// TestParseChat: a chat request is read as encoding/json reads it (a
// repeated key keeps its last value, null is no fields), and its fields
// and messages are the body's own bytes.
func TestParseChat(t *testing.T) {
	body := []byte(` { "model" : "m", "messages" : [ {"role":"system", "content":"be <brief> & kind"} ,
		{"role":"user","content":"caf\u00e9 \"q\"\n","extra":{"keep":  [1, 2]}}, null ],
		"model":"m2", "x-unknown": {"a" : 1} } `)
	c, err := parseChat(body, ollamaDialect{})
	if err != nil {
		t.Fatal(err)
	}
	if got := str(c.top["model"]); got != "m2" {
		t.Errorf("model %q, want the last value", got)
	}
	if got := string(c.top["x-unknown"]); got != `{"a" : 1}` {
		t.Errorf("x-unknown %s", got)
	}
	wantText := []string{"be <brief> & kind", "café \"q\"\n", ""}
	if len(c.conv.Messages) != len(wantText) {
		t.Fatalf("%d messages", len(c.conv.Messages))
	}
	for i, m := range c.conv.Messages {
		if m.Text != wantText[i] {
			t.Errorf("message %d text %q, want %q", i, m.Text, wantText[i])
		}
	}
	if c.conv.Messages[2].Role != compact.RoleUser || c.msgs[2].members != nil {
		t.Errorf("null message: %+v, members %v", c.conv.Messages[2], c.msgs[2].members)
	}
	// The messages and their members are slices of the body, not copies.
	for i, m := range c.msgs[:2] {
		if !inside(body, m.text) || !inside(body, m.get("role")) {
			t.Errorf("message %d is a copy", i)
		}
	}
	for _, bad := range []string{`[1]`, `{"messages":{}}`, `{"messages":[1]}`, `{"messages":[{"content":1}]}`, `{"a":}`} {
		if _, err := parseChat([]byte(bad), openaiDialect{}); err == nil {
			t.Errorf("parseChat(%s): no error", bad)
		}
	}
	if c, err := parseChat([]byte(" null "), ollamaDialect{}); err != nil || len(c.conv.Messages) != 0 {
		t.Errorf("null body: %v, %+v", err, c)
	}
}

// inside reports whether sub is a slice of data's memory.
func inside(data, sub []byte) bool {
	if len(sub) == 0 {
		return false
	}
	for i := range data {
		if &data[i] == &sub[0] {
			return i+len(sub) <= len(data)
		}
	}
	return false
}

// TestBuildKeepsBytes: compaction's body keeps every message it does not
// change byte for byte (spacing, escapes, <, > and & as sent), the
// top-level fields in the order received, and changes only what it must.
func TestBuildKeepsBytes(t *testing.T) {
	kept := `{ "role" : "user", "content" : "a <b> & \u0063", "x" : [ 1 ] }`
	body := []byte(`{"stream":false,"messages":[{"role":"system","content":"sys"},` + kept + `,{"role":"user","content":"last","images":[ ]}],"model":"m","options":{"num_ctx":  8}}`)
	c, err := parseChat(body, ollamaDialect{})
	if err != nil {
		t.Fatal(err)
	}
	res := &compact.Result{
		Messages: []compact.Message{c.conv.Messages[1], {Role: compact.RoleUser, Text: "[notice]"}, {Role: compact.RoleUser, Text: "last, shrunk"}},
		Source:   []int{1, -1, 2},
	}
	out, err := c.build(res, ollamaDialect{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"stream":false,"messages":[` + kept + `,{"content":"[notice]","role":"user"},{"role":"user","content":"last, shrunk","images":[ ]}],"model":"m","options":{"num_ctx":  8}}`
	if string(out) != want {
		t.Fatalf("built\n%s\nwant\n%s", out, want)
	}
	if len(out) != cap(out) {
		t.Errorf("body of %d bytes in a buffer of %d: not sized once", len(out), cap(out))
	}
	// A field the request did not have goes last.
	out, err = c.with("keep_alive", "5m")
	if err != nil || !strings.HasSuffix(string(out), `"options":{"num_ctx":  8},"keep_alive":"5m"}`) || !json.Valid(out) {
		t.Fatalf("with a new field: %s, %v", out, err)
	}
}

// TestEncodeMessages: the evicted span is what encoding/json writes (HTML
// escaping off), in a buffer of its exact size.
func TestEncodeMessages(t *testing.T) {
	for _, msgs := range [][]compact.Message{
		nil,
		{},
		{{Role: compact.RoleSystem, Text: "plain"}},
		{{Role: "we\"ird\n", Text: "tabs\tquotes\" <html> & \u2028 \x00 \xff end", Images: 2, Name: "n", ToolCallID: "id"},
			{Role: compact.RoleAssistant, ToolCalls: []compact.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"a<b>.txt"}`}}},
			{Role: compact.RoleTool, Text: strings.Repeat("line \"x\"\n", 1000)}},
	} {
		got, err := encodeMessages(msgs)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(msgs); err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("encodeMessages:\n%.300s\nencoding/json:\n%.300s", got, want.String())
		}
		if len(got) != cap(got) && msgs != nil {
			t.Errorf("%d bytes in a buffer of %d", len(got), cap(got))
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestChatMemory bounds what the guard allocates for a large chat: parsing
// copies the texts once and nothing else (it used to copy the body three
// times over and the texts twice), and encoding an evicted span allocates
// the span once (it used to grow a buffer and copy it).
func TestChatMemory(t *testing.T) {
	body := bigChat(4 << 20)
	var c *chatRequest
	n := allocated(func() {
		var err error
		if c, err = parseChat(body, ollamaDialect{}); err != nil {
			t.Fatal(err)
		}
	})
	// Each text is decoded into a buffer the size of its JSON literal
	// (rounded up to whole pages).
	literals := 0
	for _, m := range c.msgs {
		literals += len(m.get("content"))
	}
	if limit := uint64(literals) + uint64(len(body))/10; n > limit {
		t.Errorf("parsing a %d-byte chat with %d bytes of text literals allocated %d bytes, over %d", len(body), literals, n, limit)
	}
	var span []byte
	n = allocated(func() {
		var err error
		if span, err = encodeMessages(c.conv.Messages); err != nil {
			t.Fatal(err)
		}
	})
	if limit := uint64(len(span)) + uint64(len(span))/10; n > limit {
		t.Errorf("encoding a %d-byte span allocated %d bytes, over %d", len(span), n, limit)
	}
}
