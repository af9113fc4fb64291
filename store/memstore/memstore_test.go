package memstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New(memstore.Options{}) })
}

func TestConformanceBounded(t *testing.T) {
	// A bound above what any conformance test stores must change nothing.
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New(memstore.Options{MaxWorkspaces: 1000}) })
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return memstore.New(memstore.Options{}) })
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func list(id string, items ...string) (*store.Workspace, *store.Content) {
	raw := make([]json.RawMessage, len(items))
	for i, s := range items {
		raw[i] = json.RawMessage(s)
	}
	return &store.Workspace{ID: id, Type: "t", Shape: store.ShapeList, Producer: "p", Items: len(items), CreatedAt: t0, AccessedAt: t0},
		&store.Content{Items: raw}
}

func text(id, s string) (*store.Workspace, *store.Content) {
	return &store.Workspace{ID: id, Type: "t", Shape: store.ShapeText, Producer: "p", Chars: int64(utf8.RuneCountInString(s)), CreatedAt: t0, AccessedAt: t0},
		&store.Content{Text: s}
}

func put(t *testing.T, s *memstore.Store, ws *store.Workspace, c *store.Content) {
	t.Helper()
	if err := s.Put(t.Context(), ws, c); err != nil {
		t.Fatalf("Put(%q): %v", ws.ID, err)
	}
}

