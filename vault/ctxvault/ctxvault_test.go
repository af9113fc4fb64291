package ctxvault

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// corpusDir is the real documents of the tests, absent in some checkouts.
var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus", "research-vault")

// late is the episodic history of the tests' CtxVault vault: a late
// correction and a supersession chain, with the ids CtxVault gave them.
type late struct {
	plan, alice, bob, carol, dave string
}

// project builds a CtxVault project in root: a semantic vault "notes", a
// restricted skill vault "howto" (agents alice and bob), and an episodic
// vault "memory" with a late correction and a supersession chain.
func project(t *testing.T, root string) late {
	t.Helper()
	cv := filepath.Join(root, DirName)
	writeConfig(t, cv, map[string]any{
		"notes":  entryOf("semantic", "notes", false),
		"howto":  entryOf("skill", "howto", true, "alice", "bob", "not an agent"),
		"memory": entryOf("episodic", "memory", false),
	})
	notes := filepath.Join(cv, "vaults", "notes")
	writeFile(t, filepath.Join(notes, "costs.md"), "# Cloud costs\n\nThe cloud bill rose by forty percent last week.\n")
	writeFile(t, filepath.Join(notes, "chroma", "chroma.sqlite3"), "not a document")
	howto := filepath.Join(cv, "vaults", "howto")
	writeFile(t, filepath.Join(howto, "weekly-engineering-update.md"),
		"---\nname: Weekly Engineering Update\ndescription: Write the weekly engineering update.\n---\n\nCollect the merged work, then summarise it.\n")
	writeFile(t, filepath.Join(howto, "deploy.md"), "---\ndescription: Deploy the site.\n---\nRun make deploy.\n")
	writeFile(t, filepath.Join(howto, "deploy-again.md"), "---\nname: DEPLOY\ndescription: Another deploy.\n---\nx\n")
	writeFile(t, filepath.Join(howto, "broken.md"), "# no frontmatter\n")
	writeFile(t, filepath.Join(howto, "skills-index.json"), `{"deploy": {"name": "deploy", "file": "deploy.md", "description": "Deploy the site."}}`)

	db := newCVDB(t, filepath.Join(cv, "vaults", "memory", "episodes.db"), 2)
	var l late
	// The README's late correction: on the Pro plan from March 1st; on
	// August 1st the vault learns it ended on July 12th.
	l.plan = db.write(ep{content: "Acme is on the Pro plan", entities: []string{"Acme"}, validFrom: "2026-03-01T00:00:00+00:00", source: "crm"},
		day("2026-03-01T09:00:00Z"))
	db.invalidate(l.plan, "2026-07-12T00:00:00+00:00", "churned", day("2026-08-01T10:00:00.123456Z"))
	// Who leads payments: Alice, then Bob from May 1st (learned May 10th),
	// then Carol from August 15th (learned September 1st).
	l.alice = db.write(ep{content: "Alice leads the payments team", entities: []string{"Alice", "payments"}, validFrom: "2026-01-01", salience: 0.9},
		day("2026-02-01T08:00:00Z"))
	l.bob = db.supersede(l.alice, ep{content: "Bob leads the payments team", entities: []string{"Bob", "payments"}, validFrom: "2026-05-01T00:00:00+00:00", salience: 0.9},
		day("2026-05-10T12:00:00Z"))
	l.carol = db.supersede(l.bob, ep{content: "Carol leads the payments team", entities: []string{"Carol", "payments"}, validFrom: "2026-08-15T00:00:00+00:00", salience: 0.9},
		day("2026-09-01T12:00:00Z"))
	l.dave = db.write(ep{content: "Dave leads the payments team", entities: []string{"Dave", "payments"}, source: "rumour"}, day("2026-09-02T12:00:00Z"))
	db.exec("UPDATE episodes SET recall_count = 3, last_recalled_at = ? WHERE id = ?", "2026-09-03T08:00:00+00:00", l.carol)
	db.exec("INSERT INTO attestations VALUES (?, ?, ?, ?)", l.carol, "2026-09-05T00:00:00+00:00", "hr", "2026-09-05T10:00:00+00:00")
	db.exec("INSERT INTO disputes VALUES (?, ?, ?, ?)", l.carol, l.dave, "two leads?", "2026-09-06T10:00:00+00:00")
	return l
}

