package vault

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// semanticVault makes a local semantic vault holding files.
func semanticVault(t *testing.T, files map[string]string) *Vault {
	t.Helper()
	r, _, _ := newRegistry(t)
	v, err := r.Init(t.Context(), InitOptions{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		writeFile(t, v, name, text)
	}
	return v
}

func writeFile(t *testing.T, v *Vault, name, text string) {
	t.Helper()
	path := filepath.Join(v.Dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

var labelled = map[string]string{
	"budget.md":        "# Budget 2027\n\n## Cloud\n\nWe must cut cloud costs by fifteen percent before the audit.\n\n## Hiring\n\nHiring is frozen until spring.\n",
	"infra/migrate.md": "# Migration\n\nThe services move to containers on the new cluster; the database stays put.\n",
	"recipes/cake.txt": "Lemon cake needs sugar, flour, butter and three lemons.\n",
	"notes/meeting.md": "# Weekly meeting\n\nAnn presents the audit schedule. The cloud bill is discussed again.\n",
}

func TestIndexAndQueryLexical(t *testing.T) {
	v := semanticVault(t, labelled)
	ctx := t.Context()
	rep, err := v.Index(ctx, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed != 4 || rep.Unchanged != 0 || rep.Removed != 0 || len(rep.Failed) != 0 || rep.Embedder != "none" {
		t.Fatalf("first run: %+v", rep)
	}
	// A small labelled query set: the best passage's file and heading.
	for _, tc := range []struct {
		query, path, heading string
	}{
		{"cut cloud costs", "budget.md", "Budget 2027 > Cloud"},
		{"lemons sugar", "recipes/cake.txt", ""},
		{"containers cluster", "infra/migrate.md", "Migration"},
		{"hiring freeze", "budget.md", "Budget 2027 > Hiring"},
		{"audit schedule", "notes/meeting.md", "Weekly meeting"},
	} {
		res, err := v.Query(ctx, tc.query, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != "lexical" || len(res.Results) == 0 {
			t.Fatalf("%q: %+v", tc.query, res)
		}
		top := res.Results[0]
		if top.Path != tc.path || top.Heading != tc.heading || top.LexicalRank != 1 || top.VectorRank != 0 {
			t.Errorf("%q: top result %+v, want %s (%q)", tc.query, top, tc.path, tc.heading)
		}
	}
	if res, err := v.Query(ctx, "submarine", 3, nil); err != nil || len(res.Results) != 0 {
		t.Errorf("no match: %+v %v; want an empty list", res, err)
	}

	// Incremental: one file changed, one removed, one added, one failing.
	writeFile(t, v, "recipes/cake.txt", "Lemon cake, now with poppy seeds.\n")
	if err := os.Remove(filepath.Join(v.Dir, "infra", "migrate.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, v, "new.md", "# New\n\nA fresh note about submarines.\n")
	writeFile(t, v, "broken.pdf", "%PDF-1.7 this is not a PDF at all")
	rep, err = v.Index(ctx, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed != 2 || rep.Unchanged != 2 || rep.Removed != 1 || len(rep.Failed) != 1 || rep.Failed[0].Path != "broken.pdf" {
		t.Fatalf("second run: %+v", rep)
	}
	if res, _ := v.Query(ctx, "submarine", 3, nil); len(res.Results) != 1 || res.Results[0].Path != "new.md" {
		t.Errorf("added file not found: %+v", res)
	}
	if res, _ := v.Query(ctx, "containers", 3, nil); len(res.Results) != 0 {
		t.Errorf("removed file still found: %+v", res)
	}
	docs, err := v.Docs(ctx)
	if err != nil || len(docs) != 4 {
		t.Errorf("docs: %+v %v", docs, err)
	}
}

func TestIndexHybridAndPinnedEmbedder(t *testing.T) {
	v := semanticVault(t, labelled)
	ctx := t.Context()
	h := embed.Hashing{Dim: 128}
	rep, err := v.Index(ctx, IndexOptions{Embedder: h})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Embedder != h.Spec() || rep.Indexed != 4 {
		t.Fatalf("report: %+v", rep)
	}
	res, err := v.Query(ctx, "cloud costs", 3, h)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "hybrid" || res.Results[0].Path != "budget.md" || res.Results[0].VectorRank == 0 || res.Results[0].LexicalRank == 0 {
		t.Fatalf("hybrid: %+v", res)
	}
	// Another model is refused, and the message names the command to run.
	_, err = v.Query(ctx, "cloud", 3, embed.Hashing{Dim: 64})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "re-embed it with: ctxkit vault reindex notes --embedding-model ") {
		t.Errorf("query with another embedder: %v", err)
	}
	if _, err := v.Index(ctx, IndexOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("index without the pinned embedder: %v", err)
	}
	if rep, err := v.Index(ctx, IndexOptions{Reindex: true}); err != nil || rep.Indexed != 4 || rep.Embedder != "none" {
		t.Errorf("reindex lexical only: %+v %v", rep, err)
	}
}

func TestIndexStaysInsideTheVault(t *testing.T) {
	v := semanticVault(t, labelled)
	for _, p := range []string{"../", "/etc", "notes/../../x"} {
		if _, err := v.Index(t.Context(), IndexOptions{Path: p}); !errors.Is(err, ErrOutside) {
			t.Errorf("index --path %q: %v, want ErrOutside", p, err)
		}
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("# Secret\n\nkeys\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(v.Dir, "link")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if _, err := v.Index(t.Context(), IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, _ := v.Query(t.Context(), "secret keys", 3, nil); len(res.Results) != 0 {
		t.Errorf("a file behind a symlink out of the vault was indexed: %+v", res)
	}
}

func TestIndexOnlyAPath(t *testing.T) {
	v := semanticVault(t, labelled)
	rep, err := v.Index(t.Context(), IndexOptions{Path: "recipes"})
	if err != nil || rep.Indexed != 1 {
		t.Fatalf("index recipes: %+v %v", rep, err)
	}
	rep, err = v.Index(t.Context(), IndexOptions{})
	if err != nil || rep.Indexed != 3 || rep.Unchanged != 1 || rep.Removed != 0 {
		t.Fatalf("then all: %+v %v", rep, err)
	}
}

func TestSemanticOperationsNeedASemanticVault(t *testing.T) {
	r, _, _ := newRegistry(t)
	v, err := r.Init(t.Context(), InitOptions{Name: "skills", Type: Skill})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Index(t.Context(), IndexOptions{}); !errors.Is(err, ErrWrongType) {
		t.Errorf("index a skill vault: %v", err)
	}
	if _, err := v.Query(t.Context(), "x", 3, nil); !errors.Is(err, ErrWrongType) {
		t.Errorf("query a skill vault: %v", err)
	}
}

func TestWriteAndDelete(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := t.Context()
	v, err := r.Init(ctx, InitOptions{Name: "kb"})
	if err != nil {
		t.Fatal(err)
	}
	doc := WriteOptions{Agent: Owner, Path: "agents/summary.md", Content: []byte("# Summary\n\nThe audit starts in March.\n"), Meta: map[string]string{"source": "meeting"}}
	if err := v.Write(ctx, doc); err != nil {
		t.Fatal(err)
	}
	res, err := v.Query(ctx, "audit March", 3, nil)
	if err != nil || len(res.Results) != 1 || res.Results[0].Path != "agents/summary.md" {
		t.Fatalf("written document not searchable: %+v %v", res, err)
	}
	if err := v.Write(ctx, doc); !errors.Is(err, ErrExists) {
		t.Errorf("writing over a file without overwrite: %v", err)
	}
	doc.Overwrite, doc.Content = true, []byte("# Summary\n\nThe audit moved to April.\n")
	if err := v.Write(ctx, doc); err != nil {
		t.Fatal(err)
	}
	// The metadata survives a full reindex.
	if _, err := v.Index(ctx, IndexOptions{Reindex: true}); err != nil {
		t.Fatal(err)
	}
	docs, _ := v.Docs(ctx)
	if len(docs) != 1 || docs[0].Meta["source"] != "meeting" || docs[0].Meta["written_by"] != Owner {
		t.Errorf("docs after reindex: %+v", docs)
	}
	for _, bad := range []struct {
		path string
		want error
	}{{"../escape.md", ErrOutside}, {"tool.exe", ErrInvalid}} {
		if err := v.Write(ctx, WriteOptions{Agent: Owner, Path: bad.path, Content: []byte("x")}); !errors.Is(err, bad.want) {
			t.Errorf("write %q: %v, want %v", bad.path, err, bad.want)
		}
	}
	// A read-only agent may not write or delete; the refusal is audited.
	if _, err := r.Attach(ctx, "kb", "reader", true); err != nil {
		t.Fatal(err)
	}
	v, _ = r.Get(ctx, "kb")
	if err := v.Write(ctx, WriteOptions{Agent: "reader", Path: "x.md", Content: []byte("x")}); !errors.Is(err, ErrForbidden) {
		t.Errorf("read-only write: %v", err)
	}
	if _, err := v.Delete(ctx, "reader", "agents"); !errors.Is(err, ErrForbidden) {
		t.Errorf("read-only delete: %v", err)
	}
	events, _ := v.Audit(ctx, 10)
	refused := 0
	for _, e := range events {
		if e.Outcome == Refused && e.Agent == "reader" {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d refusals audited, want 2: %+v", refused, events)
	}

	deleted, err := v.Delete(ctx, Owner, "agents")
	if err != nil || len(deleted) != 1 || deleted[0] != "agents/summary.md" {
		t.Fatalf("delete folder: %v %v", deleted, err)
	}
	if res, _ := v.Query(ctx, "audit", 3, nil); len(res.Results) != 0 {
		t.Errorf("deleted document still found: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(v.Dir, "agents", "summary.md")); !os.IsNotExist(err) {
		t.Errorf("file still on disk: %v", err)
	}
	if _, err := v.Delete(ctx, Owner, "never.md"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("delete a missing file: %v", err)
	}
	if _, err := v.Delete(ctx, Owner, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("delete the whole vault by path: %v", err)
	}
}

func TestSetEmbeddingModelAndRemove(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := t.Context()
	v, err := r.Init(ctx, InitOptions{Name: "kb"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, v, "a.md", "# A\n\nalpha\n")
	if _, err := v.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SetEmbeddingModel(ctx, "kb", "cohere:x"); err == nil {
		t.Error("an invalid spec was accepted")
	}
	v, err = r.SetEmbeddingModel(ctx, "kb", "openai:text-embedding-3-small")
	if err != nil || v.EmbeddingModel != "openai:text-embedding-3-small" {
		t.Fatalf("set model: %+v %v", v, err)
	}
	// The index was built without vectors: it must be rebuilt first.
	if _, err := v.Query(ctx, "alpha", 3, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ctxkit vault reindex kb --embedding-model openai:text-embedding-3-small") {
		t.Errorf("query after a model change: %v", err)
	}
	if _, err := r.SetEmbeddingModel(ctx, "kb", "none"); err != nil {
		t.Fatal(err)
	}

	// A vault whose folder holds a project is never purged.
	outer := filepath.Join(t.TempDir(), "outer")
	if err := os.MkdirAll(filepath.Join(outer, ".ctxkit"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outer, ".ctxkit", "config.json"), []byte(`{"vaults":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Init(ctx, InitOptions{Name: "outer", Path: outer}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Remove(ctx, "outer", true); !errors.Is(err, ErrInvalid) {
		t.Errorf("purging a folder that holds a project: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outer, ".ctxkit", "config.json")); err != nil {
		t.Fatalf("the project was deleted: %v", err)
	}
	if _, err := r.Remove(ctx, "kb", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v.Dir); !os.IsNotExist(err) {
		t.Errorf("purged folder still there: %v", err)
	}
	if _, err := r.Get(ctx, "kb"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removed vault still recorded: %v", err)
	}
}

func TestReadDoc(t *testing.T) {
	v := semanticVault(t, map[string]string{"a.md": "# Title\n\nFirst para.\n\n## Sub\n\nSecond.\n"})
	ctx := t.Context()
	d, err := v.ReadDoc(ctx, Owner, "a.md")
	if err != nil || d.Title != "Title" || d.Text != "# Title\n\nFirst para.\n\n## Sub\n\nSecond." {
		t.Fatalf("read: %+v %v", d, err)
	}
	for path, want := range map[string]error{"missing.md": os.ErrNotExist, "../x.md": ErrOutside, "notes.bin": os.ErrNotExist} {
		if _, err := v.ReadDoc(ctx, Owner, path); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", path, err, want)
		}
	}
	v.Restricted = true
	if _, err := v.ReadDoc(ctx, "stranger", "a.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a stranger reads a restricted vault: %v", err)
	}
}

// TestBuiltinIsTheDefaultOnceInstalled installs a (tiny, random) model as
// the default builtin one: new semantic vaults take it, index with it and
// answer hybrid queries; before, they are lexical only.
func TestBuiltinIsTheDefaultOnceInstalled(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := t.Context()
	before, err := r.Init(ctx, InitOptions{Name: "before"})
	if err != nil || before.EmbeddingModel != "none" {
		t.Fatalf("without a model: %q %v", before.EmbeddingModel, err)
	}
	dst := filepath.Join(r.ModelsDir(), embed.DefaultBuiltinModel)
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json"} {
		b, err := os.ReadFile(filepath.Join("embed", "bert", "testdata", "tiny", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.FromSlash(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := r.Init(ctx, InitOptions{Name: "after"})
	if err != nil || v.EmbeddingModel != "builtin:"+embed.DefaultBuiltinModel {
		t.Fatalf("with the model installed: %q %v", v.EmbeddingModel, err)
	}
	writeFile(t, v, "a.md", "# A\n\nthe cat sat on the mat\n")
	if _, err := v.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := v.Query(ctx, "cat", 3, nil)
	if err != nil || res.Mode != "hybrid" || len(res.Results) != 1 || res.Results[0].VectorRank != 1 {
		t.Errorf("hybrid query with the builtin model: %+v %v", res, err)
	}
}
