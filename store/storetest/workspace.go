package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// testPutStat checks that Stat returns every field Put was given, for each
// shape, with and without the optional fields.
func testPutStat(t *testing.T, s store.Store) {
	full := func(ws *store.Workspace, c *store.Content) (*store.Workspace, *store.Content) {
		ws.Session = "sess-1"
		ws.Meta = map[string]any{
			"source":  "unit",
			"n":       3,
			"ratio":   0.25,
			"flag":    true,
			"nested":  map[string]any{"ok": true, "list": []any{"a", 1.5, nil}},
			"unicode": "héllo 日本 😀",
		}
		ws.AccessedAt = t0.Add(90*time.Second + 123*time.Microsecond)
		ws.TTL = 90 * time.Minute
		ws.ExpiresAt = t0.Add(ws.TTL)
		return ws, c
	}
	bare := func(ws *store.Workspace, c *store.Content) (*store.Workspace, *store.Content) {
		ws.Schema, ws.Args, ws.Meta = nil, nil, nil
		ws.Format = ""
		ws.Tokens = 0
		return ws, c
	}
	zoned := func(ws *store.Workspace, c *store.Content) (*store.Workspace, *store.Content) {
		zone := time.FixedZone("UTC+05:30", 5*3600+1800)
		ws.CreatedAt = t0.In(zone)
		ws.AccessedAt = t0.Add(time.Hour).In(zone)
		ws.TTL = 24 * time.Hour
		ws.ExpiresAt = ws.CreatedAt.Add(ws.TTL)
		return ws, c
	}

	type fixture struct {
		name string
		ws   *store.Workspace
		c    *store.Content
	}
	var cases []fixture
	add := func(name string, ws *store.Workspace, c *store.Content) {
		cases = append(cases, fixture{name, ws, c})
	}
	items := rawItems(`{"id":1,"name":"ann"}`, `{"id":2,"name":"bob","tags":["x"]}`, `"a string item"`, `42`)
	ws, c := full(listWorkspace("list_full", items))
	add("list/full", ws, c)
	ws, c = bare(listWorkspace("list_bare", items))
	add("list/bare", ws, c)
	ws, c = listWorkspace("list_empty", nil)
	add("list/empty", ws, c)
	ws, c = zoned(listWorkspace("list_zoned", items))
	add("list/zoned", ws, c)
	ws, c = full(dictWorkspace("dict_full", `{"a":1,"b":{"c":[1,2,3]},"d":"é"}`))
	add("dict/full", ws, c)
	ws, c = bare(dictWorkspace("dict_bare", `{}`))
	add("dict/bare", ws, c)
	ws, c = full(textWorkspace("text_full", "Hello, wörld.\nSecond line 日本語.\n"))
	add("text/full", ws, c)
	ws, c = bare(textWorkspace("text_bare", ""))
	add("text/bare", ws, c)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := *tc.ws
			mustPut(t, s, tc.ws, tc.c)
			got := mustStat(t, s, tc.ws.ID)
			checkWorkspace(t, "Stat", got, &want)
			if tc.ws.Shape == store.ShapeList {
				checkItems(t, "Items", mustItems(t, s, tc.ws.ID), tc.c.Items)
			}
		})
	}
}

