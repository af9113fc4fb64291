package offload_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/offload"
)

// papersEngine returns an engine holding papers(30) as "papers".
func papersEngine(t *testing.T) *offload.Engine {
	t.Helper()
	e, _ := newEngine(t)
	put(t, e, t.Context(), papers(30), offload.PutOptions{ID: "papers", Producer: "search_papers"})
	return e
}

// answer is what the result of one call must say: the error code, or ""
// for success, and a piece of the output.
type answer struct {
	code     string
	contains string
}

// checkResults checks results against want: one result per call, each
// output a JSON object, errors with a code, a suggested action and a Go
// error, successes without either.
func checkResults(t *testing.T, got []*offload.Result, want []answer) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i, w := range want {
		r := got[i]
		var m map[string]any
		if err := json.Unmarshal(r.Output, &m); err != nil {
			t.Fatalf("result %d is not a JSON object: %v\n%s", i, err, r.Output)
		}
		code, _ := m["code"].(string)
		if code != w.code {
			t.Errorf("result %d: code %q, want %q\n%s", i, code, w.code, r.Output)
		}
		if r.IsError != (w.code != "") || (r.Err != nil) != (w.code != "") {
			t.Errorf("result %d: IsError %v, Err %v; want an error: %v", i, r.IsError, r.Err, w.code != "")
		}
		if s, _ := m["suggested_action"].(string); w.code != "" && s == "" {
			t.Errorf("result %d: error without suggested_action: %s", i, r.Output)
		}
		if w.contains != "" && !strings.Contains(string(r.Output), w.contains) {
			t.Errorf("result %d does not contain %s:\n%s", i, w.contains, r.Output)
		}
	}
}

// The arguments of a call reach the engine as the adapters pass them: a
// string (OpenAI) or a json.RawMessage (Anthropic), which may be missing,
// double-encoded or garbage.
func TestDispatchCalls(t *testing.T) {
	get := func(args string) []offload.Call {
		return []offload.Call{
			{ID: "s", Name: "result_get_item", Arguments: args},
			{ID: "r", Name: "result_get_item", Arguments: json.RawMessage(args)},
		}
	}
	both := func(a answer) []answer { return []answer{a, a} }
	tests := []struct {
		name  string
		calls []offload.Call
		want  []answer
	}{
		{name: "one call", calls: get(`{"workspace_id":"papers","index":2}`), want: both(answer{contains: `"id":2`})},
		{
			name:  "double-encoded arguments",
			calls: get(`"{\"workspace_id\":\"papers\",\"index\":0}"`),
			want:  both(answer{contains: `"id":0`}),
		},
		{name: "garbage arguments", calls: get(`{{"workspace_id": tickets`), want: both(answer{code: offload.CodeBadArguments})},
		{name: "missing arguments", calls: get(``), want: both(answer{code: offload.CodeBadArguments})},
		{
			name:  "nil arguments",
			calls: []offload.Call{{ID: "n", Name: "result_get_item"}, {ID: "r", Name: "result_get_item", Arguments: json.RawMessage(nil)}},
			want:  both(answer{code: offload.CodeBadArguments}),
		},
		{name: "null arguments", calls: get(`null`), want: both(answer{code: offload.CodeBadArguments})},
		{name: "array arguments", calls: get(`["papers"]`), want: both(answer{code: offload.CodeBadArguments})},
		{name: "number arguments", calls: get(`42`), want: both(answer{code: offload.CodeBadArguments})},
		{
			name:  "wrong argument type",
			calls: get(`{"workspace_id":"papers","index":"two"}`),
			want:  both(answer{code: offload.CodeBadArguments}),
		},
		{
			name:  "unknown tool",
			calls: []offload.Call{{ID: "c1", Name: "delete_everything", Arguments: `{}`}},
			want:  []answer{{code: offload.CodeUnknownTool}},
		},
		{
			name:  "empty tool name",
			calls: []offload.Call{{ID: "c1", Arguments: `{}`}},
			want:  []answer{{code: offload.CodeUnknownTool}},
		},
		{name: "unknown workspace", calls: get(`{"workspace_id":"nope","index":0}`), want: both(answer{code: offload.CodeNotFound})},
		{
			name:  "unreadable call",
			calls: []offload.Call{{ID: "c1", Name: "result_list", Err: errors.New("name is a number")}},
			want:  []answer{{code: offload.CodeBadCall, contains: "name is a number"}},
		},
		{
			name: "several calls keep their order",
			calls: []offload.Call{
				{ID: "a", Name: "result_get_item", Arguments: `{"workspace_id":"papers","index":29}`},
				{ID: "b", Name: "no_such_tool", Arguments: `{}`},
				{ID: "c", Name: "result_field_values", Arguments: json.RawMessage(`{"workspace_id":"papers","field":"category"}`)},
				{ID: "d", Name: "result_get_item", Arguments: `not json`},
				{ID: "e", Err: errors.New("not an object")},
				{ID: "f", Name: "result_list", Arguments: ``},
			},
			want: []answer{
				{contains: `"id":29`},
				{code: offload.CodeUnknownTool},
				{contains: `"distinct":3`},
				{code: offload.CodeBadArguments},
				{code: offload.CodeBadCall},
				{contains: `papers`},
			},
		},
		{name: "no calls", calls: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := papersEngine(t)
			checkResults(t, e.DispatchCalls(t.Context(), tt.calls), tt.want)
		})
	}
}

