package pgepisodic_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/episodictest"
	"github.com/ctxkit/ctxkit/vault/episodic/pgepisodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// TestConformance runs the suite with every store a vault of its own in
// one schema, so that the vaults' rows live side by side.
func TestConformance(t *testing.T) {
	db := pgtest.DB(t, pgepisodic.Migrate)
	episodictest.Run(t, func(t *testing.T) episodic.Store {
		s := pgepisodic.New(db, pgtest.VaultID())
		t.Cleanup(func() { s.Close() })
		return s
	})
}

var day = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func statement(id, content string, entities ...string) *episodic.Change {
	return &episodic.Change{
		Statements: []episodic.Statement{{ID: id, Content: content, Entities: entities, Confidence: 1, Salience: 0.5}},
		Versions:   []episodic.Version{{Statement: id, ValidFrom: day, State: episodic.Open}},
	}
}

// TestTwoPoolsSupersede: two pools on one schema (two processes) each
// supersede the same version at the same moment: exactly one commits, the
// other gets ErrConflict; and transaction times from both pools are
// strictly increasing in the order of the versions' sequence numbers.
func TestTwoPoolsSupersede(t *testing.T) {
	url := pgtest.URL(t)
	dbs := []*pgdb.DB{pgtest.Open(t, url, pgepisodic.Migrate), pgtest.Open(t, url, pgepisodic.Migrate)}
	vault := pgtest.VaultID()
	stores := []*pgepisodic.Store{pgepisodic.New(dbs[0], vault), pgepisodic.New(dbs[1], vault)}
	ctx := t.Context()
	for round := range 20 {
		id := fmt.Sprintf("a%d", round)
		if _, err := stores[0].Apply(ctx, statement(id, "the release is on Friday"), day); err != nil {
			t.Fatal(err)
		}
		e, ok, err := stores[1].Get(ctx, id, nil)
		if err != nil || !ok {
			t.Fatalf("get %s: %v %v", id, ok, err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, s := range stores {
			wg.Go(func() {
				succ := fmt.Sprintf("%s-by-%d", id, i)
				c := statement(succ, "the release moved")
				c.Statements[0].Supersedes = id
				c.Close = []episodic.Expect{{Statement: id, Seq: e.Seq}}
				c.Versions = append(c.Versions, episodic.Version{Statement: id, ValidFrom: day, ValidTo: &day, State: episodic.Superseded})
				<-start
				_, errs[i] = s.Apply(ctx, c, day)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, episodic.ErrConflict):
				t.Fatalf("round %d: %v, want nil or ErrConflict", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d supersessions committed (%v), want exactly 1", round, won, errs)
		}
		succ, err := stores[0].Successors(ctx, id)
		if err != nil || len(succ) != 1 {
			t.Fatalf("round %d: successors %v %v, want one", round, succ, err)
		}
	}

	// Concurrent writes from both pools, all with a now in the past: every
	// transaction gets its own time, later than any before it.
	var mu sync.Mutex
	var times []time.Time
	var wg sync.WaitGroup
	for w := range 8 {
		s := stores[w%2]
		wg.Go(func() {
			for i := range 25 {
				at, err := s.Apply(ctx, statement(fmt.Sprintf("w%d-%d", w, i), "written concurrently"), day)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				times = append(times, at)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(times); i++ {
		if !times[i].After(times[i-1]) {
			t.Fatalf("two transactions at %v", times[i])
		}
	}
	// Versions by seq have increasing transaction times.
	var versions []episodic.Version
	if err := stores[1].Export(ctx, func(r *episodic.Record) error {
		versions = append(versions, r.Versions...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(versions, func(a, b episodic.Version) int { return int(a.Seq - b.Seq) })
	for i := 1; i < len(versions); i++ {
		if versions[i].Seq == versions[i-1].Seq || versions[i].RecordedAt.Before(versions[i-1].RecordedAt) {
			t.Fatalf("version %d recorded at %v after version %d at %v", versions[i].Seq, versions[i].RecordedAt, versions[i-1].Seq, versions[i-1].RecordedAt)
		}
	}
}

// TestDropAndIsolation: a vault sees only its rows, and Drop deletes them
// all and nothing of another vault.
func TestDropAndIsolation(t *testing.T) {
	db := pgtest.DB(t, pgepisodic.Migrate)
	ctx := t.Context()
	a, b := pgepisodic.New(db, "a"), pgepisodic.New(db, "b")
	if _, err := a.Apply(ctx, statement("x", "cloud costs", "Alice"), day); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Apply(ctx, statement("x", "cloud provider"), day); err != nil {
		t.Fatalf("the same id in another vault: %v", err)
	}
	if res, err := b.Search(ctx, episodic.Filter{}, "costs", 10); err != nil || len(res) != 0 {
		t.Errorf("vault b finds vault a's text: %+v %v", res, err)
	}
	if err := pgepisodic.Drop(ctx, db, "a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Get(ctx, "x", nil); !errors.Is(err, episodic.ErrNotFound) {
		t.Errorf("after Drop: %v, want ErrNotFound", err)
	}
	if st, err := a.Stats(ctx, nil); err != nil || st != (episodic.Stats{}) {
		t.Errorf("stats after Drop: %+v %v", st, err)
	}
	if e, ok, err := b.Get(ctx, "x", nil); err != nil || !ok || e.Content != "cloud provider" {
		t.Errorf("vault b after dropping a: %+v %v %v", e, ok, err)
	}
	// The dropped vault starts again.
	if _, err := a.Apply(ctx, statement("y", "again"), day); err != nil {
		t.Fatal(err)
	}
}

// TestSearchMatchesSQLite writes the same statements to both stores and
// compares every search: the same episodes, in the same order, with equal
// BM25 scores.
func TestSearchMatchesSQLite(t *testing.T) {
	db := pgtest.DB(t, pgepisodic.Migrate)
	ctx := t.Context()
	pg := pgepisodic.New(db, pgtest.VaultID())
	lite, err := sqliteepisodic.Open(ctx, filepath.Join(t.TempDir(), "episodes.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	texts := []string{
		"cloud cloud cloud costs", "the cloud provider renewal contract is due", "lunch at noon",
		"the cloud migration is done", "École naïve résumé", "Running runners ran; the runner runs",
		"invoice for the cloud contract: 3 invoices", "a naïve plan for the renewal", "", "null",
	}
	for i, text := range texts {
		var ents []string
		switch i % 3 {
		case 0:
			ents = []string{"Vendor", "cloud"}
		case 1:
			ents = []string{}
		}
		c := statement(fmt.Sprintf("s%d", i), text, ents...)
		c.Statements[0].Entities = ents
		for _, s := range []episodic.Store{pg, lite} {
			if _, err := s.Apply(ctx, c, day.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{"cloud", "cloud costs cloud", "ecole", "NAI\u0308VE", "run", "the", "invoice contract", "vendor", "null", "zebra", "renewal lunch the cloud"} {
		for _, limit := range []int{1, 3, 100} {
			a, err := pg.Search(ctx, episodic.Filter{}, q, limit)
			if err != nil {
				t.Fatal(err)
			}
			b, err := lite.Search(ctx, episodic.Filter{}, q, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(b) {
				t.Errorf("%q limit %d: %d results, SQLite %d", q, limit, len(a), len(b))
				continue
			}
			for i := range a {
				if a[i].ID != b[i].ID || a[i].BM25 != b[i].BM25 {
					t.Errorf("%q limit %d: result %d is %s %v, SQLite %s %v", q, limit, i, a[i].ID, a[i].BM25, b[i].ID, b[i].BM25)
				}
			}
		}
	}
}
