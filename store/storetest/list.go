package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// numbered returns n items {"i": 0} … {"i": n-1}.
func numbered(n int) []json.RawMessage {
	items := make([]json.RawMessage, n)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
	}
	return items
}

// testItems checks paging: fewer items at the end, none past it, and limits
// larger than the list.
func testItems(t *testing.T, s store.Store) {
	ctx := t.Context()
	all := numbered(25)
	ws, c := listWorkspace("paged", all)
	mustPut(t, s, ws, c)
	ew, ec := listWorkspace("paged_empty", nil)
	mustPut(t, s, ew, ec)

	cases := []struct {
		offset, limit int
		want          []json.RawMessage
	}{
		{0, 10, all[0:10]},
		{10, 10, all[10:20]},
		{20, 10, all[20:25]},
		{3, 1, all[3:4]},
		{24, 1, all[24:25]},
		{0, 1000, all},
		{5, 1 << 30, all[5:]},
		{25, 10, nil},
		{1000, 10, nil},
		{0, 0, nil},
	}
	for _, tc := range cases {
		got, err := s.Items(ctx, ws.ID, tc.offset, tc.limit)
		if err != nil {
			t.Errorf("Items(%d, %d): %v", tc.offset, tc.limit, err)
			continue
		}
		checkItems(t, fmt.Sprintf("Items(%d, %d)", tc.offset, tc.limit), got, tc.want)
	}
	if got, err := s.Items(ctx, ew.ID, 0, 10); err != nil || len(got) != 0 {
		t.Errorf("Items of an empty list = %s, %v; want none", arrayOf(got), err)
	}

	// Negative arguments are not in the contract, but must not panic or
	// return more than the limit allows (SQL's LIMIT -1 means no limit).
	for _, a := range [][2]int{{-1, 5}, {0, -1}, {-5, -5}, {3, -100}} {
		got, err := s.Items(ctx, ws.ID, a[0], a[1])
		if err == nil && len(got) > max(a[1], 0) {
			t.Errorf("Items(%d, %d) = %d items, want an error or at most %d", a[0], a[1], len(got), max(a[1], 0))
		}
	}
}

// testScanItems checks that ScanItems yields every item in order, stops
// cleanly when the caller breaks out, and lets the caller use the store
// while it iterates.
func testScanItems(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Enough items to cross any reasonable chunk size a backend reads in.
	all := numbered(1234)
	ws, c := listWorkspace("scanned", all)
	mustPut(t, s, ws, c)
	other, oc := listWorkspace("scanned_other", titled("other"))
	mustPut(t, s, other, oc)

	t.Run("all", func(t *testing.T) {
		var got []json.RawMessage
		for item, err := range s.ScanItems(ctx, ws.ID) {
			if err != nil {
				t.Fatalf("ScanItems: after %d items: %v", len(got), err)
			}
			got = append(got, item)
		}
		checkItems(t, "ScanItems", got, all)
	})

	t.Run("early break", func(t *testing.T) {
		for range 3 {
			n := 0
			for item, err := range s.ScanItems(ctx, ws.ID) {
				if err != nil {
					t.Fatalf("ScanItems: %v", err)
				}
				if !jsonEqual(item, all[n]) {
					t.Errorf("ScanItems item %d = %s, want %s", n, item, all[n])
				}
				n++
				if n == 3 {
					break
				}
			}
			if n != 3 {
				t.Fatalf("ScanItems yielded %d items before the break, want 3", n)
			}
		}
		// A scan abandoned early must not hold anything that blocks writers.
		if err := s.AppendItems(ctx, ws.ID, titled("after the break")); err != nil {
			t.Fatalf("AppendItems after an abandoned scan: %v", err)
		}
		if err := s.DeleteItems(ctx, ws.ID, []int{len(all)}); err != nil {
			t.Fatalf("DeleteItems after an abandoned scan: %v", err)
		}
	})

	t.Run("store used during the scan", func(t *testing.T) {
		n := 0
		for item, err := range s.ScanItems(ctx, ws.ID) {
			if err != nil {
				t.Fatalf("ScanItems: %v", err)
			}
			if n%400 == 0 {
				if _, err := s.Stat(ctx, ws.ID); err != nil {
					t.Fatalf("Stat during a scan: %v", err)
				}
				if _, err := s.Items(ctx, other.ID, 0, 1); err != nil {
					t.Fatalf("Items during a scan: %v", err)
				}
				if _, _, err := s.SearchItems(ctx, other.ID, store.Query{Text: "other"}); err != nil {
					t.Fatalf("SearchItems during a scan: %v", err)
				}
			}
			if !jsonEqual(item, all[n]) {
				t.Fatalf("ScanItems item %d = %s, want %s", n, item, all[n])
			}
			n++
		}
		if n != len(all) {
			t.Errorf("ScanItems yielded %d items, want %d", n, len(all))
		}
	})

	t.Run("empty list", func(t *testing.T) {
		ew, ec := listWorkspace("scanned_empty", nil)
		mustPut(t, s, ew, ec)
		n := 0
		for _, err := range s.ScanItems(ctx, ew.ID) {
			if err != nil {
				t.Fatalf("ScanItems: %v", err)
			}
			n++
		}
		if n != 0 {
			t.Errorf("ScanItems of an empty list yielded %d items", n)
		}
	})
}

