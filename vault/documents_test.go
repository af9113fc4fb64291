package vault

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/vault/embed"
)

var labelled = map[string]string{
	"budget.md":        "# Budget 2027\n\n## Cloud\n\nWe must cut cloud costs by fifteen percent before the audit.\n\n## Hiring\n\nHiring is frozen until spring.\n",
	"infra/migrate.md": "# Migration\n\nThe services move to containers on the new cluster; the database stays put.\n",
	"recipes/cake.txt": "Lemon cake needs sugar, flour, butter and three lemons.\n",
	"notes/meeting.md": "# Weekly meeting\n\nAnn presents the audit schedule. The cloud bill is discussed again.\n",
}

func TestIndexAndQueryLexical(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	dir := e.semantic(t, "notes", labelled)
	rep, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed != 4 || rep.Unchanged != 0 || rep.Removed != 0 || len(rep.Failed) != 0 || rep.Embedder != "none" {
		t.Fatalf("first run: %+v", rep)
	}
	query := func(q string) *QueryResult {
		t.Helper()
		res, err := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: q, NResults: 3})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// A small labelled query set: the best passage's file and heading.
	for _, tc := range []struct{ query, path, heading string }{
		{"cut cloud costs", "budget.md", "Budget 2027 > Cloud"},
		{"lemons sugar", "recipes/cake.txt", ""},
		{"containers cluster", "infra/migrate.md", "Migration"},
		{"hiring freeze", "budget.md", "Budget 2027 > Hiring"},
		{"audit schedule", "notes/meeting.md", "Weekly meeting"},
	} {
		res := query(tc.query)
		if res.Mode != "lexical" || len(res.Results) == 0 {
			t.Fatalf("%q: %+v", tc.query, res)
		}
		if top := res.Results[0]; top.Path != tc.path || top.Heading != tc.heading || top.LexicalRank != 1 || top.VectorRank != 0 {
			t.Errorf("%q: top result %+v, want %s (%q)", tc.query, top, tc.path, tc.heading)
		}
	}
	if res := query("submarine"); len(res.Results) != 0 {
		t.Errorf("no match: %+v; want an empty list", res)
	}
	for _, tc := range []struct {
		req  QueryRequest
		want error
	}{{QueryRequest{Query: " "}, ErrInvalid}, {QueryRequest{Query: "x", NResults: -1}, ErrInvalid},
		{QueryRequest{Query: "x", NResults: MaxQueryResults + 1}, ErrInvalid}, {QueryRequest{Query: "x", NResults: MaxQueryResults}, nil}} {
		_, err := e.svc.Query(ctx, Owner(), "notes", tc.req)
		wantErr(t, fmt.Sprintf("query %+v", tc.req), err, tc.want)
	}

	// Incremental: one file changed, one removed, one added, one failing,
	// one hidden (never a document).
	writeFile(t, dir, "recipes/cake.txt", "Lemon cake, now with poppy seeds.\n")
	if err := os.Remove(filepath.Join(dir, "infra", "migrate.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "new.md", "# New\n\nA fresh note about submarines.\n")
	writeFile(t, dir, "broken.pdf", "%PDF-1.7 this is not a PDF at all")
	writeFile(t, dir, ".hidden.md", "# Hidden\n\nsubmarines too\n")
	rep, err = e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed != 2 || rep.Unchanged != 2 || rep.Removed != 1 || len(rep.Failed) != 1 || rep.Failed[0].Path != "broken.pdf" {
		t.Fatalf("second run: %+v", rep)
	}
	if res := query("submarine"); len(res.Results) != 1 || res.Results[0].Path != "new.md" {
		t.Errorf("added file not found: %+v", res)
	}
	if res := query("containers"); len(res.Results) != 0 {
		t.Errorf("removed file still found: %+v", res)
	}
	if docs, err := e.svc.Docs(ctx, Owner(), "notes"); err != nil || len(docs) != 4 {
		t.Errorf("docs: %+v %v", docs, err)
	}
	// Only a path.
	if rep, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{Path: "recipes", Force: true}, nil); err != nil || rep.Indexed != 1 {
		t.Errorf("index only recipes: %+v %v", rep, err)
	}
}

