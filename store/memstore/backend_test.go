package memstore_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func TestBackend(t *testing.T) {
	storetest.RunBackend(t, func(t *testing.T) storetest.Database {
		return storetest.Database{
			Open: func(t *testing.T) store.Backend {
				b, err := memstore.OpenBackend(t.Context(), "", store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return b
			},
			NotShared: "the memory backend keeps everything in the memory of one handle: each handle is a database of its own",
		}
	})
}

func TestRegistry(t *testing.T) {
	storetest.RunRegistry(t, func(*testing.T) store.Registry { return memstore.NewRegistry() })
}

func TestKV(t *testing.T) {
	storetest.RunKV(t, func(*testing.T) store.KV { return memstore.NewKV() })
}
