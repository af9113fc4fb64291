package anthropicadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/anthropicadapter"
	"github.com/ctxkit/ctxkit/offload/internal/adaptertest"
)

func toolUse(id, name, input string) anthropic.ContentBlockUnion {
	b := anthropic.ContentBlockUnion{Type: "tool_use", ID: id, Name: name}
	if input != "" {
		b.Input = json.RawMessage(input)
	}
	return b
}

func TestToolsMatchEngine(t *testing.T) {
	e := adaptertest.NewEngine(t)
	if len(e.Tools()) == 0 {
		t.Fatal("engine has no tools")
	}
	adaptertest.SameJSON(t, anthropicadapter.Tools(e), e.AnthropicTools())
}

type reply = adaptertest.Reply

type result = adaptertest.Result

func results(t *testing.T, m anthropic.MessageParam) []result {
	t.Helper()
	if m.OfUser == nil {
		t.Fatalf("HandleToolUse returned a non-user message: %+v", m)
	}
	out := make([]result, len(m.OfUser.Content))
	for i, b := range m.OfUser.Content {
		r := b.OfToolResult
		if r == nil || len(r.Content) != 1 || r.Content[0].OfText == nil {
			t.Fatalf("block %d is not a tool_result with one text: %+v", i, b)
		}
		isError := r.IsError.Value
		out[i] = result{ID: r.ToolUseID, Content: r.Content[0].OfText.Text, IsError: &isError}
	}
	return out
}

func TestHandleToolUse(t *testing.T) {
	tests := []struct {
		name    string
		content []anthropic.ContentBlockUnion
		want    []reply
	}{
		{
			name:    "one call",
			content: []anthropic.ContentBlockUnion{toolUse("t1", "result_get_item", `{"workspace_id":"tickets","index":2}`)},
			want:    []reply{{ID: "t1", Contains: `"id":3`}},
		},
		{
			name: "several calls among other blocks keep their order and ids",
			content: []anthropic.ContentBlockUnion{
				{Type: "thinking", Thinking: "I should look at the tickets."},
				{Type: "text", Text: "Looking."},
				toolUse("a", "result_get_item", `{"workspace_id":"tickets","index":29}`),
				toolUse("b", "no_such_tool", `{}`),
				{Type: "server_tool_use", ID: "srv", Name: "web_search", Input: json.RawMessage(`{"query":"x"}`)},
				toolUse("c", "result_field_values", `{"workspace_id":"tickets","field":"team"}`),
				toolUse("d", "result_get_item", `not json`),
				toolUse("e", "result_list", ``),
			},
			want: []reply{
				{ID: "a", Contains: `"id":30`},
				{ID: "b", Code: offload.CodeUnknownTool},
				{ID: "c", Contains: `"distinct":3`},
				{ID: "d", Code: offload.CodeBadArguments},
				{ID: "e", Contains: `tickets`},
			},
		},
		{name: "no tool use", content: []anthropic.ContentBlockUnion{{Type: "text", Text: "Done."}}, want: []reply{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := adaptertest.NewEngine(t)
			got := anthropicadapter.HandleToolUse(context.Background(), e, &anthropic.Message{Content: tt.content})
			adaptertest.CheckReplies(t, results(t, got), tt.want)
		})
	}
}

func TestHandleToolUseNil(t *testing.T) {
	e := adaptertest.NewEngine(t)
	got := anthropicadapter.HandleToolUse(context.Background(), e, nil)
	if got.OfUser == nil || len(got.OfUser.Content) != 0 {
		t.Errorf("HandleToolUse(nil) = %+v, want a user message without content", got)
	}
}

