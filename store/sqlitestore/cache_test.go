package sqlitestore

import (
	"strings"
	"testing"

	"modernc.org/sqlite"

	"github.com/ctxkit/ctxkit/store"
)

// TestWriterCacheBounded checks that a Put larger than the writer's page
// cache, into a new file, leaves no more than writerCachePages pages in that
// cache: the dirty pages of the transaction are spilled to the WAL instead of
// piling up in memory. A cache size given in KiB was converted to pages with
// the 4 KiB default page size on a new file, which let four times as many
// 16 KiB pages accumulate.
func TestWriterCacheBounded(t *testing.T) {
	s := openTemp(t, Options{NoBackgroundIndex: true})
	t.Cleanup(func() { s.Close() })
	// About twice the cache in text, so that the pages must be spilled.
	text := strings.Repeat("spill the dirty pages of one large transaction ", (2*writerCachePages*pageSize)/48+1)
	ws := &store.Workspace{ID: "big", Type: "t", Shape: store.ShapeText, Format: "text", Producer: "p"}
	if err := s.Put(t.Context(), ws, &store.Content{Text: text}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	conn, err := s.w.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var used, spilled int
	err = conn.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			t.Fatalf("driver connection %T has no DBStatus", dc)
		}
		var err error
		if used, _, err = st.Status(sqlite.DBStatusCacheUsed, false); err != nil {
			return err
		}
		spilled, _, err = st.Status(sqlite.DBStatusCacheSpill, false)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each cached page also carries a few hundred bytes of SQLite's own.
	limit := writerCachePages * (pageSize + 1024)
	if used > limit {
		t.Errorf("writer page cache holds %d bytes after a %d-byte Put, want at most %d (%d pages of %d bytes)",
			used, len(text), limit, writerCachePages, pageSize)
	}
	if spilled == 0 {
		t.Errorf("no page was spilled during a Put of twice the cache size")
	}
}
