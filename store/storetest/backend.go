package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/episodictest"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/indextest"
)

// Database is one database of a backend under test, on which the backend
// suite opens handles, as several processes open one backend.
type Database struct {
	// Open opens a new handle on the database. The suite closes every
	// handle it opens (and fails if Close fails); Open registers the
	// cleanup of the database itself (removing its files).
	Open func(t *testing.T) store.Backend
	// NotShared, when set, says why the handles Open returns do not share
	// one database (the memory backend: each handle is a database of its
	// own). The subtests that need two handles on one database, or a
	// database opened again, are skipped with this message; the others
	// use one handle where they would use two.
	NotShared string
}

// RunBackend runs the backend suite: the registry, key-value, index and
// episode suites over the stores a backend hands out, and what only a
// whole backend does: per-vault stores keyed by the vault's id, handles
// that outlive their vault, the files of folder vaults (and of hosted
// vaults, when the backend hosts them), and, over a database that several handles
// share, changes seen at once through every handle, concurrent writers
// and reopening. newDatabase returns a new, empty database each time.
//
// A backend's test file runs it unchanged:
//
//	func TestBackend(t *testing.T) {
//		storetest.RunBackend(t, func(t *testing.T) storetest.Database {
//			opts := store.Options{Home: t.TempDir(), Root: t.TempDir()}
//			return storetest.Database{Open: func(t *testing.T) store.Backend {
//				b, err := sqlitestore.OpenBackend(t.Context(), "", opts)
//				...
//			}}
//		})
//	}
func RunBackend(t *testing.T, newDatabase func(t *testing.T) Database) {
	open := func(t *testing.T) store.Backend {
		b, _ := openHandle(t, newDatabase(t))
		return b
	}
	t.Run("Registry", func(t *testing.T) {
		RunRegistry(t, func(t *testing.T) store.Registry { return open(t).Registry() })
	})
	t.Run("KV", func(t *testing.T) {
		RunKV(t, func(t *testing.T) store.KV { return open(t).KV() })
	})
	t.Run("Index", func(t *testing.T) {
		vaults := newVaults(t, open(t))
		indextest.Run(t, func(t *testing.T) index.Index { return mustIndex(t, vaults.b, vaults.create(t).ID) })
	})
	t.Run("Episodes", func(t *testing.T) {
		vaults := newVaults(t, open(t))
		episodictest.Run(t, func(t *testing.T) episodic.Store { return mustEpisodes(t, vaults.b, vaults.create(t).ID) })
	})
	for _, tc := range []struct {
		name   string
		shared bool // needs two handles on one database (others get one handle twice)
		fn     func(t *testing.T, db Database)
	}{
		{"StoresCloseNothing", false, testStoresCloseNothing},
		{"VaultStoresByID", false, testVaultStoresByID},
		{"HandleOutlivesForget", false, testHandleOutlivesForget},
		{"HandleOutlivesDrop", false, testHandleOutlivesDrop},
		{"TwoHandles", true, testTwoHandles},
		{"ConcurrentHandles", false, testConcurrentHandles},
		{"Reopen", true, testReopen},
		{"Files", false, testBackendFiles},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newDatabase(t)
			if tc.shared && db.NotShared != "" {
				t.Skip(db.NotShared)
			}
			tc.fn(t, db)
		})
	}
}