// env is a ctxkit vault service whose project root is a CtxVault project.
func env(t *testing.T, o vaulttest.Options) (*vaulttest.Env, string) {
	t.Helper()
	e := vaulttest.New(t, o)
	home := t.TempDir()
	return e, home
}

func importAll(t *testing.T, e *vaulttest.Env, home string, o Options) *Report {
	t.Helper()
	sources, err := Find(e.Root, home)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Import(context.Background(), e.Svc, vault.Owner(), sources, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func byName(t *testing.T, rep *Report) map[string]VaultReport {
	t.Helper()
	out := map[string]VaultReport{}
	for _, v := range rep.Vaults {
		out[v.Vault] = v
	}
	return out
}

func query(t *testing.T, e *vaulttest.Env, req vault.QueryEpisodesRequest) []string {
	t.Helper()
	res, err := e.Svc.QueryEpisodes(context.Background(), vault.Owner(), "memory", req)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Results {
		out = append(out, r.Content)
	}
	slices.Sort(out)
	return out
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	e, home := env(t, vaulttest.Options{})
	l := project(t, e.Root)
	e.Agent(t, "alice")
	rep := importAll(t, e, home, Options{})
	if rep.NotImported() != 0 || len(rep.Vaults) != 3 {
		t.Fatalf("report: %+v", rep)
	}
	vs := byName(t, rep)
	for name, v := range vs {
		if v.Action != vault.ImportCreate || v.Scope != vault.Local {
			t.Errorf("%s: %+v", name, v.ImportReport)
		}
	}

	// The semantic vault is CtxVault's folder, indexed in place; Chroma's
	// files are not documents.
	notes := vs["notes"]
	if want := filepath.Join(e.Root, ".ctxvault", "vaults", "notes"); notes.Path != want || !notes.InPlace || notes.Index == nil ||
		notes.Index.Indexed != 1 || len(notes.Index.Failed) != 0 {
		t.Errorf("notes: %+v %+v", notes.ImportReport, notes.Index)
	}
	res, err := e.Svc.Query(ctx, vault.Owner(), "notes", vault.QueryRequest{Query: "cloud bill"})
	if err != nil || len(res.Results) == 0 || res.Results[0].Path != "costs.md" {
		t.Errorf("query notes: %+v %v", res, err)
	}

	// Skills: named as written, the duplicate and the broken file reported;
	// the agents attached, bob named as missing.
	howto := vs["howto"]
	if howto.Skills != 2 || len(howto.Problems) != 2 || !slices.Equal(howto.Agents, []string{"alice", "bob"}) || !slices.Equal(howto.MissingAgents, []string{"bob"}) ||
		len(howto.Failed) != 1 || howto.Failed[0].Path != "agent not an agent" {
		t.Errorf("howto: %+v problems %v", howto.ImportReport, howto.Problems)
	}
	for _, name := range []string{"Weekly Engineering Update", "weekly-engineering-update"} {
		sk, err := e.Svc.Skill(ctx, vault.Owner(), "howto", name)
		if err != nil || sk.DisplayName != "Weekly Engineering Update" || sk.Instructions != "Collect the merged work, then summarise it." {
			t.Errorf("skill %q: %+v %v", name, sk, err)
		}
	}
	info, err := e.Svc.DescribeVault(ctx, vault.Owner(), "howto")
	if err != nil || !info.Restricted || len(info.Agents) != 2 {
		t.Errorf("howto: %+v %v", info, err)
	}
	alice, _ := e.Svc.ActAs(ctx, vault.Owner(), "alice")
	if _, err := e.Svc.Skill(ctx, alice, "howto", "deploy"); err != nil {
		t.Errorf("alice reads the restricted vault: %v", err)
	}

	// Episodes: every statement with its history.
	mem := vs["memory"]
	if mem.Episodes != 5 || mem.Versions != 8 {
		t.Errorf("memory: %+v", mem.ImportReport)
	}
	checkHistory(t, e, l)
}

// checkHistory checks that what CtxVault believed, and when, survived.
func checkHistory(t *testing.T, e *vaulttest.Env, l late) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  vault.QueryEpisodesRequest
		want []string
	}{
		// CtxVault itself answers this wrongly: it overwrote valid_to.
		{"the plan as believed on July 20th", vault.QueryEpisodesRequest{Entities: []string{"acme"}, ValidAt: "2026-07-20", KnownAt: "2026-07-20"}, []string{"Acme is on the Pro plan"}},
		{"the plan on July 20th as known now", vault.QueryEpisodesRequest{Entities: []string{"acme"}, ValidAt: "2026-07-20"}, nil},
		{"the plan on July 1st as known now", vault.QueryEpisodesRequest{Entities: []string{"acme"}, ValidAt: "2026-07-01"}, []string{"Acme is on the Pro plan"}},
		{"before it was recorded", vault.QueryEpisodesRequest{Entities: []string{"acme"}, ValidAt: "2026-03-01T10:00:00Z", KnownAt: "2026-03-01T08:00:00Z"}, nil},
		{"the lead on May 5th as believed then", vault.QueryEpisodesRequest{Entities: []string{"payments"}, ValidAt: "2026-05-05", KnownAt: "2026-05-05"}, []string{"Alice leads the payments team"}},
		{"the lead on May 5th as known now", vault.QueryEpisodesRequest{Entities: []string{"payments"}, ValidAt: "2026-05-05"}, []string{"Bob leads the payments team"}},
		{"the lead on August 20th as believed on August 25th", vault.QueryEpisodesRequest{Entities: []string{"payments"}, ValidAt: "2026-08-20", KnownAt: "2026-08-25"}, []string{"Bob leads the payments team"}},
		{"the lead now", vault.QueryEpisodesRequest{Entities: []string{"payments"}}, []string{"Carol leads the payments team", "Dave leads the payments team"}},
		{"in dispute", vault.QueryEpisodesRequest{Disputed: true}, []string{"Carol leads the payments team", "Dave leads the payments team"}},
		{"in dispute before the dispute", vault.QueryEpisodesRequest{Disputed: true, KnownAt: "2026-09-06T09:00:00Z"}, nil},
	} {
		if got := query(t, e, tc.req); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	plan, err := e.Svc.Episode(ctx, vault.Owner(), "memory", l.plan)
	if err != nil || plan.State != "invalidated" || plan.InvalidationNote != "churned" || *plan.ValidTo != "2026-07-12T00:00:00.000000Z" ||
		*plan.InvalidatedAt != "2026-08-01T10:00:00.123456Z" || plan.RecordedAt != "2026-03-01T09:00:00.000000Z" || plan.Source != "crm" || len(plan.Metadata) != 0 {
		t.Errorf("the invalidated plan: %+v %v", plan, err)
	}
	carol, err := e.Svc.Episode(ctx, vault.Owner(), "memory", l.carol)
	if err != nil || carol.RecallCount != 3 || *carol.LastRecalledAt != "2026-09-03T08:00:00.000000Z" || carol.ConfirmedCount != 1 ||
		!slices.Equal(carol.DisputedWith, []string{l.dave}) || carol.Supersedes != l.bob || carol.Salience != 0.9 {
		t.Errorf("carol: %+v %v", carol, err)
	}
	h, err := e.Svc.EpisodeHistory(ctx, vault.Owner(), "memory", l.bob)
	if err != nil || len(h.Chain) != 3 || h.Chain[0].ID != l.alice || h.Chain[1].ID != l.bob || h.Chain[2].ID != l.carol {
		t.Fatalf("history: %+v %v", h, err)
	}
	// Alice: open from her recording until Bob's, then superseded at May 1st.
	a := h.Chain[0].Versions
	if len(a) != 2 || a[0].State != "open" || a[0].ValidTo != nil || a[0].RecordedAt != "2026-02-01T08:00:00.000000Z" || *a[0].ClosedAt != "2026-05-10T12:00:00.000000Z" ||
		a[1].State != "superseded" || *a[1].ValidTo != "2026-05-01T00:00:00.000000Z" || a[1].RecordedAt != "2026-05-10T12:00:00.000000Z" || a[1].ClosedAt != nil {
		t.Errorf("alice's versions: %+v", a)
	}
}

// Importing twice imports nothing twice; what CtxVault recorded since is
// added.
func TestImportTwice(t *testing.T) {
	ctx := context.Background()
	e, home := env(t, vaulttest.Options{})
	l := project(t, e.Root)
	importAll(t, e, home, Options{Copy: true})
	rep := importAll(t, e, home, Options{Copy: true})
	if rep.NotImported() != 0 {
		t.Fatalf("again: %+v", rep)
	}
	for _, v := range rep.Vaults {
		if v.Action != vault.ImportUpdate || v.Docs+v.Skills+v.Episodes != 0 {
			t.Errorf("again, %s: %+v", v.Vault, v.ImportReport)
		}
	}
	vs := byName(t, rep)
	if vs["notes"].DocsPresent != 1 || vs["howto"].SkillsPresent != 2 || vs["memory"].EpisodesPresent != 5 {
		t.Errorf("what was there: %+v %+v %+v", vs["notes"].ImportReport, vs["howto"].ImportReport, vs["memory"].ImportReport)
	}
	// CtxVault goes on: a new episode, superseding one imported before.
	db := newCVDBAt(t, filepath.Join(e.Root, ".ctxvault", "vaults", "memory", "episodes.db"))
	erin := db.supersede(l.dave, ep{content: "Erin leads the payments team", entities: []string{"payments"}, validFrom: "2026-10-01T00:00:00+00:00"}, day("2026-10-02T00:00:00Z"))
	writeFile(t, filepath.Join(e.Root, ".ctxvault", "vaults", "howto", "triage.md"), "---\nname: Triage\ndescription: Sort issues.\n---\nLabel them.\n")
	rep = importAll(t, e, home, Options{Copy: true})
	vs = byName(t, rep)
	if rep.NotImported() != 0 || vs["memory"].Episodes != 1 || vs["howto"].Skills != 1 {
		t.Fatalf("after more: %+v %+v", vs["memory"].ImportReport, vs["howto"].ImportReport)
	}
	got, err := e.Svc.Episode(ctx, vault.Owner(), "memory", erin)
	if err != nil || got.Supersedes != l.dave {
		t.Errorf("erin: %+v %v", got, err)
	}
	// Dave's row changed in CtxVault after the first import; ctxkit keeps
	// what it imported (its history is append-only, and CtxVault's change
	// overwrote what came before).
	stats, err := e.Svc.EpisodeStats(ctx, vault.Owner(), "memory", "")
	if err != nil || stats.Total != 6 {
		t.Errorf("stats: %+v %v", stats, err)
	}
	docs, err := e.Svc.Docs(ctx, vault.Owner(), "notes")
	if err != nil || len(docs) != 1 {
		t.Errorf("docs after three imports: %+v %v", docs, err)
	}
}

// newCVDBAt opens an existing episodes.db to write to it as CtxVault.
func newCVDBAt(t *testing.T, path string) *cvDB {
	t.Helper()
	c := &cvDB{t: t}
	var err error
	if c.db, err = openRW(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.db.Close() })
	return c
}

