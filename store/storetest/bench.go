package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

// BenchFullEnv is the environment variable that switches [Bench] to full
// size: 100,000 items and a 50 MB text instead of 10,000 items and 2 MB.
const BenchFullEnv = "CTXKIT_BENCH_FULL"

// benchSize is how much data the benchmarks work on.
type benchSize struct {
	items     int // items in the list
	textBytes int // bytes of the text
}

func sizeFromEnv() benchSize {
	if os.Getenv(BenchFullEnv) != "" {
		return benchSize{items: 100_000, textBytes: 50 << 20}
	}
	return benchSize{items: 10_000, textBytes: 2 << 20}
}

// Bench runs the store benchmarks, each against a fresh store returned by
// open: putting a list of small items, reading a page deep into it,
// searching it, and slicing and searching a large text. Sizes are small by
// default so that benchmarks run quickly; set CTXKIT_BENCH_FULL=1 for
// 100,000 items and a 50 MB text. Bench closes every store it opens.
func Bench(b *testing.B, open func(b *testing.B) store.Store) {
	size := sizeFromEnv()
	// The data is generated once and shared, read-only, by the benchmarks.
	items := sync.OnceValue(func() []json.RawMessage { return benchItems(size.items) })
	text := sync.OnceValue(func() string { return benchText(size.textBytes) })
	opened := func(b *testing.B) store.Store {
		s := open(b)
		b.Cleanup(func() {
			if err := s.Close(); err != nil {
				b.Errorf("Close: %v", err)
			}
		})
		return s
	}

	b.Run(fmt.Sprintf("PutList/items=%d", size.items), func(b *testing.B) {
		s := opened(b)
		items := items()
		var n int64
		for _, it := range items {
			n += int64(len(it))
		}
		b.SetBytes(n)
		ws, c := listWorkspace("bench_put", items)
		for b.Loop() {
			if err := s.Put(b.Context(), ws, c); err != nil {
				b.Fatalf("Put: %v", err)
			}
		}
		b.ReportMetric(float64(len(items))*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	})

	b.Run(fmt.Sprintf("ItemsDeepPage/items=%d", size.items), func(b *testing.B) {
		s := opened(b)
		items := items()
		ws, c := listWorkspace("bench_page", items)
		if err := s.Put(b.Context(), ws, c); err != nil {
			b.Fatalf("Put: %v", err)
		}
		offset := max(len(items)-100, 0)
		for b.Loop() {
			got, err := s.Items(b.Context(), ws.ID, offset, 50)
			if err != nil || len(got) != min(50, len(items)-offset) {
				b.Fatalf("Items(%d, 50) = %d items, %v", offset, len(got), err)
			}
		}
	})

	b.Run(fmt.Sprintf("SearchItems/items=%d", size.items), func(b *testing.B) {
		s := opened(b)
		ws, c := listWorkspace("bench_search", items())
		if err := s.Put(b.Context(), ws, c); err != nil {
			b.Fatalf("Put: %v", err)
		}
		q := store.Query{Text: benchWord(7) + " " + benchWord(42), Limit: 10}
		for b.Loop() {
			hits, total, err := s.SearchItems(b.Context(), ws.ID, q)
			if err != nil || len(hits) == 0 || total < len(hits) {
				b.Fatalf("SearchItems(%q) = %d hits, total %d, %v", q.Text, len(hits), total, err)
			}
		}
	})

	textName := fmt.Sprintf("MB=%d", size.textBytes>>20)
	b.Run("TextSlice/"+textName, func(b *testing.B) {
		s := opened(b)
		text := text()
		ws, c := textWorkspace("bench_slice", text)
		if err := s.Put(b.Context(), ws, c); err != nil {
			b.Fatalf("Put: %v", err)
		}
		// A page near the end, where counting runes from the start would cost most.
		offset := max(ws.Chars-10_000, 0)
		for b.Loop() {
			got, err := s.TextSlice(b.Context(), ws.ID, offset, 4000)
			if err != nil || got == "" {
				b.Fatalf("TextSlice(%d, 4000) = %d bytes, %v", offset, len(got), err)
			}
		}
	})

	b.Run("SearchText/"+textName, func(b *testing.B) {
		s := opened(b)
		text := text()
		ws, c := textWorkspace("bench_search_text", text)
		if err := s.Put(b.Context(), ws, c); err != nil {
			b.Fatalf("Put: %v", err)
		}
		b.SetBytes(int64(len(text)))
		q := store.TextQuery{Text: benchWord(7) + " " + benchWord(42), Limit: 10}
		for b.Loop() {
			hits, err := s.SearchText(b.Context(), ws.ID, q)
			if err != nil || len(hits) == 0 {
				b.Fatalf("SearchText(%q) = %d hits, %v", q.Text, len(hits), err)
			}
		}
	})
}

// benchVocabulary is the number of distinct words in benchmark data; each
// appears in roughly one item in 150.
const benchVocabulary = 1500

// benchWord returns the i-th word of the benchmark vocabulary (i below
// 1728): a made-up word of three syllables, distinct for each i.
func benchWord(i int) string {
	syllables := []string{"ka", "lo", "mi", "ren", "tis", "var", "qua", "zen", "dor", "pel", "sun", "bri"}
	n := len(syllables)
	return syllables[i%n] + syllables[(i/n)%n] + syllables[(i/(n*n))%n] + "x"
}

// benchItems returns n small JSON objects of about 150 bytes.
func benchItems(n int) []json.RawMessage {
	r := rand.New(rand.NewPCG(1, 2))
	statuses := []string{"open", "closed", "pending"}
	items := make([]json.RawMessage, n)
	var words []string
	for i := range items {
		words = words[:0]
		for range 5 + r.IntN(8) {
			words = append(words, benchWord(r.IntN(benchVocabulary)))
		}
		item := map[string]any{
			"id":     i,
			"name":   fmt.Sprintf("item-%d", i),
			"status": statuses[r.IntN(len(statuses))],
			"text":   strings.Join(words, " "),
			"tags":   []string{benchWord(r.IntN(50)), benchWord(r.IntN(50))},
			"score":  r.Float64() * 100,
		}
		b, err := json.Marshal(item)
		if err != nil {
			panic(err)
		}
		items[i] = b
	}
	return items
}

// benchText returns about n bytes of text of vocabulary words, with some
// multi-byte words and line breaks mixed in.
func benchText(n int) string {
	r := rand.New(rand.NewPCG(3, 4))
	multibyte := []string{"größe", "naïve", "日本語", "Ελληνικά", "😀", "café"}
	var b strings.Builder
	b.Grow(n + 64)
	for b.Len() < n {
		switch k := r.IntN(60); {
		case k == 0:
			b.WriteString(".\n")
		case k < 4:
			b.WriteString(multibyte[r.IntN(len(multibyte))])
			b.WriteByte(' ')
		default:
			b.WriteString(benchWord(r.IntN(benchVocabulary)))
			b.WriteByte(' ')
		}
	}
	s := b.String()
	if !utf8.ValidString(s) {
		panic("storetest: invalid benchmark text")
	}
	return s
}
