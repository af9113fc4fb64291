package pgregistry_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/pgregistry"
)

// benchRegistry returns a registry holding eight vaults in each scope, as
// fileregistry's BenchmarkVault does, and the id of the last one.
func benchRegistry(b *testing.B) (*pgregistry.Registry, string) {
	r := pgregistry.New(pgtest.DB(b, pgregistry.Migrate))
	dir := b.TempDir()
	var id string
	for i := range 8 {
		for _, scope := range []string{store.ScopeLocal, store.ScopeGlobal} {
			v, err := r.CreateVault(b.Context(), store.VaultRecord{Name: fmt.Sprintf("v%d", i), Type: "semantic", Scope: scope,
				Dir: filepath.Join(dir, scope, fmt.Sprint(i)), Restricted: true, Grants: map[string]store.Grant{"bot": {}}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			id = v.ID
		}
	}
	return r, id
}

// BenchmarkVault measures a lookup of a vault by id, which the vault layer
// makes on every call.
func BenchmarkVault(b *testing.B) {
	r, id := benchRegistry(b)
	for b.Loop() {
		if _, err := r.Vault(b.Context(), id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAgentByToken measures the lookup of an agent by its token's
// hash, made on every request of an agent.
func BenchmarkAgentByToken(b *testing.B) {
	r, _ := benchRegistry(b)
	for i := range 16 {
		if err := r.CreateAgent(b.Context(), store.AgentRecord{Name: fmt.Sprintf("a%d", i), TokenHash: fmt.Sprintf("hash%d", i), Created: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := r.AgentByToken(b.Context(), "hash7"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendAudit measures appending one event to a vault's log.
func BenchmarkAppendAudit(b *testing.B) {
	r, id := benchRegistry(b)
	e := store.AuditEvent{Time: time.Now(), Agent: "bot", Action: "write-doc", Path: "notes/a.md", Outcome: "ok"}
	for b.Loop() {
		if err := r.AppendAudit(b.Context(), id, e); err != nil {
			b.Fatal(err)
		}
	}
}
