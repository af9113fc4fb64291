package offload_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// clock is a settable time source for expiry tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newEngine(t testing.TB, opts ...offload.Option) (*offload.Engine, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := memstore.New(memstore.Options{})
	t.Cleanup(func() { s.Close() })
	return offload.New(s, append([]offload.Option{offload.WithClock(c.now)}, opts...)...), c
}

// call dispatches and decodes the output into a map, failing on a tool error
// unless wantErr.
func call(t *testing.T, e *offload.Engine, ctx context.Context, tool string, args any) map[string]any {
	t.Helper()
	res := e.Dispatch(ctx, tool, args)
	var out map[string]any
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("%s: output is not a JSON object: %v\n%s", tool, err, res.Output)
	}
	if res.IsError {
		t.Fatalf("%s(%v): unexpected error: %s", tool, args, res.Output)
	}
	return out
}

func callErr(t *testing.T, e *offload.Engine, ctx context.Context, tool string, args any) map[string]any {
	t.Helper()
	res := e.Dispatch(ctx, tool, args)
	if !res.IsError {
		t.Fatalf("%s(%v): want an error, got %s", tool, args, res.Output)
	}
	var out map[string]any
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("%s: error output is not a JSON object: %v", tool, err)
	}
	for _, k := range []string{"error", "code", "suggested_action"} {
		if s, _ := out[k].(string); s == "" {
			t.Errorf("%s: error lacks %q: %s", tool, k, res.Output)
		}
	}
	return out
}

func papers(n int) []byte {
	var items []map[string]any
	cats := []string{"ml", "db", "os"}
	for i := range n {
		items = append(items, map[string]any{
			"id": i, "title": fmt.Sprintf("Paper %d about %s systems", i, cats[i%3]),
			"year": 2015 + i%10, "score": float64(i%100) / 2, "category": cats[i%3],
			"author": map[string]any{"name": []string{"Ada", "Grace", "Ken"}[i%3]},
			"tags":   []string{"t" + fmt.Sprint(i%4)},
		})
	}
	b, _ := json.Marshal(items)
	return b
}

func put(t *testing.T, e *offload.Engine, ctx context.Context, data []byte, opts offload.PutOptions) *offload.Notice {
	t.Helper()
	n, err := e.Put(ctx, data, opts)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return n
}

func TestNoticeBounds(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	wide := map[string]any{}
	for i := range 80 {
		wide[fmt.Sprintf("field_number_%02d", i)] = strings.Repeat("long value ", 50)
	}
	wideList, _ := json.Marshal([]any{wide, wide, wide, wide})
	wideDict, _ := json.Marshal(wide)
	tests := []struct {
		name  string
		data  []byte
		shape store.Shape
		max   int
	}{
		{"text", []byte(strings.Repeat("A sentence of a long document. ", 20000)), store.ShapeText, 1500},
		{"list", papers(1000), store.ShapeList, 2500},
		{"list with many long fields", wideList, store.ShapeList, 2500},
		{"dict with many long fields", wideDict, store.ShapeDict, 2500},
		{"unicode text", []byte(strings.Repeat("日本語のテキスト。", 5000)), store.ShapeText, 1500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := put(t, e, ctx, tt.data, offload.PutOptions{Producer: "fetch"})
			s := n.String()
			if len([]rune(s)) > tt.max {
				t.Errorf("notice has %d chars, want at most %d:\n%s", len([]rune(s)), tt.max, s)
			}
			if n.Shape != tt.shape {
				t.Errorf("shape = %s, want %s", n.Shape, tt.shape)
			}
			if !strings.Contains(n.HowToExplore, n.StoredResult) || !strings.Contains(n.HowToExplore, "Kept for 1 hour") {
				t.Errorf("how_to_explore lacks the id or the expiry: %s", n.HowToExplore)
			}
			if !strings.HasPrefix(n.StoredResult, "fetch_") || len(n.StoredResult) != len("fetch_")+12 {
				t.Errorf("id %q is not <type>_<12 hex>", n.StoredResult)
			}
		})
	}
}