// A dry run says what would be done and writes nothing.
func TestDryRun(t *testing.T) {
	ctx := context.Background()
	e, home := env(t, vaulttest.Options{})
	project(t, e.Root)
	rep := importAll(t, e, home, Options{DryRun: true, Copy: true})
	vs := byName(t, rep)
	if rep.NotImported() != 0 || !rep.DryRun || vs["notes"].Docs != 1 || vs["howto"].Skills != 2 || len(vs["howto"].Problems) != 2 ||
		!slices.Equal(vs["howto"].MissingAgents, []string{"alice", "bob"}) || vs["memory"].Episodes != 5 || vs["memory"].Versions != 8 {
		t.Fatalf("plan: %+v", rep)
	}
	for _, v := range rep.Vaults {
		if v.Action != vault.ImportCreate || !v.DryRun {
			t.Errorf("%s: %+v", v.Vault, v.ImportReport)
		}
	}
	if all, err := e.Svc.ListVaults(ctx, vault.Owner()); err != nil || len(all) != 0 {
		t.Errorf("vaults after a dry run: %+v %v", all, err)
	}
	if _, err := os.Stat(filepath.Join(e.Root, ".ctxkit")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run made .ctxkit: %v", err)
	}
	keys := 0
	if err := e.Backend.KV().Each(ctx, time.Now(), func(string, []byte, time.Time) error { keys++; return nil }); err != nil || keys != 0 {
		t.Errorf("a dry run wrote %d keys: %v", keys, err)
	}
	// A dry run of a vault imported before counts what is there.
	importAll(t, e, home, Options{})
	rep = importAll(t, e, home, Options{DryRun: true})
	if vs := byName(t, rep); vs["memory"].Action != vault.ImportUpdate || vs["memory"].EpisodesPresent != 5 || vs["memory"].Episodes != 0 {
		t.Errorf("dry run again: %+v", vs["memory"].ImportReport)
	}
}