// present returns the ids the store holds, sorted.
func present(t *testing.T, s *memstore.Store) []string {
	t.Helper()
	wss, err := s.List(t.Context(), store.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var ids []string
	for _, ws := range wss {
		ids = append(ids, ws.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestEviction(t *testing.T) {
	// Each case fills a store bounded to three workspaces with a, b and c (in
	// that order, so a is least recently used), does something with them,
	// then puts d: the least recently used one must go.
	cases := []struct {
		name    string
		use     func(t *testing.T, s *memstore.Store) error
		evicted string
	}{
		{"nothing used", func(t *testing.T, s *memstore.Store) error { return nil }, "a"},
		{"Stat", func(t *testing.T, s *memstore.Store) error { _, err := s.Stat(t.Context(), "a"); return err }, "b"},
		{"Touch", func(t *testing.T, s *memstore.Store) error { return s.Touch(t.Context(), "a", t0) }, "b"},
		{"Items", func(t *testing.T, s *memstore.Store) error { _, err := s.Items(t.Context(), "a", 0, 1); return err }, "b"},
		{"Raw", func(t *testing.T, s *memstore.Store) error { _, err := s.Raw(t.Context(), "a"); return err }, "b"},
		{"ScanItems", func(t *testing.T, s *memstore.Store) error {
			for _, err := range s.ScanItems(t.Context(), "a") {
				return err
			}
			return nil
		}, "b"},
		{"SearchItems", func(t *testing.T, s *memstore.Store) error {
			_, _, err := s.SearchItems(t.Context(), "a", store.Query{Text: "x"})
			return err
		}, "b"},
		{"AppendItems", func(t *testing.T, s *memstore.Store) error { return s.AppendItems(t.Context(), "a", nil) }, "b"},
		{"re-Put", func(t *testing.T, s *memstore.Store) error {
			ws, c := list("a", `{"x":2}`)
			return s.Put(t.Context(), ws, c)
		}, "b"},
		{"a then b", func(t *testing.T, s *memstore.Store) error {
			if _, err := s.Stat(t.Context(), "a"); err != nil {
				return err
			}
			_, err := s.Stat(t.Context(), "b")
			return err
		}, "c"},
		{"List does not count", func(t *testing.T, s *memstore.Store) error {
			_, err := s.List(t.Context(), store.ListOptions{Sessions: []string{""}})
			return err
		}, "a"},
		{"deleting frees a place", func(t *testing.T, s *memstore.Store) error { return s.Delete(t.Context(), "b") }, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New(memstore.Options{MaxWorkspaces: 3})
			for _, id := range []string{"a", "b", "c"} {
				ws, c := list(id, `{"x":1}`)
				put(t, s, ws, c)
			}
			if err := tc.use(t, s); err != nil {
				t.Fatal(err)
			}
			ws, c := list("d", `{"x":1}`)
			put(t, s, ws, c)
			var want []string
			for _, id := range []string{"a", "b", "c", "d"} {
				if id != tc.evicted {
					want = append(want, id)
				}
			}
			if got := present(t, s); !slices.Equal(got, want) {
				t.Errorf("after Put(d): %v, want %v", got, want)
			}
			if _, err := s.Stat(t.Context(), tc.evicted); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Stat(%s) after its eviction: error %v, want ErrNotFound", tc.evicted, err)
			}
		})
	}
}

func TestEvictionKeepsBound(t *testing.T) {
	s := memstore.New(memstore.Options{MaxWorkspaces: 5})
	for i := range 50 {
		ws, c := text(fmt.Sprintf("w%02d", i), "some text")
		put(t, s, ws, c)
		if n := s.Len(); n != min(i+1, 5) {
			t.Fatalf("after %d Puts: %d workspaces, want %d", i+1, n, min(i+1, 5))
		}
	}
	if got, want := present(t, s), []string{"w45", "w46", "w47", "w48", "w49"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	// Replacing at the bound evicts nothing.
	ws, c := text("w45", "new text")
	put(t, s, ws, c)
	if got, want := present(t, s), []string{"w45", "w46", "w47", "w48", "w49"}; !slices.Equal(got, want) {
		t.Errorf("after replacing w45: %v, want %v", got, want)
	}
	// A refused Put (conflict) evicts nothing either.
	ws, c = text("w46", "x")
	ws.Session = "other"
	if err := s.Put(t.Context(), ws, c); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("conflicting Put: error %v, want ErrConflict", err)
	}
	if n := s.Len(); n != 5 {
		t.Errorf("after a refused Put: %d workspaces, want 5", n)
	}
}

func TestPutRejects(t *testing.T) {
	good := func() (*store.Workspace, *store.Content) { return list("bad", `{"a":1}`) }
	cases := []struct {
		name   string
		break_ func(ws *store.Workspace, c *store.Content)
	}{
		{"empty id", func(ws *store.Workspace, c *store.Content) { ws.ID = "" }},
		{"unknown shape", func(ws *store.Workspace, c *store.Content) { ws.Shape = "table" }},
		{"invalid item", func(ws *store.Workspace, c *store.Content) { c.Items = append(c.Items, json.RawMessage(`{"a":`)) }},
		{"empty item", func(ws *store.Workspace, c *store.Content) { c.Items = append(c.Items, nil) }},
		{"two values in an item", func(ws *store.Workspace, c *store.Content) { c.Items[0] = json.RawMessage(`1 2`) }},
		{"invalid args", func(ws *store.Workspace, c *store.Content) { ws.Args = json.RawMessage(`{`) }},
		{"invalid schema", func(ws *store.Workspace, c *store.Content) { ws.Schema = json.RawMessage(`nope`) }},
		{"meta not JSON", func(ws *store.Workspace, c *store.Content) { ws.Meta = map[string]any{"f": math.Inf(1)} }},
		{"dict not an object", func(ws *store.Workspace, c *store.Content) {
			ws.Shape = store.ShapeDict
			c.Value = json.RawMessage(`[1]`)
		}},
		{"dict invalid", func(ws *store.Workspace, c *store.Content) {
			ws.Shape = store.ShapeDict
			c.Value = json.RawMessage(`{"a":1`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New(memstore.Options{})
			ws, c := good()
			tc.break_(ws, c)
			if err := s.Put(t.Context(), ws, c); err == nil {
				t.Fatal("Put: no error")
			}
			if n := s.Len(); n != 0 {
				t.Errorf("a refused Put stored %d workspaces", n)
			}
		})
	}
	s := memstore.New(memstore.Options{})
	if err := s.Put(t.Context(), nil, nil); err == nil {
		t.Error("Put(nil, nil): no error")
	}
	ws, c := good()
	put(t, s, ws, c)
	if err := s.AppendItems(t.Context(), ws.ID, []json.RawMessage{json.RawMessage(`{"b":2}`), json.RawMessage(`oops`)}); err == nil {
		t.Error("AppendItems(invalid JSON): no error")
	}
	if err := s.UpdateItem(t.Context(), ws.ID, 0, json.RawMessage(`[`)); err == nil {
		t.Error("UpdateItem(invalid JSON): no error")
	}
	if got, err := s.Items(t.Context(), ws.ID, 0, 10); err != nil || len(got) != 1 || string(got[0]) != `{"a":1}` {
		t.Errorf("Items after refused mutations = %s, %v; want the original item", got, err)
	}
}

func TestMutationCounts(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(memstore.Options{})
	ws, c := list("counted", `{"a":"é"}`, `{"a":"日本"}`)
	ws.Chars, ws.Tokens = 100, 50 // the producer's own estimate: two chars per token
	put(t, s, ws, c)
	steps := []func() error{
		func() error {
			return s.AppendItems(ctx, ws.ID, []json.RawMessage{json.RawMessage(`{"a":"😀 more"}`)})
		},
		func() error { return s.UpdateItem(ctx, ws.ID, 0, json.RawMessage(`{"a":"a much longer value"}`)) },
		func() error { return s.PatchItem(ctx, ws.ID, 1, json.RawMessage(`{"b":[1,2,3]}`)) },
		func() error { return s.DeleteItems(ctx, ws.ID, []int{2}) },
		func() error { return s.DeleteItems(ctx, ws.ID, []int{0, 1}) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, err := s.Stat(ctx, ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.Raw(ctx, ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		items, err := s.Items(ctx, ws.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(utf8.RuneCount(raw)); got.Chars != want {
			t.Errorf("step %d: Chars = %d, want %d, the runes of %s", i, got.Chars, want, raw)
		}
		if got.Items != len(items) {
			t.Errorf("step %d: Items = %d, want %d", i, got.Items, len(items))
		}
		if want := int(got.Chars / 2); got.Tokens < want-1 || got.Tokens > want+1 {
			t.Errorf("step %d: Tokens = %d for %d chars, want about %d", i, got.Tokens, got.Chars, want)
		}
	}
}

func TestClosed(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(memstore.Options{})
	ws, c := list("l", `{"a":1}`)
	put(t, s, ws, c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, ws, c); err == nil {
		t.Error("Put after Close: no error")
	}
	if _, err := s.Stat(ctx, "l"); err == nil {
		t.Error("Stat after Close: no error")
	}
	if _, err := s.List(ctx, store.ListOptions{}); err == nil {
		t.Error("List after Close: no error")
	}
	if _, err := s.DeleteExpired(ctx, t0); err == nil {
		t.Error("DeleteExpired after Close: no error")
	}
	for _, err := range s.ScanItems(ctx, "l") {
		if err == nil {
			t.Error("ScanItems after Close yielded an item")
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSearchTextPassages(t *testing.T) {
	// Matches within 200 runes of a passage's first match belong to it;
	// later ones start a new passage. The filler separates words, in
	// characters of several bytes.
	filler := func(n int) string { return strings.Repeat("—", n) }
	doc := "alpha" + filler(100) + "beta" + filler(100) + "gamma" + filler(300) + "beta" + filler(10) + "beta"
	s := memstore.New(memstore.Options{})
	ws, c := text("p", doc)
	put(t, s, ws, c)
	hits, err := s.SearchText(t.Context(), "p", store.TextQuery{Text: "alpha beta gamma"})
	if err != nil {
		t.Fatal(err)
	}
	// alpha at 0, beta at 105 (same passage), gamma at 209 (too far: new
	// passage), beta at 514 and 528 (a third passage).
	want := []store.TextHit{
		{Offset: 0, Length: 5, Terms: 2, Score: 2 + 2.0/3},
		{Offset: 514, Length: 4, Terms: 1, Score: 1 + 2.0/3},
		{Offset: 209, Length: 5, Terms: 1, Score: 1 + 1.0/2},
	}
	same := len(hits) == len(want)
	for i := 0; same && i < len(hits); i++ {
		h, w := hits[i], want[i]
		same = h.Offset == w.Offset && h.Length == w.Length && h.Terms == w.Terms && math.Abs(h.Score-w.Score) < 1e-9
	}
	if !same {
		t.Errorf("SearchText = %+v,\nwant %+v", hits, want)
	}
}

func FuzzTextSlice(f *testing.F) {
	f.Add("héllo wörld 日本語 😀", int64(3), int64(5))
	f.Add("", int64(0), int64(1))
	f.Add("a\xffb\xe6\x97c", int64(1), int64(3))
	f.Add(strings.Repeat("é日a", 3000), int64(4095), int64(4098))
	f.Fuzz(func(t *testing.T, doc string, offset, n int64) {
		s := memstore.New(memstore.Options{})
		ws, c := text("f", doc)
		put(t, s, ws, c)
		got, err := s.TextSlice(t.Context(), "f", offset, n)
		if offset < 0 || n < 0 {
			if err == nil {
				t.Fatalf("TextSlice(%d, %d): no error", offset, n)
			}
			return
		}
		if err != nil {
			t.Fatalf("TextSlice(%d, %d): %v", offset, n, err)
		}
		// Go's conversion to []rune counts an invalid byte as one rune too.
		runes := []rune(doc)
		start := min(offset, int64(len(runes)))
		end := start + min(n, int64(len(runes))-start)
		want := string(runes[start:end])
		if utf8.ValidString(doc) && got != want {
			t.Fatalf("TextSlice(%d, %d) = %q, want %q", offset, n, got, want)
		}
		if int64(utf8.RuneCountInString(got)) != end-start && utf8.ValidString(doc) {
			t.Fatalf("TextSlice(%d, %d) has %d runes, want %d", offset, n, utf8.RuneCountInString(got), end-start)
		}
	})
}

func FuzzSearchText(f *testing.F) {
	f.Add("The Parser parses C++ and E-Mail.", "parse c++ e-mail")
	f.Add("KELVIN \u212a k K", "k")
	f.Add("İstanbul ıi", "i̇ i")
	f.Add("a\xffb", "\xff b")
	f.Fuzz(func(t *testing.T, doc, query string) {
		s := memstore.New(memstore.Options{})
		ws, c := text("f", doc)
		put(t, s, ws, c)
		hits, err := s.SearchText(t.Context(), "f", store.TextQuery{Text: query, Limit: 5})
		if err != nil {
			t.Fatalf("SearchText(%q): %v", query, err)
		}
		if len(hits) > 5 {
			t.Fatalf("SearchText(%q) = %d hits, limit 5", query, len(hits))
		}
		q, err := textsearch.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			got, err := s.TextSlice(t.Context(), "f", h.Offset, int64(h.Length))
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, term := range q.Terms {
				ok = ok || term.Is(got)
			}
			if !ok {
				t.Fatalf("SearchText(%q) hit %+v is %q, none of %+v", query, h, got, q.Terms)
			}
		}
	})
}

func FuzzPatchItem(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":2}}`, `{"b":{"c":null,"d":[1]},"e":"<&>"}`)
	f.Add(`[1]`, `{}`)
	f.Add(`{"n":12345678901234567890}`, `{"m":1e400}`)
	f.Add(`{}`, `{"a":{"b":{"c":{"d":null}}}}`)
	f.Fuzz(func(t *testing.T, item, patch string) {
		if !json.Valid([]byte(item)) {
			return
		}
		s := memstore.New(memstore.Options{})
		ws, c := list("f", item)
		put(t, s, ws, c)
		if err := s.PatchItem(t.Context(), "f", 0, json.RawMessage(patch)); err != nil {
			return
		}
		got, err := s.Items(t.Context(), "f", 0, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("Items after PatchItem = %s, %v", got, err)
		}
		d := json.NewDecoder(strings.NewReader(string(got[0])))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("PatchItem(%s, %s) stored %s, not a JSON object: %v", item, patch, got[0], err)
		}
	})
}
