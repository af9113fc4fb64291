package vault_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// The tests of hosted vaults: the service over a backend that keeps the
// vaults' documents itself (vaulttest's "hosted" scheme), as a database
// several machines share does.

// onHosted runs test on each hosting backend: vaulttest's "hosted" (in
// memory) and PostgreSQL (skipped without $CTXKIT_TEST_POSTGRES).
func onHosted(t *testing.T, test func(*testing.T, *vaulttest.Env)) {
	for _, scheme := range []string{"hosted", "postgres"} {
		t.Run(scheme, func(t *testing.T) {
			e := vaulttest.New(t, vaulttest.Options{Scheme: scheme})
			if !e.Svc.Hosted() {
				t.Fatalf("the %s backend does not host", scheme)
			}
			test(t, e)
		})
	}
}

func wantKind(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: %v; want %v", what, err, kind)
	}
}

// hostedFiles returns the files the backend hosts for the vault called name.
func hostedFiles(t *testing.T, e *vaulttest.Env, name string) store.Files {
	t.Helper()
	recs, err := e.Backend.Registry().Vaults(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Name == name {
			f, err := e.Backend.Files(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no vault %q recorded", name)
	return nil
}

// noFolders fails if any vault folder was made.
func noFolders(t *testing.T, e *vaulttest.Env) {
	t.Helper()
	for _, d := range []string{filepath.Join(e.Home, "vaults"), filepath.Join(e.Root, ".ctxkit", "vaults")} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("a hosted vault made the folder %s", d)
		}
	}
}

func TestHostedCreate(t *testing.T) { onHosted(t, testHostedCreate) }

func testHostedCreate(t *testing.T, e *vaulttest.Env) {
	ctx := t.Context()
	info, err := e.Svc.CreateVault(ctx, vault.Owner(), vault.CreateVaultRequest{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Scope != vault.Global || info.Path != "" {
		t.Errorf("a hosted vault: scope %s, path %q; want global, no path", info.Scope, info.Path)
	}
	_, err = e.Svc.CreateVault(ctx, vault.Owner(), vault.CreateVaultRequest{Name: "p", Path: filepath.Join(e.Root, "p")})
	wantKind(t, "create with a path", err, vault.ErrInvalid)
	if d := vault.Describe(err); d.Field != "path" || d.Fix == "" || !strings.Contains(d.Message, "no path") {
		t.Errorf("create with a path: %+v", d)
	}
	_, err = e.Svc.CreateVault(ctx, vault.Owner(), vault.CreateVaultRequest{Name: "l", Scope: vault.Local})
	wantKind(t, "create a local vault", err, vault.ErrInvalid)
	if d := vault.Describe(err); d.Field != "scope" || d.Fix == "" || !strings.Contains(d.Message, "global") {
		t.Errorf("create a local vault: %+v", d)
	}
	if _, err := e.Svc.CreateVault(ctx, vault.Owner(), vault.CreateVaultRequest{Name: "g", Scope: vault.Global, Type: vault.Skill}); err != nil {
		t.Errorf("create a global skill vault: %v", err)
	}
	noFolders(t, e)
	err = e.Svc.Watch(ctx, vault.Owner(), "notes", vault.WatchOptions{})
	wantKind(t, "watch a hosted vault", err, vault.ErrInvalid)
	if d := vault.Describe(err); !strings.Contains(d.Message, "no folder") || !strings.Contains(d.Fix, "--from") {
		t.Errorf("watch a hosted vault: %+v", d)
	}
}

func TestHostedDocuments(t *testing.T) { onHosted(t, testHostedDocuments) }

func testHostedDocuments(t *testing.T, e *vaulttest.Env) {
	ctx := t.Context()
	owner := vault.Owner()
	e.Vault(t, vault.CreateVaultRequest{Name: "notes", EmbeddingModel: "none"})
	bot := e.Agent(t, "bot")
	write := func(c vault.Caller, path, content string, overwrite bool) error {
		_, err := e.Svc.WriteDoc(ctx, c, "notes", path, vault.WriteDocRequest{Content: content, Overwrite: overwrite})
		return err
	}
	if err := write(bot, "notes/alpha.md", "# Alpha\n\nthe aardvark eats ants\n", false); err != nil {
		t.Fatal(err)
	}
	if err := write(bot, "notes/beta.md", "# Beta\n\nthe badger digs burrows\n", false); err != nil {
		t.Fatal(err)
	}
	if err := write(owner, "gamma.txt", "the gazelle runs\n", false); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "write over a document", write(bot, "notes/alpha.md", "x", false), vault.ErrExists)
	if err := write(bot, "notes/alpha.md", "# Alpha\n\nthe aardvark eats termites\n", true); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	wantKind(t, "write over a folder", write(bot, "notes", "x", true), vault.ErrInvalid) // no extension
	if err := write(bot, "notes.md/x.md", "x", true); err != nil {
		t.Errorf("write into a folder named like a document: %v", err)
	}
	wantKind(t, "write over a folder of documents", write(bot, "notes.md", "x", true), vault.ErrExists)

	doc, err := e.Svc.ReadDoc(ctx, bot, "notes", "notes/alpha.md")
	if err != nil || !strings.Contains(doc.Text, "termites") || doc.Bytes != int64(len("# Alpha\n\nthe aardvark eats termites\n")) {
		t.Errorf("ReadDoc = %+v, %v", doc, err)
	}
	_, err = e.Svc.ReadDoc(ctx, bot, "notes", "notes/missing.md")
	wantKind(t, "read a missing document", err, vault.ErrNotFound)
	_, err = e.Svc.ReadDoc(ctx, bot, "notes", "notes")
	wantKind(t, "read a folder", err, vault.ErrNotFound)
	byID, err := e.Svc.ReadDocByID(ctx, bot, "notes", vault.DocID("gamma.txt"))
	if err != nil || !strings.Contains(byID.Text, "gazelle") {
		t.Errorf("ReadDocByID = %+v, %v", byID, err)
	}

	docs, err := e.Svc.Docs(ctx, bot, "notes")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range docs {
		paths = append(paths, d.Path)
	}
	if want := []string{"gamma.txt", "notes.md/x.md", "notes/alpha.md", "notes/beta.md"}; !slices.Equal(paths, want) {
		t.Errorf("Docs = %q, want %q", paths, want)
	}
	res, err := e.Svc.Query(ctx, bot, "notes", vault.QueryRequest{Query: "termites"})
	if err != nil || len(res.Results) == 0 || res.Results[0].Path != "notes/alpha.md" {
		t.Errorf("Query(termites) = %+v, %v", res, err)
	}

	// Another machine writes and removes files: an index run follows.
	f := hostedFiles(t, e, "notes")
	if err := f.Write(ctx, "elsewhere/delta.md", []byte("# Delta\n\nthe dolphin dives\n"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx, "gamma.txt"); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Svc.Index(ctx, owner, "notes", vault.IndexRequest{}, nil)
	if err != nil || rep.Indexed != 1 || rep.Removed != 1 || rep.Unchanged != 3 || len(rep.Failed) != 0 {
		t.Errorf("Index = %+v, %v; want 1 indexed, 1 removed, 3 unchanged", rep, err)
	}
	if res, err := e.Svc.Query(ctx, owner, "notes", vault.QueryRequest{Query: "dolphin"}); err != nil || len(res.Results) == 0 {
		t.Errorf("Query(dolphin) = %+v, %v", res, err)
	}
	rep, err = e.Svc.Index(ctx, owner, "notes", vault.IndexRequest{Path: "elsewhere", Force: true}, nil)
	if err != nil || rep.Indexed != 1 {
		t.Errorf("Index(elsewhere) = %+v, %v", rep, err)
	}
	_, err = e.Svc.Index(ctx, owner, "notes", vault.IndexRequest{Path: "nowhere"}, nil)
	wantKind(t, "index a missing folder", err, vault.ErrNotFound)
	if rep, err := e.Svc.Index(ctx, owner, "notes", vault.IndexRequest{Reindex: true}, nil); err != nil || rep.Indexed != 4 {
		t.Errorf("reindex = %+v, %v", rep, err)
	}

	// Deleting a document, then a folder.
	gone, err := e.Svc.DeleteDoc(ctx, bot, "notes", "notes.md/x.md")
	if err != nil || !slices.Equal(gone, []string{"notes.md/x.md"}) {
		t.Errorf("DeleteDoc(file) = %q, %v", gone, err)
	}
	gone, err = e.Svc.DeleteDoc(ctx, bot, "notes", "notes")
	if err != nil || !slices.Equal(gone, []string{"notes/alpha.md", "notes/beta.md"}) {
		t.Errorf("DeleteDoc(folder) = %q, %v", gone, err)
	}
	_, err = e.Svc.DeleteDoc(ctx, bot, "notes", "notes")
	wantKind(t, "delete a folder again", err, vault.ErrNotFound)
	var left []string
	if err := f.Walk(ctx, "", func(fi store.FileInfo) error { left = append(left, fi.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(left, []string{"elsewhere/delta.md"}) {
		t.Errorf("files left: %q", left)
	}
	if res, _ := e.Svc.Query(ctx, owner, "notes", vault.QueryRequest{Query: "aardvark badger"}); len(res.Results) != 0 {
		t.Errorf("deleted documents still found: %+v", res.Results)
	}
	noFolders(t, e)
}

// TestHostedPathsStayInside: every way out of the vault is refused, as in
// a folder vault, and nothing is written.
func TestHostedPathsStayInside(t *testing.T) { onHosted(t, testHostedPathsStayInside) }

func testHostedPathsStayInside(t *testing.T, e *vaulttest.Env) {
	ctx := t.Context()
	e.Vault(t, vault.CreateVaultRequest{Name: "notes", EmbeddingModel: "none"})
	e.Vault(t, vault.CreateVaultRequest{Name: "skills", Type: vault.Skill})
	for _, p := range []string{"../x.md", "/etc/passwd.md", "a/../../x.md", `..\x.md`, ".ctxkit-vault/index.md", "a/.git/x.md", ".env.md", "x\x00.md"} {
		_, err := e.Svc.WriteDoc(ctx, vault.Owner(), "notes", p, vault.WriteDocRequest{Content: "x"})
		wantKind(t, "WriteDoc "+p, err, vault.ErrOutside)
		_, err = e.Svc.ReadDoc(ctx, vault.Owner(), "notes", p)
		wantKind(t, "ReadDoc "+p, err, vault.ErrOutside)
		_, err = e.Svc.DeleteDoc(ctx, vault.Owner(), "notes", p)
		wantKind(t, "DeleteDoc "+p, err, vault.ErrOutside)
		_, err = e.Svc.Index(ctx, vault.Owner(), "notes", vault.IndexRequest{Path: p}, nil)
		wantKind(t, "Index "+p, err, vault.ErrOutside)
	}
	for _, name := range []string{"../up", "a/b", ".hidden"} {
		_, err := e.Svc.WriteSkill(ctx, vault.Owner(), "skills", name, vault.WriteSkillRequest{Description: "d", Instructions: "i"})
		wantKind(t, "WriteSkill "+name, err, vault.ErrInvalid)
	}
	err := hostedFiles(t, e, "notes").Walk(ctx, "", func(fi store.FileInfo) error { return errors.New(fi.Path + " was written") })
	if err != nil {
		t.Error(err)
	}
}

func TestHostedSkills(t *testing.T) { onHosted(t, testHostedSkills) }

func testHostedSkills(t *testing.T, e *vaulttest.Env) {
	ctx := t.Context()
	e.Vault(t, vault.CreateVaultRequest{Name: "skills", Type: vault.Skill})
	bot := e.Agent(t, "bot")
	req := vault.WriteSkillRequest{Description: "Review a pull request", Instructions: "1. Read the diff.\n2. Comment."}
	sk, err := e.Svc.WriteSkill(ctx, bot, "skills", "review-pr", req)
	if err != nil || sk.Path != "review-pr/SKILL.md" || !strings.Contains(sk.Instructions, "Read the diff") || sk.Size == 0 {
		t.Fatalf("WriteSkill = %+v, %v", sk, err)
	}
	_, err = e.Svc.WriteSkill(ctx, bot, "skills", "review-pr", req)
	wantKind(t, "write a skill again", err, vault.ErrExists)
	req.Overwrite, req.Instructions = true, "Read it twice."
	if _, err := e.Svc.WriteSkill(ctx, bot, "skills", "review-pr", req); err != nil {
		t.Errorf("overwrite a skill: %v", err)
	}
	// Files another machine put: a top-level skill and a broken one.
	f := hostedFiles(t, e, "skills")
	if err := f.Write(ctx, "deploy.md", []byte("---\nname: deploy\ndescription: Deploy the service\n---\nRun make deploy.\n"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, "broken.md", []byte("no frontmatter"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, "review-pr/scripts/lint.sh", []byte("#!/bin/sh"), false); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Svc.Skills(ctx, bot, "skills")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Skills {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"deploy", "review-pr"}) || len(rep.Problems) != 1 || rep.Problems[0].Path != "broken.md" {
		t.Errorf("Skills = %q, problems %+v", names, rep.Problems)
	}
	got, err := e.Svc.Skill(ctx, bot, "skills", "review-pr")
	if err != nil || got.Instructions != "Read it twice." {
		t.Errorf("Skill = %+v, %v", got, err)
	}
}

// writeTree writes files under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openFrom(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestHostedUpload(t *testing.T) { onHosted(t, testHostedUpload) }

func testHostedUpload(t *testing.T, e *vaulttest.Env) {
	ctx := t.Context()
	e.Vault(t, vault.CreateVaultRequest{Name: "notes", EmbeddingModel: "none", Restricted: true})
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"a.md":               "# A\n\nthe aardvark\n",
		"sub/b.txt":          "the badger\n",
		"sub/deep/c.json":    `{"animal": "capybara"}`,
		"image.png":          "not a document",
		".hidden/x.md":       "hidden",
		".ctxkit-vault/i.md": "data",
		"sub/.draft.md":      "draft",
	})
	// Over the limit, and sparse: refused before it is read.
	writeTree(t, src, map[string]string{"big.md": ""})
	if err := os.Truncate(filepath.Join(src, "big.md"), vault.MaxDocBytes+1); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Svc.UploadDocs(ctx, vault.Owner(), "notes", openFrom(t, src).FS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploaded != 3 || len(rep.Failed) != 1 || rep.Failed[0].Path != "big.md" || rep.Index == nil || rep.Index.Indexed != 3 {
		t.Errorf("UploadDocs = %+v (index %+v)", rep, rep.Index)
	}
	var got []string
	if err := hostedFiles(t, e, "notes").Walk(ctx, "", func(fi store.FileInfo) error { got = append(got, fi.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.md", "sub/b.txt", "sub/deep/c.json"}; !slices.Equal(got, want) {
		t.Errorf("uploaded %q, want %q", got, want)
	}
	if res, err := e.Svc.Query(ctx, vault.Owner(), "notes", vault.QueryRequest{Query: "capybara"}); err != nil || len(res.Results) != 1 {
		t.Errorf("Query(capybara) = %+v, %v", res, err)
	}
	// Again after a change: one file replaced, the others unchanged.
	writeTree(t, src, map[string]string{"a.md": "# A\n\nthe anteater\n"})
	rep, err = e.Svc.UploadDocs(ctx, vault.Owner(), "notes", openFrom(t, src).FS(), nil)
	if err != nil || rep.Uploaded != 3 || rep.Index.Indexed != 1 || rep.Index.Unchanged != 2 {
		t.Errorf("UploadDocs again = %+v, %v", rep, err)
	}

	// Authorized as a write: a read-only agent is refused, an unattached
	// one does not see the vault.
	e.Agent(t, "reader")
	e.Attach(t, "notes", "reader", true)
	reader, _ := e.Svc.Authenticate(ctx, e.Tokens["reader"])
	_, err = e.Svc.UploadDocs(ctx, reader, "notes", openFrom(t, src).FS(), nil)
	wantKind(t, "upload through a read-only grant", err, vault.ErrForbidden)
	stranger := e.Agent(t, "stranger")
	_, err = e.Svc.UploadDocs(ctx, stranger, "notes", openFrom(t, src).FS(), nil)
	wantKind(t, "upload by an unattached agent", err, vault.ErrNotFound)
	evs, err := e.Svc.Audit(ctx, vault.Owner(), "notes", 0)
	if err != nil {
		t.Fatal(err)
	}
	var uploads, refused int
	for _, ev := range evs {
		if ev.Action == "upload" && ev.Outcome == "ok" {
			uploads++
		}
		if ev.Action == "upload" && ev.Outcome == "refused" {
			refused++
		}
	}
	if uploads != 2 || refused != 2 {
		t.Errorf("audit: %d uploads, %d refusals; want 2 and 2", uploads, refused)
	}

	// A skill vault takes its skill files.
	e.Vault(t, vault.CreateVaultRequest{Name: "skills", Type: vault.Skill})
	skills := t.TempDir()
	writeTree(t, skills, map[string]string{
		"deploy/SKILL.md":  "---\nname: deploy\ndescription: Deploy\n---\nmake deploy\n",
		"deploy/notes.txt": "not a skill file",
		"top.md":           "---\nname: top\ndescription: Top\n---\nsteps\n",
		"big.md":           "---\nname: big\ndescription: Big\n---\n" + strings.Repeat("x", 1<<20),
	})
	srep, err := e.Svc.UploadDocs(ctx, vault.Owner(), "skills", openFrom(t, skills).FS(), nil)
	if err != nil || srep.Uploaded != 2 || len(srep.Failed) != 1 || srep.Skills == nil || len(srep.Skills.Skills) != 2 {
		t.Errorf("UploadDocs(skills) = %+v, %v", srep, err)
	}
}

// TestUploadRefusedOnFolderVaults: a folder vault's documents are its
// folder's files.
func TestUploadRefusedOnFolderVaults(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{Scheme: "sqlite"})
	if e.Svc.Hosted() {
		t.Fatal("the SQLite backend hosts")
	}
	e.Vault(t, vault.CreateVaultRequest{Name: "notes", EmbeddingModel: "none"})
	_, err := e.Svc.UploadDocs(t.Context(), vault.Owner(), "notes", openFrom(t, t.TempDir()).FS(), nil)
	wantKind(t, "upload into a folder vault", err, vault.ErrInvalid)
	if d := vault.Describe(err); d.Field != "from" || !strings.Contains(d.Message, "folder") || d.Fix == "" {
		t.Errorf("upload into a folder vault: %+v", d)
	}
}

// TestHostedPurge: removing a hosted vault for good deletes its files.
func TestHostedPurge(t *testing.T) { onHosted(t, testHostedPurge) }

func testHostedPurge(t *testing.T, e *vaulttest.Env) {
	ctx := t.Context()
	e.Vault(t, vault.CreateVaultRequest{Name: "notes", EmbeddingModel: "none"})
	if _, err := e.Svc.WriteDoc(ctx, vault.Owner(), "notes", "a.md", vault.WriteDocRequest{Content: "alpha"}); err != nil {
		t.Fatal(err)
	}
	recs, _ := e.Backend.Registry().Vaults(ctx)
	if _, err := e.Svc.RemoveVault(ctx, vault.Owner(), "notes", true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Backend.Files(ctx, recs[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the files of a purged vault: %v", err)
	}
	e.Vault(t, vault.CreateVaultRequest{Name: "notes", EmbeddingModel: "none"})
	_, err := e.Svc.ReadDoc(ctx, vault.Owner(), "notes", "a.md")
	wantKind(t, "a document of a purged vault, in a new one of its name", err, vault.ErrNotFound)
}

// TestHostedLocalVault: a local vault hosted by the store (as `ctxkit
// store copy` records a project's vault on PostgreSQL, keeping its scope)
// is used like any other, not refused as a folder outside the project.
func TestHostedLocalVault(t *testing.T) { onHosted(t, testHostedLocalVault) }

func testHostedLocalVault(t *testing.T, e *vaulttest.Env) {
	ctx := t.Context()
	if _, err := e.Backend.Registry().CreateVault(ctx, store.VaultRecord{Name: "proj", Type: "semantic", Scope: store.ScopeLocal, EmbeddingModel: "none"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.WriteDoc(ctx, vault.Owner(), "proj", "a.md", vault.WriteDocRequest{Content: "# A\n\nzeppelin\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Svc.Query(ctx, vault.Owner(), "proj", vault.QueryRequest{Query: "zeppelin"})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("query a hosted local vault: %+v %v", res, err)
	}
}

// An empty list on a hosting store names no folder: the store holds the
// vaults.
func TestHostedNoVaults(t *testing.T) {
	onHosted(t, func(t *testing.T, e *vaulttest.Env) {
		got := e.Svc.NoVaults(vault.Owner())
		if !strings.HasPrefix(got, "No vaults in this store: it hosts its vaults") || strings.Contains(got, e.Home) || strings.Contains(got, e.Root) {
			t.Errorf("NoVaults: %q", got)
		}
	})
}

// With no project (Root ""), an empty list says that local vaults come from
// the project found walking up from the working directory, and where the
// global ones are.
func TestNoVaultsWithoutProject(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{})
	svc, err := vault.New(e.Backend, vault.Options{Home: e.Home})
	if err != nil {
		t.Fatal(err)
	}
	got := svc.NoVaults(vault.Owner())
	for _, want := range []string{"No vaults: no project (", "walking up from the working directory", e.Home + " ($CTXKIT_HOME)", "ctxkit vault init NAME --global"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in %q", want, got)
		}
	}
}