func TestNoticeSuggestsToolsForShape(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	tests := []struct {
		data       string
		want, dont []string
	}{
		{`[{"a":1},{"a":2}]`, []string{"result_search(", "result_pipe(", "result_paginate("}, []string{"result_read_page"}},
		{`{"a":{"b":1}}`, []string{"result_get_keys(", "result_get_value("}, []string{"result_search("}},
		{`plain words`, []string{"result_search_in_text(", "result_read_page("}, []string{"result_pipe"}},
	}
	for _, tt := range tests {
		n := put(t, e, ctx, []byte(tt.data), offload.PutOptions{Producer: "tool"})
		for _, w := range tt.want {
			if !strings.Contains(n.HowToExplore, w) {
				t.Errorf("%s: how_to_explore lacks %s: %s", tt.data, w, n.HowToExplore)
			}
		}
		for _, d := range tt.dont {
			if strings.Contains(n.HowToExplore, d) {
				t.Errorf("%s: how_to_explore suggests %s: %s", tt.data, d, n.HowToExplore)
			}
		}
	}
}

func TestErrorsTheModelCanFix(t *testing.T) {
	e, c := newEngine(t, offload.WithLimits(100, 1<<20), offload.WithMaxResultChars(3000))
	ctx := t.Context()
	list := put(t, e, ctx, papers(50), offload.PutOptions{Producer: "search_papers", Args: json.RawMessage(`{"q":"x"}`)})
	text := put(t, e, ctx, []byte("some text"), offload.PutOptions{Producer: "read"})

	t.Run("unknown tool", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_serch", `{}`)
		if out["code"] != offload.CodeUnknownTool || !strings.Contains(fmt.Sprint(out["available_tools"]), "result_search") {
			t.Errorf("got %v", out)
		}
	})
	t.Run("missing argument", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_search", map[string]any{"workspace_id": list.StoredResult})
		if out["code"] != offload.CodeBadArguments || out["expected_parameters"] == nil {
			t.Errorf("got %v", out)
		}
	})
	t.Run("too many search terms", func(t *testing.T) {
		var words []string
		for i := range 300 {
			words = append(words, string(rune('a'+i/26))+string(rune('a'+i%26)))
		}
		q := strings.Join(words, " ")
		for _, tc := range []struct{ tool, id string }{{"result_search", list.StoredResult}, {"result_search_in_text", text.StoredResult}} {
			out := callErr(t, e, ctx, tc.tool, map[string]any{"workspace_id": tc.id, "query": q})
			if out["code"] != offload.CodeBadArguments {
				t.Errorf("%s with %d terms: %v", tc.tool, len(words), out)
			}
		}
	})
	t.Run("wrong argument type", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_get_item", map[string]any{"workspace_id": list.StoredResult, "index": "three"})
		if out["code"] != offload.CodeBadArguments {
			t.Errorf("got %v", out)
		}
	})
	t.Run("readable validation message", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_paginate", map[string]any{"workspace_id": list.StoredResult, "page": 0})
		if msg := out["error"].(string); msg != "result_paginate: page: minimum: 0 is less than 1" {
			t.Errorf("message: %q", msg)
		}
	})
	t.Run("over the maximum is capped, not refused", func(t *testing.T) {
		out := call(t, e, ctx, "result_search", map[string]any{"workspace_id": list.StoredResult, "query": "nomatchword", "max_results": 1000})
		if fmt.Sprint(out["capped"]) != "[max_results lowered from 1000 to its maximum 100]" {
			t.Errorf("capped: %v", out["capped"])
		}
	})
	t.Run("arguments not an object", func(t *testing.T) {
		callErr(t, e, ctx, "result_get_item", `[1,2]`)
		callErr(t, e, ctx, "result_get_item", `{"workspace_id":`)
	})
	t.Run("unknown workspace", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_paginate", map[string]any{"workspace_id": "nope"})
		if out["code"] != offload.CodeNotFound || !strings.Contains(fmt.Sprint(out["available_workspaces"]), list.StoredResult) {
			t.Errorf("got %v", out)
		}
	})
	t.Run("wrong shape", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_paginate", map[string]any{"workspace_id": text.StoredResult})
		if out["code"] != offload.CodeWrongShape || out["actual_shape"] != "text" ||
			!strings.Contains(fmt.Sprint(out["tools_for_this_shape"]), "result_read_page") ||
			!strings.Contains(fmt.Sprint(out["expected_shape"]), "list") {
			t.Errorf("got %v", out)
		}
	})
	t.Run("out of range", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_get_item", map[string]any{"workspace_id": list.StoredResult, "index": 50})
		if out["code"] != offload.CodeOutOfRange {
			t.Errorf("got %v", out)
		}
	})
	t.Run("result too large", func(t *testing.T) {
		out := callErr(t, e, ctx, "result_paginate", map[string]any{"workspace_id": list.StoredResult, "size": 100})
		if out["code"] != offload.CodeResultTooLarge || out["truncated"] != true || out["preview"] == "" {
			t.Errorf("got %v", out)
		}
	})
	t.Run("payload too large", func(t *testing.T) {
		_, err := e.Put(ctx, papers(101), offload.PutOptions{Producer: "p"})
		var te *offload.ToolError
		if !errors.As(err, &te) || te.Code != offload.CodeTooLarge || !errors.Is(err, offload.ErrTooLarge) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		put(t, e, ctx, []byte(`[1]`), offload.PutOptions{Producer: "a", ID: "shared_key"})
		put(t, e, ctx, []byte(`[1,2]`), offload.PutOptions{Producer: "a", ID: "shared_key"}) // same producer replaces
		_, err := e.Put(ctx, []byte(`[1]`), offload.PutOptions{Producer: "b", ID: "shared_key"})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("got %v, want a conflict", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		c.t = c.t.Add(2 * time.Hour)
		out := callErr(t, e, ctx, "result_paginate", map[string]any{"workspace_id": list.StoredResult})
		rerun, _ := out["rerun"].(map[string]any)
		if out["code"] != offload.CodeExpired || rerun["tool"] != "search_papers" || !strings.Contains(fmt.Sprint(out["suggested_action"]), "search_papers") {
			t.Errorf("got %v", out)
		}
		// Dropped on access: now it is simply missing.
		out = callErr(t, e, ctx, "result_paginate", map[string]any{"workspace_id": list.StoredResult})
		if out["code"] != offload.CodeNotFound {
			t.Errorf("after expiry: got %v", out)
		}
	})
}