// testPutReplace checks that Put with an existing id replaces metadata and
// content entirely, including when the shape changes.
func testPutReplace(t *testing.T, s store.Store) {
	ctx := t.Context()
	old := titled("obsolete one", "obsolete two", "obsolete three", "obsolete four", "obsolete five")
	ws, c := listWorkspace("search_replace", old)
	ws.Meta = map[string]any{"version": 1, "only_old": "x"}
	c.Raw = []byte("[\n" + string(bytes.Join(rawBytes(old), []byte(",\n"))) + "\n]")
	mustPut(t, s, ws, c)
	// A mutation first, so that a replacement must also forget that the
	// list had been mutated.
	if err := s.AppendItems(ctx, ws.ID, titled("obsolete six")); err != nil {
		t.Fatalf("AppendItems: %v", err)
	}

	fresh := titled("fresh start", "fresh finish")
	ws2, c2 := listWorkspace("search_replace", fresh)
	ws2.Meta = map[string]any{"version": 2}
	ws2.Args = json.RawMessage(`{"q":"new"}`)
	ws2.Format = "ndjson"
	ws2.CreatedAt = t0.Add(time.Minute)
	ws2.AccessedAt = t0.Add(2 * time.Minute)
	c2.Raw = []byte("{\"title\":\"fresh start\"}\n{\"title\":\"fresh finish\"}\n")
	want := *ws2
	mustPut(t, s, ws2, c2)

	checkWorkspace(t, "Stat after replace", mustStat(t, s, ws.ID), &want)
	checkItems(t, "Items after replace", mustItems(t, s, ws.ID), fresh)
	if _, total := mustSearch(t, s, ws.ID, store.Query{Text: "obsolete"}); total != 0 {
		t.Errorf("SearchItems(obsolete) after replace: total %d, want 0 (old items still indexed)", total)
	}
	if hits, total := mustSearch(t, s, ws.ID, store.Query{Text: "fresh"}); total != 2 || len(hits) != 2 {
		t.Errorf("SearchItems(fresh) after replace: %d hits, total %d, want 2 and 2", len(hits), total)
	}
	raw, err := s.Raw(ctx, ws.ID)
	if err != nil {
		t.Fatalf("Raw: %v", err)
	}
	if !bytes.Equal(raw, c2.Raw) {
		t.Errorf("Raw after replace = %q, want %q", raw, c2.Raw)
	}
	if wss, err := s.List(ctx, store.ListOptions{}); err != nil {
		t.Fatalf("List: %v", err)
	} else if len(wss) != 1 {
		t.Errorf("List after replace: ids %v, want just %q", ids(wss), ws.ID)
	}

	// Replace the list with text, then the text with a dict: the old shape's
	// operations must stop working.
	tw, tc := textWorkspace("search_replace", "now it is text about fresh things")
	tw.Type, tw.Producer = ws.Type, ws.Producer
	mustPut(t, s, tw, tc)
	checkWorkspace(t, "Stat after list→text", mustStat(t, s, tw.ID), tw)
	if _, err := s.Items(ctx, tw.ID, 0, 10); !isWrongShape(err) {
		t.Errorf("Items after list→text: error %v, want ErrWrongShape", err)
	}
	if got, err := s.TextSlice(ctx, tw.ID, 0, 100); err != nil || got != tc.Text {
		t.Errorf("TextSlice after list→text = %q, %v; want %q", got, err, tc.Text)
	}

	dw, dc := dictWorkspace("search_replace", `{"k":"v"}`)
	dw.Type, dw.Producer = ws.Type, ws.Producer
	mustPut(t, s, dw, dc)
	if _, err := s.TextSlice(ctx, dw.ID, 0, 10); !isWrongShape(err) {
		t.Errorf("TextSlice after text→dict: error %v, want ErrWrongShape", err)
	}
	if v, err := s.Value(ctx, dw.ID); err != nil || !jsonEqual(v, dc.Value) {
		t.Errorf("Value after text→dict = %s, %v; want %s", v, err, dc.Value)
	}

	// And back to a list, which must not resurrect the first list's items.
	lw, lc := listWorkspace("search_replace", titled("third generation"))
	mustPut(t, s, lw, lc)
	checkItems(t, "Items after dict→list", mustItems(t, s, lw.ID), lc.Items)
	if _, total := mustSearch(t, s, lw.ID, store.Query{Text: "obsolete fresh"}); total != 0 {
		t.Errorf("SearchItems after dict→list: total %d, want 0", total)
	}
}

func rawBytes(items []json.RawMessage) [][]byte {
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out
}