func TestIndexHybridAndPinnedEmbedder(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "notes", EmbeddingModel: hashSpec})
	info, _ := e.svc.DescribeVault(ctx, Owner(), "notes")
	for f, text := range labelled {
		writeFile(t, info.Path, f, text)
	}
	rep, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	if err != nil || rep.Embedder != hashSpec || rep.Indexed != 4 {
		t.Fatalf("report: %+v %v", rep, err)
	}
	res, err := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "cloud costs", NResults: 3})
	if err != nil || res.Mode != "hybrid" || res.Results[0].Path != "budget.md" || res.Results[0].VectorRank == 0 || res.Results[0].LexicalRank == 0 {
		t.Fatalf("hybrid: %+v %v", res, err)
	}
	// Another model is refused until the index is rebuilt with it, and the
	// message names the command that does it.
	if _, err := e.svc.SetEmbeddingModel(ctx, Owner(), "notes", "none"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "cloud"})
	if wantErr(t, "query with another embedder", err, ErrInvalid); err != nil && !strings.Contains(err.Error(), "ctxkit vault reindex notes --embedding-model none") {
		t.Errorf("the message names no command: %v", err)
	}
	_, err = e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	wantErr(t, "index with another embedder", err, ErrInvalid)
	rep, err = e.svc.Index(ctx, Owner(), "notes", IndexRequest{Reindex: true}, nil)
	if err != nil || rep.Indexed != 4 || rep.Embedder != "none" {
		t.Fatalf("reindex lexical only: %+v %v", rep, err)
	}
	if res, err := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "cloud"}); err != nil || res.Mode != "lexical" {
		t.Errorf("after the rebuild: %+v %v", res, err)
	}
	_, err = e.svc.SetEmbeddingModel(ctx, Owner(), "notes", "cohere:x")
	wantErr(t, "an invalid spec", err, ErrInvalid)
}

// TestMissingEmbedderRefuses: a vault pinned to a builtin model that is
// not installed is neither indexed nor searched nor written: each says so
// (ErrUnavailable) with the command that installs the model. Before, index
// and query went on lexically with a warning, which a CLI printed and a
// script never saw.
func TestMissingEmbedderRefuses(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	info := e.vault(t, CreateVaultRequest{Name: "notes", EmbeddingModel: "builtin:absent-model"})
	writeFile(t, info.Path, "a.md", "# A\n\nalpha\n")
	_, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	wantErr(t, "index", err, ErrUnavailable)
	if d := Describe(err); !strings.Contains(d.Message, "builtin:absent-model") || !strings.Contains(d.Fix, "ctxkit model pull absent-model") {
		t.Errorf("the refusal does not say what is missing and how to install it: %+v", d)
	}
	_, err = e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "alpha"})
	wantErr(t, "query", err, ErrUnavailable)
	if d := Describe(err); !strings.Contains(d.Fix, "--lexical") || !strings.Contains(d.Fix, "ctxkit vault reindex notes --embedding-model") {
		t.Errorf("the query's refusal names no way out: %+v", d)
	}
	_, err = e.svc.WriteDoc(ctx, Owner(), "notes", "b.md", WriteDocRequest{Content: "# B\n\nbeta\n"})
	wantErr(t, "write", err, ErrUnavailable)
	if _, err := os.Stat(filepath.Join(info.Path, "b.md")); err == nil {
		t.Error("the refused write left its file")
	}
	res, err := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "alpha", Lexical: true})
	if err != nil || res.Mode != "lexical" || !strings.Contains(res.Warning, "not available") {
		t.Fatalf("a lexical query, asked for: %+v %v", res, err)
	}
	st, err := e.svc.Embedder(ctx, Owner(), "notes")
	if err != nil || st.Available || st.EmbeddingModel != "builtin:absent-model" || !strings.Contains(st.Fix, "ctxkit model pull absent-model") {
		t.Errorf("Embedder: %+v %v", st, err)
	}
}

