package pgepisodic_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/episodictest"
	"github.com/ctxkit/ctxkit/vault/episodic/pgepisodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// The benchmarks of vault/episodic/bench_test.go (which open SQLite
// only), run on both stores in one run: the same statements, vocabulary
// and queries.

// backends opens a fresh store of each kind.
var backends = []struct {
	name string
	open func(b *testing.B) episodic.Store
}{
	{"postgres", func(b *testing.B) episodic.Store {
		return pgepisodic.New(pgtest.DB(b, pgepisodic.Migrate), pgtest.VaultID())
	}},
	{"sqlite", func(b *testing.B) episodic.Store {
		s, err := sqliteepisodic.Open(b.Context(), filepath.Join(b.TempDir(), "episodes.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}},
}

// BenchmarkWriteMany writes statements in batches of 1,000
// ($CTXKIT_BENCH_BATCH to change it) into a fresh store (over 10,000
// entities) and reports statements/s.
func BenchmarkWriteMany(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			m := episodic.New(be.open(b), episodic.Options{})
			now := time.Now()
			gen := episodictest.NewStatements(1, 2, now)
			size := 1000
			if n, err := strconv.Atoi(os.Getenv("CTXKIT_BENCH_BATCH")); err == nil && n > 0 {
				size = n
			}
			batch := make([]episodic.Write, size)
			for b.Loop() {
				for i := range batch {
					batch[i] = gen.Next(10000)
				}
				if _, err := m.WriteMany(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "statements/s")
		})
	}
}

// BenchmarkQuery measures the structured queries of the issue and a text
// query over 100,000 statements ($CTXKIT_BENCH_COUNT), one in twenty
// later superseded, each with its p50 and p99.
func BenchmarkQuery(b *testing.B) {
	count := 100000
	if n, err := strconv.Atoi(os.Getenv("CTXKIT_BENCH_COUNT")); err == nil && n > 0 {
		count = n
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			m := episodic.New(be.open(b), episodic.Options{})
			now := time.Now()
			gen := episodictest.NewStatements(3, 4, now)
			tx0 := time.Now()
			var sample []string
			start := time.Now()
			for written := 0; written < count; written += 10000 {
				batch := make([]episodic.Write, min(10000, count-written))
				for i := range batch {
					batch[i] = gen.Next(10000)
				}
				ids, err := m.WriteMany(b.Context(), batch)
				if err != nil {
					b.Fatal(err)
				}
				if batch[0].ValidTo == nil {
					sample = append(sample, ids[0])
				}
			}
			for i, id := range sample {
				if i%2 == 0 {
					if _, err := m.Supersede(b.Context(), id, episodic.Successor{Content: "a newer statement about the contract renewal"}); err != nil {
						b.Fatal(err)
					}
				}
			}
			tx1 := time.Now()
			b.Logf("%s: built %d statements in %s", be.name, count, time.Since(start).Round(time.Millisecond))
			span := tx1.Sub(tx0)
			qr := rand.New(rand.NewPCG(5, 6))
			for _, tc := range []struct {
				name string
				q    func() episodic.Query
			}{
				{"entity-current", func() episodic.Query {
					return episodic.Query{Filter: episodic.Filter{Entities: []string{fmt.Sprintf("entity-%d", qr.IntN(10000))}}}
				}},
				{"valid-at", func() episodic.Query {
					t := now.Add(-time.Duration(qr.Int64N(int64(700 * 24 * time.Hour))))
					return episodic.Query{Filter: episodic.Filter{ValidAt: &t}}
				}},
				{"known-at-valid-at", func() episodic.Query {
					t := now.Add(-time.Duration(qr.Int64N(int64(700 * 24 * time.Hour))))
					k := tx0.Add(time.Duration(qr.Int64N(int64(span))))
					return episodic.Query{Filter: episodic.Filter{ValidAt: &t, KnownAt: &k}}
				}},
				{"entity-known-at", func() episodic.Query {
					k := tx0.Add(time.Duration(qr.Int64N(int64(span))))
					return episodic.Query{Filter: episodic.Filter{Entities: []string{fmt.Sprintf("entity-%d", qr.IntN(10000))}, KnownAt: &k, All: true}}
				}},
				{"text", func() episodic.Query {
					words := episodictest.BenchWords()[10:]
					return episodic.Query{Text: words[qr.IntN(len(words))] + " " + words[qr.IntN(len(words))]}
				}},
			} {
				b.Run(tc.name, func(b *testing.B) {
					var lat []time.Duration
					for b.Loop() {
						q := tc.q()
						start := time.Now()
						if _, err := m.Query(b.Context(), q); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(start))
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}
