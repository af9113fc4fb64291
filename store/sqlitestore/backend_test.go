package sqlitestore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// TestBackend runs the backend suite on databases of a ctxkit home and a
// project root, on which every handle opens the same files, as every
// process does.
func TestBackend(t *testing.T) {
	storetest.RunBackend(t, func(t *testing.T) storetest.Database {
		dir := t.TempDir()
		opts := store.Options{Home: filepath.Join(dir, "home"), Root: filepath.Join(dir, "project")}
		if err := os.MkdirAll(opts.Root, 0o755); err != nil {
			t.Fatal(err)
		}
		return storetest.Database{Open: func(t *testing.T) store.Backend {
			b, err := OpenBackend(t.Context(), "", opts)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}}
	})
}

// TestBackendWorkspacesPipe checks that the workspaces the backend hands
// out still run pipelines in SQL: the offload engine looks for store.Piper.
func TestBackendWorkspacesPipe(t *testing.T) {
	b, err := OpenBackend(t.Context(), filepath.Join(t.TempDir(), "ctxkit.db"), store.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := b.Workspaces().(store.Piper); !ok {
		t.Errorf("the backend's workspaces (%T) do not run pipelines (store.Piper)", b.Workspaces())
	}
}
