// Package vaulttest builds vault services over real backends for the tests
// of the vault service and of its front ends: a data directory and a
// project of their own under t.TempDir(), agents with real tokens, and
// every backend the program is built with, so that a test can run on each.
package vaulttest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
	"github.com/ctxkit/ctxkit/vault"
)

// Backends are the backends a test may run on, by scheme. "hosted" is the
// memory backend made to host its vaults' documents (Hosted is true; each
// hosted vault's files are a memstore.Files), for the tests of hosted
// vaults without a database.
var Backends = store.Schemes{
	"memory": memstore.OpenBackend,
	"sqlite": sqlitestore.OpenBackend,
	"hosted": OpenHosted,
}

// OpenHosted opens the "hosted" test backend: a memory backend whose
// Hosted is true, whose vaults without a folder keep their files in maps
// (memstore.NewFiles), one per vault, dropped with the vault.
func OpenHosted(ctx context.Context, rest string, opts store.Options) (store.Backend, error) {
	b, err := memstore.OpenBackend(ctx, rest, opts)
	if err != nil {
		return nil, err
	}
	return &hosted{Backend: b, files: map[string]*memstore.Files{}}, nil
}

// hosted is the backend OpenHosted returns.
type hosted struct {
	store.Backend
	mu    sync.Mutex
	files map[string]*memstore.Files // by vault id
}

func (h *hosted) Hosted() bool { return true }

// Files returns a folder vault's folder, or a recorded hosted vault's map.
func (h *hosted) Files(ctx context.Context, v store.VaultRecord) (store.Files, error) {
	if v.Dir != "" {
		return h.Backend.Files(ctx, v)
	}
	if _, err := h.Registry().Vault(ctx, v.ID); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[v.ID]
	if !ok {
		f = memstore.NewFiles()
		h.files[v.ID] = f
	}
	return f, nil
}

// DropVault drops the vault's files with the rest.
func (h *hosted) DropVault(ctx context.Context, v store.VaultRecord) error {
	h.mu.Lock()
	delete(h.files, v.ID)
	h.mu.Unlock()
	return h.Backend.DropVault(ctx, v)
}

// Env is a vault service ready for a test.
type Env struct {
	Svc     *vault.Service
	Backend store.Backend
	// Home is the data directory; Root the project root.
	Home, Root string
	// Tokens are the bearer tokens of the owner (vault.OwnerName) and of
	// the agents created with Agent.
	Tokens map[string]string
}

// Options tune New.
type Options struct {
	// Scheme picks the backend: "sqlite" (the default), "memory" or
	// "hosted".
	Scheme string
	// Service is passed to vault.New; its Home and Root are set by New.
	Service vault.Options
}

// New returns a service over a fresh backend; it is closed when the test
// ends.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	base := t.TempDir()
	e := &Env{Home: filepath.Join(base, "home"), Root: filepath.Join(base, "project"), Tokens: map[string]string{}}
	for _, d := range []string{e.Home, e.Root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	scheme := o.Scheme
	if scheme == "" {
		scheme = "sqlite"
	}
	url := scheme + ":"
	if scheme == "sqlite" {
		url += filepath.Join(e.Home, "ctxkit.db")
	}
	b, err := Backends.Open(context.Background(), url, store.Options{Home: e.Home, Root: e.Root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close the backend: %v", err)
		}
	})
	o.Service.Home, o.Service.Root = e.Home, e.Root
	svc, err := vault.New(b, o.Service)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := svc.OwnerToken(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	e.Svc, e.Backend, e.Tokens[vault.OwnerName] = svc, b, tok
	return e
}

// Agent creates an agent, keeps its token in Tokens, and returns it as a
// caller, authenticated by its token.
func (e *Env) Agent(t testing.TB, name string) vault.Caller {
	t.Helper()
	ctx := context.Background()
	tok, err := e.Svc.CreateAgent(ctx, vault.Owner(), name)
	if err != nil {
		t.Fatal(err)
	}
	e.Tokens[name] = tok
	c, err := e.Svc.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Vault creates a vault as the owner.
func (e *Env) Vault(t testing.TB, req vault.CreateVaultRequest) vault.VaultInfo {
	t.Helper()
	info, err := e.Svc.CreateVault(context.Background(), vault.Owner(), req)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// Attach attaches an agent to a vault as the owner.
func (e *Env) Attach(t testing.TB, vaultName, agent string, readOnly bool) {
	t.Helper()
	if _, err := e.Svc.Attach(context.Background(), vault.Owner(), vaultName, agent, readOnly); err != nil {
		t.Fatal(err)
	}
}
