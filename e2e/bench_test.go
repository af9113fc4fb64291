package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkPassthrough measures what `ctxkit wrap` adds to a small tool
// call: each iteration calls the echo tool of the Go upstream (package
// upstream, over stdio) once directly and once through the wrapper, timing
// each call, and the benchmark reports the p50 and p99 latencies of both
// and the difference of the p50s and p99s. Interleaving the two keeps a
// noisy machine from favouring one side. Run it over a fixed number of
// calls, as BENCHMARKS.md does:
//
//	go test -run '^$' -bench Passthrough -benchtime 1000x ./e2e/
func BenchmarkPassthrough(b *testing.B) {
	store := isolate(b)
	ctx := testContext(b)
	direct := mustStart(b, ctx, nil, upstreamBin)
	wrapped := mustStart(b, ctx, nil, ctxkitBin, wrapArgs(store, []string{"--name", "bench"}, upstreamBin)...)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a small result that passes through"}}
	timed := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("echo: %v %v", err, res)
		}
		return d
	}
	// Warm both paths (tool lists, connections, the store) before timing.
	for range 20 {
		timed(direct)
		timed(wrapped)
	}
	var d, w []time.Duration
	for b.Loop() {
		d = append(d, timed(direct))
		w = append(w, timed(wrapped))
	}
	dp50, dp99 := percentile(d, 50), percentile(d, 99)
	wp50, wp99 := percentile(w, 50), percentile(w, 99)
	b.ReportMetric(float64(dp50.Nanoseconds()), "direct-p50-ns")
	b.ReportMetric(float64(dp99.Nanoseconds()), "direct-p99-ns")
	b.ReportMetric(float64(wp50.Nanoseconds()), "wrapped-p50-ns")
	b.ReportMetric(float64(wp99.Nanoseconds()), "wrapped-p99-ns")
	b.ReportMetric(float64((wp50 - dp50).Nanoseconds()), "added-p50-ns")
	b.ReportMetric(float64((wp99 - dp99).Nanoseconds()), "added-p99-ns")
}

// percentile returns the p-th percentile (nearest rank) of ds, sorting ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := (p*len(ds) + 99) / 100 // ceil(p/100 * n), 1-based
	return ds[max(rank, 1)-1]
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 99, 4 * time.Millisecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 9 * time.Millisecond},
	} {
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("percentile(%v, %d) = %v, want %v", c.in, c.p, got, c.want)
		}
	}
}
