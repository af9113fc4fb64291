package episodic_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/episodictest"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// BenchmarkWriteMany writes statements in batches of 1,000
// ($CTXKIT_BENCH_BATCH to change it) into a fresh store (over 10,000
// entities) and reports statements/s.
func BenchmarkWriteMany(b *testing.B) {
	s, err := sqliteepisodic.Open(b.Context(), filepath.Join(b.TempDir(), "episodes.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := episodic.New(s, episodic.Options{})
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
}

// queryStore is the store BenchmarkQuery reads: 100,000 statements, or
// the 1,000,000 with CTXKIT_BENCH_FULL=1, over 10,000 entities,
// one in twenty later superseded, so that past beliefs differ from the
// current one. It is built once per process.
var queryStore struct {
	once  sync.Once
	m     *episodic.Memory
	tx    [2]time.Time // first and last transaction time
	now   time.Time
	err   error
	count int
}

func buildQueryStore(b *testing.B) {
	qs := &queryStore
	qs.once.Do(func() {
		qs.count = 100000
		if os.Getenv("CTXKIT_BENCH_FULL") != "" {
			qs.count = 1000000
		}
		dir, err := os.MkdirTemp("", "ctxkit-episodes-bench")
		if err != nil {
			qs.err = err
			return
		}
		s, err := sqliteepisodic.Open(b.Context(), filepath.Join(dir, "episodes.db"))
		if err != nil {
			qs.err = err
			return
		}
		qs.m = episodic.New(s, episodic.Options{})
		qs.now = time.Now()
		gen := episodictest.NewStatements(3, 4, qs.now)
		qs.tx[0] = time.Now()
		var sample []string
		start := time.Now()
		for written := 0; written < qs.count; written += 10000 {
			batch := make([]episodic.Write, 10000)
			for i := range batch {
				batch[i] = gen.Next(10000)
			}
			ids, err := qs.m.WriteMany(b.Context(), batch)
			if err != nil {
				qs.err = err
				return
			}
			if batch[0].ValidTo == nil {
				sample = append(sample, ids[0])
			}
		}
		for i, id := range sample {
			if i%2 == 0 {
				if _, err := qs.m.Supersede(b.Context(), id, episodic.Successor{Content: "a newer statement about the contract renewal"}); err != nil {
					qs.err = err
					return
				}
			}
		}
		qs.tx[1] = time.Now()
		b.Logf("built %d statements in %s", qs.count, time.Since(start).Round(time.Millisecond))
	})
	if qs.err != nil {
		b.Fatal(qs.err)
	}
}

// BenchmarkQuery measures the structured queries of the issue and a text
// query, each with its p50 and p99.
func BenchmarkQuery(b *testing.B) {
	buildQueryStore(b)
	qs := &queryStore
	r := rand.New(rand.NewPCG(5, 6))
	span := qs.tx[1].Sub(qs.tx[0])
	for _, tc := range []struct {
		name string
		q    func() episodic.Query
	}{
		{"entity-current", func() episodic.Query {
			return episodic.Query{Filter: episodic.Filter{Entities: []string{fmt.Sprintf("entity-%d", r.IntN(10000))}}}
		}},
		{"valid-at", func() episodic.Query {
			t := qs.now.Add(-time.Duration(r.Int64N(int64(700 * 24 * time.Hour))))
			return episodic.Query{Filter: episodic.Filter{ValidAt: &t}}
		}},
		{"known-at-valid-at", func() episodic.Query {
			t := qs.now.Add(-time.Duration(r.Int64N(int64(700 * 24 * time.Hour))))
			k := qs.tx[0].Add(time.Duration(r.Int64N(int64(span))))
			return episodic.Query{Filter: episodic.Filter{ValidAt: &t, KnownAt: &k}}
		}},
		{"entity-known-at", func() episodic.Query {
			k := qs.tx[0].Add(time.Duration(r.Int64N(int64(span))))
			return episodic.Query{Filter: episodic.Filter{Entities: []string{fmt.Sprintf("entity-%d", r.IntN(10000))}, KnownAt: &k, All: true}}
		}},
		{"text", func() episodic.Query {
			words := episodictest.BenchWords()[10:]
			return episodic.Query{Text: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				q := tc.q()
				start := time.Now()
				if _, err := qs.m.Query(b.Context(), q); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
