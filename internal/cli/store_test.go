package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// storeArgs are the arguments each command that keeps something is run
// with in TestEveryCommandOpensTheChosenStore: enough to get past the
// argument checks to where it opens the store.
var storeArgs = map[string][]string{
	"ctxkit agent create":        {"a"},
	"ctxkit agent list":          nil,
	"ctxkit agent revoke":        {"a"},
	"ctxkit guard":               {"--listen", "127.0.0.1:0"},
	"ctxkit import ctxvault":     nil,
	"ctxkit mcp":                 nil,
	"ctxkit offload call":        {"result_read_page", "{}"},
	"ctxkit offload drop":        {"w"},
	"ctxkit offload ls":          nil,
	"ctxkit offload put":         {"-"},
	"ctxkit offload show":        {"w"},
	"ctxkit offload sweep":       nil,
	"ctxkit serve":               {"--addr", "127.0.0.1:0"},
	"ctxkit store copy":          {"--to", "memory:"},
	"ctxkit vault attach":        {"v", "a"},
	"ctxkit vault audit":         {"v"},
	"ctxkit vault confirm":       {"v", "id"},
	"ctxkit vault delete":        {"v", "--purge"},
	"ctxkit vault detach":        {"v", "a"},
	"ctxkit vault dispute":       {"v", "id", "other"},
	"ctxkit vault docs":          {"v"},
	"ctxkit vault episode":       {"v", "id"},
	"ctxkit vault episodes":      {"v"},
	"ctxkit vault export":        {"v"},
	"ctxkit vault import":        {"v", "-"},
	"ctxkit vault index":         {"v"},
	"ctxkit vault init":          {"v"},
	"ctxkit vault invalidate":    {"v", "id"},
	"ctxkit vault list":          nil,
	"ctxkit vault publish":       {"v"},
	"ctxkit vault query":         {"v", "text"},
	"ctxkit vault read":          {"v", "a.md"},
	"ctxkit vault reindex":       {"v"},
	"ctxkit vault revise":        {"v", "id", "text"},
	"ctxkit vault skill":         {"v", "s"},
	"ctxkit vault skills":        {"v"},
	"ctxkit vault supersede":     {"v", "id", "text"},
	"ctxkit vault watch":         {"v"},
	"ctxkit vault write":         {"v", "a.md", "--content", "x"},
	"ctxkit vault write-episode": {"v", "text"},
	"ctxkit vault write-skill":   {"v", "s", "--description", "d", "--instructions", "i"},
	"ctxkit wrap":                {"http://127.0.0.1:1/mcp"},
}

// noStore are the commands that keep nothing in the store.
var noStore = []string{"ctxkit add", "ctxkit install", "ctxkit status", "ctxkit uninstall", "ctxkit version",
	"ctxkit model embed", "ctxkit model list", "ctxkit model pull", "ctxkit model rm"}

// TestEveryCommandOpensTheChosenStore runs every command that keeps
// something with a store URL of no known scheme, given by --store and by
// $CTXKIT_STORE: each must refuse it, naming the schemes it knows, before
// doing anything else.
func TestEveryCommandOpensTheChosenStore(t *testing.T) {
	_, project := vaultEnv(t)
	var leaves []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			leaves = append(leaves, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(IO{}))
	const want = `unknown store scheme "bogus" in "bogus:x" (known: memory, postgres, postgresql, sqlite)`
	for _, path := range leaves {
		args, ok := storeArgs[path]
		if !ok {
			if !slices.Contains(noStore, path) {
				t.Errorf("%s: neither in storeArgs nor in noStore; add it to the one that fits", path)
			}
			continue
		}
		words := append(strings.Fields(strings.TrimPrefix(path, "ctxkit")), args...)
		t.Run(strings.TrimPrefix(path, "ctxkit "), func(t *testing.T) {
			for _, how := range []string{"flag", "env"} {
				t.Setenv(StoreEnvVar, "")
				cmd := append([]string{"--store", "bogus:x"}, words...)
				if how == "env" {
					t.Setenv(StoreEnvVar, "bogus:x")
					cmd = words
				}
				code, out, errOut := ctxkit(t, cmd...)
				if code != 1 || errOut != "ctxkit: "+want+"\n" {
					t.Errorf("ctxkit %s (%s): %d\nstdout: %s\nstderr: %s\nwant the error %q", strings.Join(cmd, " "), how, code, out, errOut, want)
				}
			}
		})
	}
	// Nothing was created: no store, no vault, no registry (the data
	// directory is, empty).
	if _, err := os.Stat(filepath.Join(project, ".ctxkit")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the project's .ctxkit exists after commands that all failed: %v", err)
	}
	if entries, err := os.ReadDir(os.Getenv("CTXKIT_HOME")); err != nil || len(entries) != 0 {
		t.Errorf("the data directory holds %v (%v) after commands that all failed", entries, err)
	}
}