func TestArgumentForms(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	n := put(t, e, ctx, papers(10), offload.PutOptions{Producer: "p"})
	obj := fmt.Sprintf(`{"workspace_id":%q,"index":3}`, n.StoredResult)
	quoted, _ := json.Marshal(obj)
	for name, args := range map[string]any{
		"raw":    json.RawMessage(obj),
		"bytes":  []byte(obj),
		"string": obj,
		"double": json.RawMessage(quoted),
		"map":    map[string]any{"workspace_id": n.StoredResult, "index": 3},
	} {
		out := call(t, e, ctx, "result_get_item", args)
		if out["index"] != float64(3) {
			t.Errorf("%s: got %v", name, out)
		}
	}
}

func TestSessions(t *testing.T) {
	e, _ := newEngine(t)
	a := offload.WithSession(t.Context(), "alice")
	b := offload.WithSession(t.Context(), "bob")
	shared := put(t, e, t.Context(), []byte(`[1,2,3]`), offload.PutOptions{Producer: "p"})
	mine := put(t, e, a, []byte(`[4,5]`), offload.PutOptions{Producer: "p"})
	keyedA := put(t, e, a, []byte(`[1]`), offload.PutOptions{Producer: "p", ID: "k"})
	keyedB := put(t, e, b, []byte(`[2]`), offload.PutOptions{Producer: "p", ID: "k"})
	if keyedA.StoredResult == keyedB.StoredResult || !strings.HasPrefix(keyedA.StoredResult, "k_") {
		t.Errorf("deterministic ids in two sessions: %q and %q", keyedA.StoredResult, keyedB.StoredResult)
	}
	call(t, e, a, "result_paginate", map[string]any{"workspace_id": shared.StoredResult})
	call(t, e, b, "result_paginate", map[string]any{"workspace_id": shared.StoredResult})
	call(t, e, a, "result_paginate", map[string]any{"workspace_id": mine.StoredResult})
	out := callErr(t, e, b, "result_paginate", map[string]any{"workspace_id": mine.StoredResult})
	if out["code"] != offload.CodeNotFound || strings.Contains(fmt.Sprint(out["available_workspaces"]), mine.StoredResult) {
		t.Errorf("bob sees alice's workspace: %v", out)
	}
	list := call(t, e, b, "result_list", nil)
	if s := fmt.Sprint(list["workspaces"]); strings.Contains(s, mine.StoredResult) || !strings.Contains(s, shared.StoredResult) {
		t.Errorf("bob's list: %s", s)
	}
	if err := e.Drop(b, mine.StoredResult); err == nil {
		t.Error("bob dropped alice's workspace")
	}
}