// checkList fails the test unless the list id holds want, as seen through
// Stat, Items and ScanItems.
func checkList(t *testing.T, s store.Store, id string, want []json.RawMessage) {
	t.Helper()
	if ws := mustStat(t, s, id); ws.Items != len(want) {
		t.Errorf("Stat(%q).Items = %d, want %d", id, ws.Items, len(want))
	}
	checkItems(t, "Items", mustItems(t, s, id), want)
	var scanned []json.RawMessage
	for item, err := range s.ScanItems(t.Context(), id) {
		if err != nil {
			t.Fatalf("ScanItems(%q): %v", id, err)
		}
		scanned = append(scanned, item)
	}
	checkItems(t, "ScanItems", scanned, want)
}

// testAppendItems checks that appended items land at the end and update the
// counts.
func testAppendItems(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := titled("first", "second", "third")
	ws, c := listWorkspace("appended", want)
	mustPut(t, s, ws, c)

	more := titled("fourth", "fifth")
	if err := s.AppendItems(ctx, ws.ID, more); err != nil {
		t.Fatalf("AppendItems: %v", err)
	}
	want = append(want, more...)
	checkList(t, s, ws.ID, want)
	if got := mustStat(t, s, ws.ID); got.Chars <= ws.Chars {
		t.Errorf("Stat.Chars after AppendItems = %d, want more than %d", got.Chars, ws.Chars)
	}

	for _, empty := range [][]json.RawMessage{nil, {}} {
		if err := s.AppendItems(ctx, ws.ID, empty); err != nil {
			t.Errorf("AppendItems(%v): %v", empty, err)
		}
	}
	checkList(t, s, ws.ID, want)

	// Many at once, of mixed JSON types.
	batch := numbered(500)
	batch = append(batch, rawItems(`"a string"`, `[1,2]`, `null`, `true`, `3.5`)...)
	if err := s.AppendItems(ctx, ws.ID, batch); err != nil {
		t.Fatalf("AppendItems(batch): %v", err)
	}
	want = append(want, batch...)
	checkList(t, s, ws.ID, want)

	// Appending to an empty list.
	ew, ec := listWorkspace("appended_empty", nil)
	mustPut(t, s, ew, ec)
	if err := s.AppendItems(ctx, ew.ID, titled("only")); err != nil {
		t.Fatalf("AppendItems to an empty list: %v", err)
	}
	checkList(t, s, ew.ID, titled("only"))
}

// testUpdateItem checks that UpdateItem replaces one item and refuses
// indexes outside the list.
func testUpdateItem(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := titled("zero", "one", "two")
	ws, c := listWorkspace("updated", want)
	mustPut(t, s, ws, c)

	updates := []struct {
		index int
		item  string
	}{
		{1, `{"title":"uno","extra":[1,2]}`},
		{0, `"now a string"`},
		{2, `{"title":"two","n":null}`},
	}
	for _, u := range updates {
		if err := s.UpdateItem(ctx, ws.ID, u.index, json.RawMessage(u.item)); err != nil {
			t.Fatalf("UpdateItem(%d): %v", u.index, err)
		}
		want[u.index] = json.RawMessage(u.item)
		checkList(t, s, ws.ID, want)
	}

	for _, i := range []int{-1, 3, 4, 1 << 30} {
		err := s.UpdateItem(ctx, ws.ID, i, json.RawMessage(`{"title":"bad"}`))
		wantErr(t, err, store.ErrOutOfRange, fmt.Sprintf("UpdateItem(%d)", i))
	}
	checkList(t, s, ws.ID, want)
}

