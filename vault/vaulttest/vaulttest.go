// Package vaulttest builds vault services over real backends for the tests
// of the vault service and of its front ends: a data directory and a
// project of their own under t.TempDir(), agents with real tokens, and
// every backend the program is built with, so that a test can run on each.
package vaulttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
	"github.com/ctxkit/ctxkit/vault"
)

// Backends are the backends a test may run on, by scheme.
var Backends = store.Schemes{
	"memory": memstore.OpenBackend,
	"sqlite": sqlitestore.OpenBackend,
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
	// Scheme picks the backend: "sqlite" (the default) or "memory".
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
