package sqlitestore

import (
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// openTemp opens a store in a fresh temporary directory.
func openTemp(tb testing.TB, opts Options) *Store {
	tb.Helper()
	s, err := Open(tb.Context(), filepath.Join(tb.TempDir(), "ctxkit.db"), opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, Options{}) })
}

// TestConformanceSmallChunks runs the suite with tiny text chunks, so that
// every text test crosses many chunk boundaries.
func TestConformanceSmallChunks(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, Options{chunkRunes: 97}) })
}

// TestConformanceIndexLater runs the suite with every non-empty list and
// text indexed after Put returns, so that searches race the background
// indexer or index on demand, and mutations meet unindexed workspaces.
func TestConformanceIndexLater(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, Options{indexInline: -1}) })
}

// TestConformanceIndexOnSearch runs the suite with indexing deferred and no
// background indexer, as the CLI opens the store: every search of a
// non-empty workspace builds its index first.
func TestConformanceIndexOnSearch(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTemp(t, Options{indexInline: -1, NoBackgroundIndex: true})
	})
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openTemp(b, Options{}) })
}