// TestVectorsWaitForTheirEmbedder: when the embedder a vault's vectors were
// made with is gone, queries, writes and rebuilds (which would drop every
// vector) are refused as unavailable with what to do; a query that asks
// for lexical search gets it, and says what it left out. Before, queries
// went lexical on their own.
func TestVectorsWaitForTheirEmbedder(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	info := e.vault(t, CreateVaultRequest{Name: "notes", EmbeddingModel: hashSpec})
	writeFile(t, info.Path, "a.md", "# A\n\nalpha\n")
	if rep, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil); err != nil || rep.Embedder != hashSpec {
		t.Fatalf("index: %+v %v", rep, err)
	}
	e.opts.Embedders = func(spec string) (embed.Embedder, error) {
		return nil, fmt.Errorf("%s: %w", spec, embed.ErrUnavailable)
	}
	gone, _ := e.open(t)
	_, err := gone.Query(ctx, Owner(), "notes", QueryRequest{Query: "alpha"})
	wantErr(t, "query", err, ErrUnavailable)
	res, err := gone.Query(ctx, Owner(), "notes", QueryRequest{Query: "alpha", Lexical: true})
	if err != nil || res.Mode != "lexical" || !strings.Contains(res.Warning, hashSpec) || len(res.Results) != 1 || res.Results[0].VectorRank != 0 {
		t.Errorf("lexical query: %+v %v", res, err)
	}
	_, err = gone.WriteDoc(ctx, Owner(), "notes", "b.md", WriteDocRequest{Content: "# B\n\nbeta\n"})
	wantErr(t, "write", err, ErrUnavailable)
	_, err = gone.Index(ctx, Owner(), "notes", IndexRequest{Reindex: true}, nil)
	wantErr(t, "rebuild", err, ErrUnavailable)
	if d := Describe(err); !strings.Contains(d.Fix, "ctxkit vault reindex notes --embedding-model") {
		t.Errorf("the rebuild's refusal says nothing to do: %+v", d)
	}
	// The vectors are still there for the embedder when it is back.
	res, err = e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "alpha"})
	if err != nil || res.Mode != "hybrid" || res.Warning != "" {
		t.Errorf("with the embedder back: %+v %v", res, err)
	}
	// A lexical query with the embedder there searches words only, and
	// says so.
	res, err = e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "alpha", Lexical: true})
	if err != nil || res.Mode != "lexical" || strings.Contains(res.Warning, "not available") || len(res.Results) != 1 {
		t.Errorf("lexical query with the embedder there: %+v %v", res, err)
	}
}

// TestErrorsHideTheOwnersFolders: an error about a file of a vault names
// the file as the vault does, never the folder the owner keeps it in.
func TestErrorsHideTheOwnersFolders(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	dir := e.semantic(t, "notes", map[string]string{"a.md": "# A\n\nalpha\n"})
	bot := e.agent(t, "bot")
	_, err := e.svc.Index(ctx, bot, "notes", IndexRequest{Path: "missing/deeper.md"}, nil)
	if err == nil {
		t.Fatal("indexing a missing path succeeded")
	}
	if d := Describe(err); strings.Contains(d.Message, dir) || strings.Contains(d.Message, e.root) {
		t.Errorf("the error shows the vault's folder: %q", d.Message)
	}
	// A file that cannot be read: a link, inside the vault, to a folder.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "folder.md")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	rep, err := e.svc.Index(ctx, bot, "notes", IndexRequest{}, nil)
	if err != nil || len(rep.Failed) != 1 {
		t.Fatalf("index: %+v %v", rep, err)
	}
	if strings.Contains(rep.Failed[0].Error, dir) {
		t.Errorf("the report shows the vault's folder: %q", rep.Failed[0].Error)
	}
}

func TestIndexStaysInsideTheVault(t *testing.T) {
	e := newEnv(t)
	dir := e.semantic(t, "notes", labelled)
	for _, p := range []string{"../", "/etc", "notes/../../x"} {
		_, err := e.svc.Index(t.Context(), Owner(), "notes", IndexRequest{Path: p}, nil)
		wantErr(t, "index path "+p, err, ErrOutside)
	}
	outside := t.TempDir()
	writeFile(t, outside, "secret.md", "# Secret\n\nkeys\n")
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if _, err := e.svc.Index(t.Context(), Owner(), "notes", IndexRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	if res, _ := e.svc.Query(t.Context(), Owner(), "notes", QueryRequest{Query: "secret keys"}); len(res.Results) != 0 {
		t.Errorf("a file behind a symlink out of the vault was indexed: %+v", res)
	}
}

func TestOperationsNeedTheirVaultType(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "skills", Type: Skill})
	e.vault(t, CreateVaultRequest{Name: "docs"})
	_, err := e.svc.Index(ctx, Owner(), "skills", IndexRequest{}, nil)
	wantErr(t, "index a skill vault", err, ErrWrongType)
	_, err = e.svc.Query(ctx, Owner(), "skills", QueryRequest{Query: "x"})
	if wantErr(t, "query a skill vault", err, ErrWrongType); err != nil && !strings.Contains(err.Error(), "write-skill") {
		t.Errorf("the message names nothing that fits: %v", err)
	}
	_, err = e.svc.Skills(ctx, Owner(), "docs")
	wantErr(t, "skills of a semantic vault", err, ErrWrongType)
	_, err = e.svc.QueryEpisodes(ctx, Owner(), "docs", QueryEpisodesRequest{})
	wantErr(t, "episodes of a semantic vault", err, ErrWrongType)
}

