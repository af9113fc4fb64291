package pgstore_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/pgstore"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// openBackend opens the backend on url, as the "postgres" scheme does.
func openBackend(t *testing.T, url string) store.Backend {
	t.Helper()
	b, err := open(t, url)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func open(t *testing.T, url string) (store.Backend, error) {
	rest, _ := strings.CutPrefix(url, "postgres:")
	return pgstore.OpenBackend(t.Context(), rest, store.Options{Home: t.TempDir()})
}

// TestBackend runs the backend suite, each database a schema of its own
// that every handle opens, as several processes would.
func TestBackend(t *testing.T) {
	storetest.RunBackend(t, func(t *testing.T) storetest.Database {
		url := pgtest.URL(t)
		return storetest.Database{Open: func(t *testing.T) store.Backend { return openBackend(t, url) }}
	})
}

// TestBackendOpensTogether opens the backend from eight pools on one new
// schema at once: every component's migration runs once and every open
// succeeds.
func TestBackendOpensTogether(t *testing.T) {
	url := pgtest.URL(t)
	bs := make([]store.Backend, 8)
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i := range bs {
		wg.Go(func() { bs[i], errs[i] = open(t, url) })
	}
	wg.Wait()
	for i, b := range bs {
		if errs[i] != nil {
			t.Error(errs[i])
			continue
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}
}
