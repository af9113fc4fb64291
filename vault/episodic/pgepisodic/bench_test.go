package pgepisodic_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/pgepisodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// The benchmarks of vault/episodic/bench_test.go (which open SQLite
// only), run on both stores in one run: the same statements, vocabulary
// and queries.

var benchWords = strings.Fields(`the of and to in is for on that with as by deploy service customer
invoice contract renewal meeting budget release incident latency database migration outage pricing
discount region cluster owner manager team roadmap launch quarter target risk approval vendor audit
policy access token backup restore schedule ticket escalation priority support onboarding training
hiring review feedback metric revenue churn forecast capacity storage network firewall certificate`)

func benchStatement(r *rand.Rand, z *rand.Zipf, entities int, now time.Time) episodic.Write {
	n := 8 + r.IntN(10)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = benchWords[z.Uint64()]
	}
	from := now.Add(-time.Duration(r.Int64N(int64(730 * 24 * time.Hour))))
	w := episodic.Write{
		Content:   strings.Join(ws, " "),
		Entities:  []string{fmt.Sprintf("entity-%d", r.IntN(entities))},
		ValidFrom: &from,
	}
	if r.IntN(3) == 0 {
		w.Entities = append(w.Entities, fmt.Sprintf("entity-%d", r.IntN(entities)))
	}
	if r.IntN(10) == 0 {
		to := from.Add(time.Duration(1 + r.Int64N(int64(90*24*time.Hour))))
		w.ValidTo = &to
	}
	return w
}

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
			r := rand.New(rand.NewPCG(1, 2))
			z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
			now := time.Now()
			size := 1000
			if n, err := strconv.Atoi(os.Getenv("CTXKIT_BENCH_BATCH")); err == nil && n > 0 {
				size = n
			}
			batch := make([]episodic.Write, size)
			for b.Loop() {
				for i := range batch {
					batch[i] = benchStatement(r, z, 10000, now)
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
			r := rand.New(rand.NewPCG(3, 4))
			z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
			now := time.Now()
			tx0 := time.Now()
			var sample []string
			start := time.Now()
			for written := 0; written < count; written += 10000 {
				batch := make([]episodic.Write, min(10000, count-written))
				for i := range batch {
					batch[i] = benchStatement(r, z, 10000, now)
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
					return episodic.Query{Text: benchWords[10+qr.IntN(len(benchWords)-10)] + " " + benchWords[10+qr.IntN(len(benchWords)-10)]}
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
