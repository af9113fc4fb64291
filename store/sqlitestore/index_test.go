package sqlitestore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// indexedRows returns the rowids the FTS table holds in a workspace's id
// range, and whether the workspace is marked indexed.
func indexedRows(t *testing.T, s *Store, table, id string) ([]int64, bool) {
	t.Helper()
	var key int64
	var indexed bool
	if err := s.r.QueryRowContext(t.Context(), `SELECT key, indexed FROM workspaces WHERE id = ?`, id).Scan(&key, &indexed); err != nil {
		t.Fatalf("workspace %s: %v", id, err)
	}
	rows, err := s.r.QueryContext(t.Context(), `SELECT rowid FROM `+table+` WHERE rowid >= ? AND rowid < ?`, idBase(key), idBase(key+1))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, indexed
}

// checkIndexed fails unless the list id is marked indexed and the index
// holds exactly its items.
func checkIndexed(t *testing.T, s *Store, id string, want bool) {
	t.Helper()
	got, indexed := indexedRows(t, s, "items_fts", id)
	if indexed != want {
		t.Fatalf("%s: indexed = %v, want %v", id, indexed, want)
	}
	var items []int64
	rows, err := s.r.QueryContext(t.Context(), `SELECT i.id FROM items i JOIN workspaces w ON i.ws = w.key WHERE w.id = ? ORDER BY i.id`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		items = append(items, n)
	}
	if !want {
		items = nil
	}
	if !slices.Equal(got, items) {
		t.Errorf("%s: index holds rows %v, want %v", id, got, items)
	}
}

