package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// openDB opens a pool on url and migrates it, closing the pool when tb
// ends.
func openDB(tb testing.TB, url string) *pgdb.DB {
	tb.Helper()
	db, err := pgdb.Open(tb.Context(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	if err := Migrate(tb.Context(), db); err != nil {
		tb.Fatal(err)
	}
	return db
}

// newDB returns a migrated database in a schema of its own.
func newDB(tb testing.TB) *pgdb.DB { return openDB(tb, pgtest.URL(tb)) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return NewStore(newDB(t)) })
}

// TestConformanceSmallChunks runs the suite with tiny text chunks, so that
// every text test crosses many chunk boundaries.
func TestConformanceSmallChunks(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := NewStore(newDB(t))
		s.chunkRunes = 97
		return s
	})
}

func TestKVConformance(t *testing.T) {
	storetest.RunKV(t, func(t *testing.T) store.KV { return NewKV(newDB(t)) })
}

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

func TestKVEach(t *testing.T) {
	ctx := t.Context()
	kv := NewKV(newDB(t))
	type entry struct {
		key, value string
		expires    time.Time
	}
	var want []entry
	// More than a page, keys that sort by bytes, NUL and non-UTF-8 included.
	for i := range eachPage + 10 {
		want = append(want, entry{key: fmt.Sprintf("k/%04d", i), value: fmt.Sprint(i)})
	}
	want = append(want,
		entry{key: "a\x00b", value: "nul"},
		entry{key: "\xff\xfe", value: "bytes"},
		entry{key: "é", value: "later", expires: t0.Add(time.Hour)},
	)
	for _, e := range want {
		var ttl time.Duration
		if !e.expires.IsZero() {
			ttl = e.expires.Sub(t0)
		}
		if err := kv.Put(ctx, e.key, []byte(e.value), t0, ttl); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Put(ctx, "expired", []byte("x"), t0.Add(-time.Hour), time.Minute); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, func(a, b entry) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	var got []entry
	err := kv.Each(ctx, t0, func(key string, value []byte, expires time.Time) error {
		got = append(got, entry{key, string(value), expires})
		// fn may use the store.
		_, err := kv.Get(ctx, key, t0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Each gave %d entries, want %d:\n%+v\nwant\n%+v", len(got), len(want), got, want)
	}
	// At a later time, the expiring key is gone.
	n := 0
	if err := kv.Each(ctx, t0.Add(2*time.Hour), func(string, []byte, time.Time) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != len(want)-1 {
		t.Errorf("Each after the expiry: %d entries, want %d", n, len(want)-1)
	}
	// An error from fn stops the walk.
	stop := errors.New("stop")
	calls := 0
	err = kv.Each(ctx, t0, func(string, []byte, time.Time) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Each with fn failing: %v after %d calls, want stop after 1", err, calls)
	}
}

// TestTwoPools checks what several processes sharing one database rely
// on, with two pools on one schema: a Put through one is seen by the
// other, and concurrent appends through both lose nothing.
func TestTwoPools(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	a, b := NewStore(openDB(t, url)), NewStore(openDB(t, url))
	ws := &store.Workspace{ID: "shared", Type: "t", Shape: store.ShapeList, Format: "json", Producer: "p", CreatedAt: t0}
	if err := a.Put(ctx, ws, &store.Content{Items: []json.RawMessage{json.RawMessage(`{"n":-1}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Stat(ctx, "shared")
	if err != nil || got.Items != 1 {
		t.Fatalf("Stat through the other pool = %+v, %v", got, err)
	}

	const writers, appends = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*appends)
	for w := range 2 * writers {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for i := range appends {
				item := json.RawMessage(fmt.Sprintf(`{"n":%d,"w":"writer%d"}`, w*appends+i, w))
				if err := s.AppendItems(ctx, "shared", []json.RawMessage{item, item}); err != nil {
					errs <- err
				}
			}
		})
	}
	// Replacing another workspace through both at once, meanwhile.
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			for i := range 10 {
				w := *ws
				w.ID = "replaced"
				items := []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"v":%d}`, i))}
				if err := s.Put(ctx, &w, &store.Content{Items: items}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := 1 + 2*2*writers*appends
	for name, s := range map[string]*Store{"a": a, "b": b} {
		st, err := s.Stat(ctx, "shared")
		if err != nil || st.Items != want {
			t.Fatalf("Stat through %s: %+v, %v; want %d items", name, st, err, want)
		}
		seen := map[int]int{}
		i := 0
		for item, err := range s.ScanItems(ctx, "shared") {
			if err != nil {
				t.Fatal(err)
			}
			var v struct{ N int }
			if err := json.Unmarshal(item, &v); err != nil {
				t.Fatal(err)
			}
			seen[v.N]++
			i++
		}
		if i != want || len(seen) != 1+2*writers*appends {
			t.Errorf("scan through %s: %d items, %d distinct; want %d, %d", name, i, len(seen), want, 1+2*writers*appends)
		}
		for n, c := range seen {
			if n >= 0 && c != 2 {
				t.Errorf("item %d appended %d times, want 2", n, c)
			}
		}
		// Positions are dense: the last item is at want-1.
		last, err := s.Items(ctx, "shared", want-1, 10)
		if err != nil || len(last) != 1 {
			t.Errorf("Items at %d through %s = %d items, %v", want-1, name, len(last), err)
		}
		hits, total, err := s.SearchItems(ctx, "shared", store.Query{Text: "writer3"})
		if err != nil || total != 2*appends || len(hits) != 10 {
			t.Errorf("search through %s: %d hits of %d, %v; want 10 of %d", name, len(hits), total, err, 2*appends)
		}
		items, err := s.Items(ctx, "replaced", 0, 10)
		if err != nil || len(items) != 1 {
			t.Errorf("replaced workspace through %s: %s, %v; want one item", name, items, err)
		}
	}
}

// TestMigrateTwice checks that migrating a current schema again changes
// nothing.
func TestMigrateTwice(t *testing.T) {
	db := newDB(t)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return NewStore(newDB(b)) })
}
