package pgregistry_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/pgregistry"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func TestRegistry(t *testing.T) {
	storetest.RunRegistry(t, func(t *testing.T) store.Registry {
		return pgregistry.New(pgtest.DB(t, pgregistry.Migrate))
	})
}

// twoProcesses returns the registries of two pools on one schema, as two
// ctxkit processes sharing a database have, migrated at the same time.
func twoProcesses(t *testing.T) (a, b *pgregistry.Registry, db *pgdb.DB) {
	url := pgtest.URL(t)
	dbs := make([]*pgdb.DB, 2)
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Go(func() {
			d, err := pgdb.Open(t.Context(), url)
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(d.Close)
			if err := pgregistry.Migrate(t.Context(), d); err != nil {
				t.Error(err)
			}
			dbs[i] = d
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return pgregistry.New(dbs[0]), pgregistry.New(dbs[1]), dbs[0]
}

func TestTwoPoolsCreateSameName(t *testing.T) {
	a, b, _ := twoProcesses(t)
	dir := t.TempDir()
	const rounds = 20
	for i := range rounds {
		regs := []*pgregistry.Registry{a, b}
		names := []string{fmt.Sprintf("Team%d", i), fmt.Sprintf("team%d", i)}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for j := range 2 {
			wg.Go(func() {
				_, errs[j] = regs[j].CreateVault(t.Context(), store.VaultRecord{Name: names[j], Type: "semantic", Scope: store.ScopeGlobal,
					Dir: filepath.Join(dir, fmt.Sprint(i, j))}, nil)
			})
		}
		wg.Wait()
		ok, exists := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrExists):
				exists++
			default:
				t.Errorf("round %d: %v", i, err)
			}
		}
		if ok != 1 || exists != 1 {
			t.Errorf("round %d: %d creates succeeded, %d were ErrExists (%v); want one of each", i, ok, exists, errs)
		}
	}
	for _, r := range []*pgregistry.Registry{a, b} {
		if vs, err := r.Vaults(t.Context()); err != nil || len(vs) != rounds {
			t.Errorf("Vaults: %d, %v; want %d", len(vs), err, rounds)
		}
	}
}

// TestTwoPoolsCreateCheck creates vaults of different names in one folder
// from both pools at once, each with a check refusing a folder that is
// taken: the check sees what the other process recorded.
func TestTwoPoolsCreateCheck(t *testing.T) {
	a, b, _ := twoProcesses(t)
	dir := t.TempDir()
	taken := errors.New("folder taken")
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		r := []*pgregistry.Registry{a, b}[i%2]
		wg.Go(func() {
			_, errs[i] = r.CreateVault(t.Context(), store.VaultRecord{Name: fmt.Sprintf("v%d", i), Type: "semantic", Scope: store.ScopeLocal, Dir: dir},
				func(existing []store.VaultRecord) error {
					for _, v := range existing {
						if v.Dir == dir {
							return taken
						}
					}
					return nil
				})
		})
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, taken):
			t.Errorf("create %d: %v", i, err)
		}
	}
	if created != 1 {
		t.Errorf("%d creates succeeded, want 1", created)
	}
}