// testPatchItem checks RFC 7386 merge patches, using the examples of the
// RFC's appendix whose target and patch are objects.
func testPatchItem(t *testing.T, s store.Store) {
	ctx := t.Context()
	cases := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{`{"a":1,"b":{"c":2,"d":3}}`, `{}`, `{"a":1,"b":{"c":2,"d":3}}`},
		{`{"k":"v"}`, `{"k":"ü 日本 😀","n":{"deep":{"deeper":[null]}}}`, `{"k":"ü 日本 😀","n":{"deep":{"deeper":[null]}}}`},
	}
	targets := make([]json.RawMessage, len(cases))
	for i, tc := range cases {
		targets[i] = json.RawMessage(tc.target)
	}
	// Non-object items that patches must refuse.
	nonObjects := rawItems(`"a string"`, `[1,2]`, `42`, `null`)
	ws, c := listWorkspace("patched", append(slices.Clone(targets), nonObjects...))
	mustPut(t, s, ws, c)

	want := append(slices.Clone(targets), nonObjects...)
	for i, tc := range cases {
		if err := s.PatchItem(ctx, ws.ID, i, json.RawMessage(tc.patch)); err != nil {
			t.Errorf("PatchItem(%d, %s): %v", i, tc.patch, err)
			continue
		}
		want[i] = json.RawMessage(tc.want)
	}
	checkList(t, s, ws.ID, want)

	for i := range nonObjects {
		index := len(cases) + i
		if err := s.PatchItem(ctx, ws.ID, index, json.RawMessage(`{"a":1}`)); err == nil {
			t.Errorf("PatchItem on the non-object item %s: no error", nonObjects[i])
		}
	}
	for _, bad := range []string{`{"a":`, `not json`, ``, `{"c":3}}`, `{"c":3} {"d":4}`, `[{"c":3}]`, `null`} {
		if err := s.PatchItem(ctx, ws.ID, 0, json.RawMessage(bad)); err == nil {
			t.Errorf("PatchItem with the invalid patch %q: no error", bad)
		}
	}
	for _, i := range []int{-1, len(want), len(want) + 10} {
		err := s.PatchItem(ctx, ws.ID, i, json.RawMessage(`{"a":1}`))
		wantErr(t, err, store.ErrOutOfRange, fmt.Sprintf("PatchItem(%d)", i))
	}
	checkList(t, s, ws.ID, want)
}

// testPatchItemPreserves checks what PatchItem keeps of an item as
// written: its members in their order, new keys after them, keys and
// values byte for byte (escapes, digits), whitespace between tokens aside.
func testPatchItemPreserves(t *testing.T, s store.Store) {
	ctx := t.Context()
	cases := []struct{ target, patch, want string }{
		{`{"z":1,"y":{"x":2,"w":3},"v":4}`, `{"y":{"x":20,"u":5},"a":0}`, `{"z":1,"y":{"x":20,"w":3,"u":5},"v":4,"a":0}`},
		{`{"big":12345678901234567890,"f":1.50,"e":1E+2}`, `{"g":1e400,"f":2.50}`, `{"big":12345678901234567890,"f":2.50,"e":1E+2,"g":1e400}`},
		{`{"s":"\u00e9\/<>&","\u006b":"v"}`, `{"t":"a\"b\u0000"}`, `{"s":"\u00e9\/<>&","\u006b":"v","t":"a\"b\u0000"}`},
		{`{"k":"v"}`, `{"\u006b":"w"}`, `{"k":"w"}`},
		{"{ \"a\" : [ 1 , 2 ] ,\n \"b\" : { } }", `{"c":true}`, `{"a":[1,2],"b":{},"c":true}`},
		{`{"a":1,"b":2}`, `{"a":null}`, `{"b":2}`},
	}
	items := make([]json.RawMessage, len(cases))
	for i, tc := range cases {
		items[i] = json.RawMessage(tc.target)
	}
	ws, c := listWorkspace("preserved", items)
	mustPut(t, s, ws, c)
	for i, tc := range cases {
		if err := s.PatchItem(ctx, ws.ID, i, json.RawMessage(tc.patch)); err != nil {
			t.Fatalf("PatchItem(%s, %s): %v", tc.target, tc.patch, err)
		}
		got, err := s.Items(ctx, ws.ID, i, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("Items(%d): %s, %v", i, got, err)
		}
		if string(got[0]) != tc.want {
			t.Errorf("PatchItem(%s, %s) stored %s, want %s", tc.target, tc.patch, got[0], tc.want)
		}
	}
}

