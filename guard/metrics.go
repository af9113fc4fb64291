package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the guard's Prometheus metrics, served at GET /metrics. They
// live in a registry of the Guard's own (two guards in one process do not
// share counters). Counters that /ctxkit/health also shows are read from
// the same atomics at scrape time, so the two never disagree.
type metrics struct {
	reg      *prometheus.Registry
	handler  http.Handler
	evicted  *prometheus.CounterVec
	upstream *prometheus.HistogramVec
	failures *prometheus.CounterVec
	// cuts counts upstream answers that ended early, timeouts upstream
	// requests that got no response headers in Options.UpstreamTimeout.
	cuts, timeouts *prometheus.CounterVec
}

// upstreamBuckets span a /props probe (milliseconds) to a long
// non-streamed generation (minutes).
var upstreamBuckets = prometheus.ExponentialBuckets(0.002, 2.5, 14)

func newMetrics(g *Guard) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "ctxkit", Subsystem: "guard", Name: name, Help: help}
	}
	counter := func(name, help string, v func() int64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts(opts(name, help)), func() float64 { return float64(v()) }))
	}
	counter("requests_total", "Requests proxied (/metrics and /ctxkit/* not counted).", g.stats.requests.Load)
	counter("compactions_total", "Prompts compacted to fit the window (a request, and again each recall round that had to be).", g.stats.compacted.Load)
	counter("refused_total", "Requests answered 413 (strict policy, or nothing left to remove).", g.stats.refused.Load)
	counter("retries_total", "Retries after an upstream context-overflow error.", g.stats.retried.Load)
	counter("overloaded_total", "Requests refused with 503 because MaxConcurrent requests were in flight.", g.stats.overloaded.Load)
	counter("host_refused_total", "Requests refused with 403 for a Host header the guard does not answer to (DNS rebinding).", g.stats.hostRefused.Load)
	counter("upstream_truncations_total", "Silent truncations detected after the fact (upstream evaluated fewer tokens than sent).", g.stats.truncated.Load)
	if g.opts.Recall {
		counter("recall_rounds_total", "context_recall rounds the guard answered.", g.stats.recallRounds.Load)
	}
	// The summarizer and the arbiter are made after the metrics: read them
	// at scrape time.
	if g.opts.Summarize {
		counter("summarizer_calls_total", "Calls to the summarizer model (map and reduce steps).", func() int64 { return g.sum.calls.Load() })
		counter("summarizer_cache_hits_total", "Digests found in the store instead of being written again.", func() int64 { return g.sum.hits.Load() })
		counter("summarizer_failures_total", "Digests that failed (the plain notice was used).", func() int64 { return g.sum.failures.Load() })
	}
	if g.opts.Arbitrate {
		arb := func(field func(*arbiter) int64) func() int64 {
			return func() int64 {
				if g.arb == nil {
					return 0
				}
				g.arb.mu.Lock()
				defer g.arb.mu.Unlock()
				return field(g.arb)
			}
		}
		counter("runtime_switches_total", "GPU hand-overs between Ollama and llama.cpp.", arb(func(a *arbiter) int64 { return a.stats.switches }))
		counter("runtime_queued_total", "Requests that waited for the other runtime to release the GPU.", arb(func(a *arbiter) int64 { return a.stats.queued }))
		counter("runtime_timeouts_total", "Requests that gave up waiting for the GPU (503).", arb(func(a *arbiter) int64 { return a.stats.timedOut + a.stats.full }))
		counter("runtime_switch_failures_total", "Switches that failed (503 runtime_switch_failed).", arb(func(a *arbiter) int64 { return a.stats.failed }))
	}
	m.evicted = prometheus.NewCounterVec(prometheus.CounterOpts(opts("evicted_tokens_total", "Tokens removed from prompts by compaction.")), []string{"backend"})
	m.upstream = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "ctxkit", Subsystem: "guard", Name: "upstream_seconds", Buckets: upstreamBuckets,
		Help: "Time from sending a request upstream to its response headers (for a stream, to its start).",
	}, []string{"backend", "endpoint"})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts(opts("upstream_failures_total", "Upstream requests that got no response (connection refused, reset, cancelled).")), []string{"backend"})
	m.cuts = prometheus.NewCounterVec(prometheus.CounterOpts(opts("upstream_cuts_total", "Upstream answers that ended early (a stream without its last event, a body cut short); the client got an error.")), []string{"backend"})
	m.timeouts = prometheus.NewCounterVec(prometheus.CounterOpts(opts("upstream_timeouts_total", "Upstream requests without response headers within the upstream timeout (504).")), []string{"backend"})
	m.reg.MustRegister(m.evicted, m.upstream, m.failures, m.cuts, m.timeouts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// timedTransport observes each upstream round trip of one backend and
// bounds its wait for the response headers (headerTimeout; 0: none).
type timedTransport struct {
	base          http.RoundTripper
	backend       string
	m             *metrics
	headerTimeout time.Duration
}

func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.roundTrip(req)
	if err != nil {
		t.m.failures.WithLabelValues(t.backend).Inc()
		if isUpstreamTimeout(err) {
			t.m.timeouts.WithLabelValues(t.backend).Inc()
		}
		return nil, err
	}
	t.m.upstream.WithLabelValues(t.backend, endpoint(req.URL.Path)).Observe(time.Since(start).Seconds())
	return resp, nil
}