// A private session sees only its own workspaces, not the shared ones.
func TestPrivateSessions(t *testing.T) {
	e, _ := newEngine(t)
	shared := put(t, e, t.Context(), []byte(`[1,2,3]`), offload.PutOptions{Producer: "p"})
	carol := offload.WithPrivateSession(t.Context(), "carol")
	own := put(t, e, carol, []byte(`[4,5]`), offload.PutOptions{Producer: "p"})
	call(t, e, carol, "result_paginate", map[string]any{"workspace_id": own.StoredResult})
	out := callErr(t, e, carol, "result_paginate", map[string]any{"workspace_id": shared.StoredResult})
	if out["code"] != offload.CodeNotFound || strings.Contains(fmt.Sprint(out["available_workspaces"]), shared.StoredResult) {
		t.Errorf("a private session reads a shared workspace: %v", out)
	}
	list := call(t, e, carol, "result_list", nil)
	if s := fmt.Sprint(list["workspaces"]); strings.Contains(s, shared.StoredResult) || !strings.Contains(s, own.StoredResult) {
		t.Errorf("private list: %s", s)
	}
	// The private session's workspaces stay hidden from everyone else.
	out = callErr(t, e, t.Context(), "result_paginate", map[string]any{"workspace_id": own.StoredResult})
	if out["code"] != offload.CodeNotFound {
		t.Errorf("outside any session, the private workspace is readable: %v", out)
	}
}

func TestListTools(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	id := put(t, e, ctx, papers(95), offload.PutOptions{Producer: "p"}).StoredResult

	page := call(t, e, ctx, "result_paginate", map[string]any{"workspace_id": id, "page": 5, "size": 20})
	if page["total_pages"] != float64(5) || page["has_more"] != false || len(page["items"].([]any)) != 15 {
		t.Errorf("last page: %v", page)
	}
	first := page["items"].([]any)[0].(map[string]any)
	if first["index"] != float64(80) {
		t.Errorf("first index on page 5 = %v, want 80", first["index"])
	}
	page = call(t, e, ctx, "result_paginate", map[string]any{"workspace_id": id})
	if page["page"] != float64(1) || page["size"] != float64(20) || page["has_more"] != true {
		t.Errorf("defaults: %v", page)
	}

	item := call(t, e, ctx, "result_get_item", map[string]any{"workspace_id": id, "index": 7})
	if item["item"].(map[string]any)["id"] != float64(7) {
		t.Errorf("get_item: %v", item)
	}

	found := call(t, e, ctx, "result_search", map[string]any{"workspace_id": id, "query": "paper 42", "max_results": 3})
	hits := found["hits"].([]any)
	if len(hits) != 3 || found["has_more"] != true || hits[0].(map[string]any)["index"] != float64(42) {
		t.Errorf("search: %v", found)
	}

	values := call(t, e, ctx, "result_field_values", map[string]any{"workspace_id": id, "field": "author.name"})
	vs := values["values"].([]any)
	if values["distinct"] != float64(3) || vs[0].(map[string]any)["count"] != float64(32) {
		t.Errorf("field_values: %v", values)
	}
	tags := call(t, e, ctx, "result_field_values", map[string]any{"workspace_id": id, "field": "tags", "max_values": 2})
	if tags["distinct"] != float64(4) || tags["has_more"] != true {
		t.Errorf("field_values over arrays: %v", tags)
	}

	pipe := call(t, e, ctx, "result_pipe", map[string]any{"workspace_id": id, "steps": []any{
		map[string]any{"filter": map[string]any{"category": "ml"}},
		map[string]any{"group_by": map[string]any{"field": "author.name", "metrics": map[string]any{"n": "count"}}},
	}})
	if pipe["count"] != float64(1) {
		t.Errorf("pipe: %v", pipe)
	}
	counted := call(t, e, ctx, "result_pipe", map[string]any{"workspace_id": id, "steps": `[{"count": true}]`})
	if counted["count"] != float64(95) {
		t.Errorf("pipe count: %v", counted)
	}
	long := call(t, e, ctx, "result_pipe", map[string]any{"workspace_id": id, "steps": []any{map[string]any{"skip": 1}}})
	if long["count"] != float64(94) || long["has_more"] != true || len(long["items"].([]any)) != 50 {
		t.Errorf("pipe inline cap: count=%v has_more=%v", long["count"], long["has_more"])
	}

	bad := callErr(t, e, ctx, "result_pipe", map[string]any{"workspace_id": id, "steps": []any{
		map[string]any{"limit": 3}, map[string]any{"filtr": map[string]any{}},
	}})
	if bad["code"] != offload.CodeBadStep || bad["step"] != float64(1) || bad["example"] == nil {
		t.Errorf("bad step: %v", bad)
	}

	saved := call(t, e, ctx, "result_pipe", map[string]any{"workspace_id": id, "save_as": "ml_papers",
		"steps": []any{map[string]any{"filter": map[string]any{"category": "ml"}}}})
	if saved["stored_result"] != "saved_ml_papers" || saved["items"] != float64(32) {
		t.Errorf("save_as: %v", saved)
	}
	again := call(t, e, ctx, "result_paginate", map[string]any{"workspace_id": "saved_ml_papers", "size": 1})
	if again["total_items"] != float64(32) {
		t.Errorf("saved workspace: %v", again)
	}
	// A saved result can replace an earlier saved result, nothing else.
	call(t, e, ctx, "result_pipe", map[string]any{"workspace_id": id, "save_as": "ml_papers", "steps": []any{map[string]any{"limit": 2}}})
	put(t, e, ctx, []byte(`[1]`), offload.PutOptions{Producer: "other", ID: "saved_x"})
	clash := callErr(t, e, ctx, "result_pipe", map[string]any{"workspace_id": id, "save_as": "x", "steps": []any{map[string]any{"limit": 2}}})
	if clash["code"] != offload.CodeConflict {
		t.Errorf("save_as over another producer's workspace: %v", clash)
	}
}