func TestDispatchCallsSession(t *testing.T) {
	e, _ := newEngine(t)
	alice := offload.WithSession(t.Context(), "alice")
	n := put(t, e, alice, []byte(`[1,2,3]`), offload.PutOptions{Producer: "numbers"})
	calls := []offload.Call{{ID: "c1", Name: "result_get_item", Arguments: fmt.Sprintf(`{"workspace_id":%q,"index":1}`, n.StoredResult)}}
	bob := offload.WithSession(t.Context(), "bob")
	checkResults(t, e.DispatchCalls(alice, calls), []answer{{contains: `"item":2`}})
	checkResults(t, e.DispatchCalls(bob, calls), []answer{{code: offload.CodeNotFound}})
}

// Calls past MaxCallsPerMessage are answered without running.
func TestDispatchCallsTooMany(t *testing.T) {
	e, _ := newEngine(t)
	ran := 0
	offload.AddProducer(e, offload.Producer[struct{}, []int]{
		Name: "count",
		Func: func(context.Context, struct{}) ([]int, error) {
			ran++
			return []int{ran}, nil
		},
	})
	n := offload.MaxCallsPerMessage + 3
	calls := make([]offload.Call, n)
	want := make([]answer, n)
	for i := range calls {
		calls[i] = offload.Call{ID: fmt.Sprint(i), Name: "count"}
		if i < offload.MaxCallsPerMessage {
			want[i] = answer{contains: "stored_result"}
		} else {
			want[i] = answer{code: offload.CodeTooManyCalls, contains: fmt.Sprintf("the message has %d tool calls", n)}
		}
	}
	results := e.DispatchCalls(t.Context(), calls)
	checkResults(t, results, want)
	if ran != offload.MaxCallsPerMessage {
		t.Errorf("the tool ran %d times for %d calls, want %d", ran, n, offload.MaxCallsPerMessage)
	}
	if err := results[n-1].Err; !errors.Is(err, offload.ErrTooManyCalls) {
		t.Errorf("Err of a call past the limit = %v, want ErrTooManyCalls", err)
	}
}

// Result.Err says why a call failed, for the loop's logs.
func TestDispatchCallsReportsCause(t *testing.T) {
	e := papersEngine(t)
	cause := errors.New("arguments is a number")
	results := e.DispatchCalls(t.Context(), []offload.Call{
		{ID: "ok", Name: "result_list"},
		{ID: "bad", Name: "result_get_item", Arguments: `{`},
		{ID: "unread", Err: cause},
	})
	if len(results) != 3 {
		t.Fatalf("got %d results, want 3", len(results))
	}
	if r := results[0]; r.IsError || r.Err != nil {
		t.Errorf("result 0: IsError %v, Err %v: %s", r.IsError, r.Err, r.Output)
	}
	if r := results[1]; !r.IsError || r.Err == nil {
		t.Errorf("result 1: IsError %v, Err %v: %s", r.IsError, r.Err, r.Output)
	}
	var te *offload.ToolError
	if err := results[2].Err; !errors.Is(err, cause) || !errors.As(err, &te) || te.Code != offload.CodeBadCall {
		t.Errorf("result 2: Err %v, want a %s ToolError wrapping %v", err, offload.CodeBadCall, cause)
	}
	if !strings.Contains(string(results[2].Output), "tool call 2 could not be read: arguments is a number") {
		t.Errorf("result 2 does not say which call and why: %s", results[2].Output)
	}
}

func TestDecodeMessage(t *testing.T) {
	const msg = `{"role":"assistant","n":3}`
	type message struct {
		Role string `json:"role"`
		N    int    `json:"n"`
	}
	full := message{Role: "assistant", N: 3}
	tests := []struct {
		name    string
		msg     any
		want    message
		wantErr bool
	}{
		{name: "string", msg: msg, want: full},
		{name: "bytes", msg: []byte(msg), want: full},
		{name: "raw message", msg: json.RawMessage(msg), want: full},
		{name: "map", msg: map[string]any{"role": "assistant", "n": 3}, want: full},
		{name: "struct", msg: full, want: full},
		{name: "nil is null", msg: nil, want: message{}},
		{name: "not JSON", msg: `{"role":`, wantErr: true},
		{name: "wrong type", msg: `{"n":"three"}`, wantErr: true},
		{name: "unencodable value", msg: map[string]any{"f": func() {}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got message
			err := offload.DecodeMessage(tt.msg, &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("decoded %+v, want %+v", got, tt.want)
			}
		})
	}
}
