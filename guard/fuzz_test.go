package guard

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// The guard parses three kinds of hostile input: chat payloads from clients
// (Ollama, OpenAI, Anthropic) and error bodies from upstreams. These fuzz
// targets check that none of them panics and that whatever compaction makes
// of a parsed request builds back into a JSON request with one message per
// message of the result.

func FuzzParseChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"task"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a\na\na\na"},{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"ls","parameters":{}}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x","images":["aGk="]},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},{"role":"tool","tool_name":"f","content":"r"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:"}}]}]}`,
		`{"messages":null}`,
		`[]`,
	} {
		f.Add([]byte(s), uint16(40))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit uint16) {
		for _, d := range []dialect{ollamaDialect{}, openaiDialect{}} {
			c, err := parseChat(body, d)
			if err != nil {
				continue
			}
			sameAsEncodingJSON(t, body, c)
			res, err := compact.Compact(c.conv, compact.Budget{Limit: int(limit) + 1}, compact.Options{})
			if err != nil {
				continue
			}
			out, err := c.build(res, d)
			if err != nil {
				continue
			}
			checkMessages(t, out, len(res.Messages))
		}
	})
}

func FuzzParseAnthropic(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":10,"system":"s","messages":[{"role":"user","content":"task"},{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"u1","name":"ls","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":"big big big"},{"type":"text","text":"next"}]}]}`,
		`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"r"}]}]}]}`,
		`{"messages":[]}`,
	} {
		f.Add([]byte(s), uint16(30))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit uint16) {
		a, err := parseAnthropic(body)
		if err != nil {
			return
		}
		res, err := compact.Compact(a.conv, compact.Budget{Limit: int(limit) + 1}, compact.Options{})
		if err != nil {
			return
		}
		out, err := a.build(res)
		if err != nil {
			return
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(out, &top); err != nil {
			t.Fatalf("built body is not JSON: %v\n%s", err, out)
		}
	})
}

// sameAsEncodingJSON fails unless what parseChat read agrees with
// encoding/json's reading of body: the top-level fields, and each
// message's role and (string) content.
func sameAsEncodingJSON(t *testing.T, body []byte, c *chatRequest) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("parseChat read %q, encoding/json fails: %v", body, err)
	}
	if len(top) != len(c.top) {
		t.Fatalf("%d top-level fields, encoding/json %d", len(c.top), len(top))
	}
	for k, v := range top {
		if !jsonEqual(v, c.top[k]) {
			t.Fatalf("field %q is %s, encoding/json %s", k, c.top[k], v)
		}
	}
	var msgs []map[string]json.RawMessage
	if m := top["messages"]; m != nil {
		if err := json.Unmarshal(m, &msgs); err != nil {
			t.Fatalf("messages %s: encoding/json fails: %v", m, err)
		}
	}
	if len(msgs) != len(c.conv.Messages) {
		t.Fatalf("%d messages, encoding/json %d", len(c.conv.Messages), len(msgs))
	}
	for i, m := range msgs {
		var content string
		if json.Unmarshal(m["content"], &content) == nil && c.conv.Messages[i].Text != content {
			t.Fatalf("message %d text %q, encoding/json %q", i, c.conv.Messages[i].Text, content)
		}
		var r string
		_ = json.Unmarshal(m["role"], &r)
		if c.conv.Messages[i].Role != role(r) {
			t.Fatalf("message %d role %q, encoding/json %q", i, c.conv.Messages[i].Role, r)
		}
	}
}

// jsonEqual reports whether two JSON texts are the same once compacted.
func jsonEqual(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// checkMessages fails unless body is a JSON object whose messages array
// holds n messages.
func checkMessages(t *testing.T, body []byte, n int) {
	t.Helper()
	var top struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("built body is not JSON: %v\n%s", err, body)
	}
	if len(top.Messages) != n {
		t.Fatalf("built %d messages, result has %d", len(top.Messages), n)
	}
}

func FuzzContextError(f *testing.F) {
	for _, tc := range contextErrorCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		nPrompt, nCtx, ok := contextError(body)
		if !ok && (nPrompt != 0 || nCtx != 0) {
			t.Fatalf("numbers %d/%d without a context error", nPrompt, nCtx)
		}
	})
}