// testPutConflict checks that Put refuses to replace a workspace of another
// type, producer or session, and leaves it as it was.
func testPutConflict(t *testing.T, s store.Store) {
	items := titled("original")
	cases := []struct {
		name   string
		change func(ws *store.Workspace)
	}{
		{"type", func(ws *store.Workspace) { ws.Type = "other_type" }},
		{"producer", func(ws *store.Workspace) { ws.Producer = "other_tool" }},
		{"session", func(ws *store.Workspace) { ws.Session = "other-session" }},
		{"shared to session", func(ws *store.Workspace) { ws.Session = "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "conflict_" + tc.name
			ws, c := listWorkspace(id, items)
			ws.Session = "owner"
			want := *ws
			mustPut(t, s, ws, c)

			ws2, c2 := listWorkspace(id, titled("intruder", "intruder two"))
			ws2.Session = "owner"
			tc.change(ws2)
			err := s.Put(t.Context(), ws2, c2)
			wantErr(t, err, store.ErrConflict, "Put over "+tc.name)

			checkWorkspace(t, "Stat after conflict", mustStat(t, s, id), &want)
			checkItems(t, "Items after conflict", mustItems(t, s, id), items)
		})
	}
}

func isWrongShape(err error) bool { return errors.Is(err, store.ErrWrongShape) }
func isNotFound(err error) bool   { return errors.Is(err, store.ErrNotFound) }

// testNotFound checks that every method taking an id reports ErrNotFound for
// an id that was never stored.
func testNotFound(t *testing.T, s store.Store) {
	// Another workspace exists, so that a backend cannot pass by having
	// nothing stored at all.
	ws, c := listWorkspace("present_000000000001", titled("here"))
	mustPut(t, s, ws, c)
	checkNotFound(t, s, "absent_000000000000")
}

// checkNotFound calls every id-taking method with id and wants ErrNotFound.
func checkNotFound(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	_, err := s.Stat(ctx, id)
	wantErr(t, err, store.ErrNotFound, "Stat")
	wantErr(t, s.Touch(ctx, id, t0), store.ErrNotFound, "Touch")
	wantErr(t, s.Delete(ctx, id), store.ErrNotFound, "Delete")
	_, err = s.Raw(ctx, id)
	wantErr(t, err, store.ErrNotFound, "Raw")
	_, err = s.Items(ctx, id, 0, 10)
	wantErr(t, err, store.ErrNotFound, "Items")
	wantErr(t, scanErr(t, s, id), store.ErrNotFound, "ScanItems")
	_, _, err = s.SearchItems(ctx, id, store.Query{Text: "here"})
	wantErr(t, err, store.ErrNotFound, "SearchItems")
	wantErr(t, s.AppendItems(ctx, id, titled("x")), store.ErrNotFound, "AppendItems")
	wantErr(t, s.UpdateItem(ctx, id, 0, json.RawMessage(`{}`)), store.ErrNotFound, "UpdateItem")
	wantErr(t, s.PatchItem(ctx, id, 0, json.RawMessage(`{}`)), store.ErrNotFound, "PatchItem")
	wantErr(t, s.DeleteItems(ctx, id, []int{0}), store.ErrNotFound, "DeleteItems")
	_, err = s.Value(ctx, id)
	wantErr(t, err, store.ErrNotFound, "Value")
	_, err = s.TextSlice(ctx, id, 0, 10)
	wantErr(t, err, store.ErrNotFound, "TextSlice")
	_, err = s.SearchText(ctx, id, store.TextQuery{Text: "here"})
	wantErr(t, err, store.ErrNotFound, "SearchText")
	// Only a query the caller could fix is an invalid one: a missing
	// workspace (or a busy database) is not.
	_, _, errItems := s.SearchItems(ctx, id, store.Query{Text: "here"})
	for what, err := range map[string]error{"SearchItems": errItems, "SearchText": err} {
		if errors.Is(err, store.ErrInvalidQuery) {
			t.Errorf("%s of a missing workspace: %v, which is not an invalid query", what, err)
		}
	}
}

// scanErr runs ScanItems to the end and returns the first error it yields.
func scanErr(t *testing.T, s store.Store, id string) error {
	for _, err := range s.ScanItems(t.Context(), id) {
		if err != nil {
			return err
		}
	}
	return nil
}

