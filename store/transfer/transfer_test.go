package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/pgstore"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// backend is a kind of backend under test: open returns a new, empty one
// with the data directory and project root of where, closed when the
// test ends.
type backend struct {
	name string
	open func(t *testing.T, where store.Options) store.Backend
}

// backends are the backends copies are tested into and out of (the
// first, SQLite, is the end of every round trip): SQLite → PostgreSQL →
// SQLite is the round trip a team moving to a server makes.
var backends = []backend{
	{"sqlite", openSQLite},
	{"memory", openMemory},
	{"hosted", openHosted},
	{"postgres", openPostgres},
}

// opener opens a backend from its URL's rest, closed when the test ends.
func opener(open store.Opener, rest func(t *testing.T) string) func(t *testing.T, where store.Options) store.Backend {
	return func(t *testing.T, where store.Options) store.Backend {
		t.Helper()
		b, err := open(t.Context(), rest(t), where)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := b.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		return b
	}
}

func noRest(*testing.T) string { return "" }

var (
	openSQLite = opener(sqlitestore.OpenBackend, noRest)
	openMemory = opener(memstore.OpenBackend, noRest)
	// openHosted opens the memory backend that hosts its vaults' files.
	openHosted = opener(vaulttest.OpenHosted, noRest)
	// openPostgres opens the PostgreSQL backend on a schema of its own
	// (skipped without $CTXKIT_TEST_POSTGRES).
	openPostgres = opener(pgstore.OpenBackend, func(t *testing.T) string {
		rest, _ := strings.CutPrefix(pgtest.URL(t), "postgres:")
		return rest
	})
)

