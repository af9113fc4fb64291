package vaultapi

import (
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// snapshot reads every file under root but the vault data folder's and
// the registry's lock files: what a refused request must leave as it was.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == vault.DataDirName:
			return filepath.SkipDir
		case d.IsDir() || strings.HasSuffix(p, ".lock"):
			return nil
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestControlFiles is the regression test of a vault whose folder is the
// project root: its agent rewrote the project's registry
// (.ctxkit/config.json) through the document routes, added a vault at /,
// and from there reached every file of the server's user, agent-run
// configurations (.vscode/tasks.json) among them. No hidden file or folder
// is a document, through /v1 or /ctxvault, for an agent or the owner: 400,
// and nothing changes on disk.
func TestControlFiles(t *testing.T) {
	e := newEnv(t, Options{})
	e.v.Vault(t, vault.CreateVaultRequest{Name: "notes", Path: ".", Restricted: true})
	e.v.Attach(t, "notes", "a", false)
	root := e.v.Root
	for name, text := range map[string]string{
		".git/config.json":   `{"core": {"hooksPath": "hooks"}}`,
		".git/config":        "[core]\n\tbare = false\n",
		".vscode/tasks.json": `{"version": "2.0.0", "tasks": []}`,
		"readme.md":          "# Project\n\nThe project's own notes.",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, root)
	if !strings.Contains(before[filepath.Join(root, ".ctxkit", "config.json")], `"notes"`) {
		t.Fatalf("the project's registry does not record the vault: %v", before)
	}
	vaults := string(e.want(e.do(owner, "GET", "/v1/vaults", nil), 200, "vaults").body)

	// What the agent sent: a registry with a vault at the file system's
	// root, and a task that runs a command.
	evil := `{"vaults": {"root": {"type": "semantic", "path": "/"}}}`
	targets := []string{".ctxkit/config.json", ".git/config.json", ".vscode/tasks.json", ".ctxkit-vault/documents.json"}
	// The same files named in other ways: escaped, with a backslash, or
	// through a folder and "..".
	spellings := []string{"%2Ectxkit/config.json", url.PathEscape(`.ctxkit\config.json`), "x/..%2F.vscode%2Ftasks.json", "notes/..%2F..%2F.git/config.json"}
	for _, who := range []string{"a", owner} {
		for _, p := range slices.Concat(targets, spellings) {
			doc := "/v1/vaults/notes/documents/" + p
			for _, tc := range []struct {
				method string
				body   any
			}{
				{"PUT", map[string]any{"content": evil, "overwrite": true}},
				{"PUT", map[string]any{"content": evil}},
				{"GET", nil},
				{"DELETE", nil},
			} {
				r := e.want(e.do(who, tc.method, doc, tc.body), 400, who+" "+tc.method+" "+doc)
				if r.code() != string(vault.ClassInvalid) {
					t.Errorf("%s %s %s: %s", who, tc.method, doc, r.body)
				}
			}
		}
		for _, p := range append(targets, ".ctxkit", ".git", ".vscode") {
			e.want(e.do(who, "POST", "/v1/vaults/notes/index", map[string]any{"path": p, "force": true}), 400, who+" index "+p)
			e.want(e.do(who, "POST", "/v1/vaults/notes/reindex", map[string]any{"path": p}), 400, who+" reindex "+p)
			e.want(e.as(who, "PUT", "/ctxvault/index", map[string]any{"vault_name": "notes", "file_path": p}), 400, who+" /ctxvault/index "+p)
			// The same, absolute: inside the vault folder, still hidden.
			abs := filepath.Join(root, filepath.FromSlash(p))
			e.want(e.as(who, "PUT", "/ctxvault/index", map[string]any{"vault_name": "notes", "file_path": abs}), 400, who+" /ctxvault/index "+abs)
			e.want(e.as(who, "POST", "/ctxvault/docs/write", map[string]any{"vault_name": "notes", "file_path": abs, "content": evil, "overwrite": true}),
				400, who+" /ctxvault/docs/write "+abs)
			e.want(e.as(who, "DELETE", q("/delete", "vault_name", "notes", "file_path", p), nil), 400, who+" /ctxvault/delete "+p)
		}
		for _, p := range targets {
			r := e.want(e.as(who, "POST", "/ctxvault/docs/write", map[string]any{"vault_name": "notes", "file_path": p, "content": evil, "overwrite": true}),
				400, who+" /ctxvault/docs/write "+p)
			if r.code() != string(vault.ClassInvalid) {
				t.Errorf("%s /ctxvault/docs/write %s: %s", who, p, r.body)
			}
			e.want(e.as(who, "GET", q("/docs/"+vault.DocID(p)+"/content", "vault_name", "notes"), nil), 404, who+" /ctxvault content "+p)
		}
	}
	// Indexing the whole vault takes the project's documents, and no
	// hidden file.
	e.want(e.do("a", "POST", "/v1/vaults/notes/index", nil), 200, "index")
	var docs []string
	for _, d := range e.want(e.do("a", "GET", "/v1/vaults/notes/documents", nil), 200, "documents").json(t)["documents"].([]any) {
		docs = append(docs, d.(map[string]any)["path"].(string))
	}
	if !slices.Equal(docs, []string{"readme.md"}) {
		t.Errorf("the vault at the project root indexes %v, want [readme.md]", docs)
	}
	res := e.want(e.do("a", "POST", "/v1/vaults/notes/query", map[string]any{"query": "vaults tasks version hooksPath"}), 200, "query").json(t)
	if n := len(res["results"].([]any)); n != 0 {
		t.Errorf("a query finds hidden files: %v", res)
	}

	if after := snapshot(t, root); !maps.Equal(before, after) {
		t.Errorf("the refused requests changed files:\nbefore %v\nafter  %v", before, after)
	}
	if after := string(e.want(e.do(owner, "GET", "/v1/vaults", nil), 200, "vaults").body); after != vaults {
		t.Errorf("the vaults changed:\nbefore %s\nafter  %s", vaults, after)
	}
}

// TestLongPaths is the regression test of a 300-character document path,
// which answered 500: a component longer than a file system takes, or a
// path over the service's limit, is the caller's error (400) on every
// route that takes a path; a long path of short components is a document
// like any other.
func TestLongPaths(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("docs", vault.Semantic, "a")
	for _, p := range []string{
		strings.Repeat("x", 297) + ".md",              // one component of 300 bytes
		strings.Repeat("é", 150) + ".md",              // 150 characters, 303 bytes
		strings.Repeat("folder/", 150) + "x.md",       // 1054 bytes
		"notes/" + strings.Repeat("y", 256) + "/x.md", // a folder's name too long
	} {
		doc := "/v1/vaults/docs/documents/" + url.PathEscape(p)
		doc = strings.ReplaceAll(doc, "%2F", "/")
		for _, tc := range []struct {
			method string
			body   any
		}{
			{"PUT", map[string]any{"content": "long"}},
			{"GET", nil},
			{"DELETE", nil},
		} {
			r := e.want(e.do("a", tc.method, doc, tc.body), 400, tc.method+" "+p[:20]+"...")
			if r.code() != string(vault.ClassInvalid) || !strings.Contains(r.errorText(t), "bytes") {
				t.Errorf("%s %d bytes: %s", tc.method, len(p), r.body)
			}
		}
		e.want(e.do("a", "POST", "/v1/vaults/docs/index", map[string]any{"path": p}), 400, "index "+p[:20]+"...")
		e.want(e.as("a", "POST", "/ctxvault/docs/write", map[string]any{"vault_name": "docs", "file_path": p, "content": "long", "overwrite": false}), 400, "/ctxvault/docs/write")
		e.want(e.as("a", "DELETE", q("/delete", "vault_name", "docs", "file_path", p), nil), 400, "/ctxvault/delete")
	}
	// 300 characters in components of 60: a document.
	p := strings.Repeat(strings.Repeat("z", 59)+"/", 4) + strings.Repeat("z", 57) + ".md"
	if len(p) != 300 {
		t.Fatalf("the path has %d characters", len(p))
	}
	e.want(e.do("a", "PUT", "/v1/vaults/docs/documents/"+p, map[string]any{"content": "deep"}), 200, "a deep document")
	if d := e.want(e.do("a", "GET", "/v1/vaults/docs/documents/"+p, nil), 200, "read it").json(t); d["text"] != "deep" {
		t.Errorf("read %v", d)
	}
}