// testDeleteItems checks that DeleteItems removes the given indexes (later
// items move up, duplicates count once) and removes nothing when any index
// is out of range.
func testDeleteItems(t *testing.T, s store.Store) {
	ctx := t.Context()
	all := numbered(10)
	ws, c := listWorkspace("deleted", all)
	mustPut(t, s, ws, c)

	if err := s.DeleteItems(ctx, ws.ID, []int{7, 2, 2, 0}); err != nil {
		t.Fatalf("DeleteItems: %v", err)
	}
	want := []json.RawMessage{all[1], all[3], all[4], all[5], all[6], all[8], all[9]}
	checkList(t, s, ws.ID, want)
	if got, err := s.Items(ctx, ws.ID, 2, 2); err != nil {
		t.Fatalf("Items: %v", err)
	} else {
		checkItems(t, "Items(2, 2) after DeleteItems", got, want[2:4])
	}
	if got := mustStat(t, s, ws.ID); got.Chars >= ws.Chars {
		t.Errorf("Stat.Chars after DeleteItems = %d, want less than %d", got.Chars, ws.Chars)
	}

	for _, bad := range [][]int{{1, 7}, {-1}, {0, 1 << 30}, {6, 0, 100}} {
		err := s.DeleteItems(ctx, ws.ID, bad)
		wantErr(t, err, store.ErrOutOfRange, fmt.Sprintf("DeleteItems(%v)", bad))
	}
	checkList(t, s, ws.ID, want)

	for _, none := range [][]int{nil, {}} {
		if err := s.DeleteItems(ctx, ws.ID, none); err != nil {
			t.Errorf("DeleteItems(%v): %v", none, err)
		}
	}
	checkList(t, s, ws.ID, want)

	if err := s.DeleteItems(ctx, ws.ID, []int{6, 5, 4, 3, 2, 1, 0}); err != nil {
		t.Fatalf("DeleteItems(all): %v", err)
	}
	checkList(t, s, ws.ID, nil)
	if err := s.AppendItems(ctx, ws.ID, all[:2]); err != nil {
		t.Fatalf("AppendItems after deleting everything: %v", err)
	}
	checkList(t, s, ws.ID, all[:2])
}

// checkHits fails the test unless every hit's Item is the list item at its
// Index, hits are ranked by distinct terms, and indexes are distinct.
func checkHits(t *testing.T, call string, hits []store.Hit, items []json.RawMessage) {
	t.Helper()
	seen := map[int]bool{}
	for i, h := range hits {
		if h.Index < 0 || h.Index >= len(items) {
			t.Errorf("%s: hit %d has index %d outside the list of %d", call, i, h.Index, len(items))
			continue
		}
		if seen[h.Index] {
			t.Errorf("%s: index %d returned twice", call, h.Index)
		}
		seen[h.Index] = true
		if !jsonEqual(h.Item, items[h.Index]) {
			t.Errorf("%s: hit %d has item %s, but item %d is %s", call, i, h.Item, h.Index, items[h.Index])
		}
		if h.Terms < 1 {
			t.Errorf("%s: hit %d matched %d terms", call, i, h.Terms)
		}
		if i > 0 {
			prev := hits[i-1]
			if h.Terms > prev.Terms {
				t.Errorf("%s: hit %d (%d terms) ranks below hit %d (%d terms)", call, i, h.Terms, i-1, prev.Terms)
			} else if h.Terms == prev.Terms && h.Score > prev.Score {
				t.Errorf("%s: hit %d (score %v) ranks below hit %d (score %v) with as many terms", call, i, h.Score, i-1, prev.Score)
			}
		}
	}
}

// hitIndexes returns the indexes of hits, in order.
func hitIndexes(hits []store.Hit) []int {
	out := make([]int, len(hits))
	for i, h := range hits {
		out[i] = h.Index
	}
	return out
}