// testWrongShape checks that each shape's methods refuse the other shapes
// and leave them unchanged.
func testWrongShape(t *testing.T, s store.Store) {
	ctx := t.Context()
	lw, lc := listWorkspace("shape_list", titled("one", "two"))
	dw, dc := dictWorkspace("shape_dict", `{"one":1,"two":2}`)
	tw, tc := textWorkspace("shape_text", "one two three")
	mustPut(t, s, lw, lc)
	mustPut(t, s, dw, dc)
	mustPut(t, s, tw, tc)

	for _, id := range []string{dw.ID, tw.ID} {
		t.Run("list methods on "+id, func(t *testing.T) {
			_, err := s.Items(ctx, id, 0, 10)
			wantErr(t, err, store.ErrWrongShape, "Items")
			wantErr(t, scanErr(t, s, id), store.ErrWrongShape, "ScanItems")
			_, _, err = s.SearchItems(ctx, id, store.Query{Text: "one"})
			wantErr(t, err, store.ErrWrongShape, "SearchItems")
			wantErr(t, s.AppendItems(ctx, id, titled("x")), store.ErrWrongShape, "AppendItems")
			wantErr(t, s.UpdateItem(ctx, id, 0, json.RawMessage(`{}`)), store.ErrWrongShape, "UpdateItem")
			wantErr(t, s.PatchItem(ctx, id, 0, json.RawMessage(`{}`)), store.ErrWrongShape, "PatchItem")
			wantErr(t, s.DeleteItems(ctx, id, []int{0}), store.ErrWrongShape, "DeleteItems")
		})
	}
	for _, id := range []string{lw.ID, tw.ID} {
		t.Run("Value on "+id, func(t *testing.T) {
			_, err := s.Value(ctx, id)
			wantErr(t, err, store.ErrWrongShape, "Value")
		})
	}
	for _, id := range []string{lw.ID, dw.ID} {
		t.Run("text methods on "+id, func(t *testing.T) {
			_, err := s.TextSlice(ctx, id, 0, 10)
			wantErr(t, err, store.ErrWrongShape, "TextSlice")
			_, err = s.SearchText(ctx, id, store.TextQuery{Text: "one"})
			wantErr(t, err, store.ErrWrongShape, "SearchText")
		})
	}

	checkWorkspace(t, "Stat list after refused calls", mustStat(t, s, lw.ID), lw)
	checkWorkspace(t, "Stat dict after refused calls", mustStat(t, s, dw.ID), dw)
	checkWorkspace(t, "Stat text after refused calls", mustStat(t, s, tw.ID), tw)
	if v, err := s.Value(ctx, dw.ID); err != nil || !jsonEqual(v, dc.Value) {
		t.Errorf("Value after refused calls = %s, %v; want %s", v, err, dc.Value)
	}
	if got, err := s.TextSlice(ctx, tw.ID, 0, 100); err != nil || got != tc.Text {
		t.Errorf("TextSlice after refused calls = %q, %v; want %q", got, err, tc.Text)
	}
}

