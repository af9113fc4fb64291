// Package storetest holds the conformance suites every backend must pass:
// [Run] for the workspaces ([store.Store]), [RunRegistry] for the vault
// registry, [RunKV] for the key-value store, and [RunBackend] for a whole
// [store.Backend] (which runs the registry and key-value suites, and the
// index and episode suites of packages indextest and episodictest, on the
// stores the backend hands out).
//
// A backend's own test file runs them against fresh stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			path := filepath.Join(t.TempDir(), "ctxkit.db")
//			s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
//	func BenchmarkStore(b *testing.B) {
//		storetest.Bench(b, func(b *testing.B) store.Store { ... })
//	}
//
// The suites check only what the store package documents, so that every
// backend is held to the same contract and callers can swap one for
// another. Queries mean the same on every backend
// (internal/textsearch): the suite checks case and diacritics folding,
// stemming, and the order relevance gives where term frequency, length and
// rarity decide it, but not exact scores. Times are compared at microsecond precision, and JSON
// (Args, Schema, Meta, items, dict values) is compared by value, not by bytes,
// except for [store.Store.Raw], which must return the original bytes exactly.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

// Run runs the conformance tests, each as a subtest against a fresh store
// returned by open. Run closes every store it opens (and fails the test if
// Close fails), so open should not close it; open may register its own
// cleanup (removing files, dropping a schema), which runs after the close.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// tests lists the suite, grouped by the part of the contract they check.
var tests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"PutStat", testPutStat},
	{"PutReplace", testPutReplace},
	{"PutConflict", testPutConflict},
	{"NotFound", testNotFound},
	{"WrongShape", testWrongShape},
	{"List", testList},
	{"Touch", testTouch},
	{"Delete", testDelete},
	{"DeleteExpired", testDeleteExpired},
	{"Raw", testRaw},
	{"Items", testItems},
	{"ScanItems", testScanItems},
	{"AppendItems", testAppendItems},
	{"UpdateItem", testUpdateItem},
	{"PatchItem", testPatchItem},
	{"PatchItemPreserves", testPatchItemPreserves},
	{"DeleteItems", testDeleteItems},
	{"SearchItems", testSearchItems},
	{"SearchItemsRepeatedKey", testSearchItemsRepeatedKey},
	{"SearchItemsLimit", testSearchItemsLimit},
	{"SearchItemsAfterMutation", testSearchItemsAfterMutation},
	{"SearchItemsFolds", testSearchItemsFolds},
	{"SearchItemsRelevance", testSearchItemsRelevance},
	{"Value", testValue},
	{"TextSlice", testTextSlice},
	{"SearchText", testSearchText},
	{"Isolation", testIsolation},
	{"Concurrency", testConcurrency},
	{"Pipe", testPipe},
	{"PipeRandom", testPipeRandom},
	{"PipeErrors", testPipeErrors},
	{"CanceledContext", testCanceledContext},
}

// t0 is the suite's reference time. It has microsecond precision, which every
// backend can store, so round trips can be compared exactly.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// listWorkspace returns a list workspace holding items, with every metadata
// field set to a value consistent with the content.
func listWorkspace(id string, items []json.RawMessage) (*store.Workspace, *store.Content) {
	raw := arrayOf(items)
	chars := utf8.RuneCount(raw)
	return &store.Workspace{
			ID:         id,
			Type:       "search",
			Shape:      store.ShapeList,
			Format:     "json",
			Items:      len(items),
			Chars:      int64(chars),
			Tokens:     chars / 4,
			Schema:     json.RawMessage(`{"type":"object"}`),
			Producer:   "search_tool",
			Args:       json.RawMessage(`{"q":"anything","limit":50}`),
			CreatedAt:  t0,
			AccessedAt: t0,
		}, &store.Content{
			Items: slices.Clone(items),
		}
}

// dictWorkspace returns a dict workspace holding the object v.
func dictWorkspace(id string, v string) (*store.Workspace, *store.Content) {
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		panic(fmt.Sprintf("storetest: bad dict fixture %q: %v", v, err))
	}
	chars := utf8.RuneCountInString(v)
	return &store.Workspace{
			ID:         id,
			Type:       "config",
			Shape:      store.ShapeDict,
			Format:     "json",
			Items:      len(m),
			Chars:      int64(chars),
			Tokens:     chars / 4,
			Schema:     json.RawMessage(`{"type":"object","properties":{}}`),
			Producer:   "config_tool",
			CreatedAt:  t0,
			AccessedAt: t0,
		}, &store.Content{
			Value: json.RawMessage(v),
		}
}

// textWorkspace returns a text workspace holding text.
func textWorkspace(id, text string) (*store.Workspace, *store.Content) {
	chars := utf8.RuneCountInString(text)
	return &store.Workspace{
			ID:         id,
			Type:       "page",
			Shape:      store.ShapeText,
			Format:     "text",
			Chars:      int64(chars),
			Tokens:     chars / 4,
			Producer:   "fetch_tool",
			Args:       json.RawMessage(`{"url":"https://example.com/"}`),
			CreatedAt:  t0,
			AccessedAt: t0,
		}, &store.Content{
			Text: text,
		}
}