// openHandle opens a handle on db, closed at the end of the test or by
// close, whichever comes first.
func openHandle(t *testing.T, db Database) (b store.Backend, close func()) {
	t.Helper()
	b = db.Open(t)
	var once sync.Once
	close = func() {
		once.Do(func() {
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(close)
	return b, close
}

// twoHandles opens two handles on db, or one twice when its handles share
// nothing.
func twoHandles(t *testing.T, db Database) (a, b store.Backend) {
	a, _ = openHandle(t, db)
	if db.NotShared != "" {
		return a, a
	}
	b, _ = openHandle(t, db)
	return a, b
}

// vaults makes vaults of a backend, each in a folder of its own.
type vaults struct {
	b    store.Backend
	base string
	n    int
}

func newVaults(t *testing.T, b store.Backend) *vaults {
	return &vaults{b: b, base: t.TempDir()}
}

// create records a new vault.
func (vs *vaults) create(t *testing.T) store.VaultRecord {
	vs.n++
	return mustCreateVault(t, vs.b.Registry(), vaultIn(t, vs.base, fmt.Sprintf("v%d", vs.n), store.ScopeLocal))
}

func mustIndex(t *testing.T, b store.Backend, id string) index.Index {
	t.Helper()
	x, err := b.Index(t.Context(), id)
	if err != nil {
		t.Fatalf("Index(%s): %v", id, err)
	}
	return x
}

func mustEpisodes(t *testing.T, b store.Backend, id string) episodic.Store {
	t.Helper()
	s, err := b.Episodes(t.Context(), id)
	if err != nil {
		t.Fatalf("Episodes(%s): %v", id, err)
	}
	return s
}

// putDoc indexes a one-chunk document.
func putDoc(ctx context.Context, x index.Index, path string) error {
	return x.Put(ctx, index.Doc{Path: path, Hash: "h-" + path}, []index.Chunk{{Text: "the text of " + path}})
}

// writeEpisode records an open statement.
func writeEpisode(ctx context.Context, s episodic.Store, id string) error {
	_, err := s.Apply(ctx, &episodic.Change{
		Statements: []episodic.Statement{{ID: id, Content: "statement " + id, Confidence: 1, Salience: 0.5}},
		Versions:   []episodic.Version{{Statement: id, ValidFrom: t0, State: episodic.Open}},
	}, t0)
	return err
}

// docPaths returns the paths of an index's documents.
func docPaths(t *testing.T, x index.Index) []string {
	t.Helper()
	docs, err := x.Docs(t.Context())
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	var out []string
	for _, d := range docs {
		out = append(out, d.Path)
	}
	return out
}

// episodeIDs returns the ids of a store's open episodes.
func episodeIDs(t *testing.T, s episodic.Store) []string {
	t.Helper()
	var out []string
	err := s.Scan(t.Context(), episodic.Filter{}, episodic.ByValidFrom, func(e *episodic.Episode) bool {
		out = append(out, e.ID)
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	slices.Sort(out)
	return out
}

// testStoresCloseNothing closes every store a backend handed out through
// the stores' own Close: the backend keeps working, since only its own
// Close releases them.
func testStoresCloseNothing(t *testing.T, db Database) {
	ctx := t.Context()
	b, _ := openHandle(t, db)
	vs := newVaults(t, b)
	v := vs.create(t)
	ws := b.Workspaces()
	x, s := mustIndex(t, b, v.ID), mustEpisodes(t, b, v.ID)
	for what, c := range map[string]interface{ Close() error }{"Workspaces()": ws, "Index": x, "Episodes": s} {
		if err := c.Close(); err != nil {
			t.Errorf("%s.Close: %v", what, err)
		}
	}
	w, c := listWorkspace("after_close", rawItems(`{"a":1}`))
	if err := b.Workspaces().Put(ctx, w, c); err != nil {
		t.Errorf("Put into the workspaces after their Close: %v", err)
	} else if _, err := b.Workspaces().Stat(ctx, w.ID); err != nil {
		t.Errorf("Stat after the workspaces' Close: %v", err)
	}
	if err := putDoc(ctx, x, "a.md"); err != nil {
		t.Errorf("Put into an index handle after its Close: %v", err)
	}
	if got := docPaths(t, mustIndex(t, b, v.ID)); !slices.Equal(got, []string{"a.md"}) {
		t.Errorf("docs after the index handle's Close: %v", got)
	}
	if err := writeEpisode(ctx, s, "e1"); err != nil {
		t.Errorf("Apply to an episodes handle after its Close: %v", err)
	}
	if got := episodeIDs(t, mustEpisodes(t, b, v.ID)); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("episodes after the episodes handle's Close: %v", got)
	}
}

// testVaultStoresByID checks that each vault has an index and episodes of
// its own, found by its id and by nothing else.
func testVaultStoresByID(t *testing.T, db Database) {
	ctx := t.Context()
	b, _ := openHandle(t, db)
	vs := newVaults(t, b)
	v1, v2 := vs.create(t), vs.create(t)
	if err := putDoc(ctx, mustIndex(t, b, v1.ID), "one.md"); err != nil {
		t.Fatal(err)
	}
	if err := writeEpisode(ctx, mustEpisodes(t, b, v1.ID), "e-one"); err != nil {
		t.Fatal(err)
	}
	if err := putDoc(ctx, mustIndex(t, b, v2.ID), "two.md"); err != nil {
		t.Fatal(err)
	}
	if err := writeEpisode(ctx, mustEpisodes(t, b, v2.ID), "e-two"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v            store.VaultRecord
		doc, episode string
	}{{v1, "one.md", "e-one"}, {v2, "two.md", "e-two"}} {
		if got := docPaths(t, mustIndex(t, b, tc.v.ID)); !slices.Equal(got, []string{tc.doc}) {
			t.Errorf("%s's docs = %v, want [%s]", tc.v.Name, got, tc.doc)
		}
		if got := episodeIDs(t, mustEpisodes(t, b, tc.v.ID)); !slices.Equal(got, []string{tc.episode}) {
			t.Errorf("%s's episodes = %v, want [%s]", tc.v.Name, got, tc.episode)
		}
	}
	_, err := b.Index(ctx, "no-such-vault")
	wantNotFound(t, "Index of an unknown vault", err)
	_, err = b.Episodes(ctx, "no-such-vault")
	wantNotFound(t, "Episodes of an unknown vault", err)
}

// checkGone checks that handles of a vault that is no longer recorded
// refuse writes with ErrNotFound, and that the backend hands out none.
func checkGone(t *testing.T, b store.Backend, id string, x index.Index, s episodic.Store, when string) {
	t.Helper()
	ctx := t.Context()
	wantNotFound(t, "index Put "+when, putDoc(ctx, x, "late.md"))
	wantNotFound(t, "index Delete "+when, x.Delete(ctx, "kept.md"))
	wantNotFound(t, "episodes Apply "+when, writeEpisode(ctx, s, "late"))
	rec := &episodic.Record{
		Statement: episodic.Statement{ID: "imported", Content: "imported", Confidence: 1, Salience: 0.5},
		Versions:  []episodic.Version{{Seq: 1, Statement: "imported", ValidFrom: t0, State: episodic.Open, RecordedAt: t0}},
	}
	wantNotFound(t, "episodes Import "+when, s.Import(ctx, []*episodic.Record{rec}))
	_, err := b.Index(ctx, id)
	wantNotFound(t, "Index "+when, err)
	_, err = b.Episodes(ctx, id)
	wantNotFound(t, "Episodes "+when, err)
}

// heldStores creates a vault through a, and returns it with its index and
// episodes as b hands them out, each holding one entry.
func heldStores(t *testing.T, a, b store.Backend) (store.VaultRecord, index.Index, episodic.Store) {
	t.Helper()
	v := newVaults(t, a).create(t)
	x, s := mustIndex(t, b, v.ID), mustEpisodes(t, b, v.ID)
	if err := putDoc(t.Context(), x, "kept.md"); err != nil {
		t.Fatal(err)
	}
	if err := writeEpisode(t.Context(), s, "kept"); err != nil {
		t.Fatal(err)
	}
	return v, x, s
}

// testHandleOutlivesForget forgets a vault in the registry (as removing it
// without purging does) while another handle holds its stores: they are
// the vault's no longer, and refuse writes.
func testHandleOutlivesForget(t *testing.T, db Database) {
	ctx := t.Context()
	a, b := twoHandles(t, db)
	v, x, s := heldStores(t, a, b)
	if _, err := a.Registry().DeleteVault(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	checkGone(t, b, v.ID, x, s, "after the vault was deleted from the registry")
}

// testHandleOutlivesDrop deletes a vault for good through one handle while
// another holds its stores, then creates a vault of the same name in the
// same folder: the old stores refuse writes, the new vault's are empty.
func testHandleOutlivesDrop(t *testing.T, db Database) {
	ctx := t.Context()
	a, b := twoHandles(t, db)
	v, x, s := heldStores(t, a, b)
	rec, err := a.Registry().DeleteVault(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.DropVault(ctx, rec); err != nil {
		t.Fatal(err)
	}
	checkGone(t, b, v.ID, x, s, "after the vault was dropped")

	again := mustCreateVault(t, a.Registry(), store.VaultRecord{Name: v.Name, Type: v.Type, Scope: v.Scope, Dir: v.Dir, EmbeddingModel: v.EmbeddingModel})
	if again.ID == v.ID {
		t.Fatalf("the new vault got the dropped one's id %s", v.ID)
	}
	nx, ns := mustIndex(t, b, again.ID), mustEpisodes(t, b, again.ID)
	if got := docPaths(t, nx); len(got) != 0 {
		t.Errorf("the new vault's index holds %v", got)
	}
	if got := episodeIDs(t, ns); len(got) != 0 {
		t.Errorf("the new vault's episodes are %v", got)
	}
	if err := putDoc(ctx, nx, "new.md"); err != nil {
		t.Fatal(err)
	}
	if err := writeEpisode(ctx, ns, "new"); err != nil {
		t.Fatal(err)
	}
	if got := docPaths(t, mustIndex(t, a, again.ID)); !slices.Equal(got, []string{"new.md"}) {
		t.Errorf("the new vault's docs through the other handle = %v, want [new.md]", got)
	}
	if got := episodeIDs(t, mustEpisodes(t, a, again.ID)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("the new vault's episodes through the other handle = %v, want [new]", got)
	}
	// The old handles are still not the new vault's.
	checkGone(t, b, v.ID, x, s, "after a vault of the same name and folder was created")
	if got := docPaths(t, mustIndex(t, a, again.ID)); !slices.Equal(got, []string{"new.md"}) {
		t.Errorf("the new vault's docs after writes through the old handle = %v, want [new.md]", got)
	}
}

// testTwoHandles checks that what is written through one handle is seen
// through another at once.
func testTwoHandles(t *testing.T, db Database) {
	ctx := t.Context()
	a, b := twoHandles(t, db)
	v := newVaults(t, a).create(t)
	if got := mustVault(t, b.Registry(), v.ID); !sameVault(got, v) {
		t.Errorf("the other handle's Vault = %+v, want %+v", got, v)
	}
	if _, err := a.Registry().UpdateVault(ctx, v.ID, func(r *store.VaultRecord) error {
		r.Restricted, r.Grants = true, map[string]store.Grant{"bot": {}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := mustVault(t, b.Registry(), v.ID); !got.Restricted || len(got.Grants) != 1 {
		t.Errorf("the other handle's Vault after an update = %+v", got)
	}

	if err := a.Registry().CreateAgent(ctx, store.AgentRecord{Name: "bot", TokenHash: "hash-bot", Created: t0}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Registry().AgentByToken(ctx, "hash-bot"); err != nil || got.Name != "bot" {
		t.Fatalf("the other handle's AgentByToken = %+v, %v", got, err)
	}
	if err := a.Registry().RevokeAgent(ctx, "bot", t0); err != nil {
		t.Fatal(err)
	}
	_, err := b.Registry().AgentByToken(ctx, "hash-bot")
	wantNotFound(t, "the other handle's AgentByToken of a revoked agent", err)

	if err := a.Registry().SetPin(ctx, v.ID, &store.Pin{Model: "m", Dim: 3}); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := b.Registry().Pin(ctx, v.ID); err != nil || !ok || p.Dim != 3 {
		t.Errorf("the other handle's Pin = %+v %v %v", p, ok, err)
	}
	w, c := listWorkspace("shared_ws", rawItems(`{"a":1}`))
	mustPut(t, a.Workspaces(), w, c)
	mustStat(t, b.Workspaces(), w.ID)
	kvPut(t, a.KV(), "k", []byte("v"), t0, time.Hour)
	kvHas(t, b.KV(), "k", t0, []byte("v"))

	// Index and episodes, with b's stores opened before a's writes.
	bx, bs := mustIndex(t, b, v.ID), mustEpisodes(t, b, v.ID)
	if err := putDoc(ctx, mustIndex(t, a, v.ID), "a.md"); err != nil {
		t.Fatal(err)
	}
	if err := writeEpisode(ctx, mustEpisodes(t, a, v.ID), "e1"); err != nil {
		t.Fatal(err)
	}
	if got := docPaths(t, bx); !slices.Equal(got, []string{"a.md"}) {
		t.Errorf("the other handle's docs = %v", got)
	}
	if got := episodeIDs(t, bs); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("the other handle's episodes = %v", got)
	}
}

// testConcurrentHandles writes through two handles at once, to every
// store: nothing is lost.
func testConcurrentHandles(t *testing.T, db Database) {
	ctx := t.Context()
	a, b := twoHandles(t, db)
	shared := newVaults(t, a).create(t)
	base := t.TempDir()
	const n = 6 // writers per handle
	var wg sync.WaitGroup
	for h, bk := range []store.Backend{a, b} {
		for i := range n {
			wg.Go(func() {
				key := fmt.Sprintf("h%d-%d", h, i)
				fail := func(what string, err error) {
					if err != nil {
						t.Errorf("%s %s: %v", key, what, err)
					}
				}
				w, c := listWorkspace("ws_"+key, rawItems(`{"a":1}`))
				fail("workspace Put", bk.Workspaces().Put(ctx, w, c))
				fail("KV Put", bk.KV().Put(ctx, key, []byte(key), t0, 0))
				_, err := bk.Registry().CreateVault(ctx, vaultIn(t, base, key, store.ScopeLocal), nil)
				fail("CreateVault", err)
				fail("CreateAgent", bk.Registry().CreateAgent(ctx, store.AgentRecord{Name: key, TokenHash: "hash-" + key, Created: t0}))
				_, err = bk.Registry().UpdateVault(ctx, shared.ID, func(r *store.VaultRecord) error {
					if r.Grants == nil {
						r.Grants = map[string]store.Grant{}
					}
					r.Grants[key] = store.Grant{}
					return nil
				})
				fail("UpdateVault", err)
				fail("SetDocMeta", bk.Registry().SetDocMeta(ctx, shared.ID, map[string]map[string]string{key: {"by": key}}))
				fail("AppendAudit", bk.Registry().AppendAudit(ctx, shared.ID, store.AuditEvent{Time: t0, Agent: key, Action: "write-doc", Outcome: "ok"}))
				if x, err := bk.Index(ctx, shared.ID); err != nil {
					fail("Index", err)
				} else {
					fail("index Put", putDoc(ctx, x, key+".md"))
				}
				if s, err := bk.Episodes(ctx, shared.ID); err != nil {
					fail("Episodes", err)
				} else {
					fail("episodes Apply", writeEpisode(ctx, s, key))
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	var keys, docs []string
	for h := range 2 {
		for i := range n {
			key := fmt.Sprintf("h%d-%d", h, i)
			keys, docs = append(keys, key), append(docs, key+".md")
		}
	}
	slices.Sort(keys)
	slices.Sort(docs)
	for _, bk := range []store.Backend{a, b} {
		for _, key := range keys {
			mustStat(t, bk.Workspaces(), "ws_"+key)
			kvHas(t, bk.KV(), key, t0, []byte(key))
		}
		if got := mustVaults(t, bk.Registry()); len(got) != 2*n+1 {
			t.Errorf("%d vaults, want %d: %v", len(got), 2*n+1, vaultNames(got))
		}
		if got, err := bk.Registry().Agents(ctx); err != nil || len(got) != 2*n {
			t.Errorf("%d agents, want %d (%v)", len(got), 2*n, err)
		}
		v := mustVault(t, bk.Registry(), shared.ID)
		if len(v.Grants) != 2*n {
			t.Errorf("%d grants, want %d", len(v.Grants), 2*n)
		}
		if m, err := bk.Registry().DocMeta(ctx, shared.ID); err != nil || len(m) != 2*n {
			t.Errorf("metadata of %d documents, want %d (%v)", len(m), 2*n, err)
		}
		if evs, err := bk.Registry().Audit(ctx, shared.ID, 0); err != nil || len(evs) != 2*n {
			t.Errorf("%d audit events, want %d (%v)", len(evs), 2*n, err)
		}
		if got := docPaths(t, mustIndex(t, bk, shared.ID)); !slices.Equal(got, docs) {
			t.Errorf("docs = %v, want %v", got, docs)
		}
		if got := episodeIDs(t, mustEpisodes(t, bk, shared.ID)); !slices.Equal(got, keys) {
			t.Errorf("episodes = %v, want %v", got, keys)
		}
	}
}

// testReopen closes a handle and opens the database again: everything
// written is there.
func testReopen(t *testing.T, db Database) {
	ctx := t.Context()
	a, closeA := openHandle(t, db)
	in := vaultIn(t, t.TempDir(), "kept", store.ScopeGlobal)
	in.Restricted, in.Grants = true, map[string]store.Grant{"bot": {ReadOnly: true}}
	v := mustCreateVault(t, a.Registry(), in)
	bot := store.AgentRecord{Name: "bot", TokenHash: "hash-bot", Created: t0, LastUsed: t0.Add(time.Minute)}
	meta := map[string]map[string]string{"a.md": {"k": "v"}}
	event := store.AuditEvent{Time: t0, Agent: "bot", Action: "write-doc", Path: "a.md", Outcome: "ok", Repeated: 2}
	w, c := listWorkspace("kept_ws", rawItems(`{"a":1}`, `{"a":2}`))
	for _, step := range []struct {
		what  string
		write func() error
	}{
		{"CreateAgent", func() error { return a.Registry().CreateAgent(ctx, bot) }},
		{"SetPin", func() error { return a.Registry().SetPin(ctx, v.ID, &store.Pin{Model: "m", Dim: 3}) }},
		{"SetDocMeta", func() error { return a.Registry().SetDocMeta(ctx, v.ID, meta) }},
		{"AppendAudit", func() error { return a.Registry().AppendAudit(ctx, v.ID, event) }},
		{"KV Put", func() error { return a.KV().Put(ctx, "k", []byte("v"), t0, time.Hour) }},
		{"workspace Put", func() error { return a.Workspaces().Put(ctx, w, c) }},
		{"index Put", func() error { return putDoc(ctx, mustIndex(t, a, v.ID), "a.md") }},
		{"episodes Apply", func() error { return writeEpisode(ctx, mustEpisodes(t, a, v.ID), "e1") }},
	} {
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
	}
	closeA()

	b, _ := openHandle(t, db)
	checkVault(t, "Vault after reopening", mustVault(t, b.Registry(), v.ID), v)
	checkAgents(t, b.Registry(), bot)
	if p, ok, err := b.Registry().Pin(ctx, v.ID); err != nil || !ok || p != (store.Pin{Model: "m", Dim: 3}) {
		t.Errorf("Pin after reopening = %+v %v %v", p, ok, err)
	}
	checkDocMeta(t, b.Registry(), v.ID, meta)
	if evs, err := b.Registry().Audit(ctx, v.ID, 0); err != nil || !sameEvents(evs, []store.AuditEvent{event}) {
		t.Errorf("Audit after reopening = %+v, %v", evs, err)
	}
	kvHas(t, b.KV(), "k", t0, []byte("v"))
	kvGone(t, b.KV(), "k", t0.Add(time.Hour))
	checkList(t, b.Workspaces(), w.ID, c.Items)
	if got := docPaths(t, mustIndex(t, b, v.ID)); !slices.Equal(got, []string{"a.md"}) {
		t.Errorf("docs after reopening = %v", got)
	}
	if got := episodeIDs(t, mustEpisodes(t, b, v.ID)); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("episodes after reopening = %v", got)
	}
}

// testBackendFiles checks the files a backend hands out: a folder vault's
// are its folder's, on every backend; a hosted vault's (when the backend
// hosts vaults) are the backend's, seen through every handle, and gone
// when the vault is dropped. A backend that hosts nothing refuses a record
// without a folder.
func testBackendFiles(t *testing.T, db Database) {
	ctx := t.Context()
	a, b := twoHandles(t, db)
	v := newVaults(t, a).create(t)
	f, err := a.Files(ctx, v)
	if err != nil {
		t.Fatalf("Files of a folder vault: %v", err)
	}
	if err := f.Write(ctx, "notes/a.md", []byte("written"), false); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(v.Dir, "notes", "a.md")); err != nil || string(data) != "written" {
		t.Errorf("the folder holds %q, %v; want the file written", data, err)
	}
	if err := os.WriteFile(filepath.Join(v.Dir, "b.md"), []byte("on disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := f.Walk(ctx, "", func(fi store.FileInfo) error { got = append(got, fi.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"b.md", "notes/a.md"}) {
		t.Errorf("Walk of a folder vault = %q", got)
	}
	if !a.Hosted() {
		if _, err := a.Files(ctx, store.VaultRecord{ID: "x", Name: "x", Type: "semantic", Scope: store.ScopeGlobal}); err == nil {
			t.Error("Files of a record without a folder, on a backend that hosts nothing: no error")
		}
		return
	}
	h := mustCreateVault(t, a.Registry(), store.VaultRecord{Name: "hosted", Type: "semantic", Scope: store.ScopeGlobal, EmbeddingModel: "none"})
	if h.Dir != "" {
		t.Fatalf("a hosted vault's record came back with folder %q", h.Dir)
	}
	ha, err := a.Files(ctx, h)
	if err != nil {
		t.Fatalf("Files of a hosted vault: %v", err)
	}
	if err := ha.Write(ctx, "doc.md", []byte("hosted"), false); err != nil {
		t.Fatalf("Write to a hosted vault: %v", err)
	}
	hb, err := b.Files(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := hb.Read(ctx, "doc.md"); err != nil || string(data) != "hosted" {
		t.Errorf("Read through the other handle: %q, %v", data, err)
	}
	if _, err := a.Registry().DeleteVault(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.DropVault(ctx, h); err != nil {
		t.Fatalf("DropVault: %v", err)
	}
	if f, err := b.Files(ctx, h); err == nil {
		err := f.Walk(ctx, "", func(fi store.FileInfo) error { return fmt.Errorf("%s is left", fi.Path) })
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the files of a dropped vault: %v", err)
		}
	}
}
