package openaiadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/internal/adaptertest"
	"github.com/ctxkit/ctxkit/offload/openaiadapter"
)

// functionCall builds a function tool call the way the SDK decodes one.
func functionCall(id, name, args string) openai.ChatCompletionMessageToolCallUnion {
	return openai.ChatCompletionMessageToolCallUnion{
		ID: id, Type: "function",
		Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: name, Arguments: args},
	}
}

func TestToolsMatchEngine(t *testing.T) {
	e := adaptertest.NewEngine(t)
	if len(e.Tools()) == 0 {
		t.Fatal("engine has no tools")
	}
	adaptertest.SameJSON(t, openaiadapter.Tools(e), e.OpenAITools())
}

func TestResponseTools(t *testing.T) {
	e := adaptertest.NewEngine(t)
	tools := openaiadapter.ResponseTools(e)
	engineTools := e.Tools()
	if len(tools) != len(engineTools) {
		t.Fatalf("got %d tools, want %d", len(tools), len(engineTools))
	}
	for i, tool := range tools {
		b, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Type        string         `json:"type"`
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Strict      bool           `json:"strict"`
			Parameters  map[string]any `json:"parameters"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		var params map[string]any
		if err := json.Unmarshal(engineTools[i].InputSchema, &params); err != nil {
			t.Fatal(err)
		}
		want := engineTools[i]
		if got.Type != "function" || got.Name != want.Name || got.Description != want.Description || got.Strict {
			t.Errorf("tool %d = %s, want a non-strict function %q with the engine's description", i, b, want.Name)
		}
		if !reflect.DeepEqual(got.Parameters, params) {
			t.Errorf("tool %s parameters = %v, want %v", want.Name, got.Parameters, params)
		}
	}
}

type reply = adaptertest.Reply

func TestHandleToolCalls(t *testing.T) {
	tests := []struct {
		name  string
		calls []openai.ChatCompletionMessageToolCallUnion
		want  []reply
	}{
		{
			name:  "one call",
			calls: []openai.ChatCompletionMessageToolCallUnion{functionCall("c1", "result_get_item", `{"workspace_id":"tickets","index":2}`)},
			want:  []reply{{ID: "c1", Contains: `"id":3`}},
		},
		{
			name: "several calls keep their order and ids",
			calls: []openai.ChatCompletionMessageToolCallUnion{
				functionCall("a", "result_get_item", `{"workspace_id":"tickets","index":29}`),
				functionCall("b", "no_such_tool", `{}`),
				functionCall("c", "result_field_values", `{"workspace_id":"tickets","field":"team"}`),
				functionCall("d", "result_get_item", `not json`),
				functionCall("e", "result_list", ``),
			},
			want: []reply{
				{ID: "a", Contains: `"id":30`},
				{ID: "b", Code: offload.CodeUnknownTool},
				{ID: "c", Contains: `"distinct":3`},
				{ID: "d", Code: offload.CodeBadArguments},
				{ID: "e", Contains: `tickets`},
			},
		},
		{
			name: "custom tool call",
			calls: []openai.ChatCompletionMessageToolCallUnion{{
				ID: "c1", Type: "custom",
				Custom: openai.ChatCompletionMessageCustomToolCallCustom{Name: "result_get_item", Input: `{"workspace_id":"tickets","index":4}`},
			}},
			want: []reply{{ID: "c1", Contains: `"id":5`}},
		},
		{
			name: "call without a type is a function call",
			calls: []openai.ChatCompletionMessageToolCallUnion{{
				ID:       "c1",
				Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: "result_get_item", Arguments: `{"workspace_id":"tickets","index":1}`},
			}},
			want: []reply{{ID: "c1", Contains: `"id":2`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := adaptertest.NewEngine(t)
			msgs := openaiadapter.HandleToolCalls(context.Background(), e, openai.ChatCompletionMessage{ToolCalls: tt.calls})
			adaptertest.CheckReplies(t, toolReplies(t, msgs), tt.want)
		})
	}
}

// toolMessage is a tool message's id and content.
type toolMessage = adaptertest.Result

func toolReplies(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion) []toolMessage {
	t.Helper()
	out := make([]toolMessage, len(msgs))
	for i, m := range msgs {
		if m.OfTool == nil {
			t.Fatalf("message %d is not a tool message: %+v", i, m)
		}
		out[i] = toolMessage{ID: m.OfTool.ToolCallID, Content: m.OfTool.Content.OfString.Value}
	}
	return out
}

func TestHandleToolCallsNone(t *testing.T) {
	e := adaptertest.NewEngine(t)
	msg := openai.ChatCompletionMessage{Content: "All done."}
	if got := openaiadapter.HandleToolCalls(context.Background(), e, msg); got != nil {
		t.Errorf("HandleToolCalls of a message without tool calls = %v, want nil", got)
	}
}

// A message decoded from the API's JSON, answered and encoded again, is what
// the next request sends.
func TestHandleToolCallsWire(t *testing.T) {
	e := adaptertest.NewEngine(t)
	var msg openai.ChatCompletionMessage
	body := `{"role":"assistant","content":null,"refusal":null,"tool_calls":[
		{"id":"call_A","type":"function","function":{"name":"result_get_item","arguments":"{\"workspace_id\":\"tickets\",\"index\":7}"}},
		{"id":"call_B","type":"function","function":{"name":"result_get_item","arguments":"{\"workspace_id\":"}}]}`
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	msgs := openaiadapter.HandleToolCalls(context.Background(), e, msg)
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var wire []struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatalf("tool messages encode as %s: %v", b, err)
	}
	if len(wire) != 2 || wire[0].Role != "tool" || wire[0].ToolCallID != "call_A" || wire[1].ToolCallID != "call_B" {
		t.Fatalf("tool messages on the wire: %s", b)
	}
	if !strings.Contains(wire[0].Content, `"id":8`) || !strings.Contains(wire[1].Content, offload.CodeBadArguments) {
		t.Errorf("tool message contents: %s", b)
	}
}

// The context reaches the engine: a workspace stored in one session is
// visible to calls in that session only.
func TestHandleToolCallsSession(t *testing.T) {
	e := adaptertest.NewEngine(t)
	alice := offload.WithSession(t.Context(), "alice")
	n, err := e.Put(alice, []byte(`[1,2,3]`), offload.PutOptions{Producer: "numbers"})
	if err != nil {
		t.Fatal(err)
	}
	msg := openai.ChatCompletionMessage{ToolCalls: []openai.ChatCompletionMessageToolCallUnion{
		functionCall("c1", "result_get_item", fmt.Sprintf(`{"workspace_id":%q,"index":1}`, n.StoredResult)),
	}}
	adaptertest.CheckReplies(t, toolReplies(t, openaiadapter.HandleToolCalls(alice, e, msg)), []reply{{ID: "c1", Contains: `"item":2`}})
	adaptertest.CheckReplies(t, toolReplies(t, openaiadapter.HandleToolCalls(t.Context(), e, msg)), []reply{{ID: "c1", Code: offload.CodeNotFound}})
}

func TestHandleToolCallsJSON(t *testing.T) {
	const oneCall = `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"result_get_item","arguments":"{\"workspace_id\":\"tickets\",\"index\":3}"}}]}`
	tests := []struct {
		name    string
		msg     any
		want    []reply
		wantErr bool
	}{
		{name: "string", msg: oneCall, want: []reply{{ID: "c1", Contains: `"id":4`}}},
		{
			name: "map with object arguments",
			msg: map[string]any{"role": "assistant", "tool_calls": []any{
				map[string]any{"id": "c1", "type": "function", "function": map[string]any{
					"name": "result_get_item", "arguments": map[string]any{"workspace_id": "tickets", "index": 3},
				}},
			}},
			want: []reply{{ID: "c1", Contains: `"id":4`}},
		},
		{name: "no tool calls", msg: `{"role":"assistant","content":"done"}`, want: nil},
		{
			name: "malformed call among good ones",
			msg: `{"tool_calls":[
				{"id":"a","type":"function","function":{"name":"result_get_item","arguments":"{\"workspace_id\":\"tickets\",\"index\":0}"}},
				{"id":"b","type":"function","function":{"name":7}},
				5,
				{"id":"d","type":"function","function":{"name":"result_get_item"}},
				{"id":"e","type":"function","function":{"name":"nope","arguments":"{}"}}]}`,
			want: []reply{
				{ID: "a", Contains: `"id":1`},
				{ID: "b", Code: offload.CodeBadCall, Contains: `want {\"id\": ..., \"type\": \"function\"`},
				{ID: "", Code: offload.CodeBadCall},
				{ID: "d", Code: offload.CodeBadArguments},
				{ID: "e", Code: offload.CodeUnknownTool},
			},
		},
		{name: "not JSON", msg: `{"tool_calls":`, wantErr: true},
		{name: "not an object", msg: `[1,2]`, wantErr: true},
		{name: "tool_calls not a list", msg: `{"tool_calls":"all of them"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := adaptertest.NewEngine(t)
			msgs, err := openaiadapter.HandleToolCallsJSON(context.Background(), e, tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			got := make([]toolMessage, len(msgs))
			for i, m := range msgs {
				if m.Role != "tool" {
					t.Errorf("message %d has role %q", i, m.Role)
				}
				got[i] = toolMessage{ID: m.ToolCallID, Content: m.Content}
			}
			adaptertest.CheckReplies(t, got, tt.want)
		})
	}
}

func TestHandleResponseOutput(t *testing.T) {
	e := adaptertest.NewEngine(t)
	var resp responses.Response
	body := `{"id":"resp_1","object":"response","output":[
		{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"function_call","id":"fc_1","call_id":"call_1","name":"result_get_item","arguments":"{\"workspace_id\":\"tickets\",\"index\":9}"},
		{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Looking."}]},
		{"type":"function_call","id":"fc_2","call_id":"call_2","name":"result_get_item","arguments":"garbage"}]}`
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	items := openaiadapter.HandleResponseOutput(context.Background(), e, resp.Output)
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	var wire []struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatalf("input items encode as %s: %v", b, err)
	}
	if len(wire) != 2 {
		t.Fatalf("got %d input items, want 2: %s", len(wire), b)
	}
	for i, id := range []string{"call_1", "call_2"} {
		if wire[i].Type != "function_call_output" || wire[i].CallID != id {
			t.Errorf("item %d = %+v, want a function_call_output for %s", i, wire[i], id)
		}
	}
	if !strings.Contains(wire[0].Output, `"id":10`) || !strings.Contains(wire[1].Output, offload.CodeBadArguments) {
		t.Errorf("outputs: %s", b)
	}
	if got := openaiadapter.HandleResponseOutput(context.Background(), e, nil); got != nil {
		t.Errorf("HandleResponseOutput(nil) = %v, want nil", got)
	}
}

// FuzzHandleToolCalls checks that any name and arguments a model may send
// get exactly one tool message, under the call's id, holding a JSON object.
func FuzzHandleToolCalls(f *testing.F) {
	f.Add("result_get_item", `{"workspace_id":"tickets","index":1}`)
	f.Add("result_pipe", `{"workspace_id":"tickets","steps":[{"group_by":{"field":"team"}}]}`)
	f.Add("result_search", `"{\"workspace_id\":\"tickets\",\"query\":\"web\"}"`)
	f.Add("", ``)
	f.Add("result_paginate", `{"workspace_id":"tickets","page":-1,"size":1e400}`)
	f.Add("nope", "\x00\xff")
	e := adaptertest.NewEngine(f)
	f.Fuzz(func(t *testing.T, name, args string) {
		msg := openai.ChatCompletionMessage{ToolCalls: []openai.ChatCompletionMessageToolCallUnion{functionCall("id", name, args)}}
		msgs := openaiadapter.HandleToolCalls(context.Background(), e, msg)
		if len(msgs) != 1 || msgs[0].OfTool == nil || msgs[0].OfTool.ToolCallID != "id" {
			t.Fatalf("got %+v, want one tool message for id", msgs)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(msgs[0].OfTool.Content.OfString.Value), &m); err != nil {
			t.Fatalf("content is not a JSON object: %v", err)
		}
	})
}

// FuzzHandleToolCallsJSON checks that any message either fails as a whole or
// gets one tool message per element of its tool_calls list.
func FuzzHandleToolCallsJSON(f *testing.F) {
	f.Add(`{"tool_calls":[{"id":"a","type":"function","function":{"name":"result_list","arguments":"{}"}}]}`)
	f.Add(`{"tool_calls":[5,null,{"id":[]},{"function":{"arguments":{"workspace_id":"tickets"}}}]}`)
	f.Add(`{"tool_calls":null}`)
	f.Add(`null`)
	f.Add(`{"tool_calls":[{"type":"custom","custom":{"name":"result_list","input":"{}"}}]}`)
	e := adaptertest.NewEngine(f)
	f.Fuzz(func(t *testing.T, msg string) {
		out, err := openaiadapter.HandleToolCallsJSON(context.Background(), e, msg)
		if err != nil {
			return
		}
		var m struct {
			ToolCalls []json.RawMessage `json:"tool_calls"`
		}
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatalf("HandleToolCallsJSON accepted %q, which does not decode: %v", msg, err)
		}
		if len(out) != len(m.ToolCalls) {
			t.Fatalf("got %d tool messages for %d tool calls", len(out), len(m.ToolCalls))
		}
		for i, tm := range out {
			var v map[string]any
			if err := json.Unmarshal([]byte(tm.Content), &v); err != nil {
				t.Fatalf("message %d content is not a JSON object: %v", i, err)
			}
		}
	})
}
