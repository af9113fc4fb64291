package sqliteepisodic_test

import (
	"database/sql"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/sqlitedb/sqlitedbtest"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/episodictest"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

func open(t *testing.T, path string) *sqliteepisodic.Store {
	t.Helper()
	s, err := sqliteepisodic.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	episodictest.Run(t, func(t *testing.T) episodic.Store {
		s := open(t, filepath.Join(t.TempDir(), "episodes.db"))
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceInMemory(t *testing.T) {
	episodictest.Run(t, func(t *testing.T) episodic.Store {
		s, err := sqliteepisodic.OpenMemory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestOpenWhileWriteLocked: opening a current store takes no write lock,
// so it succeeds while another connection holds one (it failed with
// "database is locked" when the version was read in an immediate
// transaction).
func TestOpenWhileWriteLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "episodes.db")
	open(t, path).Close()
	sqlitedbtest.HoldWriteLock(t, path)
	s := open(t, path)
	defer s.Close()
	if _, err := s.Stats(t.Context(), nil); err != nil {
		t.Errorf("Stats: %v", err)
	}
}

// TestConcurrentFirstOpens opens one new file from several goroutines, each
// with its own Store as separate processes would have.
func TestConcurrentFirstOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "episodes.db")
	sqlitedbtest.OpenConcurrently(t, 6, func() (io.Closer, error) { return sqliteepisodic.Open(t.Context(), path) })
}

// TestOpenOldFile opens a file the code before internal/sqlitedb wrote
// (testdata/episodes-be54a98.db.gz, made by
// internal/sqlitedb/testdata/mkfixtures/be54a98.go.txt at that commit, with
// no application_id): its episodes are there and searchable, and the store
// writes to it.
func TestOpenOldFile(t *testing.T) {
	path := sqlitedbtest.Fixture(t, "testdata/episodes-be54a98.db.gz", "episodes.db")
	s := open(t, path)
	defer s.Close()
	ctx := t.Context()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	e, ok, err := s.Get(ctx, "a", nil)
	if err != nil || !ok || e.Content != "kept across versions" || !e.RecordedAt.Equal(day) {
		t.Fatalf("old episode: %+v ok=%v %v", e, ok, err)
	}
	if res, err := s.Search(ctx, episodic.Filter{}, "versions", 5); err != nil || len(res) != 1 {
		t.Errorf("search of the old file: %+v %v", res, err)
	}
	at, err := s.Apply(ctx, &episodic.Change{Recalls: []episodic.Recall{{Statement: "a"}}}, day)
	if err != nil || !at.After(day) {
		t.Errorf("first change to the old file at %v (%v), want after %v", at, err, day)
	}
}

// TestOpenRefusesAnotherStoresFile: a vault index from before the marks, at
// the version an episodic file of then would have, is not taken for an
// episodic store.
func TestOpenRefusesAnotherStoresFile(t *testing.T) {
	path := sqlitedbtest.Fixture(t, "../../index/sqliteindex/testdata/index-5aa90b1.db.gz", "index.db")
	if s, err := sqliteepisodic.Open(t.Context(), path); !errors.Is(err, migrate.ErrForeign) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of an index file: %v, want migrate.ErrForeign", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "episodes.db")
	s := open(t, path)
	ctx := t.Context()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	c := &episodic.Change{
		Statements: []episodic.Statement{{ID: "a", Content: "kept across opens", Entities: []string{"disk"}, Confidence: 1, Salience: 0.5}},
		Versions:   []episodic.Version{{Statement: "a", ValidFrom: day, State: episodic.Open}},
	}
	at, err := s.Apply(ctx, c, day)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	e, ok, err := s.Get(ctx, "a", nil)
	if err != nil || !ok || e.Content != "kept across opens" || !e.RecordedAt.Equal(at) {
		t.Fatalf("after reopening: %+v ok=%v %v", e, ok, err)
	}
	if res, err := s.Search(ctx, episodic.Filter{}, "kept", 5); err != nil || len(res) != 1 {
		t.Errorf("search after reopening: %+v %v", res, err)
	}
	// The clock survives too.
	next, err := s.Apply(ctx, &episodic.Change{Recalls: []episodic.Recall{{Statement: "a"}}}, day.AddDate(-1, 0, 0))
	if err != nil || !next.After(at) {
		t.Errorf("first change after reopening at %v (%v), not after %v", next, err, at)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "episodes.db")
	s := open(t, path)
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s2, err := sqliteepisodic.Open(t.Context(), path)
	if err == nil {
		s2.Close()
		t.Fatal("a file with a newer schema was opened")
	}
	if msg := err.Error(); !strings.Contains(msg, "99") || !strings.Contains(msg, "newer") || !strings.Contains(msg, "upgrade ctxkit") || !strings.Contains(msg, path) {
		t.Errorf("unclear error: %v", err)
	}
	// The file was not touched: its version is still 99.
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 99 {
		t.Errorf("user_version after the refusal: %d %v", v, err)
	}
}

// TestSearchWords checks that a query's words are those of FTS5's
// tokenizer: a decomposed "naïve" is one word.
func TestSearchWords(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "episodes.db"))
	defer s.Close()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	c := &episodic.Change{
		Statements: []episodic.Statement{{ID: "a", Content: "a naïve plan", Confidence: 1, Salience: 0.5}},
		Versions:   []episodic.Version{{Statement: "a", ValidFrom: day, State: episodic.Open}},
	}
	if _, err := s.Apply(t.Context(), c, day); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Search(t.Context(), episodic.Filter{}, "NAI\u0308VE", 5); err != nil || len(res) != 1 {
		t.Errorf("Search(decomposed naïve) = %+v, %v; want the statement", res, err)
	}
}
