package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// testIsolation checks that the store neither keeps the caller's slices and
// maps nor hands out its own: changing what went in or came out must not
// change what is stored.
func testIsolation(t *testing.T, s store.Store) {
	ctx := t.Context()
	nested := map[string]any{"x": "original"}
	items := rawItems(`{"a":"original"}`, `{"a":"second"}`)
	ws, c := listWorkspace("isolated", items)
	ws.Meta = map[string]any{"k": "original", "nested": nested, "list": []any{"original"}}
	c.Raw = []byte(`[{"a":"original"}, {"a":"second"}]`)
	dw, dc := dictWorkspace("isolated_dict", `{"k":"original"}`)

	wantWS := *ws
	wantWS.Meta = map[string]any{"k": "original", "nested": map[string]any{"x": "original"}, "list": []any{"original"}}
	wantWS.Args = bytes.Clone(ws.Args)
	wantWS.Schema = bytes.Clone(ws.Schema)
	wantItems := rawItems(`{"a":"original"}`, `{"a":"second"}`)
	wantRaw := bytes.Clone(c.Raw)
	wantDict := bytes.Clone(dc.Value)
	wantDictWS := *dw
	mustPut(t, s, ws, c)
	mustPut(t, s, dw, dc)

	check := func(when string) {
		t.Helper()
		checkWorkspace(t, "Stat "+when, mustStat(t, s, ws.ID), &wantWS)
		checkWorkspace(t, "Stat dict "+when, mustStat(t, s, dw.ID), &wantDictWS)
		checkItems(t, "Items "+when, mustItems(t, s, ws.ID), wantItems)
		if raw, err := s.Raw(ctx, ws.ID); err != nil || !bytes.Equal(raw, wantRaw) {
			t.Errorf("Raw %s = %q, %v; want %q", when, raw, err, wantRaw)
		}
		if v, err := s.Value(ctx, dw.ID); err != nil || !jsonEqual(v, wantDict) {
			t.Errorf("Value %s = %s, %v; want %s", when, v, err, wantDict)
		}
	}

	// Change everything that went in.
	ws.Meta["k"] = "changed"
	ws.Meta["added"] = true
	nested["x"] = "changed"
	ws.Meta["list"].([]any)[0] = "changed"
	ws.Args[2] = 'X'
	ws.Schema[2] = 'X'
	ws.Items = 99
	scribble(c.Items[0])
	scribble(c.Raw)
	scribble(dc.Value)
	check("after changing Put's arguments")

	// Change everything that came out.
	st := mustStat(t, s, ws.ID)
	if st.Meta != nil {
		st.Meta["k"] = "changed"
		if m, ok := st.Meta["nested"].(map[string]any); ok {
			m["x"] = "changed"
		}
		if l, ok := st.Meta["list"].([]any); ok && len(l) > 0 {
			l[0] = "changed"
		}
	}
	scribble(st.Args)
	scribble(st.Schema)
	for _, it := range mustItems(t, s, ws.ID) {
		scribble(it)
	}
	if raw, err := s.Raw(ctx, ws.ID); err == nil {
		scribble(raw)
	}
	if v, err := s.Value(ctx, dw.ID); err == nil {
		scribble(v)
	}
	hits, _ := mustSearch(t, s, ws.ID, store.Query{Text: "original"})
	for _, h := range hits {
		scribble(h.Item)
	}
	for it, err := range s.ScanItems(ctx, ws.ID) {
		if err != nil {
			t.Fatalf("ScanItems: %v", err)
		}
		scribble(it)
	}
	list, err := s.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, w := range list {
		if w.Meta != nil {
			w.Meta["k"] = "changed"
		}
		scribble(w.Args)
	}
	check("after changing results")
}

// scribble overwrites b's bytes so that any alias of it shows the change.
func scribble(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}

