package offload_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchdata"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
)

// The engine benchmarks run on the default store (SQLite). By default they
// use a tenth of the sizes in the targets; CTXKIT_BENCH_FULL=1 runs the real
// sizes: a 100,000-item (~40 MB) list and a 50 MB text.
func benchSizes() (items, textBytes int) {
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		return 100_000, 50 << 20
	}
	return 10_000, 5 << 20
}

func benchList(n int) []byte {
	var b bytes.Buffer
	_ = benchdata.WriteList(&b, n) // writes to memory cannot fail
	return b.Bytes()
}

func benchText(size int) []byte {
	var b bytes.Buffer
	_ = benchdata.WriteText(&b, size)
	return b.Bytes()
}

func benchEngine(b *testing.B, opts sqlitestore.Options) *offload.Engine {
	b.Helper()
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return offload.New(s, offload.WithTTL(-1))
}

func dispatch(b *testing.B, e *offload.Engine, tool string, args any) {
	res := e.Dispatch(b.Context(), tool, args)
	if res.IsError {
		b.Fatalf("%s: %s", tool, res.Output)
	}
}

func BenchmarkPutList(b *testing.B) {
	n, _ := benchSizes()
	data := benchList(n)
	// Without the background indexer, so that one Put's indexing does not
	// run into the next Put's timing; BenchmarkPutAndIndex100k in
	// store/sqlitestore times the index build.
	e := benchEngine(b, sqlitestore.Options{NoBackgroundIndex: true})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() { // a new workspace each time: replacing would also time the deletion
		if _, err := e.Put(b.Context(), data, offload.PutOptions{Producer: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// listEngine stores the benchmark list once for the read benchmarks, and
// searches it once so that its search index is built (large content is
// indexed after Put returns) and the benchmarks time steady state.
func listEngine(b *testing.B) *offload.Engine {
	n, _ := benchSizes()
	e := benchEngine(b, sqlitestore.Options{})
	if _, err := e.Put(b.Context(), benchList(n), offload.PutOptions{Producer: "bench", ID: "list"}); err != nil {
		b.Fatal(err)
	}
	dispatch(b, e, "result_search", `{"workspace_id":"list","query":"warm"}`)
	return e
}

func BenchmarkPipeFilterGroupSort(b *testing.B) {
	e := listEngine(b)
	args := `{"workspace_id":"list","steps":[{"filter":{"year":{"$gte":2010},"category":{"$in":["ml","db","os"]}}},{"group_by":{"field":"author.name","metrics":{"n":"count","avg":"mean:score"}}},{"sort":{"field":"n","order":"desc"}},{"limit":10}]}`
	b.ReportAllocs()
	for b.Loop() {
		dispatch(b, e, "result_pipe", args)
	}
}

// BenchmarkSearchTop10 searches for two words that each occur in about 0.2%
// of the items (author names), a selective query; BenchmarkSearchTop10Broad
// for two words that each occur in about 40% of them, which makes ranking
// consider most of the list.
func BenchmarkSearchTop10(b *testing.B) {
	e := listEngine(b)
	b.ReportAllocs()
	for b.Loop() {
		dispatch(b, e, "result_search", `{"workspace_id":"list","query":"author42 author77","max_results":10}`)
	}
}

func BenchmarkSearchTop10Broad(b *testing.B) {
	e := listEngine(b)
	b.ReportAllocs()
	for b.Loop() {
		dispatch(b, e, "result_search", `{"workspace_id":"list","query":"latency timeout","max_results":10}`)
	}
}

func BenchmarkPaginateDeep(b *testing.B) {
	n, _ := benchSizes()
	e := listEngine(b)
	args := fmt.Sprintf(`{"workspace_id":"list","page":%d,"size":20}`, n/20-5)
	b.ReportAllocs()
	for b.Loop() {
		dispatch(b, e, "result_paginate", args)
	}
}

func BenchmarkPutText(b *testing.B) {
	_, size := benchSizes()
	data := benchText(size)
	e := benchEngine(b, sqlitestore.Options{NoBackgroundIndex: true})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Put(b.Context(), data, offload.PutOptions{Producer: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

func textEngine(b *testing.B) *offload.Engine {
	_, size := benchSizes()
	e := benchEngine(b, sqlitestore.Options{})
	if _, err := e.Put(b.Context(), benchText(size), offload.PutOptions{Producer: "bench", ID: "text"}); err != nil {
		b.Fatal(err)
	}
	dispatch(b, e, "result_search_in_text", `{"workspace_id":"text","query":"warm"}`)
	return e
}

func BenchmarkSearchInText(b *testing.B) {
	e := textEngine(b)
	b.ReportAllocs()
	for b.Loop() {
		dispatch(b, e, "result_search_in_text", `{"workspace_id":"text","query":"throughput latency","max_results":5}`)
	}
}

func BenchmarkReadPage(b *testing.B) {
	e := textEngine(b)
	_, size := benchSizes()
	args := fmt.Sprintf(`{"workspace_id":"text","page":%d}`, size/6000-3)
	b.ReportAllocs()
	for b.Loop() {
		dispatch(b, e, "result_read_page", args)
	}
}