// testSearchItems checks ranking, case, field restriction, totals, limits,
// substring terms and hostile queries.
func testSearchItems(t *testing.T, s store.Store) {
	ctx := t.Context()
	items := rawItems(
		/* 0 */ `{"title":"alpha only"}`,
		/* 1 */ `{"title":"alpha beta"}`,
		/* 2 */ `{"title":"nothing here"}`,
		/* 3 */ `{"title":"gamma beta alpha"}`,
		/* 4 */ `{"title":"beta"}`,
		/* 5 */ `{"name":"Kubernetes Cluster","city":"ÉCOLE"}`,
		/* 6 */ `{"author":{"name":"zed"},"title":"about nobody"}`,
		/* 7 */ `{"author":{"name":"amy"},"title":"zed story"}`,
		/* 8 */ `{"tags":["red","blue"],"title":"colors"}`,
		/* 9 */ `{"text":"I love C++ and Go"}`,
		/* 10 */ `{"text":"C# rocks"}`,
		/* 11 */ `{"text":"send an e-mail"}`,
		/* 12 */ `{"text":"email me"}`,
		/* 13 */ `{"text":"a recursive descent parser"}`,
		/* 14 */ `{"zebrafield":"value","n":424242,"ok":true}`,
		/* 15 */ `{"text":"50% off","code":"abc"}`,
		/* 16 */ `"a bare string item about gamma"`,
		/* 17 */ `{"deep":{"deeper":{"deepest":["needle"]}}}`,
	)
	ws, c := listWorkspace("searched", items)
	mustPut(t, s, ws, c)

	cases := []struct {
		name   string
		q      store.Query
		want   []int // exact order; nil with set to compare as a set
		set    []int
		total  int
		nTerms []int // Terms of each hit, when checked
	}{
		{name: "distinct terms rank first", q: store.Query{Text: "alpha beta gamma"},
			want: []int{3, 1}, set: []int{3, 1, 0, 4, 16}, total: 5, nTerms: []int{3, 2, 1, 1, 1}},
		{name: "upper-case query", q: store.Query{Text: "KUBERNETES"}, want: []int{5}, total: 1},
		{name: "upper-case item", q: store.Query{Text: "cluster"}, want: []int{5}, total: 1},
		{name: "non-ASCII case", q: store.Query{Text: "école"}, want: []int{5}, total: 1},
		{name: "every field by default", q: store.Query{Text: "zed"}, set: []int{6, 7}, total: 2},
		{name: "nested field", q: store.Query{Text: "zed", Fields: []string{"author.name"}}, want: []int{6}, total: 1},
		{name: "top-level field", q: store.Query{Text: "zed", Fields: []string{"title"}}, want: []int{7}, total: 1},
		{name: "two fields", q: store.Query{Text: "zed", Fields: []string{"title", "author.name"}}, set: []int{6, 7}, total: 2},
		{name: "array field", q: store.Query{Text: "blue", Fields: []string{"tags"}}, want: []int{8}, total: 1},
		{name: "array element", q: store.Query{Text: "blue", Fields: []string{"tags.1"}}, want: []int{8}, total: 1},
		{name: "other array element", q: store.Query{Text: "blue", Fields: []string{"tags.0"}}, total: 0},
		{name: "object field", q: store.Query{Text: "needle", Fields: []string{"deep.deeper"}}, want: []int{17}, total: 1},
		{name: "missing field", q: store.Query{Text: "zed", Fields: []string{"nope"}}, total: 0},
		{name: "deep value", q: store.Query{Text: "needle"}, want: []int{17}, total: 1},
		{name: "symbols", q: store.Query{Text: "c++"}, want: []int{9}, total: 1},
		{name: "hash", q: store.Query{Text: "C#"}, want: []int{10}, total: 1},
		{name: "hyphen", q: store.Query{Text: "e-mail"}, want: []int{11}, total: 1},
		{name: "plain word", q: store.Query{Text: "email"}, want: []int{12}, total: 1},
		{name: "prefix fragment", q: store.Query{Text: "parse"}, want: []int{13}, total: 1},
		{name: "number", q: store.Query{Text: "424242"}, want: []int{14}, total: 1},
		{name: "keys never match", q: store.Query{Text: "zebrafield"}, total: 0},
		{name: "percent is literal", q: store.Query{Text: "%"}, want: []int{15}, total: 1},
		{name: "underscore is literal", q: store.Query{Text: "a_c"}, total: 0},
		{name: "scalar item", q: store.Query{Text: "bare"}, want: []int{16}, total: 1},
		{name: "no match", q: store.Query{Text: "xylophone"}, total: 0},
		{name: "empty query", q: store.Query{Text: ""}, total: 0},
		{name: "blank query", q: store.Query{Text: "  \t\n "}, total: 0},
		{name: "quotes only", q: store.Query{Text: `"" ''`}, total: 0},
		{name: "FTS keyword is a term", q: store.Query{Text: "AND"}, want: []int{9}, total: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits, total := mustSearch(t, s, ws.ID, tc.q)
			checkHits(t, "SearchItems", hits, items)
			if total != tc.total {
				t.Errorf("SearchItems(%+v): total %d, want %d (hits %v)", tc.q, total, tc.total, hitIndexes(hits))
			}
			got := hitIndexes(hits)
			if tc.want != nil && !slices.Equal(got[:min(len(tc.want), len(got))], tc.want) {
				t.Errorf("SearchItems(%+v) = %v, want %v first", tc.q, got, tc.want)
			}
			wantSet := tc.set
			if wantSet == nil {
				wantSet = tc.want
			}
			if !sameSet(got, wantSet) {
				t.Errorf("SearchItems(%+v) = %v, want the items %v", tc.q, got, wantSet)
			}
			if tc.nTerms != nil {
				terms := make([]int, len(hits))
				for i, h := range hits {
					terms[i] = h.Terms
				}
				if !slices.Equal(terms, tc.nTerms) {
					t.Errorf("SearchItems(%+v): Terms %v, want %v", tc.q, terms, tc.nTerms)
				}
			}
		})
	}

	t.Run("hostile queries", func(t *testing.T) {
		// Query syntax of FTS engines and SQL must be taken literally: no
		// error, and no match unless an item contains the text.
		queries := []string{`"`, `'`, `*`, `foo*`, `(`, `)`, `a:b`, `^x`, `-`, `+`, `{}`, `\`,
			`NEAR(alpha beta)`, `alpha OR`, `NOT alpha`, `alpha AND`, `' OR 1=1 --`, `"; DROP TABLE x; --`,
			`title:alpha`, `[`, `$.title`, `\u0000`, "\x00", "\xff\xfe"}
		for _, q := range queries {
			if _, _, err := s.SearchItems(ctx, ws.ID, store.Query{Text: q}); err != nil {
				t.Errorf("SearchItems(%q): %v", q, err)
			}
		}
		long := ""
		for i := range 100 {
			long += fmt.Sprintf("term%d ", i)
		}
		if _, total := mustSearch(t, s, ws.ID, store.Query{Text: long + " alpha"}); total != 3 {
			t.Errorf("SearchItems(100 terms + alpha): total %d, want 3", total)
		}
	})
}