// A vault that cannot be read is reported and skipped; a vault whose
// import fails leaves nothing behind; the others are imported.
func TestUnreadable(t *testing.T) {
	ctx := context.Background()
	failing := errors.New("the embedder is broken")
	e, home := env(t, vaulttest.Options{Service: vault.Options{Embedders: func(spec string) (embed.Embedder, error) {
		if spec == "ollama:broken" {
			return nil, failing
		}
		return embed.New(spec, embed.Options{})
	}}})
	cv := filepath.Join(e.Root, DirName)
	writeConfig(t, cv, map[string]any{
		"garbage":  entryOf("episodic", "garbage", false),
		"badrow":   entryOf("episodic", "badrow", false),
		"gone":     entryOf("semantic", "gone", false),
		"weird":    entryOf("graph", "weird", false),
		"fine":     entryOf("episodic", "fine", false),
		"bad name": entryOf("semantic", "x", false),
	})
	writeFile(t, filepath.Join(cv, "vaults", "garbage", "episodes.db"), "this is not a database")
	db := newCVDB(t, filepath.Join(cv, "vaults", "badrow", "episodes.db"), 1)
	id := db.write(ep{content: "ok"}, day("2026-03-01T00:00:00Z"))
	db.exec("UPDATE episodes SET valid_to = '2026-01-01T00:00:00+00:00', invalidated_at = '2026-03-02T00:00:00+00:00' WHERE id = ?", id)
	newCVDB(t, filepath.Join(cv, "vaults", "fine", "episodes.db"), 1).write(ep{content: "fine"}, day("2026-03-01T00:00:00Z"))
	rep := importAll(t, e, home, Options{})
	vs := byName(t, rep)
	if rep.NotImported() != 5 || vs["fine"].NotImported() || vs["fine"].Episodes != 1 {
		t.Fatalf("report: %+v", rep)
	}
	for name, want := range map[string]string{"garbage": "not a", "badrow": "before valid_from", "gone": "its folder", "weird": "graph", "bad name": "name"} {
		if v := vs[name]; !strings.Contains(v.Error, want) {
			t.Errorf("%s: error %q, want it to say %q", name, v.Error, want)
		}
	}
	all, _ := e.Svc.ListVaults(ctx, vault.Owner())
	if len(all) != 1 || all[0].Name != "fine" {
		t.Errorf("vaults: %+v", all)
	}

	// A failure after the vault was created undoes it whole: record,
	// folder, data and mark.
	e2, home2 := env(t, vaulttest.Options{Service: vault.Options{Embedders: func(spec string) (embed.Embedder, error) {
		if spec == "ollama:broken" {
			return nil, failing
		}
		return embed.New(spec, embed.Options{})
	}}})
	writeConfig(t, filepath.Join(e2.Root, DirName), map[string]any{"memory": entryOf("episodic", "memory", false)})
	newCVDB(t, filepath.Join(e2.Root, DirName, "vaults", "memory", "episodes.db"), 1).write(ep{content: "x"}, day("2026-03-01T00:00:00Z"))
	rep = importAll(t, e2, home2, Options{EmbeddingModel: "ollama:broken"})
	if rep.NotImported() != 1 || rep.Vaults[0].Error == "" {
		t.Fatalf("report: %+v", rep.Vaults)
	}
	if all, _ := e2.Svc.ListVaults(ctx, vault.Owner()); len(all) != 0 {
		t.Errorf("a failed import left %+v", all)
	}
	if _, err := os.Stat(filepath.Join(e2.Root, ".ctxkit", "vaults", "memory")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed import left its folder: %v", err)
	}
	keys := 0
	_ = e2.Backend.KV().Each(ctx, time.Now(), func(string, []byte, time.Time) error { keys++; return nil })
	if keys != 0 {
		t.Errorf("a failed import left %d marks", keys)
	}
	// Fixed, it imports.
	if rep := importAll(t, e2, home2, Options{}); rep.NotImported() != 0 || rep.Vaults[0].Episodes != 1 {
		t.Errorf("after the fix: %+v", rep.Vaults[0])
	}
}

