package pgepisodic_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/pgepisodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// TestLongScanMatchesSQLite scans past the first page (read in one
// statement) with every kind of filter and both orders, stopping early
// or not, and compares the episodes with SQLite's.
func TestLongScanMatchesSQLite(t *testing.T) {
	db := pgtest.DB(t, pgepisodic.Migrate)
	ctx := t.Context()
	pg := pgepisodic.New(db, pgtest.VaultID())
	lite, err := sqliteepisodic.Open(ctx, filepath.Join(t.TempDir(), "episodes.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	var mid time.Time
	for i := range 300 {
		id := fmt.Sprintf("s%03d", i)
		c := statement(id, "statement "+id, fmt.Sprintf("e%d", i%3))
		c.Statements[0].Salience = float64(i%7) / 7
		c.Versions[0].ValidFrom = day.Add(time.Duration(i*37%300) * time.Hour)
		if i%10 == 0 {
			to := c.Versions[0].ValidFrom.Add(24 * time.Hour)
			c.Versions[0].ValidTo = &to
		}
		for _, s := range []episodic.Store{pg, lite} {
			at, err := s.Apply(ctx, c, day.Add(time.Duration(i)*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if i == 150 {
				mid = at
			}
		}
	}
	valid := day.Add(200 * time.Hour)
	filters := []episodic.Filter{{}, {ValidAt: &valid}, {KnownAt: &mid}, {KnownAt: &mid, ValidAt: &valid}, {Entities: []string{"E1"}}, {Entities: []string{"e2"}, KnownAt: &mid}}
	for fi, f := range filters {
		for _, order := range []episodic.Order{episodic.ByValidFrom, episodic.BySalience} {
			for _, stop := range []int{10, 64, 65, 100, 1000} {
				var got [2][]string
				for i, s := range []episodic.Store{pg, lite} {
					err := s.Scan(ctx, f, order, func(e *episodic.Episode) bool {
						got[i] = append(got[i], fmt.Sprintf("%s/%d", e.ID, e.Seq))
						return len(got[i]) < stop
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				if !slices.Equal(got[0], got[1]) {
					t.Errorf("filter %d, order %d, stop %d: %d episodes %v, SQLite %d %v", fi, order, stop, len(got[0]), got[0], len(got[1]), got[1])
				}
			}
		}
	}
}

// TestScanSeesOneState scans while another pool writes: every scan sees
// the vault as it was at one moment (the statements 0..n, newest first),
// though its first page and the rest are read by different statements.
func TestScanSeesOneState(t *testing.T) {
	url := pgtest.URL(t)
	ctx := t.Context()
	vault := pgtest.VaultID()
	w, r := pgepisodic.New(pgtest.Open(t, url, pgepisodic.Migrate), vault), pgepisodic.New(pgtest.Open(t, url, pgepisodic.Migrate), vault)
	write := func(i int) error {
		c := statement(fmt.Sprintf("s%04d", i), "statement")
		c.Versions[0].ValidFrom = day.Add(time.Duration(i) * time.Minute)
		_, err := w.Apply(ctx, c, day)
		return err
	}
	for i := range 100 {
		if err := write(i); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		for i := 100; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := write(i); err != nil {
				done <- err
				return
			}
		}
	}()
	for range 50 {
		var ids []string
		if err := r.Scan(ctx, episodic.Filter{}, episodic.ByValidFrom, func(e *episodic.Episode) bool {
			ids = append(ids, e.ID)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if want := fmt.Sprintf("s%04d", len(ids)-1-i); id != want {
				t.Fatalf("a scan of %d episodes has %s at %d, not %s", len(ids), id, i, want)
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