// place is a new data directory and project root.
func place(t *testing.T) store.Options {
	t.Helper()
	base := t.TempDir()
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	o := store.Options{Home: filepath.Join(base, "home"), Root: filepath.Join(base, "project")}
	for _, d := range []string{o.Home, o.Root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// open opens a new backend of kind b at a new place, and returns the
// options of a copy into it: every vault gets the folder the vault
// service gives a new vault there.
func (b backend) openAt(t *testing.T) (store.Backend, store.Options, Options) {
	t.Helper()
	where := place(t)
	return b.open(t, where), where, Options{Now: now, Folder: func(v store.VaultRecord) string {
		if v.Scope == store.ScopeLocal {
			return filepath.Join(where.Root, ".ctxkit", "vaults", v.Name)
		}
		return filepath.Join(where.Home, "vaults", v.Name)
	}}
}

// now is the time of every test copy (key-value expiry is read at it).
var now = time.Now().Truncate(time.Second)

// hashSpec is the embedder spec the tests map to the hashing embedder.
const hashSpec = "ollama:hash-test"

type hashEmbedder struct{ embed.Hashing }

func (hashEmbedder) Spec() string { return hashSpec }

// populate returns a SQLite backend holding some of every kind, written
// through the vault service and the workspace store.
func populate(t *testing.T) store.Backend {
	t.Helper()
	e := vaulttest.New(t, vaulttest.Options{Service: vault.Options{Embedders: func(spec string) (embed.Embedder, error) {
		if spec == hashSpec {
			return hashEmbedder{embed.Hashing{Dim: 16}}, nil
		}
		return embed.New(spec, embed.Options{})
	}}})
	ctx := t.Context()
	svc, owner := e.Svc, vault.Owner()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	bot := e.Agent(t, "bot")
	reader := e.Agent(t, "reader")
	e.Agent(t, "gone")
	must("revoke", svc.RevokeAgent(ctx, owner, "gone"))

	notes := e.Vault(t, vault.CreateVaultRequest{Name: "notes", Type: vault.Semantic, Scope: vault.Local, Restricted: true, EmbeddingModel: hashSpec})
	e.Attach(t, "notes", "bot", false)
	e.Attach(t, "notes", "reader", true)
	_, err := svc.WriteDoc(ctx, bot, "notes", "plan.md", vault.WriteDocRequest{
		Content:  "# Plan\n\n## Costs\n\nWe cut cloud costs by fifteen percent.\n\n## Hiring\n\nHiring is frozen until June.\n",
		Metadata: map[string]string{"author": "ann", "status": "draft"}})
	must("write plan.md", err)
	_, err = svc.WriteDoc(ctx, owner, "notes", "sub/ideas.txt", vault.WriteDocRequest{Content: "Idées: ünïcode, émojis 🎉, and more."})
	must("write ideas.txt", err)
	must("loose file", os.WriteFile(filepath.Join(notes.Path, "loose.md"), []byte("A file written by hand, then indexed.\n"), 0o644))
	_, err = svc.Index(ctx, owner, "notes", vault.IndexRequest{}, nil)
	must("index", err)
	_, err = svc.Query(ctx, reader, "notes", vault.QueryRequest{Query: "cloud costs"})
	must("query", err)
	if _, err := svc.WriteDoc(ctx, reader, "notes", "no.md", vault.WriteDocRequest{Content: "refused"}); err == nil {
		t.Fatal("a read-only agent wrote")
	}

	e.Vault(t, vault.CreateVaultRequest{Name: "skills", Type: vault.Skill, Scope: vault.Global})
	_, err = svc.WriteSkill(ctx, owner, "skills", "deploy", vault.WriteSkillRequest{Description: "How to deploy the service", Instructions: "Run `make deploy`.\n"})
	must("write skill", err)

	e.Vault(t, vault.CreateVaultRequest{Name: "memory", Type: vault.Episodic, Scope: vault.Global, EmbeddingModel: hashSpec})
	write := func(content string, entities ...string) string {
		t.Helper()
		r, err := svc.WriteEpisode(ctx, owner, "memory", vault.WriteEpisodeRequest{Content: content, Entities: entities,
			Metadata: map[string]any{"team": "payments", "n": 3}, OccurredAt: "2025-01-02T03:04:05.123456Z"})
		must("write episode", err)
		return r.Episode.ID
	}
	alice := write("Alice leads the payments team", "Alice", "payments")
	bob := write("Bob leads the search team", "Bob")
	carol := write("Carol owns the billing service", "Carol")
	erin := write("Erin owns the billing service", "Erin")
	_, err = svc.Supersede(ctx, owner, "memory", alice, vault.SuccessorRequest{Content: "Dana leads the payments team"})
	must("supersede", err)
	_, err = svc.Invalidate(ctx, owner, "memory", bob, vault.InvalidateRequest{Reason: "Bob left"})
	must("invalidate", err)
	_, err = svc.Confirm(ctx, owner, "memory", carol, vault.ConfirmRequest{Source: "standup"})
	must("confirm", err)
	_, err = svc.Dispute(ctx, owner, "memory", erin, vault.DisputeRequest{Other: carol, Note: "who owns billing?"})
	must("dispute", err)
	_, err = svc.Revise(ctx, owner, "memory", carol, vault.SuccessorRequest{Content: "Carol owns the billing service (since May)"})
	if err != nil {
		t.Logf("revise: %v", err) // a disputed statement may refuse it; the rest is enough
	}
	_, err = svc.QueryEpisodes(ctx, owner, "memory", vault.QueryEpisodesRequest{Query: "payments", Reinforce: true})
	must("reinforce", err)

	ws := e.Backend.Workspaces()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	put := func(w *store.Workspace, c *store.Content) {
		t.Helper()
		w.Format, w.CreatedAt, w.AccessedAt = "json", at, at.Add(time.Minute)
		must("put "+w.ID, ws.Put(ctx, w, c))
	}
	put(&store.Workspace{ID: "search_1", Type: "search", Shape: store.ShapeList, Items: 2, Chars: 20, Tokens: 7,
		Schema: []byte(`{"type":"object","properties":{"a":{"type":"integer"}}}`), Producer: "search", Args: []byte(`{"q": "x"}`),
		Meta: map[string]any{"k": "v", "n": 2.5}, Session: "s1", TTL: time.Hour, ExpiresAt: at.Add(time.Hour)},
		&store.Content{Raw: []byte("[ {\"a\": 1},\n {\"a\":2} ]"), Items: []json.RawMessage{[]byte(`{"a": 1}`), []byte(`{"a":2}`)}})
	put(&store.Workspace{ID: "grown", Type: "t", Shape: store.ShapeList, Items: 1, Chars: 3},
		&store.Content{Items: []json.RawMessage{[]byte(`"x"`)}})
	must("append", ws.AppendItems(ctx, "grown", []json.RawMessage{[]byte(`{"y":[1,2]}`)}))
	put(&store.Workspace{ID: "empty", Type: "t", Shape: store.ShapeList}, &store.Content{Raw: []byte("[]"), Items: []json.RawMessage{}})
	put(&store.Workspace{ID: "config", Type: "cfg", Shape: store.ShapeDict, Items: 2, Chars: 20},
		&store.Content{Raw: []byte(`{"b": 1,  "a": [1, 2]}`), Value: []byte(`{"b":1,"a":[1,2]}`)})
	text := strings.Repeat("Ünïcode text, line after line. ", 500)
	put(&store.Workspace{ID: "page", Type: "fetch", Shape: store.ShapeText, Chars: int64(len([]rune(text))), Format: "text"},
		&store.Content{Text: text})

	kv := e.Backend.KV()
	must("kv", kv.Put(ctx, "guard/digest/a", []byte("summary a"), now, 0))
	must("kv", kv.Put(ctx, "guard/digest/b", []byte{0, 1, 0xff}, now.Add(-time.Minute), 2*time.Hour+time.Microsecond))
	must("kv", kv.Put(ctx, "guard/digest/expired", []byte("old"), now.Add(-2*time.Hour), time.Hour))
	return e.Backend
}

// units returns every unit of b, in order.
func units(t *testing.T, b store.Backend) []Unit {
	t.Helper()
	var out []Unit
	if err := Each(t.Context(), b, now, func(u Unit) error { out = append(out, u); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b Unit) int {
		return strings.Compare(string(a.Kind)+"\x01"+a.Key, string(b.Kind)+"\x01"+b.Key)
	})
	return out
}

// sameUnits checks that b holds exactly what a does, in canonical form.
func sameUnits(t *testing.T, a, b store.Backend) {
	t.Helper()
	ua, ub := units(t, a), units(t, b)
	if len(ua) != len(ub) {
		t.Errorf("%d units in the source, %d in the destination", len(ua), len(ub))
	}
	for i := range min(len(ua), len(ub)) {
		if ua[i].Kind != ub[i].Kind || ua[i].Key != ub[i].Key || string(ua[i].Data) != string(ub[i].Data) {
			t.Fatalf("unit %d differs:\nsource      %s %q %s\ndestination %s %q %s", i, ua[i].Kind, ua[i].Key, ua[i].Data, ub[i].Kind, ub[i].Key, ub[i].Data)
		}
	}
}

// checkReport checks that a copy's report says both sides match, and that
// the source had some of every kind.
func checkReport(t *testing.T, r *Report) {
	t.Helper()
	if bad := r.Mismatched(); len(bad) > 0 {
		t.Errorf("mismatched kinds %v in %+v", bad, r.Lines)
	}
	for _, l := range r.Lines {
		if l.Source.Count == 0 {
			t.Errorf("the source has no %s: the test should hold some of every kind", l.Kind)
		}
		if l.Copied+l.Present != l.Source.Count {
			t.Errorf("%s: %d copied + %d present, %d in the source", l.Kind, l.Copied, l.Present, l.Source.Count)
		}
	}
}

// TestRoundTrip copies a SQLite backend to every backend and from there to
// a new SQLite backend: everything arrives, identical in canonical form,
// and the vaults work on the copy.
func TestRoundTrip(t *testing.T) {
	src := populate(t)
	for _, mid := range backends {
		t.Run(mid.name, func(t *testing.T) {
			ctx := t.Context()
			m, _, opts := mid.openAt(t)
			r, err := Copy(ctx, src, m, opts)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, r)
			for _, l := range r.Lines {
				if l.Present != 0 {
					t.Errorf("%s: %d units found in an empty destination", l.Kind, l.Present)
				}
			}
			sameUnits(t, src, m)
			vs, err := m.Registry().Vaults(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if m.Hosted() != (v.Dir == "") {
					t.Errorf("vault %s has folder %q on a backend whose Hosted is %v", v.Name, v.Dir, m.Hosted())
				}
			}

			back, where, opts := backends[0].openAt(t)
			r, err = Copy(ctx, m, back, opts)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, r)
			sameUnits(t, src, back)
			ss, err := Summarize(ctx, src, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range r.Lines {
				if ss[l.Kind] != l.Dest {
					t.Errorf("%s: the source's summary %+v, the copy's %+v", l.Kind, ss[l.Kind], l.Dest)
				}
			}
			checkUsable(t, back, where)

			// Again: nothing to do.
			r, err = Copy(ctx, m, back, opts)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, r)
			for _, l := range r.Lines {
				if l.Copied != 0 {
					t.Errorf("copied again: %d %s", l.Copied, l.Kind)
				}
			}
		})
	}
}