func TestWriteReadAndDelete(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	dir := e.vault(t, CreateVaultRequest{Name: "kb"}).Path
	doc := WriteDocRequest{Content: "# Summary\n\nThe audit starts in March.\n", Metadata: map[string]string{"source": "meeting"}}
	res, err := e.svc.WriteDoc(ctx, Owner(), "kb", "agents/summary.md", doc)
	if err != nil || res.Path != "agents/summary.md" || res.Bytes != len(doc.Content) {
		t.Fatalf("write: %+v %v", res, err)
	}
	q, err := e.svc.Query(ctx, Owner(), "kb", QueryRequest{Query: "audit March"})
	if err != nil || len(q.Results) != 1 || q.Results[0].Path != "agents/summary.md" || q.Results[0].Metadata != nil {
		t.Fatalf("written document not searchable, or metadata not asked for: %+v %v", q, err)
	}
	q, err = e.svc.Query(ctx, Owner(), "kb", QueryRequest{Query: "audit March", WithMetadata: true})
	if m := q.Results[0].Metadata; err != nil || len(q.Results) != 1 || m["source"] != "meeting" || m["written_by"] != "owner" {
		t.Fatalf("with_metadata: %+v %v", q, err)
	}
	_, err = e.svc.WriteDoc(ctx, Owner(), "kb", "agents/summary.md", doc)
	wantErr(t, "write over a file without overwrite", err, ErrExists)
	doc.Overwrite, doc.Content = true, "# Summary\n\nThe audit moved to April.\n"
	if _, err := e.svc.WriteDoc(ctx, Owner(), "kb", "agents/summary.md", doc); err != nil {
		t.Fatal(err)
	}
	// The metadata survives a full rebuild.
	if _, err := e.svc.Index(ctx, Owner(), "kb", IndexRequest{Reindex: true}, nil); err != nil {
		t.Fatal(err)
	}
	docs, _ := e.svc.Docs(ctx, Owner(), "kb")
	if len(docs) != 1 || docs[0].Metadata["source"] != "meeting" || docs[0].Metadata["written_by"] != OwnerName {
		t.Errorf("docs after reindex: %+v", docs)
	}
	d, err := e.svc.ReadDoc(ctx, Owner(), "kb", "agents/summary.md")
	if err != nil || d.Title != "Summary" || d.Text != "# Summary\n\nThe audit moved to April." {
		t.Fatalf("read: %+v %v", d, err)
	}
	for _, bad := range []struct {
		path string
		want error
	}{{"../escape.md", ErrOutside}, {"tool.exe", ErrInvalid}, {"", ErrInvalid}, {"/abs.md", ErrOutside}} {
		_, err := e.svc.WriteDoc(ctx, Owner(), "kb", bad.path, WriteDocRequest{Content: "x"})
		wantErr(t, "write "+bad.path, err, bad.want)
	}
	for path, want := range map[string]error{"missing.md": ErrNotFound, "../x.md": ErrOutside, "notes.bin": ErrNotFound} {
		_, err := e.svc.ReadDoc(ctx, Owner(), "kb", path)
		wantErr(t, "read "+path, err, want)
	}
	deleted, err := e.svc.DeleteDoc(ctx, Owner(), "kb", "agents")
	if err != nil || len(deleted) != 1 || deleted[0] != "agents/summary.md" {
		t.Fatalf("delete folder: %v %v", deleted, err)
	}
	if q, _ := e.svc.Query(ctx, Owner(), "kb", QueryRequest{Query: "audit"}); len(q.Results) != 0 {
		t.Errorf("deleted document still found: %+v", q)
	}
	if _, err := os.Stat(filepath.Join(dir, "agents", "summary.md")); !os.IsNotExist(err) {
		t.Errorf("file still on disk: %v", err)
	}
	_, err = e.svc.DeleteDoc(ctx, Owner(), "kb", "never.md")
	wantErr(t, "delete a missing file", err, ErrNotFound)
	_, err = e.svc.DeleteDoc(ctx, Owner(), "kb", "")
	wantErr(t, "delete the whole vault by path", err, ErrInvalid)
	if docs, _ := e.svc.Docs(ctx, Owner(), "kb"); len(docs) != 0 {
		t.Errorf("docs after delete: %+v", docs)
	}
}