func TestDictTools(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	big := strings.Repeat("x", 30000)
	data, _ := json.Marshal(map[string]any{
		"name": "svc", "config": map[string]any{"servers": []any{map[string]any{"host": "a"}, map[string]any{"host": "b"}}},
		"blob": big, "dotted.key": 1,
	})
	id := put(t, e, ctx, data, offload.PutOptions{Producer: "get_config"}).StoredResult
	keys := call(t, e, ctx, "result_get_keys", map[string]any{"workspace_id": id})
	if keys["total"] != float64(4) {
		t.Errorf("keys: %v", keys)
	}
	for path, want := range map[string]any{"config.servers.1.host": "b", "name": "svc", "dotted.key": float64(1)} {
		v := call(t, e, ctx, "result_get_value", map[string]any{"workspace_id": id, "key": path})
		if v["value"] != want {
			t.Errorf("get_value(%s) = %v, want %v", path, v["value"], want)
		}
	}
	cut := call(t, e, ctx, "result_get_value", map[string]any{"workspace_id": id, "key": "blob"})
	if cut["truncated"] != true || len(cut["preview"].(string)) > 2100 {
		t.Errorf("long value not cut: truncated=%v", cut["truncated"])
	}
	missing := callErr(t, e, ctx, "result_get_value", map[string]any{"workspace_id": id, "key": "nope"})
	if !strings.Contains(missing["suggested_action"].(string), "result_get_keys") {
		t.Errorf("missing key: %v", missing)
	}
}