// A message decoded from the API's JSON, answered and encoded again, is what
// the next request sends.
func TestHandleToolUseWire(t *testing.T) {
	e := adaptertest.NewEngine(t)
	var msg anthropic.Message
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude","stop_reason":"tool_use","content":[
		{"type":"text","text":"Let me look."},
		{"type":"tool_use","id":"toolu_A","name":"result_get_item","input":{"workspace_id":"tickets","index":7}},
		{"type":"tool_use","id":"toolu_B","name":"result_get_item","input":{"index":"x"},"toolset_name":"kit"}]}`
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(anthropicadapter.HandleToolUse(context.Background(), e, &msg))
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Role    string `json:"role"`
		Content []struct {
			Type        string `json:"type"`
			ToolUseID   string `json:"tool_use_id"`
			IsError     bool   `json:"is_error"`
			ToolsetName string `json:"toolset_name"`
			Content     []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatalf("reply encodes as %s: %v", b, err)
	}
	if wire.Role != "user" || len(wire.Content) != 2 {
		t.Fatalf("reply on the wire: %s", b)
	}
	a, c := wire.Content[0], wire.Content[1]
	if a.Type != "tool_result" || a.ToolUseID != "toolu_A" || a.IsError || len(a.Content) != 1 || !strings.Contains(a.Content[0].Text, `"id":8`) {
		t.Errorf("first block: %s", b)
	}
	if c.ToolUseID != "toolu_B" || !c.IsError || c.ToolsetName != "kit" || !strings.Contains(c.Content[0].Text, offload.CodeBadArguments) {
		t.Errorf("second block: %s", b)
	}
}

// The context reaches the engine: a workspace stored in one session is
// visible to calls in that session only.
func TestHandleToolUseSession(t *testing.T) {
	e := adaptertest.NewEngine(t)
	alice := offload.WithSession(t.Context(), "alice")
	n, err := e.Put(alice, []byte(`[1,2,3]`), offload.PutOptions{Producer: "numbers"})
	if err != nil {
		t.Fatal(err)
	}
	msg := &anthropic.Message{Content: []anthropic.ContentBlockUnion{
		toolUse("t1", "result_get_item", fmt.Sprintf(`{"workspace_id":%q,"index":1}`, n.StoredResult)),
	}}
	adaptertest.CheckReplies(t, results(t, anthropicadapter.HandleToolUse(alice, e, msg)), []reply{{ID: "t1", Contains: `"item":2`}})
	adaptertest.CheckReplies(t, results(t, anthropicadapter.HandleToolUse(t.Context(), e, msg)), []reply{{ID: "t1", Code: offload.CodeNotFound}})
}

func TestHandleToolUseJSON(t *testing.T) {
	const oneCall = `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"result_get_item","input":{"workspace_id":"tickets","index":3}}]}`
	tests := []struct {
		name    string
		msg     any
		want    []reply
		wantErr bool
	}{
		{name: "string", msg: oneCall, want: []reply{{ID: "t1", Contains: `"id":4`}}},
		{
			name: "map",
			msg: map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "Looking."},
				map[string]any{"type": "tool_use", "id": "t1", "name": "result_get_item", "input": map[string]any{"workspace_id": "tickets", "index": 3}},
			}},
			want: []reply{{ID: "t1", Contains: `"id":4`}},
		},
		{name: "no tool use", msg: `{"role":"assistant","content":[{"type":"text","text":"done"}]}`, want: []reply{}},
		{
			name: "malformed blocks among good ones",
			msg: `{"content":[
				{"type":"tool_use","id":"a","name":"result_get_item","input":{"workspace_id":"tickets","index":0}},
				{"type":"tool_use","id":"b","name":7},
				5,
				{"type":"text","text":["not","text"]},
				{"type":"tool_use","id":"d","name":"result_get_item"},
				{"type":"tool_use","id":"e","name":"nope","input":{}}]}`,
			want: []reply{
				{ID: "a", Contains: `"id":1`},
				{ID: "b", Code: offload.CodeBadCall, Contains: `want {\"type\": \"tool_use\"`},
				{ID: "d", Code: offload.CodeBadArguments},
				{ID: "e", Code: offload.CodeUnknownTool},
			},
		},
		{name: "not JSON", msg: `{"content":`, wantErr: true},
		{name: "not an object", msg: `[1,2]`, wantErr: true},
		{name: "content not a list", msg: `{"content":"hello"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := adaptertest.NewEngine(t)
			m, err := anthropicadapter.HandleToolUseJSON(context.Background(), e, tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if m.Role != "user" {
				t.Errorf("role %q, want user", m.Role)
			}
			got := make([]result, len(m.Content))
			for i, r := range m.Content {
				if r.Type != "tool_result" {
					t.Errorf("block %d has type %q", i, r.Type)
				}
				got[i] = result{ID: r.ToolUseID, Content: r.Content, IsError: &r.IsError}
			}
			adaptertest.CheckReplies(t, got, tt.want)
		})
	}
}

// A tool_use block's toolset_name comes back on its tool_result, as
// HandleToolUse does with the SDK types.
func TestHandleToolUseJSONToolset(t *testing.T) {
	e := adaptertest.NewEngine(t)
	m, err := anthropicadapter.HandleToolUseJSON(t.Context(), e, `{"content":[
		{"type":"tool_use","id":"a","name":"result_list","input":{},"toolset_name":"kit"},
		{"type":"tool_use","id":"b","name":"result_list","input":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 2 || m.Content[0].ToolsetName != "kit" || m.Content[1].ToolsetName != "" {
		t.Fatalf("tool results: %+v, want toolset_name kit on the first only", m.Content)
	}
	b, err := json.Marshal(m.Content[1])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "toolset_name") {
		t.Errorf("a result without a toolset encodes one: %s", b)
	}
}

// FuzzHandleToolUse checks that any name and input a model may send get
// exactly one tool_result, under the block's id, holding a JSON object.
func FuzzHandleToolUse(f *testing.F) {
	f.Add("result_get_item", []byte(`{"workspace_id":"tickets","index":1}`))
	f.Add("result_pipe", []byte(`{"workspace_id":"tickets","steps":[{"group_by":{"field":"team"}}]}`))
	f.Add("", []byte(``))
	f.Add("result_paginate", []byte(`{"workspace_id":"tickets","page":-1,"size":1e400}`))
	f.Add("nope", []byte("\x00\xff"))
	e := adaptertest.NewEngine(f)
	f.Fuzz(func(t *testing.T, name string, input []byte) {
		msg := &anthropic.Message{Content: []anthropic.ContentBlockUnion{{Type: "tool_use", ID: "id", Name: name, Input: input}}}
		m := anthropicadapter.HandleToolUse(context.Background(), e, msg)
		rs := results(t, m)
		if len(rs) != 1 || rs[0].ID != "id" {
			t.Fatalf("got %+v, want one tool_result for id", rs)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(rs[0].Content), &v); err != nil {
			t.Fatalf("content is not a JSON object: %v", err)
		}
	})
}

// FuzzHandleToolUseJSON checks that any message either fails as a whole or
// gets one tool_result per tool_use block, and only then.
func FuzzHandleToolUseJSON(f *testing.F) {
	f.Add(`{"content":[{"type":"tool_use","id":"a","name":"result_list","input":{}}]}`)
	f.Add(`{"content":[5,null,{"type":"tool_use","id":[]},{"type":"tool_use","input":"{}"}]}`)
	f.Add(`{"content":null}`)
	f.Add(`null`)
	e := adaptertest.NewEngine(f)
	f.Fuzz(func(t *testing.T, msg string) {
		out, err := anthropicadapter.HandleToolUseJSON(context.Background(), e, msg)
		if err != nil {
			return
		}
		var m struct {
			Content []json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatalf("HandleToolUseJSON accepted %q, which does not decode: %v", msg, err)
		}
		uses := 0
		for _, b := range m.Content {
			var head struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(b, &head) == nil && head.Type == "tool_use" {
				uses++
			}
		}
		if len(out.Content) != uses {
			t.Fatalf("got %d tool results for %d tool_use blocks", len(out.Content), uses)
		}
		for i, r := range out.Content {
			var v map[string]any
			if err := json.Unmarshal([]byte(r.Content), &v); err != nil {
				t.Fatalf("result %d content is not a JSON object: %v", i, err)
			}
		}
	})
}