func titles(prefix string, n int) []json.RawMessage {
	items := make([]json.RawMessage, n)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"title":"%s%d common","n":%d}`, prefix, i, i))
	}
	return items
}

func searchIndexes(t *testing.T, s *Store, id, q string) []int {
	t.Helper()
	hits, total, err := s.SearchItems(t.Context(), id, store.Query{Text: q, Limit: 1000})
	if err != nil {
		t.Fatalf("SearchItems(%q): %v", q, err)
	}
	if total != len(hits) {
		t.Errorf("SearchItems(%q): total %d, %d hits", q, total, len(hits))
	}
	var out []int
	for _, h := range hits {
		out = append(out, h.Index)
	}
	slices.Sort(out)
	return out
}

// TestIndexLater follows a list that is put without indexing through
// mutations, the search that indexes it, and mutations after that.
func TestIndexLater(t *testing.T) {
	s := openTemp(t, Options{indexInline: -1})
	defer s.Close()
	s.indexer.close() // no background indexing: the search must do it
	ctx := t.Context()
	ws := &store.Workspace{ID: "later", Type: "t", Shape: store.ShapeList, Producer: "p"}
	if err := s.Put(ctx, ws, &store.Content{Items: titles("alpha", 100)}); err != nil {
		t.Fatal(err)
	}
	checkIndexed(t, s, ws.ID, false)

	// Mutations before indexing: deletions leave gaps in the ids.
	if err := s.DeleteItems(ctx, ws.ID, []int{0, 50, 99}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateItem(ctx, ws.ID, 10, json.RawMessage(`{"title":"beta replaced"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendItems(ctx, ws.ID, []json.RawMessage{json.RawMessage(`{"title":"gamma appended"}`)}); err != nil {
		t.Fatal(err)
	}
	checkIndexed(t, s, ws.ID, false)

	if got := searchIndexes(t, s, ws.ID, "beta"); !slices.Equal(got, []int{10}) {
		t.Errorf("search beta = %v, want [10]", got)
	}
	checkIndexed(t, s, ws.ID, true)
	if got := searchIndexes(t, s, ws.ID, "gamma"); !slices.Equal(got, []int{97}) {
		t.Errorf("search gamma = %v, want [97]", got)
	}
	if got := searchIndexes(t, s, ws.ID, "alpha0 alpha50 alpha99 alpha11"); len(got) != 0 {
		t.Errorf("search deleted and replaced titles = %v, want none", got)
	}
	if got := searchIndexes(t, s, ws.ID, "alpha12 alpha98"); !slices.Equal(got, []int{11, 96}) {
		t.Errorf("search alpha12 alpha98 = %v, want [11 96]", got)
	}
	if got := searchIndexes(t, s, ws.ID, "common"); len(got) != 96 {
		t.Errorf("search common = %d hits, want 96", len(got))
	}

	// Mutations after indexing keep the index exact.
	if err := s.DeleteItems(ctx, ws.ID, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.PatchItem(ctx, ws.ID, 0, json.RawMessage(`{"title":"delta patched"}`)); err != nil {
		t.Fatal(err)
	}
	checkIndexed(t, s, ws.ID, true)
	if got := searchIndexes(t, s, ws.ID, "delta"); !slices.Equal(got, []int{0}) {
		t.Errorf("search delta = %v, want [0]", got)
	}

	// Replacing an unindexed workspace, and deleting one.
	if err := s.Put(ctx, ws, &store.Content{Items: titles("epsilon", 5)}); err != nil {
		t.Fatal(err)
	}
	checkIndexed(t, s, ws.ID, false)
	if err := s.Delete(ctx, ws.ID); err != nil {
		t.Fatal(err)
	}
}

// TestIndexLaterText puts a text without indexing and searches it.
func TestIndexLaterText(t *testing.T) {
	s := openTemp(t, Options{indexInline: -1, chunkRunes: 64})
	defer s.Close()
	s.indexer.close()
	text := strings.Repeat("filler words here and there ", 40) + "needle in the haystack " + strings.Repeat("more filler ", 30)
	ws := &store.Workspace{ID: "later_text", Type: "t", Shape: store.ShapeText, Producer: "p"}
	if err := s.Put(t.Context(), ws, &store.Content{Text: text}); err != nil {
		t.Fatal(err)
	}
	if _, indexed := indexedRows(t, s, "chunks_fts", ws.ID); indexed {
		t.Fatal("text indexed inline")
	}
	hits, err := s.SearchText(t.Context(), ws.ID, store.TextQuery{Text: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(strings.Index(text, "needle")); len(hits) != 1 || hits[0].Offset != want {
		t.Errorf("SearchText(needle) = %+v, want one hit at %d", hits, want)
	}
	if rows, indexed := indexedRows(t, s, "chunks_fts", ws.ID); !indexed || len(rows) == 0 {
		t.Errorf("after search: indexed %v, %d chunks in the index", indexed, len(rows))
	}
}

// TestIndexLaterBackground checks that the background indexer indexes a
// list put without indexing, with no search asking for it.
func TestIndexLaterBackground(t *testing.T) {
	s := openTemp(t, Options{indexInline: -1})
	defer s.Close()
	ws := &store.Workspace{ID: "bg", Type: "t", Shape: store.ShapeList, Producer: "p"}
	if err := s.Put(t.Context(), ws, &store.Content{Items: titles("zeta", 300)}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, indexed := indexedRows(t, s, "items_fts", ws.ID); indexed {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	checkIndexed(t, s, ws.ID, true)
}

// TestCheckpointInBackground checks that pages written to the WAL reach the
// database file without any write paying for it: the writer connection
// never checkpoints.
func TestCheckpointInBackground(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	big := strings.Repeat("x", 20<<10)
	items := make([]json.RawMessage, 1000) // 20 MB, more than checkpointBytes
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, big))
	}
	ws := &store.Workspace{ID: "ckpt", Type: "t", Shape: store.ShapeList, Producer: "p"}
	if err := s.Put(t.Context(), ws, &store.Content{Items: items}); err != nil {
		t.Fatal(err)
	}
	for {
		fi, err := os.Stat(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() >= 20<<20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSearchManyContenders checks a search whose candidates are too many to
// score one by one: they rank on their terms alone, then by index, and the
// hits still carry their items.
func TestSearchManyContenders(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	n := textsearch.ScoreCap + 500
	items := make([]json.RawMessage, n)
	for i := range items {
		extra := ""
		if i%1000 == 999 {
			extra = " rare"
		}
		items[i] = json.RawMessage(fmt.Sprintf(`{"i":%d,"t":"common words%s"}`, i, extra))
	}
	ws := &store.Workspace{ID: "many", Type: "t", Shape: store.ShapeList, Producer: "p"}
	if err := s.Put(t.Context(), ws, &store.Content{Items: items}); err != nil {
		t.Fatal(err)
	}
	hits, total, err := s.SearchItems(t.Context(), ws.ID, store.Query{Text: "common rare", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if total != n {
		t.Errorf("total %d, want %d", total, n)
	}
	var got []int
	for _, h := range hits {
		got = append(got, h.Index)
		if string(h.Item) != string(items[h.Index]) {
			t.Errorf("hit %d: item %s, want %s", h.Index, h.Item, items[h.Index])
		}
	}
	// The five items with both terms first, then the first items with one.
	want := []int{999, 1999, 2999, 3999, 4999, 0, 1, 2, 3, 4}
	if !slices.Equal(got, want) {
		t.Errorf("hits %v, want %v", got, want)
	}
}

// TestSearchStaysInWorkspace puts enough workspaces that their keys share
// digits (1 and 12, say) and checks that each search sees its own items.
func TestSearchStaysInWorkspace(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	for i := range 13 {
		ws := &store.Workspace{ID: fmt.Sprintf("ws%d", i), Type: "t", Shape: store.ShapeList, Producer: "p"}
		items := []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"owner":"ws%d","t":"shared words"}`, i))}
		if err := s.Put(t.Context(), ws, &store.Content{Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 13 {
		id := fmt.Sprintf("ws%d", i)
		hits, total, err := s.SearchItems(t.Context(), id, store.Query{Text: "shared ws1"})
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || len(hits) != 1 || !strings.Contains(string(hits[0].Item), `"owner":"`+id+`"`) {
			t.Errorf("search in %s: total %d, hits %+v", id, total, hits)
		}
	}
}

// TestMigrationReindexes checks that a database indexed before index terms
// lost their diacritics is indexed again: its old terms ("écol") would
// never match a query, which is folded ("ecole" → "ecol").
func TestMigrationReindexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	items := []json.RawMessage{json.RawMessage(`{"city":"École"}`), json.RawMessage(`{"city":"Paris"}`)}
	ws := &store.Workspace{ID: "old", Type: "t", Shape: store.ShapeList, Producer: "p"}
	if err := s.Put(t.Context(), ws, &store.Content{Items: items}); err != nil {
		t.Fatal(err)
	}
	tw := &store.Workspace{ID: "oldtext", Type: "t", Shape: store.ShapeText, Producer: "p"}
	if err := s.Put(t.Context(), tw, &store.Content{Text: "une École"}); err != nil {
		t.Fatal(err)
	}
	// What the code before migration 3 indexed: diacritics kept.
	for _, q := range []string{
		`INSERT INTO items_fts (items_fts) VALUES ('delete-all')`,
		`INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')`,
		`INSERT INTO items_fts (rowid, terms) SELECT id, 'k' || ws || 'qécol' FROM items WHERE data LIKE '%cole%'`,
		`INSERT INTO items_fts (rowid, terms) SELECT id, 'k' || ws || 'qpari' FROM items WHERE data LIKE '%Paris%'`,
		`INSERT INTO chunks_fts (rowid, terms) SELECT id, 'k' || ws || 'qune k' || ws || 'qécol' FROM chunks`,
		`PRAGMA user_version = 2`,
	} {
		if _, err := s.w.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()

	s, err = Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hits, total, err := s.SearchItems(t.Context(), ws.ID, store.Query{Text: "ecole"})
	if err != nil || total != 1 || len(hits) != 1 || hits[0].Index != 0 {
		t.Errorf("SearchItems(ecole) after the migration = %+v, total %d, %v; want item 0", hits, total, err)
	}
	if hits, err := s.SearchText(t.Context(), tw.ID, store.TextQuery{Text: "ecole"}); err != nil || len(hits) != 1 || hits[0].Offset != 4 {
		t.Errorf("SearchText(ecole) after the migration = %+v, %v; want offset 4", hits, err)
	}
}