// checkUsable checks that the copied vaults answer through the vault
// service on the copy.
func checkUsable(t *testing.T, b store.Backend, where store.Options) {
	t.Helper()
	ctx := t.Context()
	svc, err := vault.New(b, vault.Options{Home: where.Home, Root: where.Root, Embedders: func(string) (embed.Embedder, error) {
		return hashEmbedder{embed.Hashing{Dim: 16}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Query(ctx, vault.Owner(), "notes", vault.QueryRequest{Query: "cloud costs"})
	if err != nil || len(res.Results) == 0 || res.Results[0].Path != "plan.md" {
		t.Errorf("query on the copy: %+v, %v", res, err)
	}
	doc, err := svc.ReadDoc(ctx, vault.Owner(), "notes", "sub/ideas.txt")
	if err != nil || !strings.Contains(doc.Text, "🎉") {
		t.Errorf("read on the copy: %+v, %v", doc, err)
	}
	eps, err := svc.QueryEpisodes(ctx, vault.Owner(), "memory", vault.QueryEpisodesRequest{Query: "payments"})
	if err != nil || len(eps.Results) == 0 {
		t.Errorf("episodes on the copy: %+v, %v", eps, err)
	}
}

var errInjected = errors.New("injected failure")

// failing is a backend whose writes fail once n have been made.
type failing struct {
	store.Backend
	n *int
}

func (f failing) fail() error {
	if *f.n <= 0 {
		return errInjected
	}
	*f.n--
	return nil
}

func (f failing) Workspaces() store.Store  { return failingStore{f.Backend.Workspaces(), f} }
func (f failing) KV() store.KV             { return failingKV{f.Backend.KV(), f} }
func (f failing) Registry() store.Registry { return failingRegistry{f.Backend.Registry(), f} }
func (f failing) Close() error             { return nil }
func (f failing) Index(ctx context.Context, id string) (index.Index, error) {
	x, err := f.Backend.Index(ctx, id)
	return failingIndex{x, f}, err
}
func (f failing) Episodes(ctx context.Context, id string) (episodic.Store, error) {
	s, err := f.Backend.Episodes(ctx, id)
	return failingEpisodes{s, f}, err
}

type failingStore struct {
	store.Store
	f failing
}

func (s failingStore) Put(ctx context.Context, w *store.Workspace, c *store.Content) error {
	return cmpOr(s.f.fail, func() error { return s.Store.Put(ctx, w, c) })
}

type failingKV struct {
	store.KV
	f failing
}

func (s failingKV) Put(ctx context.Context, key string, value []byte, now time.Time, ttl time.Duration) error {
	return cmpOr(s.f.fail, func() error { return s.KV.Put(ctx, key, value, now, ttl) })
}

type failingRegistry struct {
	store.Registry
	f failing
}

func (r failingRegistry) CreateVault(ctx context.Context, v store.VaultRecord, check func([]store.VaultRecord) error) (store.VaultRecord, error) {
	if err := r.f.fail(); err != nil {
		return store.VaultRecord{}, err
	}
	return r.Registry.CreateVault(ctx, v, check)
}

func (r failingRegistry) CreateAgent(ctx context.Context, a store.AgentRecord) error {
	return cmpOr(r.f.fail, func() error { return r.Registry.CreateAgent(ctx, a) })
}

func (r failingRegistry) TouchAgent(ctx context.Context, name string, at time.Time) error {
	return cmpOr(r.f.fail, func() error { return r.Registry.TouchAgent(ctx, name, at) })
}

func (r failingRegistry) RevokeAgent(ctx context.Context, name string, at time.Time) error {
	return cmpOr(r.f.fail, func() error { return r.Registry.RevokeAgent(ctx, name, at) })
}

func (r failingRegistry) SetPin(ctx context.Context, id string, p *store.Pin) error {
	return cmpOr(r.f.fail, func() error { return r.Registry.SetPin(ctx, id, p) })
}

func (r failingRegistry) SetDocMeta(ctx context.Context, id string, m map[string]map[string]string) error {
	return cmpOr(r.f.fail, func() error { return r.Registry.SetDocMeta(ctx, id, m) })
}

func (r failingRegistry) AppendAudit(ctx context.Context, id string, e store.AuditEvent) error {
	return cmpOr(r.f.fail, func() error { return r.Registry.AppendAudit(ctx, id, e) })
}

type failingIndex struct {
	index.Index
	f failing
}

func (x failingIndex) Put(ctx context.Context, d index.Doc, c []index.Chunk) error {
	return cmpOr(x.f.fail, func() error { return x.Index.Put(ctx, d, c) })
}

type failingEpisodes struct {
	episodic.Store
	f failing
}

func (s failingEpisodes) Import(ctx context.Context, recs []*episodic.Record) error {
	return cmpOr(s.f.fail, func() error { return s.Store.Import(ctx, recs) })
}

// cmpOr runs fail, then, when it passes, do.
func cmpOr(fail, do func() error) error {
	if err := fail(); err != nil {
		return err
	}
	return do()
}

// TestResume interrupts copies after n writes (a failing destination) or
// n units (a cancelled context), then copies again: the copy completes,
// and nothing is there twice.
func TestResume(t *testing.T) {
	src := populate(t)
	for _, to := range backends {
		for _, n := range []int{0, 1, 4, 9, 15, 22, 30} {
			t.Run(fmt.Sprintf("%s/fail-after-%d-writes", to.name, n), func(t *testing.T) {
				dst, _, opts := to.openAt(t)
				left := n
				_, err := Copy(t.Context(), src, failing{dst, &left}, opts)
				if !errors.Is(err, errInjected) {
					t.Fatalf("interrupted copy: %v, want the injected failure", err)
				}
				resume(t, src, dst, opts)
			})
		}
		total := len(units(t, src))
		for _, n := range []int{3, total / 2, total - 1} {
			t.Run(fmt.Sprintf("%s/cancel-after-%d-units", to.name, n), func(t *testing.T) {
				dst, _, opts := to.openAt(t)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				seen := 0
				opts.Progress = func(Kind, string, bool) {
					if seen++; seen == n {
						cancel()
					}
				}
				if _, err := Copy(ctx, src, dst, opts); !errors.Is(err, context.Canceled) {
					t.Fatalf("interrupted copy: %v, want context.Canceled", err)
				}
				opts.Progress = nil
				resume(t, src, dst, opts)
			})
		}
	}
}

// resume copies src to dst again and checks the copy is complete.
func resume(t *testing.T, src, dst store.Backend, opts Options) {
	t.Helper()
	r, err := Copy(t.Context(), src, dst, opts)
	if err != nil {
		t.Fatalf("copy again: %v", err)
	}
	checkReport(t, r)
	sameUnits(t, src, dst)
}

// TestDiffers: a unit the destination holds, different, stops the copy
// with its name, and is left as it is.
func TestDiffers(t *testing.T) {
	src := populate(t)
	ctx := t.Context()
	for _, to := range backends {
		for _, tc := range []struct {
			name, want string
			change     func(t *testing.T, dst store.Backend)
		}{
			{"kv", `kv "guard/digest/a"`, func(t *testing.T, dst store.Backend) {
				if err := dst.KV().Put(ctx, "guard/digest/a", []byte("other"), now, 0); err != nil {
					t.Fatal(err)
				}
			}},
			{"file", `files "local/notes: plan.md"`, func(t *testing.T, dst store.Backend) {
				v := vaultNamed(t, dst, "notes")
				f, err := dst.Files(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Write(ctx, "plan.md", []byte("changed"), true); err != nil {
					t.Fatal(err)
				}
			}},
			{"audit", `audit events "local/notes"`, func(t *testing.T, dst store.Backend) {
				v := vaultNamed(t, dst, "notes")
				if err := dst.Registry().AppendAudit(ctx, v.ID, store.AuditEvent{Time: now, Agent: "owner", Action: "extra", Outcome: "ok"}); err != nil {
					t.Fatal(err)
				}
			}},
			{"agent", `agents "bot"`, func(t *testing.T, dst store.Backend) {
				if err := dst.Registry().TouchAgent(ctx, "bot", now.Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			}},
			{"vault", `vaults "global/skills"`, func(t *testing.T, dst store.Backend) {
				v := vaultNamed(t, dst, "skills")
				if _, err := dst.Registry().UpdateVault(ctx, v.ID, func(r *store.VaultRecord) error { r.Restricted = true; return nil }); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			t.Run(to.name+"/"+tc.name, func(t *testing.T) {
				dst, _, opts := to.openAt(t)
				if _, err := Copy(ctx, src, dst, opts); err != nil {
					t.Fatal(err)
				}
				tc.change(t, dst)
				before := units(t, dst)
				_, err := Copy(ctx, src, dst, opts)
				if !errors.Is(err, ErrDiffers) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("copy onto a changed destination: %v; want ErrDiffers naming %s", err, tc.want)
				}
				if after := units(t, dst); !slices.EqualFunc(before, after, func(a, b Unit) bool {
					return a.Kind == b.Kind && a.Key == b.Key && string(a.Data) == string(b.Data)
				}) {
					t.Error("the refused copy changed the destination")
				}
			})
		}
	}
}

func vaultNamed(t *testing.T, b store.Backend, name string) store.VaultRecord {
	t.Helper()
	vs, err := b.Registry().Vaults(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no vault %q", name)
	return store.VaultRecord{}
}

// TestBatches: episodes that name each other are imported together.
func TestBatches(t *testing.T) {
	rec := func(id, supersedes string, disputes ...string) *episodic.Record {
		r := &episodic.Record{Statement: episodic.Statement{ID: id, Supersedes: supersedes}}
		for _, d := range disputes {
			r.Disputes = append(r.Disputes, episodic.Dispute{A: id, B: d})
		}
		return r
	}
	recs := []*episodic.Record{rec("a", ""), rec("b", "", "e"), rec("c", "a"), rec("d", ""), rec("e", ""), rec("f", ""), rec("g", "")}
	var got [][]string
	for _, b := range batches(recs, 2) {
		var ids []string
		for _, r := range b {
			ids = append(ids, r.Statement.ID)
		}
		got = append(got, ids)
	}
	want := [][]string{{"a", "b", "c", "d", "e"}, {"f", "g"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batches = %v, want %v", got, want)
	}
}