// roundTrip sends req, cancelling it when no response headers came
// within headerTimeout; the body then reads on under the request's own
// context, for as long as the generation takes.
func (t timedTransport) roundTrip(req *http.Request) (*http.Response, error) {
	if t.headerTimeout <= 0 {
		return t.base.RoundTrip(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	timeout := &upstreamTimeoutError{backend: t.backend, timeout: t.headerTimeout}
	timer := time.AfterFunc(t.headerTimeout, func() { cancel(timeout) })
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		return nil, timeout
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp, nil // the body is the connection; it ends with the request
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a response's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(errBodyClosed)
	return err
}

// errBodyClosed is the cause of a response's context ended by closing its
// body (not by the client's leaving).
var errBodyClosed = errors.New("response body closed")

// upstreamTimeoutError is an upstream request that got no response
// headers within the upstream timeout.
type upstreamTimeoutError struct {
	backend string
	timeout time.Duration
}

func (e *upstreamTimeoutError) Error() string {
	return fmt.Sprintf("%s sent no response headers within %s", e.backend, e.timeout)
}

func isUpstreamTimeout(err error) bool {
	var te *upstreamTimeoutError
	return errors.As(err, &te)
}

// endpoints are the upstream paths that get a label of their own; the
// label set stays bounded whatever clients ask for.
var endpoints = []string{
	"/api/chat", "/api/generate", "/api/embed", "/api/embeddings", "/api/ps", "/api/tags", "/api/show",
	"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/v1/models",
	"/v1/messages/count_tokens", "/v1/messages", "/props", "/tokenize", "/apply-template", "/health", "/api/version",
}

func endpoint(path string) string {
	for _, e := range endpoints {
		if strings.HasSuffix(path, e) {
			return e
		}
	}
	return "other"
}

// timedClient is the guard's client with its transport timed as backend
// k's.
func (g *Guard) timedClient(k kind) *http.Client {
	c := *g.client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = timedTransport{base: base, backend: string(k), m: g.metrics, headerTimeout: g.opts.UpstreamTimeout}
	return &c
}

// compacted counts one compaction of f's prompt that removed evicted
// tokens, for /ctxkit/health and /metrics.
func (g *Guard) compacted(f *fit, evicted int) {
	g.stats.compacted.Add(1)
	g.metrics.evicted.WithLabelValues(string(f.b.kind)).Add(float64(evicted))
}
