package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/dirfiles"
	"github.com/ctxkit/ctxkit/store/internal/vaultpool"
	"github.com/ctxkit/ctxkit/store/pgregistry"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/pgepisodic"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/pgindex"
)

// Backend is the PostgreSQL backend ("postgres://…" or "postgresql://…"):
// every store in one database and one schema (the URL's search_path),
// shared by every ctxkit process that opens the same URL. Vaults are
// hosted: their documents are rows too (Files), since processes on several
// machines share no folder.
type Backend struct {
	db    *pgdb.DB
	ws    *Store
	kv    *KV
	reg   *pgregistry.Registry
	vault *vaultpool.Pool
}

var _ store.Backend = (*Backend)(nil)

// OpenBackend opens the PostgreSQL backend; it is the [store.Opener] of
// the "postgres" and "postgresql" schemes, and rest is the URL after the
// scheme's colon ("//user@host/db?…"). The schema is migrated on first
// use, once however many processes start together.
func OpenBackend(ctx context.Context, rest string, _ store.Options) (store.Backend, error) {
	db, err := pgdb.Open(ctx, "postgres:"+rest)
	if err != nil {
		return nil, err
	}
	for _, m := range []func(context.Context, *pgdb.DB) error{Migrate, MigrateFiles, pgregistry.Migrate, pgindex.Migrate, pgepisodic.Migrate} {
		if err := m(ctx, db); err != nil {
			db.Close()
			return nil, err
		}
	}
	b := &Backend{db: db, ws: NewStore(db), kv: NewKV(db), reg: pgregistry.New(db)}
	// Vault ids are never given out again: rows written through a handle
	// of a forgotten vault would be read by nobody, hence the guard.
	b.vault = vaultpool.New(vaultpool.WhileRecorded(b.reg,
		func(_ context.Context, id string) (index.Index, error) { return pgindex.New(db, id), nil },
		func(_ context.Context, id string) (episodic.Store, error) { return pgepisodic.New(db, id), nil }))
	return b, nil
}

// Workspaces returns the workspace store.
func (b *Backend) Workspaces() store.Store { return b.ws }

// KV returns the key-value store.
func (b *Backend) KV() store.KV { return b.kv }

// Registry returns the vault registry.
func (b *Backend) Registry() store.Registry { return b.vault.Registry(b.reg) }

// Index returns a vault's document index.
func (b *Backend) Index(ctx context.Context, vaultID string) (index.Index, error) {
	return b.vault.Index(ctx, vaultID)
}

// Episodes returns a vault's episode store.
func (b *Backend) Episodes(ctx context.Context, vaultID string) (episodic.Store, error) {
	return b.vault.Episodes(ctx, vaultID)
}

// Hosted is true: new vaults keep their documents in the database.
func (b *Backend) Hosted() bool { return true }

// Files returns a vault's files: its folder if it has one, else its rows
// (ErrNotFound for a vault the registry no longer records).
func (b *Backend) Files(ctx context.Context, v store.VaultRecord) (store.Files, error) {
	if v.Dir != "" {
		return dirfiles.ForVault(v)
	}
	if _, err := b.reg.Vault(ctx, v.ID); err != nil {
		return nil, err
	}
	return NewFiles(b.db, v.ID), nil
}

// DropVault deletes every row of a vault.
func (b *Backend) DropVault(ctx context.Context, v store.VaultRecord) error {
	err := b.vault.Drop(v.ID)
	for _, drop := range []func(context.Context, *pgdb.DB, string) error{pgindex.Drop, pgepisodic.Drop, DropFiles} {
		err = errors.Join(err, drop(ctx, b.db, v.ID))
	}
	if err = errors.Join(err, b.reg.Drop(ctx, v.ID)); err != nil {
		return fmt.Errorf("drop vault %q: %w", v.Name, err)
	}
	return nil
}

// Close closes the vault handles and the pool.
func (b *Backend) Close() error {
	err := b.vault.Close()
	b.db.Close()
	return err
}