func TestStoreURLErrors(t *testing.T) {
	root, _ := vaultEnv(t)
	notDB := filepath.Join(root, "not.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		want      []string // in stderr
	}{
		{"unknown scheme", "bogus:x", []string{`unknown store scheme "bogus"`, "known: memory, postgres, postgresql, sqlite"}},
		{"a password on the command line", "postgres://u:secret@db.example/ctx", []string{"--store postgres://u:***@db.example/ctx holds a password", "PGPASSWORD"}},
		{"a file that is not a database", "sqlite:" + notDB, []string{"open store sqlite:" + notDB, "not a database"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{{"--store", tc.url, "vault", "list"}, {"offload", "ls", "--store", tc.url}} {
				code, out, errOut := ctxkit(t, args...)
				if code != 1 || out != "" || strings.Contains(out+errOut, "secret") {
					t.Errorf("ctxkit %s: %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
				}
				for _, w := range tc.want {
					if !strings.Contains(errOut, w) {
						t.Errorf("ctxkit %s: stderr %q lacks %q", strings.Join(args, " "), errOut, w)
					}
				}
			}
		})
	}
}

// TestPostgresDown: a PostgreSQL store that does not answer is named in
// the error, without its password, with the cause.
func TestPostgresDown(t *testing.T) {
	vaultEnv(t)
	t.Setenv(StoreEnvVar, "postgres://u:secret@127.0.0.1:1/ctx?connect_timeout=5")
	code, out, errOut := ctxkit(t, "offload", "ls")
	if code != 1 || out != "" || strings.Contains(errOut, "secret") ||
		!strings.Contains(errOut, "open store postgres://u:***@127.0.0.1:1/ctx") || !strings.Contains(errOut, "connection refused") {
		t.Errorf("offload ls on a server that is down: %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// TestMemoryStore: with memory: a command keeps everything in memory, for
// the time of the process: nothing is written to the data directory
// (created, empty) or to the project's registry, only the vault folder (the
// documents' home) is created, and the next process starts empty.
func TestMemoryStore(t *testing.T) {
	root, project := vaultEnv(t)
	for _, how := range []string{"flag", "env"} {
		args := []string{"vault", "init", "x", "--type", "episodic"}
		if how == "flag" {
			args = append(args, "--store", "memory:")
		} else {
			t.Setenv(StoreEnvVar, "memory:")
		}
		out := mustRun(t, args...)
		if !strings.Contains(out, `Created episodic vault "x" (local) at `+filepath.Join(project, ".ctxkit", "vaults", "x")) {
			t.Errorf("init (%s): %s", how, out)
		}
		if out := mustRun(t, "vault", "list", "--store", "memory:"); !strings.Contains(out, "No vaults") {
			t.Errorf("a new process sees a memory store's vaults (%s): %s", how, out)
		}
	}
	t.Setenv(StoreEnvVar, "")
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != root {
			files = append(files, strings.TrimPrefix(p, root+string(filepath.Separator)))
		}
		return err
	})
	want := []string{"data", "home", "project", "project/.ctxkit", "project/.ctxkit/vaults", "project/.ctxkit/vaults/x", "project/sub"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("after two commands on memory:, the files are\n%s\nwant\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}
	// The default store knows nothing of it either.
	if out := mustRun(t, "vault", "list"); !strings.Contains(out, "No vaults") {
		t.Errorf("the default store sees a memory store's vault: %s", out)
	}
}

// TestSQLiteStoreByPath: sqlite:PATH and a bare PATH name the same store,
// for the offload workspaces as for the rest; the default store is another.
func TestSQLiteStoreByPath(t *testing.T) {
	root, _ := vaultEnv(t)
	db := filepath.Join(root, "elsewhere", "a.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ctxkitIn(t, `[{"n":1},{"n":2}]`, "offload", "put", "--key", "things", "--tool", "lister", "--store", "sqlite:"+db, "-")
	var notice map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &notice) != nil || notice["stored_result"] != "things" {
		t.Fatalf("put --store sqlite:%s: %d %s %s", db, code, out, errOut)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("the store is not at %s: %v", db, err)
	}
	for _, args := range [][]string{{"offload", "ls", "--store", db}, {"offload", "ls", "--store", "sqlite:" + db}} {
		if out := mustRun(t, args...); !strings.HasPrefix(out, "things · lister") {
			t.Errorf("ctxkit %s: %q", strings.Join(args, " "), out)
		}
	}
	t.Setenv(StoreEnvVar, db)
	if out := mustRun(t, "offload", "show", "things"); !strings.Contains(out, `"items": 2`) {
		t.Errorf("offload show with $%s=%s: %s", StoreEnvVar, db, out)
	}
	t.Setenv(StoreEnvVar, "")
	if out := mustRun(t, "offload", "ls"); out != "" {
		t.Errorf("the default store sees the workspace of another: %q", out)
	}
	if _, err := os.Stat(filepath.Join(root, "data", "ctxkit.db")); err != nil {
		t.Errorf("the default store is $CTXKIT_HOME/ctxkit.db: %v", err)
	}
}