func TestTextTools(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "Paragraph %d talks about ordinary things and fills the page with plain words.\n", i)
		if i%2 == 1 {
			b.WriteString("\n")
		}
	}
	b.WriteString("The secret ingredient is saffron, added at the very end.\n")
	text := b.String()
	id := put(t, e, ctx, []byte(text), offload.PutOptions{Producer: "read_doc"}).StoredResult

	length := call(t, e, ctx, "result_get_length", map[string]any{"workspace_id": id})
	if length["chars"] != float64(len(text)) {
		t.Errorf("length: %v, want %d chars", length, len(text))
	}

	// Pages cover the text exactly, in order, and end at paragraph breaks.
	var joined strings.Builder
	for p := 1; ; p++ {
		page := call(t, e, ctx, "result_read_page", map[string]any{"workspace_id": id, "page": p, "chars_per_page": 1000})
		s := page["text"].(string)
		joined.WriteString(s)
		if page["has_more"] != true {
			break
		}
		if !strings.HasSuffix(s, "\n\n") {
			t.Errorf("page %d does not end at a paragraph break: %q", p, s[max(len(s)-40, 0):])
		}
		if len(s) > 1200 || len(s) < 800 { // breaks move back by at most a fifth of a page
			t.Errorf("page %d has %d chars", p, len(s))
		}
	}
	if joined.String() != text {
		t.Error("pages do not reassemble the text")
	}
	callErr(t, e, ctx, "result_read_page", map[string]any{"workspace_id": id, "page": 999})

	found := call(t, e, ctx, "result_search_in_text", map[string]any{"workspace_id": id, "query": "saffron ingredient", "context_chars": 40})
	ps := found["passages"].([]any)
	if len(ps) == 0 {
		t.Fatalf("no passage: %v", found)
	}
	p0 := ps[0].(map[string]any)
	if !strings.Contains(p0["text"].(string), "saffron") {
		t.Errorf("passage: %v", p0)
	}
	// The page it names holds the hit.
	page := call(t, e, ctx, "result_read_page", map[string]any{"workspace_id": id, "page": p0["page"]})
	off := int64(p0["offset"].(float64))
	if start, end := int64(page["start"].(float64)), int64(page["end"].(float64)); off < start || off >= end {
		t.Errorf("hit at %d is not on page %v [%d, %d)", off, p0["page"], start, end)
	}
}

func TestSweepAndList(t *testing.T) {
	e, c := newEngine(t)
	ctx := t.Context()
	put(t, e, ctx, []byte(`[1]`), offload.PutOptions{Producer: "p", TTL: time.Minute})
	keep := put(t, e, ctx, []byte(`[1]`), offload.PutOptions{Producer: "p", TTL: -1})
	c.t = c.t.Add(2 * time.Minute)
	ids, err := e.Sweep(ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("Sweep = %v, %v; want one id", ids, err)
	}
	list, err := e.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != keep.StoredResult {
		t.Fatalf("List after sweep = %v, %v", list, err)
	}
	if !strings.Contains(keep.HowToExplore, "Kept until dropped") {
		t.Errorf("no-expiry notice: %s", keep.HowToExplore)
	}
}

// TestCountWording checks that what the tools say counts its things in words
// that agree with the number ("1 item", never "1 items"), and that
// result_search_in_text names its page size chars_per_page, as
// result_get_length and result_read_page do.
func TestCountWording(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	list := put(t, e, ctx, []byte(`[{"a":1}]`), offload.PutOptions{ID: "one"}).StoredResult
	nested, _ := json.Marshal(map[string]any{"outer": map[string]any{"mid": map[string]any{"only": strings.Repeat("x", 30000)}}})
	dict := put(t, e, ctx, nested, offload.PutOptions{ID: "nested"})
	text := put(t, e, ctx, []byte("a short text"), offload.PutOptions{ID: "short"}).StoredResult

	tests := []struct {
		name string
		got  func() string
		want string
	}{
		{"item out of range", func() string {
			return callErr(t, e, ctx, "result_get_item", map[string]any{"workspace_id": list, "index": 3})["error"].(string)
		}, `which has 1 item (0 to 0)`},
		{"page out of range", func() string {
			return callErr(t, e, ctx, "result_read_page", map[string]any{"workspace_id": text, "page": 3, "chars_per_page": 1000})["error"].(string)
		}, `has 1 page of 1,000 chars`},
		{"long value", func() string {
			return call(t, e, ctx, "result_get_value", map[string]any{"workspace_id": dict.StoredResult, "key": "outer"})["suggestion"].(string)
		}, `(1 key)`},
		{"notice preview", func() string { return dict.String() }, `{1 key}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(); !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}

	found := call(t, e, ctx, "result_search_in_text", map[string]any{"workspace_id": text, "query": "short"})
	if _, old := found["pages_of_chars"]; old || found["chars_per_page"] == nil {
		t.Errorf("result_search_in_text names its page size wrongly: %v", found)
	}
}
