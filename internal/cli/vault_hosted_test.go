package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// keepOpen is a backend shared by the commands of a test: each command
// closes its backend when done, which must not close the shared one.
type keepOpen struct{ store.Backend }

func (keepOpen) Close() error { return nil }

// hostedStore makes the commands of the test use one backend that hosts
// its vaults (vaulttest's, in memory), as a shared database does.
func hostedStore(t *testing.T) {
	t.Helper()
	b, err := vaulttest.OpenHosted(t.Context(), "", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	schemes["hostedtest"] = func(context.Context, string, store.Options) (store.Backend, error) { return keepOpen{b}, nil }
	t.Cleanup(func() {
		delete(schemes, "hostedtest")
		b.Close()
	})
	t.Setenv(StoreEnvVar, "hostedtest:")
}

func TestVaultHosted(t *testing.T) {
	root, _ := vaultEnv(t)
	hostedStore(t)
	out := mustRun(t, "vault", "init", "notes", "--embedding-model", "none")
	if !strings.Contains(out, `"notes" (global) hosted by the store`) {
		t.Errorf("init: %s", out)
	}
	if _, err := os.Stat(filepath.Join(root, "project", ".ctxkit")); err == nil {
		t.Error("init of a hosted vault made a folder in the project")
	}
	code, _, errOut := ctxkit(t, "vault", "init", "elsewhere", "--path", "somewhere")
	if code == 0 || !strings.Contains(errOut, "no path") || !strings.Contains(errOut, "--from") {
		t.Errorf("init --path: %d %s", code, errOut)
	}
	if out := mustRun(t, "vault", "list"); !strings.Contains(out, "(hosted)") {
		t.Errorf("list: %s", out)
	}

	src := filepath.Join(root, "docs")
	for p, data := range map[string]string{"a.md": "# A\n\nthe aardvark\n", "sub/b.txt": "the badger\n", ".git/x.md": "hidden"} {
		full := filepath.Join(src, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = mustRun(t, "vault", "index", "notes", "--from", src)
	if !strings.Contains(out, "uploaded 2 files") || !strings.Contains(out, "indexed 2 files") {
		t.Errorf("index --from: %s", out)
	}
	mustRun(t, "vault", "write", "notes", "c.md", "--content", "# C\n\nthe capybara\n")
	if out := mustRun(t, "vault", "query", "notes", "capybara badger"); !strings.Contains(out, "c.md") || !strings.Contains(out, "sub/b.txt") {
		t.Errorf("query: %s", out)
	}
	if out := mustRun(t, "vault", "read", "notes", "a.md"); !strings.Contains(out, "aardvark") {
		t.Errorf("read: %s", out)
	}
	code, _, errOut = ctxkit(t, "vault", "watch", "notes")
	if code == 0 || !strings.Contains(errOut, "no folder to watch") {
		t.Errorf("watch: %d %s", code, errOut)
	}
	code, _, errOut = ctxkit(t, "vault", "index", "notes", "--from", src, "--path", "a.md")
	if code == 0 {
		t.Errorf("index --from --path: %d %s", code, errOut)
	}
}

// TestVaultIndexFromFolderVault: --from is for hosted vaults only.
func TestVaultIndexFromFolderVault(t *testing.T) {
	root, _ := vaultEnv(t)
	mustRun(t, "vault", "init", "notes", "--embedding-model", "none")
	code, _, errOut := ctxkit(t, "vault", "index", "notes", "--from", root)
	if code == 0 || !strings.Contains(errOut, "is a folder on this machine") {
		t.Errorf("index --from on a folder vault: %d %s", code, errOut)
	}
}