// testSearchItemsRepeatedKey checks that a key an object repeats is
// searched with its last value only, the one a JSON decoder keeps (and
// the one every reader of items sees), with and without fields.
func testSearchItemsRepeatedKey(t *testing.T, s store.Store) {
	items := rawItems(
		/* 0 */ `{"k":"alpha","k":"bravo"}`,
		/* 1 */ `{"k":{"deep":"charlie"},"n":"delta","k":"echo"}`,
		/* 2 */ `{"k":"foxtrot","\u006b":"golf"}`,
		/* 3 */ `{"o":{"k":"hotel","k":"india"}}`,
		/* 4 */ `[{"k":"juliett"},{"k":"kilo"}]`,
	)
	ws, c := listWorkspace("repeated", items)
	mustPut(t, s, ws, c)
	for _, tc := range []struct {
		q    store.Query
		want []int
	}{
		{store.Query{Text: "alpha"}, nil},
		{store.Query{Text: "bravo"}, []int{0}},
		{store.Query{Text: "charlie"}, nil},
		{store.Query{Text: "delta"}, []int{1}},
		{store.Query{Text: "echo"}, []int{1}},
		{store.Query{Text: "foxtrot"}, nil},
		{store.Query{Text: "golf"}, []int{2}},
		{store.Query{Text: "hotel"}, nil},
		{store.Query{Text: "india"}, []int{3}},
		{store.Query{Text: "juliett kilo"}, []int{4}}, // array elements are not keys
		{store.Query{Text: "alpha bravo", Fields: []string{"k"}}, []int{0}},
		{store.Query{Text: "charlie echo", Fields: []string{"k"}}, []int{1}},
		{store.Query{Text: "hotel india", Fields: []string{"o.k"}}, []int{3}},
	} {
		hits, total := mustSearch(t, s, ws.ID, tc.q)
		if got := hitIndexes(hits); !sameSet(got, tc.want) || total != len(tc.want) {
			t.Errorf("SearchItems(%+v) = %v (total %d), want %v", tc.q, got, total, tc.want)
		}
		for _, h := range hits {
			if h.Terms != 1 && h.Index != 4 {
				t.Errorf("SearchItems(%+v): item %d matched %d terms, want 1", tc.q, h.Index, h.Terms)
			}
		}
	}
}

