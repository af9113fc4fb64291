package episodic_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// benchWords is the vocabulary of generated statements; words early in
// the list are drawn more often (a Zipf law, as in real text).
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
		r := rand.New(rand.NewPCG(3, 4))
		z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
		qs.now = time.Now()
		qs.tx[0] = time.Now()
		var sample []string
		start := time.Now()
		for written := 0; written < qs.count; written += 10000 {
			batch := make([]episodic.Write, 10000)
			for i := range batch {
				batch[i] = benchStatement(r, z, 10000, qs.now)
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
			return episodic.Query{Text: benchWords[10+r.IntN(len(benchWords)-10)] + " " + benchWords[10+r.IntN(len(benchWords)-10)]}
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
