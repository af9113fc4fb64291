// Package pgtest gives tests a PostgreSQL schema of their own on the
// server named by $CTXKIT_TEST_POSTGRES, and skips them, saying so, when
// it is not set.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/pgdb"
)

// Env names the variable holding the test server's URL.
const Env = "CTXKIT_TEST_POSTGRES"

// URL returns the URL of a new, empty schema on the test server (its
// search_path set to it), dropped with everything in it when t ends. It
// skips t when $CTXKIT_TEST_POSTGRES is not set, and fails it when the
// server does not answer.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		t.Skipf("PostgreSQL test skipped: set %s (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run it", Env)
	}
	b := make([]byte, 8)
	rand.Read(b)
	schema := "ctxkit_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("%s is set but the server does not answer: %v", Env, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// DB opens a new, empty schema on the test server (see URL) and runs
// migrate on it, closed when t ends.
func DB(t testing.TB, migrate ...func(context.Context, *pgdb.DB) error) *pgdb.DB {
	t.Helper()
	return Open(t, URL(t), migrate...)
}

// Open opens the database at url as one ctxkit process would, with a pool
// of its own, and runs migrate on it; the pool is closed when t ends.
func Open(t testing.TB, url string, migrate ...func(context.Context, *pgdb.DB) error) *pgdb.DB {
	t.Helper()
	db, err := pgdb.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	for _, m := range migrate {
		if err := m(t.Context(), db); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// VaultID returns a new vault id, for tests that put several vaults in
// one schema.
func VaultID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "vault-" + hex.EncodeToString(b)
}
