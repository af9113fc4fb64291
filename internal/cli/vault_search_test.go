package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault"
)

func TestVaultIndexQueryDocs(t *testing.T) {
	_, project := vaultEnv(t)
	if code, _, errOut := ctxkit(t, "vault", "init", "kb"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	dir := filepath.Join(project, ".ctxkit", "vaults", "kb")
	for name, text := range map[string]string{
		"plan.md":   "# Plan\n\n## Costs\n\nCut cloud costs by fifteen percent.\n",
		"cake.txt":  "Lemon cake needs lemons.\n",
		"notes.pdf": "not a pdf",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := ctxkit(t, "vault", "index", "kb")
	if code == 0 || !strings.Contains(out, "indexed 2 files") || !strings.Contains(out, "failed: notes.pdf") {
		t.Errorf("index with a failing file: code %d\n%s", code, out)
	}
	code, out, errOut := ctxkit(t, "vault", "query", "kb", "cloud", "costs")
	if code != 0 || !strings.HasPrefix(out, "1. plan.md › Plan > Costs (line 5) [chunk 0") || !strings.Contains(errOut, "lexical search only") {
		t.Errorf("query: code %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = ctxkit(t, "vault", "query", "kb", "lemons", "--json")
	var found struct {
		Results []struct {
			Path    string `json:"path"`
			Locator struct {
				Unit  string `json:"unit"`
				Start int    `json:"start"`
				End   int    `json:"end"`
				Label string `json:"label"`
			} `json:"locator"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &found); code != 0 || err != nil || len(found.Results) != 1 ||
		fmt.Sprint(found.Results[0].Locator) != "{line 1 1 line 1}" {
		t.Errorf("query as JSON: code %d %v\n%s", code, err, out)
	}
	code, out, _ = ctxkit(t, "vault", "query", "kb", "submarine", "--json")
	var res struct {
		Results []any  `json:"results"`
		Mode    string `json:"mode"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Results == nil || len(res.Results) != 0 || res.Mode != "lexical" {
		t.Errorf("no match as JSON: code %d %v\n%s", code, err, out)
	}
	code, out, _ = ctxkit(t, "vault", "docs", "kb")
	if code != 0 || !strings.Contains(out, "plan.md\t1 chunk\t") || !strings.Contains(out, "cake.txt") {
		t.Errorf("docs: %s", out)
	}
	if code, _, errOut := ctxkit(t, "vault", "index", "kb", "--path", "../.."); code == 0 || !strings.Contains(errOut, "leaves the vault") {
		t.Errorf("index --path out of the vault: code %d, %s", code, errOut)
	}
}

func TestVaultWriteAndDelete(t *testing.T) {
	vaultEnv(t)
	if code, _, errOut := ctxkit(t, "vault", "init", "kb"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	code, out, errOut := ctxkit(t, "vault", "write", "kb", "notes/audit.md", "--content", "# Audit\n\nStarts in March.\n", "--meta", "source=meeting")
	if code != 0 || !strings.Contains(out, "wrote and indexed notes/audit.md") {
		t.Fatalf("write: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := ctxkit(t, "vault", "write", "kb", "notes/audit.md", "--content", "again"); code == 0 || !strings.Contains(errOut, `notes/audit.md exists in vault "kb"`) {
		t.Errorf("write over an existing file: %d %s", code, errOut)
	}
	if code, _, errOut := ctxkit(t, "vault", "write", "kb", "x.md", "--meta", "novalue", "--content", "x"); code == 0 || !strings.Contains(errOut, "want key=value") {
		t.Errorf("bad --meta: %d %s", code, errOut)
	}
	code, out, _ = ctxkit(t, "vault", "docs", "kb", "--json")
	if code != 0 || !strings.Contains(out, `"source": "meeting"`) {
		t.Errorf("docs: %s", out)
	}
	// read prints the text as extracted for the index.
	if out := mustRun(t, "vault", "read", "kb", "notes/audit.md"); out != "# Audit\n\nStarts in March.\n" {
		t.Errorf("read: %q", out)
	}
	var doc vault.DocText
	if err := json.Unmarshal([]byte(mustRun(t, "vault", "read", "kb", "notes/audit.md", "--json")), &doc); err != nil ||
		doc.Path != "notes/audit.md" || doc.Text != "# Audit\n\nStarts in March." || doc.Bytes != int64(len("# Audit\n\nStarts in March.\n")) {
		t.Errorf("read --json: %v %+v", err, doc)
	}
	for _, tc := range []struct{ path, want string }{
		{"notes/none.md", `no document "notes/none.md" in vault "kb"`},
		{"../../etc/passwd", `path "../../etc/passwd" leaves the vault`},
		{".ctxkit-vault/documents.json", "is ctxkit's own data"},
	} {
		if code, _, errOut := ctxkit(t, "vault", "read", "kb", tc.path); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("read %s: %d %s", tc.path, code, errOut)
		}
	}
	code, out, _ = ctxkit(t, "vault", "delete", "kb", "--path", "notes")
	if code != 0 || strings.TrimSpace(out) != "deleted notes/audit.md" {
		t.Errorf("delete: %d %s", code, out)
	}
	if code, out, _ := ctxkit(t, "vault", "query", "kb", "March"); code != 0 || strings.TrimSpace(out) != "no match" {
		t.Errorf("query after delete: %d %s", code, out)
	}
}

func TestVaultSkills(t *testing.T) {
	_, project := vaultEnv(t)
	if code, _, errOut := ctxkit(t, "vault", "init", "howto", "--type", "skill"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	code, out, errOut := ctxkit(t, "vault", "write-skill", "howto", "release", "--description", "Cut a release.", "--instructions", "Tag, build, publish.")
	if code != 0 || !strings.Contains(out, `wrote skill "release" to release/SKILL.md`) {
		t.Fatalf("write-skill: %d %s %s", code, out, errOut)
	}
	dir := filepath.Join(project, ".ctxkit", "vaults", "howto")
	if err := os.WriteFile(filepath.Join(dir, "broken.md"), []byte("no frontmatter"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = ctxkit(t, "vault", "skills", "howto")
	if code == 0 || !strings.Contains(out, "release\trelease/SKILL.md\tCut a release.") || !strings.Contains(out, "problem: broken.md: no frontmatter") {
		t.Errorf("skills with a broken file: %d\n%s", code, out)
	}
	if code, out2, _ := ctxkit(t, "vault", "index", "howto"); code == 0 || out2 != out {
		t.Errorf("index of a skill vault validates its skills: %d\n%s", code, out2)
	}
	code, out, _ = ctxkit(t, "vault", "skill", "howto", "release")
	if code != 0 || !strings.Contains(out, "Tag, build, publish.") {
		t.Errorf("skill: %d %s", code, out)
	}
	if code, _, errOut := ctxkit(t, "vault", "query", "howto", "release"); code == 0 || !strings.Contains(errOut, "skill") {
		t.Errorf("query a skill vault: %d %s", code, errOut)
	}
}

func TestVaultReindexAndPurge(t *testing.T) {
	_, project := vaultEnv(t)
	if code, _, errOut := ctxkit(t, "vault", "init", "kb"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	if code, _, errOut := ctxkit(t, "vault", "write", "kb", "a.md", "--content", "# A\n\nalpha beta\n"); code != 0 {
		t.Fatalf("write: %s", errOut)
	}
	if code, out, _ := ctxkit(t, "vault", "reindex", "kb"); code != 0 || !strings.Contains(out, "indexed 1 file (1 chunk), ") {
		t.Errorf("reindex: %d %s", code, out)
	}
	if code, out, _ := ctxkit(t, "vault", "reindex", "kb", "--path", "a.md"); code != 0 || !strings.Contains(out, "indexed 1 file (1 chunk), ") {
		t.Errorf("reindex a path (unchanged, processed again): %d %s", code, out)
	}
	if code, _, errOut := ctxkit(t, "vault", "reindex", "kb", "--path", "a.md", "--embedding-model", "none"); code == 0 || !strings.Contains(errOut, "drop --path") {
		t.Errorf("model change with a path: %d %s", code, errOut)
	}
	if code, out, _ := ctxkit(t, "vault", "docs", "kb", "--json"); code != 0 || !strings.Contains(out, `"written_by": "owner"`) {
		t.Errorf("metadata after reindexing: %s", out)
	}
	if code, _, errOut := ctxkit(t, "vault", "delete", "kb"); code == 0 || !strings.Contains(errOut, "path") {
		t.Errorf("delete without --path or --purge: %d %s", code, errOut)
	}
	code, out, errOut := ctxkit(t, "vault", "delete", "kb", "--purge")
	if code != 0 || !strings.Contains(out, `deleted vault "kb"`) {
		t.Fatalf("purge: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(project, ".ctxkit", "vaults", "kb")); !os.IsNotExist(err) {
		t.Errorf("the vault folder is still there: %v", err)
	}
	if code, out, _ := ctxkit(t, "vault", "list"); code != 0 || strings.Contains(out, "kb") {
		t.Errorf("purged vault still listed: %s", out)
	}
}

func TestVaultWatchCommand(t *testing.T) {
	_, project := vaultEnv(t)
	if code, _, errOut := ctxkit(t, "vault", "init", "kb"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	if err := os.WriteFile(filepath.Join(project, ".ctxkit", "vaults", "kb", "a.md"), []byte("# A\n\nalpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"vault", "watch", "kb"}, IO{In: strings.NewReader(""), Out: out, Err: io.Discard})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "indexed 1, unchanged 0") {
		if time.Now().After(deadline) {
			t.Fatalf("no first index run: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("watch ended with %d", code)
	}
}

// TestVaultThroughSymlinks is a regression test (issue 14): from a working
// directory reached through a symlink (so that $PWD, and os.Getwd, name the
// link) a vault indexed none of its files; in a vault whose folder is a
// symlink, `vault write` recorded "../../…" paths and a deleted file never
// left the index.
func TestVaultThroughSymlinks(t *testing.T) {
	root, project := vaultEnv(t)
	link := filepath.Join(root, "link")
	if err := os.Symlink(project, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	t.Chdir(link)
	if wd, err := os.Getwd(); err != nil || wd != link {
		t.Fatalf("the working directory is %q (%v), not the link %s", wd, err, link)
	}

	// A vault used through the link.
	mustRun(t, "vault", "init", "kb")
	dir := filepath.Join(project, ".ctxkit", "vaults", "kb")
	for name, text := range map[string]string{"a.md": "# A\n\nalpha apples\n", "sub/b.txt": "beta bananas\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := mustRun(t, "vault", "index", "kb"); !strings.HasPrefix(out, "indexed 2 files") {
		t.Errorf("index through a linked working directory: %s", out)
	}
	if out := mustRun(t, "vault", "query", "kb", "bananas"); !strings.HasPrefix(out, "1. sub/b.txt") {
		t.Errorf("query: %s", out)
	}

	// A vault whose folder is a link: paths are the vault's, canonical.
	shared := filepath.Join(root, "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(project, "notes-link")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "vault", "init", "notes", "--path", "notes-link")
	if out := mustRun(t, "vault", "write", "notes", "notes/a.md", "--content", "# Audit\n\nStarts in March.\n"); out != "wrote and indexed notes/a.md in vault \"notes\"\n" {
		t.Errorf("write: %q", out)
	}
	if _, err := os.Stat(filepath.Join(shared, "notes", "a.md")); err != nil {
		t.Errorf("the document is not in the linked folder: %v", err)
	}
	var docs []vault.DocInfo
	if err := json.Unmarshal([]byte(mustRun(t, "vault", "docs", "notes", "--json")), &docs); err != nil || len(docs) != 1 || docs[0].Path != "notes/a.md" {
		t.Errorf("docs: %v %+v", err, docs)
	}
	if err := os.Remove(filepath.Join(shared, "notes", "a.md")); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "vault", "index", "notes"); !strings.Contains(out, "0 unchanged, 1 removed") {
		t.Errorf("index after deleting the file: %s", out)
	}
	if out := mustRun(t, "vault", "docs", "notes"); out != "" {
		t.Errorf("docs after deleting the file: %q", out)
	}
	if out := mustRun(t, "vault", "query", "notes", "March"); out != "no match\n" {
		t.Errorf("query after deleting the file: %q", out)
	}
}

// TestGlobalVaultDocuments: a global vault's folder defaults to
// $CTXKIT_HOME/vaults/NAME (private to the user); its documents are
// written there, indexed, and found from any folder.
func TestGlobalVaultDocuments(t *testing.T) {
	root, _ := vaultEnv(t)
	dir := filepath.Join(root, "data", "vaults", "g")
	if out := mustRun(t, "vault", "init", "g", "--global"); !strings.Contains(out, `vault "g" (global) at `+dir) {
		t.Errorf("init --global: %s", out)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the global vault's folder: %v %v", fi, err)
	}
	mustRun(t, "vault", "write", "g", "a.md", "--content", "# A\n\nglobal words\n")
	if _, err := os.Stat(filepath.Join(dir, "a.md")); err != nil {
		t.Errorf("the document is not in the vault's folder: %v", err)
	}
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	if out := mustRun(t, "vault", "query", "g", "global"); !strings.HasPrefix(out, "1. a.md › A") {
		t.Errorf("query from another folder: %s", out)
	}
}