// A vault of ctxkit's of the same name, made otherwise, is left alone.
func TestConflict(t *testing.T) {
	ctx := context.Background()
	e, home := env(t, vaulttest.Options{})
	project(t, e.Root)
	e.Vault(t, vault.CreateVaultRequest{Name: "memory", Type: vault.Episodic, Scope: vault.Local})
	rep := importAll(t, e, home, Options{})
	vs := byName(t, rep)
	if rep.NotImported() != 1 || vs["memory"].Action != vault.ImportSkip || !strings.Contains(vs["memory"].Reason, "not imported from here") {
		t.Fatalf("report: %+v", vs["memory"].ImportReport)
	}
	if st, err := e.Svc.EpisodeStats(ctx, vault.Owner(), "memory", ""); err != nil || st.Total != 0 {
		t.Errorf("the vault of ctxkit's: %+v %v", st, err)
	}
}

// A vault imported before whose CtxVault type changed since is left
// alone, and the reason names both types with their articles.
func TestTypeChanged(t *testing.T) {
	e, home := env(t, vaulttest.Options{})
	project(t, e.Root)
	if rep := importAll(t, e, home, Options{}); rep.NotImported() != 0 {
		t.Fatalf("first import: %+v", rep)
	}
	writeConfig(t, filepath.Join(e.Root, DirName), map[string]any{"memory": entryOf("semantic", "memory", false)})
	rep := importAll(t, e, home, Options{})
	if r := byName(t, rep)["memory"]; r.Action != vault.ImportSkip || !strings.Contains(r.Reason, `vault "memory" is an episodic vault now, not semantic`) {
		t.Errorf("report: %+v", r.ImportReport)
	}
}