func TestTwoPoolsRevoke(t *testing.T) {
	a, b, _ := twoProcesses(t)
	ctx := t.Context()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if err := a.CreateAgent(ctx, store.AgentRecord{Name: "bot", TokenHash: "h-bot", Created: now}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.AgentByToken(ctx, "h-bot"); err != nil || got.Name != "bot" {
		t.Fatalf("AgentByToken through the other pool = %+v, %v", got, err)
	}
	if err := a.RevokeAgent(ctx, "bot", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.AgentByToken(ctx, "h-bot"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AgentByToken through the other pool after revoking = %+v, %v; want ErrNotFound", got, err)
	}
	if err := b.TouchAgent(ctx, "bot", now.Add(2*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TouchAgent through the other pool after revoking: %v, want ErrNotFound", err)
	}
	if err := b.CreateAgent(ctx, store.AgentRecord{Name: "bot", TokenHash: "h-new", Created: now}); !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateAgent of the revoked name through the other pool: %v, want ErrExists", err)
	}
	revoked, err := b.RevokedAgents(ctx)
	if err != nil || len(revoked) != 1 || !revoked["bot"].Equal(now.Add(time.Hour)) {
		t.Errorf("RevokedAgents = %v, %v; want bot at %v", revoked, err, now.Add(time.Hour))
	}
	if agents, err := b.Agents(ctx); err != nil || len(agents) != 0 {
		t.Errorf("Agents after revoking = %+v, %v; want none", agents, err)
	}
}

func TestTwoPoolsUpdateGrants(t *testing.T) {
	a, b, _ := twoProcesses(t)
	v, err := a.CreateVault(t.Context(), store.VaultRecord{Name: "team", Type: "semantic", Scope: store.ScopeGlobal, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		r := []*pgregistry.Registry{a, b}[i%2]
		wg.Go(func() {
			_, err := r.UpdateVault(t.Context(), v.ID, func(rec *store.VaultRecord) error {
				rec.Restricted = true
				rec.Grants[fmt.Sprintf("agent%d", i)] = store.Grant{ReadOnly: i%3 == 0}
				return nil
			})
			if err != nil {
				t.Errorf("attach %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got, err := b.Vault(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Grants) != n || !got.Restricted {
		t.Errorf("after %d attaches from two pools: restricted %v, %d grants: %v", n, got.Restricted, len(got.Grants), got.Grants)
	}
	for i := range n {
		if g, ok := got.Grants[fmt.Sprintf("agent%d", i)]; !ok || g.ReadOnly != (i%3 == 0) {
			t.Errorf("agent%d: %+v (present %v)", i, g, ok)
		}
	}
}

// TestTouchSameSecond checks that a use in the second already recorded is
// not written again, and one in a later second is.
func TestTouchSameSecond(t *testing.T) {
	r := pgregistry.New(pgtest.DB(t, pgregistry.Migrate))
	ctx := t.Context()
	at := time.Date(2026, 5, 1, 12, 0, 0, 250_000_000, time.UTC)
	if err := r.CreateAgent(ctx, store.AgentRecord{Name: "bot", TokenHash: "h", Created: at}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ touch, want time.Time }{
		{at, at},
		{at.Add(500 * time.Millisecond), at},
		{at.Add(time.Second), at.Add(time.Second)},
		{at.Add(-time.Minute), at.Add(-time.Minute)},
	} {
		if err := r.TouchAgent(ctx, "bot", tc.touch); err != nil {
			t.Fatal(err)
		}
		got, err := r.AgentByToken(ctx, "h")
		if err != nil || !got.LastUsed.Equal(tc.want) {
			t.Errorf("after TouchAgent(%v): LastUsed %v, %v; want %v", tc.touch, got.LastUsed, err, tc.want)
		}
	}
}

// TestDrop checks that Drop deletes a deleted vault's pin, metadata and
// audit rows, and refuses a vault still recorded.
func TestDrop(t *testing.T) {
	db := pgtest.DB(t, pgregistry.Migrate)
	r := pgregistry.New(db)
	ctx := t.Context()
	count := func() (n int) {
		t.Helper()
		err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM reg_pins) + (SELECT count(*) FROM reg_doc_meta) + (SELECT count(*) FROM reg_audit)`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var ids []string
	for _, name := range []string{"gone", "kept"} {
		v, err := r.CreateVault(ctx, store.VaultRecord{Name: name, Type: "semantic", Scope: store.ScopeLocal, Dir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.ID)
		if err := r.SetPin(ctx, v.ID, &store.Pin{Model: "m", Dim: 3}); err != nil {
			t.Fatal(err)
		}
		if err := r.SetDocMeta(ctx, v.ID, map[string]map[string]string{"a.md": {"k": "v"}, "b.md": {}}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: time.Now(), Agent: "owner", Action: "x", Outcome: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := count(); n != 12 {
		t.Fatalf("%d rows, want 12", n)
	}
	if err := r.Drop(ctx, ids[0]); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Drop of a recorded vault: %v, want ErrConflict", err)
	}
	if _, err := r.DeleteVault(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 12 {
		t.Errorf("%d rows after DeleteVault, want 12 (Drop deletes them)", n)
	}
	if err := r.Drop(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 6 {
		t.Errorf("%d rows after Drop, want the other vault's 6", n)
	}
	if err := r.Drop(ctx, ids[0]); err != nil {
		t.Errorf("Drop twice: %v", err)
	}
	if evs, err := r.Audit(ctx, ids[1], 0); err != nil || len(evs) != 3 {
		t.Errorf("the other vault's audit: %d events, %v", len(evs), err)
	}
}