// arrayOf serialises items as a JSON array.
func arrayOf(items []json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// rawItems turns JSON texts into items.
func rawItems(texts ...string) []json.RawMessage {
	items := make([]json.RawMessage, len(texts))
	for i, s := range texts {
		items[i] = json.RawMessage(s)
	}
	return items
}

// titled returns items {"title": s} for each s.
func titled(titles ...string) []json.RawMessage {
	items := make([]json.RawMessage, len(titles))
	for i, s := range titles {
		b, err := json.Marshal(map[string]string{"title": s})
		if err != nil {
			panic(err)
		}
		items[i] = b
	}
	return items
}

func mustPut(t *testing.T, s store.Store, ws *store.Workspace, c *store.Content) {
	t.Helper()
	if err := s.Put(t.Context(), ws, c); err != nil {
		t.Fatalf("Put(%q): %v", ws.ID, err)
	}
}

func mustStat(t *testing.T, s store.Store, id string) *store.Workspace {
	t.Helper()
	ws, err := s.Stat(t.Context(), id)
	if err != nil {
		t.Fatalf("Stat(%q): %v", id, err)
	}
	if ws == nil {
		t.Fatalf("Stat(%q) returned nil workspace and nil error", id)
	}
	return ws
}

func mustItems(t *testing.T, s store.Store, id string) []json.RawMessage {
	t.Helper()
	got, err := s.Items(t.Context(), id, 0, 1<<20)
	if err != nil {
		t.Fatalf("Items(%q): %v", id, err)
	}
	return got
}

func mustSearch(t *testing.T, s store.Store, id string, q store.Query) ([]store.Hit, int) {
	t.Helper()
	hits, total, err := s.SearchItems(t.Context(), id, q)
	if err != nil {
		t.Fatalf("SearchItems(%q, %+v): %v", id, q, err)
	}
	return hits, total
}

// wantErr fails the test unless err wraps target.
func wantErr(t *testing.T, err, target error, call string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one wrapping %q", call, err, target)
	}
}

// checkItems fails the test unless got and want hold the same JSON values.
func checkItems(t *testing.T, call string, got, want []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d items %s, want %d %s", call, len(got), arrayOf(got), len(want), arrayOf(want))
		return
	}
	for i := range got {
		if !jsonEqual(got[i], want[i]) {
			t.Errorf("%s: item %d is %s, want %s", call, i, got[i], want[i])
		}
	}
}

// jsonEqual reports whether a and b are the same JSON value. Empty input and
// null count as equal, since a backend may store an absent document either way.
func jsonEqual(a, b []byte) bool {
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	if errA != nil || errB != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func decodeJSON(b []byte) (any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}

// metaJSON normalises Meta for comparison: nil and empty maps are the same.
func metaJSON(m map[string]any) []byte {
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return []byte(fmt.Sprintf("unmarshalable meta: %v", err))
	}
	return b
}

// sameTime compares times at microsecond precision, the finest every
// backend keeps; zero must stay zero.
func sameTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && b.IsZero()
	}
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

// checkWorkspace fails the test for every field of got that differs from want.
func checkWorkspace(t *testing.T, call string, got, want *store.Workspace) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil workspace", call)
		return
	}
	var diffs []string
	diff := func(field string, g, w any) {
		diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", field, g, w))
	}
	if got.ID != want.ID {
		diff("ID", got.ID, want.ID)
	}
	if got.Type != want.Type {
		diff("Type", got.Type, want.Type)
	}
	if got.Shape != want.Shape {
		diff("Shape", got.Shape, want.Shape)
	}
	if got.Format != want.Format {
		diff("Format", got.Format, want.Format)
	}
	if got.Items != want.Items {
		diff("Items", got.Items, want.Items)
	}
	if got.Chars != want.Chars {
		diff("Chars", got.Chars, want.Chars)
	}
	if got.Tokens != want.Tokens {
		diff("Tokens", got.Tokens, want.Tokens)
	}
	if !jsonEqual(got.Schema, want.Schema) {
		diff("Schema", string(got.Schema), string(want.Schema))
	}
	if got.Producer != want.Producer {
		diff("Producer", got.Producer, want.Producer)
	}
	if !jsonEqual(got.Args, want.Args) {
		diff("Args", string(got.Args), string(want.Args))
	}
	if !jsonEqual(metaJSON(got.Meta), metaJSON(want.Meta)) {
		diff("Meta", string(metaJSON(got.Meta)), string(metaJSON(want.Meta)))
	}
	if got.Session != want.Session {
		diff("Session", got.Session, want.Session)
	}
	if !sameTime(got.CreatedAt, want.CreatedAt) {
		diff("CreatedAt", got.CreatedAt, want.CreatedAt)
	}
	if !sameTime(got.AccessedAt, want.AccessedAt) {
		diff("AccessedAt", got.AccessedAt, want.AccessedAt)
	}
	if got.TTL.Truncate(time.Microsecond) != want.TTL.Truncate(time.Microsecond) {
		diff("TTL", got.TTL, want.TTL)
	}
	if !sameTime(got.ExpiresAt, want.ExpiresAt) {
		diff("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	}
	if len(diffs) > 0 {
		t.Errorf("%s: workspace %q differs:\n\t%s", call, want.ID, strings.Join(diffs, "\n\t"))
	}
}

// ids returns the ids of workspaces, in order.
func ids(wss []*store.Workspace) []string {
	out := make([]string, len(wss))
	for i, ws := range wss {
		out[i] = ws.ID
	}
	return out
}

// canceled returns a context that is already canceled.
func canceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