// Find walks up to the project's .ctxvault, and finds the global one in
// the home folder, which is never taken for a project's.
func TestFind(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "work", "proj")
	deep := filepath.Join(proj, "src", "pkg")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, filepath.Join(home, DirName), map[string]any{"g": map[string]any{"type": "semantic", "vault_path": filepath.Join(home, DirName, "vaults", "g")}})
	s, err := Find(deep, home)
	if err != nil || len(s) != 1 || s[0].Scope != vault.Global || s[0].Vaults[0].Dir != filepath.Join(home, DirName, "vaults", "g") {
		t.Fatalf("global only: %+v %v", s, err)
	}
	writeConfig(t, filepath.Join(proj, DirName), map[string]any{"l": entryOf("episodic", "l", false)})
	s, err = Find(deep, home)
	if err != nil || len(s) != 2 || s[0].Scope != vault.Local || s[0].Root != proj || s[1].Scope != vault.Global {
		t.Fatalf("local and global: %+v %v", s, err)
	}
	if v := s[0].Vaults[0]; v.Dir != filepath.Join(proj, ".ctxvault", "vaults", "l") || v.DB != filepath.Join(proj, ".ctxvault", "vaults", "l", "episodes.db") || v.Type != vault.Episodic {
		t.Errorf("local vault: %+v", v)
	}
	// A project's config leads nowhere outside the project.
	outside := map[string]any{"type": "semantic", "vault_path": "../../secrets"}
	linked := map[string]any{"type": "semantic", "vault_path": "link/docs"}
	if err := os.Symlink(home, filepath.Join(proj, "link")); err != nil {
		t.Fatal(err)
	}
	abs := map[string]any{"type": "episodic", "vault_path": ".ctxvault/vaults/e", "db_path": filepath.Join(home, "x.db")}
	writeConfig(t, filepath.Join(proj, DirName), map[string]any{"a": outside, "b": linked, "c": abs})
	s, err = Find(deep, home)
	if err != nil || len(s) != 2 || len(s[0].Vaults) != 3 {
		t.Fatalf("outside: %+v %v", s, err)
	}
	for _, v := range s[0].Vaults {
		if v.Err == nil || !strings.Contains(v.Err.Error(), "outside the project") {
			t.Errorf("vault %s leads outside: %+v", v.Name, v)
		}
	}
	writeFile(t, filepath.Join(proj, DirName, "config.json"), "{not json")
	if _, err := Find(deep, home); err == nil {
		t.Error("a config that is not JSON was read")
	}
}

