package fileregistry_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/fileregistry"
)

// BenchmarkVault measures a lookup of a vault by id, which the vault layer
// makes on every call (and the SQLite backend on every use of a vault's
// index or episodes): both configs read, eight vaults in each.
func BenchmarkVault(b *testing.B) {
	p := project{home: filepath.Join(b.TempDir(), "home"), root: b.TempDir()}
	p.r = fileregistry.New(p.home, p.root)
	var id string
	for i := range 8 {
		for _, scope := range []string{store.ScopeLocal, store.ScopeGlobal} {
			v, err := p.r.CreateVault(b.Context(), store.VaultRecord{Name: fmt.Sprintf("v%d", i), Type: "semantic", Scope: scope,
				Dir: filepath.Join(p.root, scope, fmt.Sprint(i)), Restricted: true, Grants: map[string]store.Grant{"bot": {}}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			id = v.ID
		}
	}
	for b.Loop() {
		if _, err := p.r.Vault(b.Context(), id); err != nil {
			b.Fatal(err)
		}
	}
}
