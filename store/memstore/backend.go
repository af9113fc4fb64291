package memstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/dirfiles"
	"github.com/ctxkit/ctxkit/store/internal/vaultpool"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// Backend is the memory backend ("memory:"): nothing it holds outlives
// the process. Workspaces live in a [Store], the key-value store and the
// vault registry in Go maps; each vault's document index and episodes in
// in-memory SQLite databases of its own (sqliteindex.OpenMemory,
// sqliteepisodic.OpenMemory), so that they rank and answer exactly as the
// SQLite backend's. Vault documents stay files in the vault's folder
// (Hosted is false); [Files] holds a hosted vault's files in memory for the
// tests of backends that host them.
type Backend struct {
	ws    *Store
	kv    *KV
	reg   *Registry
	vault *vaultpool.Pool
}

var _ store.Backend = (*Backend)(nil)

// OpenBackend opens an empty memory backend; it is the [store.Opener] of
// the "memory" scheme, which takes nothing after the colon.
func OpenBackend(_ context.Context, rest string, _ store.Options) (store.Backend, error) {
	if rest != "" {
		return nil, fmt.Errorf("memory: takes nothing after the colon, not %q", rest)
	}
	b := &Backend{ws: New(Options{}), kv: NewKV(), reg: NewRegistry()}
	b.vault = vaultpool.New(vaultpool.WhileRecorded(b.reg,
		func(ctx context.Context, _ string) (index.Index, error) { return sqliteindex.OpenMemory(ctx) },
		func(ctx context.Context, _ string) (episodic.Store, error) { return sqliteepisodic.OpenMemory(ctx) }))
	return b, nil
}

// Workspaces returns the workspace store; its Close releases nothing
// (Close the backend).
func (b *Backend) Workspaces() store.Store { return backendStore{b.ws} }

// backendStore is the backend's workspace store as it hands it out: the
// store's own Close would close it for every user of the backend.
type backendStore struct{ *Store }

func (backendStore) Close() error { return nil }

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

// DropVault closes the vault's stores, which deletes them.
func (b *Backend) DropVault(_ context.Context, v store.VaultRecord) error {
	return b.vault.Drop(v.ID)
}

// Hosted is false: every vault of this backend is a folder.
func (b *Backend) Hosted() bool { return false }

// Files returns the files of the vault's folder.
func (b *Backend) Files(_ context.Context, v store.VaultRecord) (store.Files, error) {
	return dirfiles.ForVault(v)
}

// Close releases everything.
func (b *Backend) Close() error {
	return errors.Join(b.vault.Close(), b.ws.Close())
}