// The documents of the real corpus, copied and indexed.
func TestImportCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("corpus %s absent (%v): real-document import skipped", corpusDir, err)
	}
	ctx := context.Background()
	e, home := env(t, vaulttest.Options{})
	cv := filepath.Join(e.Root, DirName)
	writeConfig(t, cv, map[string]any{"research": entryOf("semantic", "research", false)})
	ents, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range ents {
		if f.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(corpusDir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(cv, "vaults", "research", f.Name()), string(data))
		n++
	}
	for _, copy := range []bool{false, true} {
		e, home := e, home
		if copy {
			e, home = env(t, vaulttest.Options{})
			if err := os.CopyFS(filepath.Join(e.Root, DirName), os.DirFS(cv)); err != nil {
				t.Fatal(err)
			}
		}
		rep := importAll(t, e, home, Options{Copy: copy})
		v := rep.Vaults[0]
		if rep.NotImported() != 0 || v.Index == nil || v.Index.Indexed != n || len(v.Index.Failed) != 0 || v.Docs != n {
			t.Fatalf("copy=%v: %+v %+v", copy, v.ImportReport, v.Index)
		}
		res, err := e.Svc.Query(ctx, vault.Owner(), "research", vault.QueryRequest{Query: "retrieval augmented generation"})
		if err != nil || len(res.Results) == 0 {
			t.Errorf("copy=%v: query: %+v %v", copy, res, err)
		}
	}
}

// A global vault of the same name as a local one is imported into the
// global scope, with its own agents, never into the local one that hides
// it.
func TestLocalAndGlobal(t *testing.T) {
	ctx := context.Background()
	e, home := env(t, vaulttest.Options{})
	project(t, e.Root)
	gdir := filepath.Join(home, DirName, "vaults", "howto")
	writeConfig(t, filepath.Join(home, DirName), map[string]any{"howto": map[string]any{"type": "skill", "vault_path": gdir, "db_path": nil,
		"restricted": true, "allowed_agents": []string{"carol"}}})
	writeFile(t, filepath.Join(gdir, "review.md"), "---\nname: Review\ndescription: Review a change.\n---\nRead it.\n")
	for range 2 { // the second time adds nothing, and changes no grant
		if rep := importAll(t, e, home, Options{}); rep.NotImported() != 0 || len(rep.Vaults) != 4 {
			t.Fatalf("report: %+v", rep)
		}
	}
	all, err := e.Svc.ListVaults(ctx, vault.Owner())
	if err != nil {
		t.Fatal(err)
	}
	agents := map[vault.Scope][]string{}
	for _, v := range all {
		if v.Name == "howto" {
			for _, g := range v.Agents {
				agents[v.Scope] = append(agents[v.Scope], g.Agent)
			}
		}
	}
	if !slices.Equal(agents[vault.Local], []string{"alice", "bob"}) || !slices.Equal(agents[vault.Global], []string{"carol"}) {
		t.Errorf("agents: %v", agents)
	}
}

// On a store that hosts its vaults, documents are copied and every vault
// is global.
func TestImportHosted(t *testing.T) {
	for _, scheme := range []string{"hosted", "postgres"} {
		t.Run(scheme, func(t *testing.T) {
			ctx := context.Background()
			e, home := env(t, vaulttest.Options{Scheme: scheme})
			l := project(t, e.Root)
			rep := importAll(t, e, home, Options{})
			vs := byName(t, rep)
			if rep.NotImported() != 0 || vs["notes"].InPlace || vs["notes"].Docs != 1 || vs["notes"].Scope != vault.Global || len(vs["notes"].Notes) != 1 {
				t.Fatalf("report: %+v", vs["notes"].ImportReport)
			}
			res, err := e.Svc.Query(ctx, vault.Owner(), "notes", vault.QueryRequest{Query: "cloud bill"})
			if err != nil || len(res.Results) == 0 {
				t.Errorf("query: %+v %v", res, err)
			}
			checkHistory(t, e, l)
			if rep := importAll(t, e, home, Options{}); rep.NotImported() != 0 || byName(t, rep)["notes"].DocsPresent != 1 {
				t.Errorf("again: %+v", rep)
			}
		})
	}
}