// testList checks List's order and its Sessions and Type filters.
func testList(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("List on an empty store: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("List on an empty store: %v, want none", ids(got))
	}

	specs := []struct {
		id, typ, session string
		created          time.Duration
	}{
		// Put out of creation order so that insertion order cannot pass for
		// creation order.
		{"ws_c", "search", "a", 3 * time.Second},
		{"ws_a", "search", "", 1 * time.Second},
		{"ws_e", "fetch", "b", 5 * time.Second},
		{"ws_b", "fetch", "a", 2 * time.Second},
		{"ws_d", "search", "", 4 * time.Second},
		{"ws_f", "search", "b", 6 * time.Second},
	}
	want := map[string]*store.Workspace{}
	for _, sp := range specs {
		ws, c := listWorkspace(sp.id, titled(sp.id))
		ws.Type, ws.Session = sp.typ, sp.session
		ws.CreatedAt = t0.Add(sp.created)
		// Access times run opposite to creation, so ordering by them fails.
		ws.AccessedAt = t0.Add(time.Hour - sp.created)
		copied := *ws
		want[sp.id] = &copied
		mustPut(t, s, ws, c)
	}

	cases := []struct {
		name string
		opts store.ListOptions
		want []string
	}{
		{"all", store.ListOptions{}, []string{"ws_f", "ws_e", "ws_d", "ws_c", "ws_b", "ws_a"}},
		{"shared only", store.ListOptions{Sessions: []string{""}}, []string{"ws_d", "ws_a"}},
		{"session a", store.ListOptions{Sessions: []string{"a"}}, []string{"ws_c", "ws_b"}},
		{"session a and shared", store.ListOptions{Sessions: []string{"a", ""}}, []string{"ws_d", "ws_c", "ws_b", "ws_a"}},
		{"sessions a and b", store.ListOptions{Sessions: []string{"b", "a"}}, []string{"ws_f", "ws_e", "ws_c", "ws_b"}},
		{"unknown session", store.ListOptions{Sessions: []string{"zzz"}}, nil},
		{"empty non-nil sessions", store.ListOptions{Sessions: []string{}}, nil},
		{"type", store.ListOptions{Type: "fetch"}, []string{"ws_e", "ws_b"}},
		{"type and session", store.ListOptions{Type: "search", Sessions: []string{"b", ""}}, []string{"ws_f", "ws_d", "ws_a"}},
		{"unknown type", store.ListOptions{Type: "nope"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.List(ctx, tc.opts)
			if err != nil {
				t.Fatalf("List(%+v): %v", tc.opts, err)
			}
			if !slices.Equal(ids(got), tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("List(%+v) = %v, want %v", tc.opts, ids(got), tc.want)
			}
			for _, ws := range got {
				if w, ok := want[ws.ID]; ok {
					checkWorkspace(t, "List entry", ws, w)
				}
			}
		})
	}
}

// testTouch checks that Touch sets AccessedAt and nothing else.
func testTouch(t *testing.T, s store.Store) {
	ws, c := listWorkspace("touch_me", titled("x"))
	ws.TTL = time.Hour
	ws.ExpiresAt = ws.CreatedAt.Add(ws.TTL)
	mustPut(t, s, ws, c)
	other, oc := listWorkspace("leave_me", titled("y"))
	mustPut(t, s, other, oc)

	for _, at := range []time.Duration{10 * time.Minute, 20*time.Minute + 7*time.Microsecond} {
		when := t0.Add(at)
		if err := s.Touch(t.Context(), ws.ID, when); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		want := *ws
		want.AccessedAt = when
		checkWorkspace(t, "Stat after Touch", mustStat(t, s, ws.ID), &want)
	}
	checkWorkspace(t, "Stat of another workspace after Touch", mustStat(t, s, other.ID), other)
}

// testDelete checks that Delete removes the workspace and its content, and
// only that one.
func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	lw, lc := listWorkspace("del_list", titled("doomed item", "doomed too"))
	dw, dc := dictWorkspace("del_dict", `{"doomed":true}`)
	tw, tc := textWorkspace("del_text", "doomed text")
	keep, kc := listWorkspace("del_keep", titled("doomed survivor"))
	for _, p := range []struct {
		ws *store.Workspace
		c  *store.Content
	}{{lw, lc}, {dw, dc}, {tw, tc}, {keep, kc}} {
		mustPut(t, s, p.ws, p.c)
	}
	for _, id := range []string{lw.ID, dw.ID, tw.ID} {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatalf("Delete(%q): %v", id, err)
		}
		checkNotFound(t, s, id)
	}
	got, err := s.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.Equal(ids(got), []string{keep.ID}) {
		t.Errorf("List after Delete = %v, want [%s]", ids(got), keep.ID)
	}
	if _, total := mustSearch(t, s, keep.ID, store.Query{Text: "doomed"}); total != 1 {
		t.Errorf("SearchItems on the kept workspace: total %d, want 1", total)
	}

	// The id is free again, even for another type, producer and shape.
	nw, nc := textWorkspace(lw.ID, "reborn")
	mustPut(t, s, nw, nc)
	checkWorkspace(t, "Stat after re-Put", mustStat(t, s, nw.ID), nw)
}