// TestControlFilesAreNeverDocuments is the regression test of the escape
// through a vault whose folder is the project root: an agent rewrote
// .ctxkit/config.json as a document, added a vault at /, and read and
// wrote anywhere. Hidden files and folders, ctxkit's own among them, are
// never documents: not written, read, deleted or indexed.
func TestControlFilesAreNeverDocuments(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	info := e.vault(t, CreateVaultRequest{Name: "notes", Path: e.root, Restricted: true})
	e.agent(t, "bot")
	e.attach(t, "notes", "bot", false)
	bot, err := e.svc.ActAs(ctx, Owner(), "bot")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(e.root, ".ctxkit", "config.json")
	before, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	evil := `{"vaults": {"root": {"type": "semantic", "path": "/", "restricted": false}}}`
	for _, p := range []string{".ctxkit/config.json", ".ctxkit/vaults/x.md", ".ctxkit-vault/audit.json", ".git/config.json",
		".vscode/tasks.json", ".github/workflows/ci.json", ".hidden.md", "a/.b/c.md", "./.ctxkit/config.json", "a/../.ctxkit/config.json"} {
		for _, c := range []Caller{bot, Owner()} {
			_, err := e.svc.WriteDoc(ctx, c, "notes", p, WriteDocRequest{Content: evil, Overwrite: true})
			wantErr(t, c.String()+" writes "+p, err, ErrOutside)
			_, err = e.svc.ReadDoc(ctx, c, "notes", p)
			wantErr(t, c.String()+" reads "+p, err, ErrOutside)
			_, err = e.svc.DeleteDoc(ctx, c, "notes", p)
			wantErr(t, c.String()+" deletes "+p, err, ErrOutside)
		}
	}
	if after, _ := os.ReadFile(config); string(after) != string(before) {
		t.Fatalf("the project config changed:\n%s", after)
	}
	if all, _ := e.svc.ListVaults(ctx, Owner()); len(all) != 1 {
		t.Fatalf("vaults: %+v", all)
	}
	// A vault holding ctxkit's data directory would expose it: refused.
	_, err = e.svc.CreateVault(ctx, Owner(), CreateVaultRequest{Name: "home", Path: filepath.Dir(e.home)})
	wantErr(t, "a vault over the data directory", err, ErrInvalid)
	// Indexing skips them too.
	writeFile(t, info.Path, "visible.md", "# Visible\n\nzebra\n")
	rep, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	if err != nil || rep.Indexed != 1 {
		t.Fatalf("index of the project root: %+v %v", rep, err)
	}
}

// TestLongPaths is the regression test of "a 300-character document path
// answers 500": over-long paths are refused as invalid, and a name as long
// as a file system allows is written.
func TestLongPaths(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "kb"})
	for _, p := range []string{strings.Repeat("a", 300) + ".md", "dir/" + strings.Repeat("b", 253) + ".md", strings.Repeat("abc/", 300) + "x.md"} {
		_, err := e.svc.WriteDoc(ctx, Owner(), "kb", p, WriteDocRequest{Content: "x"})
		wantErr(t, fmt.Sprintf("write a %d-byte path", len(p)), err, ErrInvalid)
		_, err = e.svc.ReadDoc(ctx, Owner(), "kb", p)
		wantErr(t, fmt.Sprintf("read a %d-byte path", len(p)), err, ErrInvalid)
	}
	p := strings.Repeat("c", 252) + ".md"
	if _, err := e.svc.WriteDoc(ctx, Owner(), "kb", p, WriteDocRequest{Content: "# Long\n\nname\n"}); err != nil {
		t.Fatalf("a 255-byte name: %v", err)
	}
}