// testConcurrency runs many goroutines against one store at once; under
// -race it also checks the backend's synchronisation. It checks that
// concurrent appends are all kept and that readers never see half of a
// replacement.
func testConcurrency(t *testing.T, s store.Store) {
	ctx := t.Context()
	const workers, rounds = 8, 20

	seed := make([]string, 10)
	for i := range seed {
		seed[i] = "seed item"
	}
	shared, sc := listWorkspace("shared", titled(seed...))
	mustPut(t, s, shared, sc)

	version := func(v, n int) []json.RawMessage {
		items := make([]json.RawMessage, n)
		for i := range items {
			items[i] = json.RawMessage(fmt.Sprintf(`{"v":%d,"title":"version %d"}`, v, v))
		}
		return items
	}
	sizes := map[int]int{1: 30, 2: 70}
	fw, fc := listWorkspace("flipping", version(1, sizes[1]))
	mustPut(t, s, fw, fc)

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			own := fmt.Sprintf("own_%02d", w)
			for r := range rounds {
				marker := fmt.Sprintf("w%02dr%03d", w, r)
				ws, c := listWorkspace(own, titled(marker, "common words"))
				ws.Session = "session-" + own
				ws.CreatedAt = t0.Add(time.Duration(r) * time.Second)
				if err := s.Put(ctx, ws, c); err != nil {
					t.Errorf("Put(%s): %v", own, err)
					return
				}
				// Everyone creates or replaces the same id at once.
				cw, cc := listWorkspace("contended", version(w, 5))
				if err := s.Put(ctx, cw, cc); err != nil {
					t.Errorf("Put(contended): %v", err)
				}
				if st, err := s.Stat(ctx, own); err != nil || st.Items != 2 {
					t.Errorf("Stat(%s) = %+v, %v; want 2 items", own, st, err)
				}
				if got, err := s.Items(ctx, own, 0, 10); err != nil || len(got) != 2 {
					t.Errorf("Items(%s) = %d items, %v; want 2", own, len(got), err)
				}
				if hits, total, err := s.SearchItems(ctx, own, store.Query{Text: marker}); err != nil || total != 1 || len(hits) != 1 {
					t.Errorf("SearchItems(%s, %s) = %d hits, total %d, %v; want 1", own, marker, len(hits), total, err)
				}
				if err := s.AppendItems(ctx, shared.ID, titled(marker)); err != nil {
					t.Errorf("AppendItems(shared): %v", err)
				}
				if _, total, err := s.SearchItems(ctx, shared.ID, store.Query{Text: "seed"}); err != nil || total != len(seed) {
					t.Errorf("SearchItems(shared, seed): total %d, %v; want %d", total, err, len(seed))
				}
				if err := s.Touch(ctx, own, t0.Add(time.Hour)); err != nil {
					t.Errorf("Touch(%s): %v", own, err)
				}
				if _, err := s.List(ctx, store.ListOptions{Sessions: []string{"session-" + own, ""}}); err != nil {
					t.Errorf("List: %v", err)
				}

				if w == 0 {
					v := 2 - r%2
					ws, c := listWorkspace(fw.ID, version(v, sizes[v]))
					if err := s.Put(ctx, ws, c); err != nil {
						t.Errorf("Put(flipping): %v", err)
					}
					continue
				}
				got, err := s.Items(ctx, fw.ID, 0, 1000)
				if err != nil {
					t.Errorf("Items(flipping): %v", err)
					continue
				}
				checkVersion(t, "Items(flipping)", got, sizes)
			}
		})
	}
	wg.Wait()

	want := titled(seed...)
	for w := range workers {
		for r := range rounds {
			want = append(want, titled(fmt.Sprintf("w%02dr%03d", w, r))...)
		}
	}
	got := mustItems(t, s, shared.ID)
	if n := mustStat(t, s, shared.ID).Items; n != len(want) || len(got) != len(want) {
		t.Fatalf("after concurrent appends: Stat.Items %d, Items %d, want %d", n, len(got), len(want))
	}
	// Each worker's appends keep their order; workers interleave freely.
	var gotTitles, wantTitles []string
	for _, it := range got {
		gotTitles = append(gotTitles, string(it))
	}
	for _, it := range want {
		wantTitles = append(wantTitles, string(it))
	}
	slices.Sort(gotTitles)
	slices.Sort(wantTitles)
	if !slices.Equal(gotTitles, wantTitles) {
		t.Errorf("after concurrent appends the items differ from the appended ones")
	}
	contended := mustItems(t, s, "contended")
	checkVersion(t, "Items(contended)", contended, nil)
	if st := mustStat(t, s, "contended"); st.Items != len(contended) {
		t.Errorf("Stat(contended).Items = %d, Items returned %d", st.Items, len(contended))
	}
}

