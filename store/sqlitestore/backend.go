package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/dirfiles"
	"github.com/ctxkit/ctxkit/store/fileregistry"
	"github.com/ctxkit/ctxkit/store/internal/vaultpool"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// The files of a vault's data folder that this backend keeps, besides the
// registry's.
const (
	indexFile    = "index.db"
	episodesFile = "episodes.db"
)

// Backend is the SQLite backend, ctxkit's default ("sqlite:PATH", or a
// bare path): workspaces and the key-value store in one SQLite file
// (default $CTXKIT_HOME/ctxkit.db); the vault registry in files
// (package fileregistry); and each vault's document index and episodes in
// SQLite files inside the vault's own data folder, so that a vault folder
// stays self-contained.
type Backend struct {
	ws    *Store
	reg   *fileregistry.Registry
	vault *vaultpool.Pool
}

var _ store.Backend = (*Backend)(nil)

// OpenBackend opens the SQLite backend whose workspace file is path (""
// for $CTXKIT_HOME/ctxkit.db); it is the [store.Opener] of the "sqlite"
// scheme.
func OpenBackend(ctx context.Context, path string, opts store.Options) (store.Backend, error) {
	if opts.Home == "" {
		return nil, errors.New("sqlite: no ctxkit home for the registry's files")
	}
	if path == "" {
		path = filepath.Join(opts.Home, "ctxkit.db")
	}
	ws, err := Open(ctx, path, Options{NoBackgroundIndex: !opts.Background})
	if err != nil {
		return nil, err
	}
	b := &Backend{ws: ws, reg: fileregistry.New(opts.Home, opts.Root)}
	b.vault = vaultpool.New(vaultpool.Openers{
		Index: func(ctx context.Context, id string) (index.Index, vaultpool.Guard, error) {
			path, guard, err := b.vaultFile(ctx, id, indexFile)
			if err != nil {
				return nil, nil, err
			}
			x, err := sqliteindex.Open(ctx, path)
			if err != nil {
				return nil, nil, err
			}
			return x, guard, nil
		},
		Episodes: func(ctx context.Context, id string) (episodic.Store, vaultpool.Guard, error) {
			path, guard, err := b.vaultFile(ctx, id, episodesFile)
			if err != nil {
				return nil, nil, err
			}
			s, err := sqliteepisodic.Open(ctx, path)
			if err != nil {
				return nil, nil, err
			}
			return s, guard, nil
		},
	})
	return b, nil
}

// vaultFile returns the path of a file of a vault's data folder, created
// empty when missing, and a guard that fails once the registry no longer
// records the vault (forgotten by this process or another) or the path no
// longer names the same file (its data dropped). The registry is asked
// first: a file created again in its place after a drop may get the
// dropped file's inode number, which would pass for the same file.
func (b *Backend) vaultFile(ctx context.Context, id, name string) (string, vaultpool.Guard, error) {
	dir, err := b.reg.DataDir(ctx, id, true)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("vault %s: %w", id, err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return "", nil, fmt.Errorf("vault %s: %w", id, err)
	}
	guard := func(ctx context.Context) error {
		if _, err := b.reg.Vault(ctx, id); err != nil {
			return err
		}
		now, err := os.Stat(path)
		if err != nil || !os.SameFile(fi, now) {
			return fmt.Errorf("vault %s: %s was deleted: %w", id, path, store.ErrNotFound)
		}
		return nil
	}
	return path, guard, nil
}

// Workspaces returns the workspace store; its Close releases nothing
// (Close the backend).
func (b *Backend) Workspaces() store.Store { return backendStore{b.ws} }

// backendStore is the backend's workspace store as it hands it out: the
// store's own Close would close it for every user of the backend. It
// keeps the store's other methods (Pipe, which the offload engine looks
// for).
type backendStore struct{ *Store }

func (backendStore) Close() error { return nil }

// KV returns the key-value store.
func (b *Backend) KV() store.KV { return b.ws.KV() }

// Registry returns the file registry.
func (b *Backend) Registry() store.Registry { return b.vault.Registry(b.reg) }

// Index returns a vault's document index.
func (b *Backend) Index(ctx context.Context, vaultID string) (index.Index, error) {
	return b.vault.Index(ctx, vaultID)
}

// Episodes returns a vault's episode store.
func (b *Backend) Episodes(ctx context.Context, vaultID string) (episodic.Store, error) {
	return b.vault.Episodes(ctx, vaultID)
}

// DropVault closes the vault's files and deletes its data folder.
func (b *Backend) DropVault(_ context.Context, v store.VaultRecord) error {
	err := b.vault.Drop(v.ID)
	if rerr := os.RemoveAll(filepath.Join(v.Dir, fileregistry.DataDirName)); rerr != nil {
		err = errors.Join(err, fmt.Errorf("delete the data of vault %q: %w", v.Name, rerr))
	}
	return err
}

// Hosted is false: every vault of this backend is a folder.
func (b *Backend) Hosted() bool { return false }

// Files returns the files of the vault's folder.
func (b *Backend) Files(_ context.Context, v store.VaultRecord) (store.Files, error) {
	return dirfiles.ForVault(v)
}

// Close closes every file.
func (b *Backend) Close() error {
	return errors.Join(b.vault.Close(), b.ws.Close())
}
