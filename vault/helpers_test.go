package vault

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/pgstore"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
	"github.com/ctxkit/ctxkit/vault/embed"
)

// env is a service over a real backend, with its own data directory and
// project, for the tests of this package (vaulttest serves the front
// ends', and imports this package).
type env struct {
	svc        *Service
	b          store.Backend
	home, root string
	opts       Options
	url        string
}

// hashSpec is the embedder spec the tests map to the hashing embedder.
const hashSpec = "ollama:hash-test"

// testEmbedders makes hashSpec the deterministic hashing embedder, and
// every other spec what embed.New makes of it.
func testEmbedders(models string) func(string) (embed.Embedder, error) {
	return func(spec string) (embed.Embedder, error) {
		if spec == hashSpec {
			return hashEmbedder{embed.Hashing{Dim: 64}}, nil
		}
		return embed.New(spec, embed.Options{ModelsDir: models})
	}
}

// hashEmbedder is the hashing embedder under the spec it is pinned as.
type hashEmbedder struct{ embed.Hashing }

func (hashEmbedder) Spec() string { return hashSpec }

// newEnv returns a service over a fresh SQLite backend.
func newEnv(t testing.TB) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{home: filepath.Join(base, "home"), root: filepath.Join(base, "project")}
	for _, d := range []string{e.home, e.root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.url = filepath.Join(e.home, "ctxkit.db")
	e.opts = Options{Home: e.home, Root: e.root, Embedders: testEmbedders(filepath.Join(e.home, "models"))}
	e.svc, e.b = e.open(t)
	return e
}

// open opens one more service over the same database (another process's,
// as a server and a CLI command are).
func (e *env) open(t testing.TB) (*Service, store.Backend) {
	t.Helper()
	b, err := store.Schemes{"sqlite": sqlitestore.OpenBackend, "memory": memstore.OpenBackend, "postgres": pgstore.OpenBackend}.Open(context.Background(), e.url,
		store.Options{Home: e.home, Root: e.root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	svc, err := New(b, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc, b
}

// vault creates a vault as the owner.
func (e *env) vault(t testing.TB, req CreateVaultRequest) VaultInfo {
	t.Helper()
	info, err := e.svc.CreateVault(context.Background(), Owner(), req)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// agent creates an agent and returns it, authenticated by its token.
func (e *env) agent(t testing.TB, name string) Caller {
	t.Helper()
	tok, err := e.svc.CreateAgent(context.Background(), Owner(), name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.svc.Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// attach attaches an agent as the owner.
func (e *env) attach(t testing.TB, vault, agent string, readOnly bool) {
	t.Helper()
	if _, err := e.svc.Attach(context.Background(), Owner(), vault, agent, readOnly); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a file into a vault folder, as a person would.
func writeFile(t testing.TB, dir, name, text string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// semantic creates a semantic vault holding files and returns its folder.
func (e *env) semantic(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	info := e.vault(t, CreateVaultRequest{Name: name})
	for f, text := range files {
		writeFile(t, info.Path, f, text)
	}
	return info.Path
}

// wantErr fails unless err is (or wraps) want; want nil means no error.
func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// audit returns a vault's audit log as the owner sees it.
func (e *env) audit(t testing.TB, name string) []AuditEvent {
	t.Helper()
	evs, err := e.svc.Audit(context.Background(), Owner(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