// TestSymlinkedFolders is the regression test of vaults reached through
// symlinks: documents are named from the vault's real folder, so a vault
// whose folder is a symlink stores "notes/a.md" (not "../../…"), and a
// deleted file leaves the index.
func TestSymlinkedFolders(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	real := filepath.Join(t.TempDir(), "store", "kb")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.root, "kb-link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	e.vault(t, CreateVaultRequest{Name: "kb", Path: link})
	writeFile(t, real, "existing.md", "# Existing\n\nalpha\n")
	if rep, err := e.svc.Index(ctx, Owner(), "kb", IndexRequest{}, nil); err != nil || rep.Indexed != 1 {
		t.Fatalf("index through the link: %+v %v", rep, err)
	}
	res, err := e.svc.WriteDoc(ctx, Owner(), "kb", "notes/a.md", WriteDocRequest{Content: "# A\n\nbravo\n"})
	if err != nil || res.Path != "notes/a.md" {
		t.Fatalf("write: %+v %v", res, err)
	}
	docs, _ := e.svc.Docs(ctx, Owner(), "kb")
	var paths []string
	for _, d := range docs {
		paths = append(paths, d.Path)
	}
	if strings.Join(paths, " ") != "existing.md notes/a.md" {
		t.Fatalf("documents: %v", paths)
	}
	if err := os.Remove(filepath.Join(real, "notes", "a.md")); err != nil {
		t.Fatal(err)
	}
	if rep, err := e.svc.Index(ctx, Owner(), "kb", IndexRequest{}, nil); err != nil || rep.Removed != 1 {
		t.Fatalf("a deleted file did not leave the index: %+v %v", rep, err)
	}
}

// TestPurgeAndRecreateWhileServing is the regression test of "vault delete
// X --purge then vault init X while serve runs: the server keeps the
// deleted database open, later writes answer 201 and are lost". The server
// is a second service on the same backend that used the vault before.
func TestPurgeAndRecreateWhileServing(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	server, _ := e.open(t)
	e.vault(t, CreateVaultRequest{Name: "mem", Type: Episodic})
	e.vault(t, CreateVaultRequest{Name: "notes"})
	if _, err := server.WriteEpisode(ctx, Owner(), "mem", WriteEpisodeRequest{Content: "old fact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := server.WriteDoc(ctx, Owner(), "notes", "a.md", WriteDocRequest{Content: "# A\n\nold\n"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mem", "notes"} {
		if _, err := e.svc.RemoveVault(ctx, Owner(), name, true); err != nil {
			t.Fatal(err)
		}
	}
	e.vault(t, CreateVaultRequest{Name: "mem", Type: Episodic})
	e.vault(t, CreateVaultRequest{Name: "notes"})
	if _, err := server.WriteEpisode(ctx, Owner(), "mem", WriteEpisodeRequest{Content: "new fact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := server.WriteDoc(ctx, Owner(), "notes", "b.md", WriteDocRequest{Content: "# B\n\nnew\n"}); err != nil {
		t.Fatal(err)
	}
	st, err := e.svc.EpisodeStats(ctx, Owner(), "mem", "")
	if err != nil || st.Total != 1 {
		t.Errorf("the new vault holds %+v (%v), want the one new fact", st, err)
	}
	docs, err := e.svc.Docs(ctx, Owner(), "notes")
	if err != nil || len(docs) != 1 || docs[0].Path != "b.md" {
		t.Errorf("the new vault's documents: %+v %v", docs, err)
	}
}

// TestReindexKeepsAnswering: while a vault is rebuilt, queries find every
// document (the old generation answers), a document written meanwhile is
// found at once and after, and one deleted meanwhile is not brought back.
func TestReindexKeepsAnswering(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.md", i)] = fmt.Sprintf("# File\n\nmarker%02d text\n", i)
	}
	e.semantic(t, "live", files)
	if _, err := e.svc.Index(ctx, Owner(), "live", IndexRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	find := func(q string) int {
		t.Helper()
		res, err := e.svc.Query(ctx, Owner(), "live", QueryRequest{Query: q, NResults: 5})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Results)
	}
	mid := false
	rep, err := e.svc.Index(ctx, Owner(), "live", IndexRequest{Reindex: true}, func(done, total int, _ string) {
		if done != total/2 {
			return
		}
		mid = true
		for i := range 20 {
			if n := find(fmt.Sprintf("marker%02d", i)); n != 1 {
				t.Errorf("mid-rebuild, marker%02d found %d times, want 1", i, n)
			}
		}
		if _, err := e.svc.WriteDoc(ctx, Owner(), "live", "new.md", WriteDocRequest{Content: "# New\n\nfreshword\n"}); err != nil {
			t.Fatal(err)
		}
		if n := find("freshword"); n != 1 {
			t.Errorf("a document written mid-rebuild found %d times, want 1", n)
		}
		if _, err := e.svc.DeleteDoc(ctx, Owner(), "live", "f19.md"); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil || !mid {
		t.Fatalf("reindex: %+v %v (progress reached the middle: %v)", rep, err, mid)
	}
	if n := find("freshword"); n != 1 {
		t.Errorf("after the rebuild the document written during it found %d times", n)
	}
	if n := find("marker19"); n != 0 {
		t.Errorf("after the rebuild the document deleted during it found %d times", n)
	}
	if n := find("marker03"); n != 1 {
		t.Errorf("after the rebuild marker03 found %d times", n)
	}
}

// TestConcurrentReindexWithWriters is the regression test of "three
// concurrent reindexes on a vault with writers running: 500 sql: database
// is closed, and 500s on document writes whose files were written": every
// call succeeds, and every write is indexed at the end.
func TestConcurrentReindexWithWriters(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("f%04d.md", i)] = fmt.Sprintf("# File uniq%04d\n\nfiller words\n", i)
	}
	e.semantic(t, "big", files)
	server, _ := e.open(t)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := e.svc.Index(ctx, Owner(), "big", IndexRequest{Reindex: true}, nil); err != nil {
				t.Errorf("reindex: %v", err)
			}
		})
		wg.Go(func() {
			if _, err := server.Index(ctx, Owner(), "big", IndexRequest{Reindex: true}, nil); err != nil {
				t.Errorf("reindex on the other instance: %v", err)
			}
		})
	}
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				p := fmt.Sprintf("w/%d-%d.md", w, i)
				if _, err := server.WriteDoc(ctx, Owner(), "big", p, WriteDocRequest{Content: fmt.Sprintf("# W\n\nwritten%d%d\n", w, i)}); err != nil {
					t.Errorf("write %s: %v", p, err)
				}
			}
		})
	}
	wg.Wait()
	docs, err := e.svc.Docs(ctx, Owner(), "big")
	if err != nil || len(docs) != 240 {
		t.Fatalf("%d documents indexed, want 240: %v", len(docs), err)
	}
	for w := range 4 {
		for i := range 10 {
			res, err := e.svc.Query(ctx, Owner(), "big", QueryRequest{Query: fmt.Sprintf("written%d%d", w, i), NResults: 1})
			if err != nil || len(res.Results) != 1 {
				t.Errorf("write %d-%d not found: %+v %v", w, i, res, err)
			}
		}
	}
}