// checkVersion fails the test unless items all belong to one version and,
// when sizes is given, there are as many as that version has.
func checkVersion(t *testing.T, call string, items []json.RawMessage, sizes map[int]int) {
	t.Helper()
	v0 := -1
	for i, it := range items {
		var x struct{ V int }
		if err := json.Unmarshal(it, &x); err != nil {
			t.Errorf("%s: item %d = %s: %v", call, i, it, err)
			return
		}
		if v0 == -1 {
			v0 = x.V
		} else if x.V != v0 {
			t.Errorf("%s: item %d is from version %d, item 0 from %d: a torn read", call, i, x.V, v0)
			return
		}
	}
	if sizes != nil && len(items) != sizes[v0] {
		t.Errorf("%s: %d items of version %d, want %d", call, len(items), v0, sizes[v0])
	}
}

// testCanceledContext checks that every method that does I/O refuses a
// canceled context with an error wrapping context.Canceled, and that such
// a refused call changes nothing.
func testCanceledContext(t *testing.T, s store.Store) {
	items := titled("kept one", "kept two")
	lw, lc := listWorkspace("cancel_list", items)
	lw.TTL = time.Hour
	lw.ExpiresAt = lw.CreatedAt.Add(lw.TTL)
	dw, dc := dictWorkspace("cancel_dict", `{"k":"v"}`)
	tw, tc := textWorkspace("cancel_text", "kept text")
	mustPut(t, s, lw, lc)
	mustPut(t, s, dw, dc)
	mustPut(t, s, tw, tc)

	ctx := canceled(t)
	check := func(call string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: error %v, want one wrapping context.Canceled", call, err)
		}
	}
	nw, nc := listWorkspace("cancel_new", titled("never"))
	check("Put", s.Put(ctx, nw, nc))
	_, err := s.Stat(ctx, lw.ID)
	check("Stat", err)
	check("Touch", s.Touch(ctx, lw.ID, t0.Add(time.Minute)))
	_, err = s.List(ctx, store.ListOptions{})
	check("List", err)
	check("Delete", s.Delete(ctx, lw.ID))
	_, err = s.DeleteExpired(ctx, t0.Add(24*time.Hour))
	check("DeleteExpired", err)
	_, err = s.Raw(ctx, lw.ID)
	check("Raw", err)
	_, err = s.Items(ctx, lw.ID, 0, 10)
	check("Items", err)
	var scanErr error
	for _, err := range s.ScanItems(ctx, lw.ID) {
		if err != nil {
			scanErr = err
			break
		}
	}
	check("ScanItems", scanErr)
	_, _, err = s.SearchItems(ctx, lw.ID, store.Query{Text: "kept"})
	check("SearchItems", err)
	check("AppendItems", s.AppendItems(ctx, lw.ID, titled("x")))
	check("UpdateItem", s.UpdateItem(ctx, lw.ID, 0, json.RawMessage(`{"title":"x"}`)))
	check("PatchItem", s.PatchItem(ctx, lw.ID, 0, json.RawMessage(`{"title":"x"}`)))
	check("DeleteItems", s.DeleteItems(ctx, lw.ID, []int{0}))
	_, err = s.Value(ctx, dw.ID)
	check("Value", err)
	_, err = s.TextSlice(ctx, tw.ID, 0, 4)
	check("TextSlice", err)
	_, err = s.SearchText(ctx, tw.ID, store.TextQuery{Text: "kept"})
	check("SearchText", err)

	if _, err := s.Stat(t.Context(), nw.ID); !isNotFound(err) {
		t.Errorf("Stat of a workspace Put with a canceled context: error %v, want ErrNotFound", err)
	}
	checkWorkspace(t, "Stat after canceled calls", mustStat(t, s, lw.ID), lw)
	checkList(t, s, lw.ID, items)
	checkWorkspace(t, "Stat dict after canceled calls", mustStat(t, s, dw.ID), dw)
	checkWorkspace(t, "Stat text after canceled calls", mustStat(t, s, tw.ID), tw)
}
