// Package adaptertest holds what the tests of the model-SDK adapters
// (offload/openaiadapter, offload/anthropicadapter) share: the engine they
// drive, the comparison of exported tools, and the check of the tool
// results a turn produced.
package adaptertest

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// NewEngine returns an engine holding "tickets": 30 items {"id", "team",
// "comments"}, where item i has id i+1.
func NewEngine(t testing.TB) *offload.Engine {
	t.Helper()
	e := offload.New(memstore.New(memstore.Options{}))
	teams := []string{"web", "core", "infra"}
	items := make([]map[string]any, 30)
	for i := range items {
		items[i] = map[string]any{"id": i + 1, "team": teams[i%3], "comments": i * 2}
	}
	if _, err := e.PutValue(context.Background(), items, offload.PutOptions{ID: "tickets", Producer: "list_tickets"}); err != nil {
		t.Fatalf("store tickets: %v", err)
	}
	return e
}

// SameJSON fails t unless got and want encode to the same JSON value.
func SameJSON(t testing.TB, got, want any) {
	t.Helper()
	g, w := roundTrip(t, got), roundTrip(t, want)
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Errorf("JSON differs:\ngot  %s\nwant %s", gb, wb)
	}
}

func roundTrip(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Reply is what one tool result must say: the call id, and either the
// error code or a piece of the successful result.
type Reply struct {
	ID       string
	Code     string // "" for success
	Contains string
}

// Result is a tool result as an adapter built it.
type Result struct {
	ID, Content string
	// IsError is the result's error flag, nil for APIs without one (an
	// OpenAI tool message says so only in its content).
	IsError *bool
}

// CheckReplies fails t unless got answers want, in order: the ids match,
// the content is a JSON object whose "code" is the wanted one (with a
// suggested_action when it is an error), the error flag agrees, and the
// content holds what it must.
func CheckReplies(t *testing.T, got []Result, want []Reply) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tool results, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID {
			t.Errorf("result %d answers %q, want %q", i, g.ID, w.ID)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(g.Content), &m); err != nil {
			t.Fatalf("result %d content is not a JSON object: %v\n%s", i, err, g.Content)
		}
		code, _ := m["code"].(string)
		if code != w.Code {
			t.Errorf("result %d: code %q, want %q\n%s", i, code, w.Code, g.Content)
		}
		if s, _ := m["suggested_action"].(string); w.Code != "" && s == "" {
			t.Errorf("result %d: error without suggested_action: %s", i, g.Content)
		}
		if g.IsError != nil && *g.IsError != (w.Code != "") {
			t.Errorf("result %d: is_error %v, want %v", i, *g.IsError, w.Code != "")
		}
		if w.Contains != "" && !strings.Contains(g.Content, w.Contains) {
			t.Errorf("result %d does not contain %s:\n%s", i, w.Contains, g.Content)
		}
	}
}