// testDeleteExpired checks that DeleteExpired removes exactly the workspaces
// expired at now (Workspace.Expired) and returns their ids.
func testDeleteExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.DeleteExpired(ctx, t0)
	if err != nil {
		t.Fatalf("DeleteExpired on an empty store: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("DeleteExpired on an empty store = %v, want none", got)
	}

	now := t0.Add(time.Hour)
	specs := []struct {
		id      string
		ttl     time.Duration // 0: never expires
		shape   store.Shape
		expired bool
	}{
		{"exp_past", 30 * time.Minute, store.ShapeList, true},
		{"exp_exactly_now", time.Hour, store.ShapeText, true},
		{"exp_dict_past", time.Minute, store.ShapeDict, true},
		{"exp_future", time.Hour + time.Second, store.ShapeList, false},
		{"exp_never", 0, store.ShapeList, false},
	}
	var wantGone []string
	for _, sp := range specs {
		var ws *store.Workspace
		var c *store.Content
		switch sp.shape {
		case store.ShapeList:
			ws, c = listWorkspace(sp.id, titled("expiring"))
		case store.ShapeDict:
			ws, c = dictWorkspace(sp.id, `{"expiring":true}`)
		default:
			ws, c = textWorkspace(sp.id, "expiring")
		}
		if sp.ttl != 0 {
			ws.TTL = sp.ttl
			ws.ExpiresAt = ws.CreatedAt.Add(sp.ttl)
		}
		if ws.Expired(now) != sp.expired {
			t.Fatalf("fixture %s: Expired = %v, want %v", sp.id, !sp.expired, sp.expired)
		}
		if sp.expired {
			wantGone = append(wantGone, sp.id)
		}
		mustPut(t, s, ws, c)
	}

	gone, err := s.DeleteExpired(ctx, now)
	if err != nil {
		t.Fatalf("DeleteExpired: %v", err)
	}
	slices.Sort(gone)
	slices.Sort(wantGone)
	if !slices.Equal(gone, wantGone) {
		t.Errorf("DeleteExpired = %v, want %v", gone, wantGone)
	}
	for _, sp := range specs {
		_, err := s.Stat(ctx, sp.id)
		switch {
		case sp.expired && !isNotFound(err):
			t.Errorf("Stat(%q) after DeleteExpired: error %v, want ErrNotFound", sp.id, err)
		case !sp.expired && err != nil:
			t.Errorf("Stat(%q) after DeleteExpired: %v", sp.id, err)
		}
	}
	if _, err := s.Items(ctx, "exp_past", 0, 1); !isNotFound(err) {
		t.Errorf("Items of an expired workspace: error %v, want ErrNotFound", err)
	}

	again, err := s.DeleteExpired(ctx, now)
	if err != nil {
		t.Fatalf("second DeleteExpired: %v", err)
	}
	if len(again) != 0 {
		t.Errorf("second DeleteExpired = %v, want none", again)
	}
}