// TestBuiltinIsTheDefaultOnceInstalled installs a (tiny, random) model as
// the default builtin one: new semantic vaults take it, index with it and
// answer hybrid queries; before, they are lexical only.
func TestBuiltinIsTheDefaultOnceInstalled(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if before := e.vault(t, CreateVaultRequest{Name: "before"}); before.EmbeddingModel != "none" {
		t.Fatalf("without a model: %q", before.EmbeddingModel)
	}
	dst := filepath.Join(e.svc.ModelsDir(), embed.DefaultBuiltinModel)
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json"} {
		b, err := os.ReadFile(filepath.Join("embed", "bert", "testdata", "tiny", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dst, f, string(b))
	}
	v := e.vault(t, CreateVaultRequest{Name: "after"})
	if v.EmbeddingModel != "builtin:"+embed.DefaultBuiltinModel {
		t.Fatalf("with the model installed: %q", v.EmbeddingModel)
	}
	writeFile(t, v.Path, "a.md", "# A\n\nthe cat sat on the mat\n")
	if _, err := e.svc.Index(ctx, Owner(), "after", IndexRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Query(ctx, Owner(), "after", QueryRequest{Query: "cat"})
	if err != nil || res.Mode != "hybrid" || len(res.Results) != 1 || res.Results[0].VectorRank != 1 {
		t.Errorf("hybrid query with the builtin model: %+v %v", res, err)
	}
}

// TestSentenceTransformersNames: the names CtxVault and sentence-transformers
// users give an embedder are the builtin embedder's spec, at creation and
// when a vault moves; a model that is not installed is refused before the
// vault moves to it, with the command that installs it (its own repo's
// name), and one the builtin embedder cannot run is refused at once.
func TestSentenceTransformersNames(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	for _, tc := range []struct{ name, spec string }{
		{"all-MiniLM-L6-v2", "builtin:all-MiniLM-L6-v2"},
		{"sentence-transformers/all-MiniLM-L12-v2", "builtin:all-MiniLM-L12-v2"},
		{"BAAI/bge-small-en-v1.5", "builtin:bge-small-en-v1.5"},
	} {
		v := e.vault(t, CreateVaultRequest{Name: strings.NewReplacer("/", "-").Replace(tc.name), EmbeddingModel: tc.name})
		if v.EmbeddingModel != tc.spec {
			t.Errorf("%s: pinned %q, want %q", tc.name, v.EmbeddingModel, tc.spec)
		}
	}
	_, err := e.svc.CreateVault(ctx, Owner(), CreateVaultRequest{Name: "mpnet", EmbeddingModel: "all-mpnet-base-v2"})
	wantErr(t, "an MPNet model", err, ErrInvalid)
	if d := Describe(err); d.Field != "embedding_model" || !strings.Contains(d.Message, "MPNet") || !strings.Contains(d.Message, "all-MiniLM-L6-v2") {
		t.Errorf("the refusal does not say why nor what can be served: %+v", d)
	}

	e.vault(t, CreateVaultRequest{Name: "notes", EmbeddingModel: "none"})
	_, err = e.svc.SetEmbeddingModel(ctx, Owner(), "notes", "BAAI/bge-small-en-v1.5")
	wantErr(t, "move to a model not installed", err, ErrUnavailable)
	if d := Describe(err); !strings.Contains(d.Fix, "ctxkit model pull BAAI/bge-small-en-v1.5") {
		t.Errorf("the refusal does not say how to install it: %+v", d)
	}
	if v, err := e.svc.DescribeVault(ctx, Owner(), "notes"); err != nil || v.EmbeddingModel != "none" {
		t.Fatalf("the refused move changed the vault: %+v %v", v, err)
	}
	dst := filepath.Join(e.svc.ModelsDir(), "bge-small-en-v1.5")
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json"} {
		b, err := os.ReadFile(filepath.Join("embed", "bert", "testdata", "tiny", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dst, f, string(b))
	}
	if v, err := e.svc.SetEmbeddingModel(ctx, Owner(), "notes", "bge-small-en-v1.5"); err != nil || v.EmbeddingModel != "builtin:bge-small-en-v1.5" {
		t.Fatalf("move to an installed model: %+v %v", v, err)
	}
}

// samePassages reports whether two results are the same passages in the
// same order, with the same ranks, and scores equal up to 1e-9 relative
// (the lexicon adds BM25's terms in another order than SQLite).
func samePassages(a, b []Passage) bool {
	if len(a) != len(b) {
		return false
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)) }
	for i := range a {
		x, y := a[i], b[i]
		if x.Path != y.Path || x.Chunk != y.Chunk || x.LexicalRank != y.LexicalRank || x.VectorRank != y.VectorRank ||
			!near(x.Score, y.Score) || !near(x.LexicalScore, y.LexicalScore) || !near(x.VectorScore, y.VectorScore) {
			return false
		}
	}
	return true
}

