package sqlitestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/benchdata"
	"github.com/ctxkit/ctxkit/store"
)

// The ingest benchmarks use items of about 400 bytes, shaped like a search
// API's results: a title, a body of text, a category, a score, tags and a
// nested author.

// benchVocab is a vocabulary of made-up words, used with a Zipf
// distribution so that a few words are common and most are rare.
func benchVocab(n int) []string {
	syll := []string{"ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ven", "dor", "al", "is", "tra", "gen", "con",
		"pre", "ment", "ing", "er", "ly", "tion", "ab", "ex", "un", "re", "de", "ous", "ive", "ant", "ble"}
	r := rand.New(rand.NewPCG(7, 7))
	seen := map[string]bool{}
	var words []string
	for len(words) < n {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

type benchAuthor struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Org   struct {
		Name    string `json:"name"`
		Country string `json:"country"`
	} `json:"org"`
}

type benchDoc struct {
	ID       int         `json:"id"`
	Title    string      `json:"title"`
	Body     string      `json:"body"`
	Category string      `json:"category"`
	Score    float64     `json:"score"`
	Tags     []string    `json:"tags"`
	Author   benchAuthor `json:"author"`
	Created  string      `json:"created"`
}

var (
	benchDocsOnce sync.Once
	benchDocs     []json.RawMessage
	benchWords    []string
)

// largeList returns 100,000 items of about 400 bytes (40 MB), generated once.
func largeList() []json.RawMessage {
	benchDocsOnce.Do(func() {
		benchWords = benchVocab(5000)
		r := rand.New(rand.NewPCG(1, 2))
		z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
		words := func(k int) string {
			ws := make([]string, k)
			for i := range ws {
				ws[i] = benchWords[z.Uint64()]
			}
			return strings.Join(ws, " ")
		}
		countries := []string{"DE", "FR", "US", "JP", "BR"}
		benchDocs = make([]json.RawMessage, 100_000)
		for i := range benchDocs {
			d := benchDoc{ID: i, Title: words(5), Body: words(25), Category: benchWords[100+r.IntN(20)],
				Score: float64(r.IntN(10000)) / 100, Tags: []string{words(1), words(1), words(1)},
				Created: fmt.Sprintf("2025-%02d-%02dT10:00:00Z", 1+r.IntN(12), 1+r.IntN(28))}
			d.Author.Name = words(2)
			d.Author.Email = fmt.Sprintf("user%d@example.com", r.IntN(5000))
			d.Author.Org.Name = words(1)
			d.Author.Org.Country = countries[r.IntN(len(countries))]
			b, err := json.Marshal(d)
			if err != nil {
				panic(err)
			}
			benchDocs[i] = b
		}
	})
	return benchDocs
}

func largeWorkspace(id string) (*store.Workspace, *store.Content) {
	items := largeList()
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	return &store.Workspace{ID: id, Type: "search", Shape: store.ShapeList, Format: "json", Items: len(items),
		Chars: int64(n), Tokens: n / 4, Producer: "search_tool", CreatedAt: time.Now()}, &store.Content{Items: items}
}

// BenchmarkPut100k measures Put of a 100,000-item list (40 MB) into a
// fresh store: the items are stored and the call returns; the full-text
// index is built afterwards (see BenchmarkPutAndIndex100k).
func BenchmarkPut100k(b *testing.B) {
	benchPut(b, false)
}

// BenchmarkPutAndIndex100k measures Put of a 100,000-item list followed by
// building its full-text index: the time until the list is searchable.
func BenchmarkPutAndIndex100k(b *testing.B) {
	benchPut(b, true)
}

func benchPut(b *testing.B, index bool) {
	items := largeList()
	var size int64
	for _, it := range items {
		size += int64(len(it))
	}
	b.SetBytes(size)
	// Indexed below, or not at all.
	eachFresh(b, Options{NoBackgroundIndex: true}, func(s *Store) {
		ws, c := largeWorkspace("ingest")
		b.StartTimer()
		if err := s.Put(b.Context(), ws, c); err != nil {
			b.Fatal(err)
		}
		if index {
			if err := s.ensureIndexed(b.Context(), ws.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// eachFresh calls run once per iteration of b with a new store, the timer
// stopped (run starts it), and reports the peak RSS of the process.
func eachFresh(b *testing.B, opts Options, run func(s *Store)) {
	var s *Store
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	for b.Loop() {
		b.StopTimer()
		if s != nil {
			s.Close()
		}
		s = openTemp(b, opts)
		run(s)
	}
	b.ReportMetric(float64(maxRSS())/(1<<20), "maxRSS-MB")
}

// BenchmarkPutText measures Put of a 5 MB text into a fresh store, 50 MB
// with CTXKIT_BENCH_FULL=1 (the text of BENCHMARKS.md), indexed after Put
// returns. maxRSS-MB is the peak of the whole benchmark process.
func BenchmarkPutText(b *testing.B) {
	size := 5 << 20
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		size = 50 << 20
	}
	var buf bytes.Buffer
	if err := benchdata.WriteText(&buf, size); err != nil {
		b.Fatal(err)
	}
	text := buf.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	eachFresh(b, Options{NoBackgroundIndex: true}, func(s *Store) {
		ws := &store.Workspace{ID: "text", Type: "t", Shape: store.ShapeText, Format: "text", Producer: "p",
			Chars: int64(len(text)), CreatedAt: time.Now()}
		b.StartTimer()
		if err := s.Put(b.Context(), ws, &store.Content{Text: text}); err != nil {
			b.Fatal(err)
		}
	})
}

// maxRSS returns the peak resident memory of the process, in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since start as
// cpu-ms/op: on a shared machine, where wall time moves with the other
// work running, it is the steadier figure.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// withLarge runs b against a store holding the 100,000-item list.
func withLarge(b *testing.B) (*Store, string) {
	s := openTemp(b, Options{})
	b.Cleanup(func() { s.Close() })
	ws, c := largeWorkspace("large")
	if err := s.Put(b.Context(), ws, c); err != nil {
		b.Fatal(err)
	}
	if err := s.ensureIndexed(b.Context(), ws.ID); err != nil {
		b.Fatal(err)
	}
	return s, ws.ID
}

// wordsByShare returns n words of the large list that each occur in about
// share of its items.
func wordsByShare(share float64, n int) []string {
	items := largeList()
	df := map[string]int{}
	for _, it := range items[:20000] {
		var d benchDoc
		if err := json.Unmarshal(it, &d); err != nil {
			panic(err)
		}
		seen := map[string]bool{}
		for _, w := range strings.Fields(d.Title + " " + d.Body) {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	want := int(share * 20000)
	words := slices.Collect(maps.Keys(df))
	slices.SortFunc(words, func(a, b string) int {
		da, db := abs(df[a]-want), abs(df[b]-want)
		if da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	return words[:n]
}

func abs(n int) int { return max(n, -n) }

func BenchmarkSearch100k(b *testing.B) {
	s, id := withLarge(b)
	for _, tc := range []struct{ name, q string }{
		{"two words in 0.1%", strings.Join(wordsByShare(0.001, 2), " ")},
		{"two words in 0.7%", strings.Join(wordsByShare(0.007, 2), " ")},
		{"two words in 3%", strings.Join(wordsByShare(0.03, 2), " ")},
		{"two words in 50%", strings.Join(wordsByShare(0.5, 2), " ")},
		{"one word in 50%", wordsByShare(0.5, 1)[0]},
		{"word and email", wordsByShare(0.007, 1)[0] + " user42@example.com"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			var total int
			for b.Loop() {
				hits, n, err := s.SearchItems(b.Context(), id, store.Query{Text: tc.q, Limit: 10})
				if err != nil || len(hits) == 0 {
					b.Fatalf("SearchItems(%q) = %d hits, %v", tc.q, len(hits), err)
				}
				total = n
			}
			b.ReportMetric(float64(total), "matches")
		})
	}
}

func BenchmarkItemsDeep100k(b *testing.B) {
	s, id := withLarge(b)
	for b.Loop() {
		got, err := s.Items(b.Context(), id, 90_000, 20)
		if err != nil || len(got) != 20 {
			b.Fatalf("Items = %d, %v", len(got), err)
		}
	}
}

// BenchmarkSearchSmallBesideLarge searches a 20-item list in a store that
// also holds the 100,000-item list: the large one must not slow it down.
func BenchmarkSearchSmallBesideLarge(b *testing.B) {
	s, _ := withLarge(b)
	ws := &store.Workspace{ID: "small", Type: "t", Shape: store.ShapeList, Producer: "p"}
	if err := s.Put(b.Context(), ws, &store.Content{Items: largeList()[:20]}); err != nil {
		b.Fatal(err)
	}
	q := strings.Join(wordsByShare(0.5, 2), " ")
	for b.Loop() {
		if _, _, err := s.SearchItems(b.Context(), "small", store.Query{Text: q}); err != nil {
			b.Fatal(err)
		}
	}
}
