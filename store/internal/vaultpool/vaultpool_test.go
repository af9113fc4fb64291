package vaultpool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/vaultpool"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// closeCounted is an index that counts its Close calls.
type closeCounted struct {
	*sqliteindex.Index
	closed *int
}

func (c closeCounted) Close() error { *c.closed++; return c.Index.Close() }

// TestForgottenVaultHoldsNothing: forgetting a vault through the pool's
// registry closes its handles at once (before, they stayed open until the
// backend closed), and a guard that cannot check is an error, not a vault
// gone: the handle stays.
func TestForgottenVaultHoldsNothing(t *testing.T) {
	ctx := t.Context()
	reg := memstore.NewRegistry()
	closed := 0
	checkFails := false
	errCheck := errors.New("the registry could not be read")
	guard := func(id string) vaultpool.Guard {
		return func(ctx context.Context) error {
			if checkFails {
				return errCheck
			}
			_, err := reg.Vault(ctx, id)
			return err
		}
	}
	p := vaultpool.New(vaultpool.Openers{
		Index: func(ctx context.Context, id string) (index.Index, vaultpool.Guard, error) {
			x, err := sqliteindex.OpenMemory(ctx)
			return closeCounted{x, &closed}, guard(id), err
		},
		Episodes: func(ctx context.Context, id string) (episodic.Store, vaultpool.Guard, error) {
			s, err := sqliteepisodic.OpenMemory(ctx)
			return s, guard(id), err
		},
	})
	defer p.Close()
	v, err := reg.CreateVault(ctx, store.VaultRecord{Name: "notes", Type: "semantic", Scope: store.ScopeGlobal, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Index(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "a.md", Hash: "1"}, []index.Chunk{{Text: "alpha"}}); err != nil {
		t.Fatal(err)
	}

	checkFails = true
	if _, err := p.Index(ctx, v.ID); !errors.Is(err, errCheck) {
		t.Errorf("Index while the check fails: %v, want the check's error", err)
	}
	checkFails = false
	if closed != 0 {
		t.Fatalf("a failed check closed the handle (%d closes)", closed)
	}
	if docs, err := x.Docs(ctx); err != nil || len(docs) != 1 {
		t.Fatalf("the handle after a failed check: %v, %v", docs, err)
	}

	if _, err := p.Registry(reg).DeleteVault(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	if closed != 1 {
		t.Errorf("forgetting the vault closed its index %d times, want 1", closed)
	}
	if err := x.Put(ctx, index.Doc{Path: "b.md", Hash: "1"}, []index.Chunk{{Text: "beta"}}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a write through the forgotten vault's handle: %v, want store.ErrNotFound", err)
	}
}