// TestKeptSearcherMatchesOneShot: a service that keeps searchers (lexicon
// and vectors in memory, as a server does) answers exactly as one that
// asks the index, and sees a write at once.
func TestKeptSearcherMatchesOneShot(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "notes", EmbeddingModel: hashSpec})
	info, _ := e.svc.DescribeVault(ctx, Owner(), "notes")
	for f, text := range labelled {
		writeFile(t, info.Path, f, text)
	}
	if _, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	e.opts.KeepSearchers = true
	kept, _ := e.open(t)
	for _, q := range []string{"cloud costs", "lemons", "audit schedule", "the", "zzz"} {
		for _, n := range []int{1, 3, 10} {
			a, err1 := kept.Query(ctx, Owner(), "notes", QueryRequest{Query: q, NResults: n})
			b, err2 := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: q, NResults: n})
			if err1 != nil || err2 != nil || !samePassages(a.Results, b.Results) || a.Mode != b.Mode {
				t.Fatalf("%q n=%d:\nkept    %+v %v\none-shot %+v %v", q, n, a, err1, b, err2)
			}
		}
	}
	if _, err := e.svc.WriteDoc(ctx, Owner(), "notes", "new.md", WriteDocRequest{Content: "# New\n\nsubmarine\n"}); err != nil {
		t.Fatal(err)
	}
	if res, err := kept.Query(ctx, Owner(), "notes", QueryRequest{Query: "submarine"}); err != nil || res.Results[0].Path != "new.md" || res.Results[0].LexicalRank != 1 {
		t.Errorf("a write through another instance is not seen: %+v %v", res, err)
	}
}
