package vaulttest_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/storetest"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// TestHostedBackend holds the hosted test backend to the backend suite,
// its files included.
func TestHostedBackend(t *testing.T) {
	storetest.RunBackend(t, func(t *testing.T) storetest.Database {
		return storetest.Database{
			NotShared: "each memory backend is a database of its own",
			Open: func(t *testing.T) store.Backend {
				b, err := vaulttest.OpenHosted(t.Context(), "", store.Options{Home: t.TempDir(), Root: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				return b
			},
		}
	})
}