// testRaw checks that Raw returns the original bytes exactly, the serialised
// content when there were none, and the list as a JSON array once it has
// been mutated.
func testRaw(t *testing.T, s store.Store) {
	ctx := t.Context()
	ab := rawItems(`{"a":1}`, `{"a":2}`)
	type fixture struct {
		name string
		ws   *store.Workspace
		c    *store.Content
		want []byte // exact bytes, or nil to compare as JSON with wantJSON
		json []byte
	}
	var cases []fixture
	withRaw := func(name string, ws *store.Workspace, c *store.Content, raw string) {
		c.Raw = []byte(raw)
		cases = append(cases, fixture{name: name, ws: ws, c: c, want: []byte(raw)})
	}
	ws, c := listWorkspace("raw_json", ab)
	withRaw("list/json with whitespace", ws, c, "[\n  {\"a\": 1},\n\n  {\"a\":   2}\n]\n")
	ws, c = listWorkspace("raw_ndjson", ab)
	ws.Format = "ndjson"
	withRaw("list/ndjson", ws, c, "{\"a\":1}\n{\"a\":2}\n")
	ws, c = listWorkspace("raw_csv", rawItems(`{"name":"ann","age":"31"}`, `{"name":"bob","age":"42"}`))
	ws.Format = "csv"
	withRaw("list/csv with CRLF", ws, c, "name,age\r\nann,31\r\nbob,42\r\n")
	ws, c = dictWorkspace("raw_dict", `{"k":[1,2],"s":"é"}`)
	withRaw("dict with whitespace", ws, c, "{ \"k\" : [1, 2],\t\"s\": \"\\u00e9\" }\n")
	ws, c = textWorkspace("raw_scalar", "hello\nworld")
	ws.Format = "json"
	withRaw("text/json scalar", ws, c, `"hello\nworld"`)
	ws, c = textWorkspace("raw_latin1", "café latin-1\n")
	withRaw("text/not utf-8", ws, c, "caf\xe9 \x00 latin-1\n")

	ws, c = listWorkspace("raw_nil_list", ab)
	cases = append(cases, fixture{name: "list/nil raw", ws: ws, c: c, json: arrayOf(ab)})
	ws, c = listWorkspace("raw_nil_empty", nil)
	cases = append(cases, fixture{name: "list/nil raw, no items", ws: ws, c: c, json: []byte(`[]`)})
	ws, c = dictWorkspace("raw_nil_dict", `{"x":{"y":[true,null]}}`)
	cases = append(cases, fixture{name: "dict/nil raw", ws: ws, c: c, json: []byte(`{"x":{"y":[true,null]}}`)})
	text := "line one\r\n\ttrailing spaces   \n日本語 😀\n"
	ws, c = textWorkspace("raw_nil_text", text)
	cases = append(cases, fixture{name: "text/nil raw", ws: ws, c: c, want: []byte(text)})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustPut(t, s, tc.ws, tc.c)
			got, err := s.Raw(ctx, tc.ws.ID)
			if err != nil {
				t.Fatalf("Raw: %v", err)
			}
			if tc.want != nil {
				if !bytes.Equal(got, tc.want) {
					t.Errorf("Raw = %q, want %q", got, tc.want)
				}
			} else if !jsonEqual(got, tc.json) {
				t.Errorf("Raw = %s, want JSON equal to %s", got, tc.json)
			}
		})
	}

	// After each kind of mutation Raw must be the current list as a JSON
	// array, not the stale original.
	mutations := []struct {
		name   string
		mutate func(id string) error
		want   []json.RawMessage
	}{
		{"append", func(id string) error { return s.AppendItems(ctx, id, rawItems(`{"a":3}`)) },
			rawItems(`{"a":1}`, `{"a":2}`, `{"a":3}`)},
		{"update", func(id string) error { return s.UpdateItem(ctx, id, 1, json.RawMessage(`{"a":20}`)) },
			rawItems(`{"a":1}`, `{"a":20}`)},
		{"patch", func(id string) error { return s.PatchItem(ctx, id, 0, json.RawMessage(`{"b":true}`)) },
			rawItems(`{"a":1,"b":true}`, `{"a":2}`)},
		{"delete", func(id string) error { return s.DeleteItems(ctx, id, []int{0}) },
			rawItems(`{"a":2}`)},
		{"delete all", func(id string) error { return s.DeleteItems(ctx, id, []int{0, 1}) },
			nil},
	}
	for _, m := range mutations {
		t.Run("after "+m.name, func(t *testing.T) {
			ws, c := listWorkspace("raw_mut_"+m.name, ab)
			ws.Format = "ndjson"
			c.Raw = []byte("{\"a\":1}\n{\"a\":2}\n")
			mustPut(t, s, ws, c)
			if err := m.mutate(ws.ID); err != nil {
				t.Fatalf("%s: %v", m.name, err)
			}
			got, err := s.Raw(ctx, ws.ID)
			if err != nil {
				t.Fatalf("Raw: %v", err)
			}
			var arr []json.RawMessage
			if err := json.Unmarshal(got, &arr); err != nil || arr == nil {
				t.Fatalf("Raw after %s = %q, want a JSON array (%v)", m.name, got, err)
			}
			checkItems(t, "Raw after "+m.name, arr, m.want)
		})
	}
}
