package pgstore_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/pgstore"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// openFilesDB opens a pool on a new schema with the files' tables.
func openFilesDB(t *testing.T, url string) *pgdb.DB {
	t.Helper()
	db, err := pgdb.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := pgstore.MigrateFiles(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestFiles(t *testing.T) {
	db := openFilesDB(t, pgtest.URL(t))
	var n atomic.Int64
	storetest.RunFiles(t, func(t *testing.T) store.Files {
		return pgstore.NewFiles(db, fmt.Sprintf("vault-%d", n.Add(1)))
	})
}

// TestFilesShared: two pools on one database (two processes) see the same
// files, vaults do not see each other's, and DropFiles deletes one
// vault's files only.
func TestFilesShared(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	a, b := openFilesDB(t, url), openFilesDB(t, url)
	fa, fb, other := pgstore.NewFiles(a, "v1"), pgstore.NewFiles(b, "v1"), pgstore.NewFiles(b, "v2")
	if err := fa.Write(ctx, "notes/a.md", []byte("from a"), false); err != nil {
		t.Fatal(err)
	}
	if data, err := fb.Read(ctx, "notes/a.md"); err != nil || string(data) != "from a" {
		t.Fatalf("read through the other pool: %q, %v", data, err)
	}
	if err := fb.Write(ctx, "notes/a.md", []byte("from b"), false); !errors.Is(err, store.ErrExists) {
		t.Errorf("create over the other pool's file: %v", err)
	}
	if err := fb.Write(ctx, "notes/a.md/x.md", []byte("x"), true); !errors.Is(err, store.ErrExists) {
		t.Errorf("write under the other pool's file: %v", err)
	}
	if _, err := other.Read(ctx, "notes/a.md"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another vault reads the file: %v", err)
	}
	if err := other.Write(ctx, "b.md", []byte("b"), false); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.DropFiles(ctx, b, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := fa.Walk(ctx, "", func(fi store.FileInfo) error { return fmt.Errorf("walked %s after the drop", fi.Path) }); err != nil {
		t.Error(err)
	}
	var left []string
	if err := other.Walk(ctx, "", func(fi store.FileInfo) error { left = append(left, fi.Path); return nil }); err != nil || !slices.Equal(left, []string{"b.md"}) {
		t.Errorf("the other vault after the drop: %q, %v", left, err)
	}
	// Migrating again is a no-op.
	if err := pgstore.MigrateFiles(ctx, a); err != nil {
		t.Error(err)
	}
}