// testSearchItemsLimit checks Limit, the default limit, totals beyond the
// limit and ties broken by index.
func testSearchItemsLimit(t *testing.T, s store.Store) {
	var items []json.RawMessage
	for i := range 40 {
		if i%3 == 0 {
			items = append(items, titled("unrelated filler")...)
		} else {
			items = append(items, titled("same words here")...)
		}
	}
	matching := []int{}
	for i := range items {
		if i%3 != 0 {
			matching = append(matching, i)
		}
	}
	ws, c := listWorkspace("limited", items)
	mustPut(t, s, ws, c)

	for _, tc := range []struct{ limit, want int }{{0, 10}, {1, 1}, {5, 5}, {10, 10}, {26, 26}, {1000, 26}} {
		hits, total := mustSearch(t, s, ws.ID, store.Query{Text: "same words", Limit: tc.limit})
		checkHits(t, "SearchItems", hits, items)
		if total != len(matching) {
			t.Errorf("SearchItems(Limit %d): total %d, want %d", tc.limit, total, len(matching))
		}
		// Identical items tie on every other criterion, so index decides.
		if got := hitIndexes(hits); !slices.Equal(got, matching[:tc.want]) {
			t.Errorf("SearchItems(Limit %d) = %v, want %v", tc.limit, got, matching[:tc.want])
		}
	}
}

// testSearchItemsAfterMutation checks that search follows every mutation:
// new items are found, changed ones are found by their new text only, and
// indexes shift after deletions.
func testSearchItemsAfterMutation(t *testing.T, s store.Store) {
	ctx := t.Context()
	items := titled("apple pie", "banana split", "cherry tart")
	ws, c := listWorkspace("mutated_search", items)
	mustPut(t, s, ws, c)
	search := func(q string) []int {
		t.Helper()
		hits, total := mustSearch(t, s, ws.ID, store.Query{Text: q})
		checkHits(t, "SearchItems("+q+")", hits, items)
		if total != len(hits) {
			t.Errorf("SearchItems(%q): total %d for %d hits", q, total, len(hits))
		}
		got := hitIndexes(hits)
		slices.Sort(got)
		return got
	}
	expect := func(step, q string, want ...int) {
		t.Helper()
		if got := search(q); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("after %s: SearchItems(%q) = %v, want %v", step, q, got, want)
		}
	}

	if err := s.AppendItems(ctx, ws.ID, titled("apple crumble")); err != nil {
		t.Fatalf("AppendItems: %v", err)
	}
	items = append(items, titled("apple crumble")...)
	expect("append", "apple", 0, 3)
	expect("append", "crumble", 3)

	if err := s.UpdateItem(ctx, ws.ID, 1, titled("dragonfruit bowl")[0]); err != nil {
		t.Fatalf("UpdateItem: %v", err)
	}
	items[1] = titled("dragonfruit bowl")[0]
	expect("update", "banana")
	expect("update", "dragonfruit", 1)

	if err := s.PatchItem(ctx, ws.ID, 2, json.RawMessage(`{"title":"kiwi tart","note":"sour"}`)); err != nil {
		t.Fatalf("PatchItem: %v", err)
	}
	items[2] = json.RawMessage(`{"title":"kiwi tart","note":"sour"}`)
	expect("patch", "cherry")
	expect("patch", "kiwi", 2)
	expect("patch", "sour", 2)
	expect("patch", "tart", 2)

	if err := s.PatchItem(ctx, ws.ID, 2, json.RawMessage(`{"note":null}`)); err != nil {
		t.Fatalf("PatchItem: %v", err)
	}
	items[2] = json.RawMessage(`{"title":"kiwi tart"}`)
	expect("patch deleting a key", "sour")

	if err := s.DeleteItems(ctx, ws.ID, []int{0}); err != nil {
		t.Fatalf("DeleteItems: %v", err)
	}
	items = items[1:]
	expect("delete", "apple", 2)
	expect("delete", "kiwi", 1)
	expect("delete", "pie")
	if n := mustStat(t, s, ws.ID).Items; n != 3 {
		t.Errorf("Stat.Items after the mutations = %d, want 3", n)
	}
}

