package fileregistry

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
	"github.com/ctxkit/ctxkit/store"
)

// TestCreateCheckHoldsBothConfigs checks that CreateVault's check runs
// while the configs of both scopes are locked: otherwise a create in the
// other scope could be written between the check and this create's
// write, and two vaults would share a folder the check was there to keep
// apart.
func TestCreateCheckHoldsBothConfigs(t *testing.T) {
	r := New(t.TempDir(), t.TempDir())
	scopes := []string{store.ScopeLocal, store.ScopeGlobal}
	for _, scope := range scopes {
		v := store.VaultRecord{Name: "v-" + scope, Type: "semantic", Scope: scope, Dir: filepath.Join(t.TempDir(), "v")}
		_, err := r.CreateVault(t.Context(), v, func([]store.VaultRecord) error {
			for _, s := range scopes {
				ctx, cancel := context.WithCancel(t.Context())
				cancel() // try once, wait for nothing
				if unlock, err := atomicfile.Lock(ctx, r.ConfigPath(s)+".lock", 0o700, 0); err == nil {
					unlock()
					t.Errorf("creating a %s vault, the check ran with the %s config unlocked", scope, s)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