// testSearchItemsFolds checks that queries match as FTS5's "porter
// unicode61" tokenizer has it: case and the diacritics of Latin letters
// folded, plain words stemmed and matched as prefixes of stems, other
// terms matched in the folded text.
func testSearchItemsFolds(t *testing.T, s store.Store) {
	items := titled(
		/* 0 */ "École primaire",
		/* 1 */ "naïve approach",
		/* 2 */ "ecole",
		/* 3 */ "Runner",
		/* 4 */ "runs quickly",
		/* 5 */ "NAÏVETÉ",
		/* 6 */ "Straße",
		/* 7 */ "code ÉCOLE-X",
	)
	ws, c := listWorkspace("folded", items)
	mustPut(t, s, ws, c)
	for _, tc := range []struct {
		q    string
		want []int
	}{
		{"ecole", []int{0, 2, 7}},
		{"ÉCOLE", []int{0, 2, 7}},
		{"naive", []int{1, 5}},   // naïveté stems to naivet
		{"running", []int{3, 4}}, // stem run: runner, runs
		{"y", nil},               // no word starts with y: quickly is not matched inside
		{"ecole-x", []int{7}},    // a term with a symbol is matched in the folded text
		{"straße", []int{6}},
		{"strasse", nil},
	} {
		hits, total := mustSearch(t, s, ws.ID, store.Query{Text: tc.q})
		checkHits(t, "SearchItems", hits, items)
		if got := hitIndexes(hits); !sameSet(got, tc.want) || total != len(tc.want) {
			t.Errorf("SearchItems(%q) = %v, total %d; want %v", tc.q, got, total, tc.want)
		}
	}
}

// testSearchItemsRelevance checks the order of hits where BM25 decides it:
// among items with the same distinct terms, more occurrences in an item of
// the same length rank higher, a longer item lower, a rarer term higher,
// and identical items by index.
func testSearchItemsRelevance(t *testing.T, s store.Store) {
	items := titled(
		/* 0 */ "alpha beta "+strings.Repeat("kkkkkkkkkk ", 10), // both terms, long
		/* 1 */ "beta mmmmm", // beta only
		/* 2 */ "gamma",
		/* 3 */ "alpha mmmm", // alpha only, as long as 1 and 5
		/* 4 */ "alpha beta kkkkkkkkkkk", // both terms, as long as 6
		/* 5 */ "beta mmmmm", // as 1
		/* 6 */ "alpha alpha alpha beta", // both terms, alpha three times
		/* 7 */ "delta",
		/* 8 */ "gamma delta",
		/* 9 */ "epsilon",
		/* 10 */ "zeta",
		/* 11 */ "eta",
		/* 12 */ "theta",
		/* 13 */ "iota",
	)
	ws, c := listWorkspace("relevance", items)
	mustPut(t, s, ws, c)
	// alpha is in 4 of the 14 items and beta in 5: alpha is the rarer.
	// Two terms first: 6 (alpha thrice), 4, then 0 (long). Then one term:
	// 3 (alpha), then 1 and 5 (beta, identical) by index.
	for _, q := range []string{"alpha beta", "beta alpha"} {
		hits, total := mustSearch(t, s, ws.ID, store.Query{Text: q})
		checkHits(t, "SearchItems", hits, items)
		if got, want := hitIndexes(hits), []int{6, 4, 0, 3, 1, 5}; !slices.Equal(got, want) || total != len(want) {
			t.Errorf("SearchItems(%q) = %v, total %d; want %v", q, got, total, want)
		}
		for i := 1; i < len(hits); i++ {
			if h, prev := hits[i], hits[i-1]; h.Terms == prev.Terms && h.Score > prev.Score {
				t.Errorf("SearchItems(%q): hit %d (score %v) ranks below hit %d (score %v)", q, i, h.Score, i-1, prev.Score)
			}
		}
	}
}

// sameSet reports whether a and b hold the same ints, ignoring order.
func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
