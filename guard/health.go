package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

const (
	// healthTTL is how long a probe of the backends is reused: a health
	// check polled every second costs each backend one cheap request
	// every two seconds at most.
	healthTTL = 2 * time.Second
	// probeTimeout bounds one backend's probe: a backend that does not
	// answer a version or model list in that time is not serving.
	probeTimeout = 2 * time.Second
)

// Backend states in /ctxkit/health.
const (
	stateUp          = "up"          // answered (a status under 500)
	stateFailing     = "failing"     // answered 5xx (llama.cpp loading a model, a broken server)
	stateUnreachable = "unreachable" // no answer within probeTimeout
	stateStandby     = "standby"     // llama.cpp stopped by the arbiter, started when needed
)

// probeResult is one backend's part of /ctxkit/health.
type probeResult struct {
	URL       string  `json:"url"`
	State     string  `json:"state"`
	Probe     string  `json:"probe"`
	Status    int     `json:"status,omitempty"`
	LatencyMs float64 `json:"latency_ms"`
	Version   string  `json:"version,omitempty"`
	Error     string  `json:"error,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// healthCache holds the last probe of the backends; its lock is held
// while probing, so that concurrent health checks share one probe.
type healthCache struct {
	mu     sync.Mutex
	at     time.Time
	probes map[string]probeResult
}

// probePath is the cheapest request that proves a backend serves,
// without credentials and without spending anything: Ollama's version,
// llama.cpp's /health (503 while it loads a model), the model list of an
// OpenAI-compatible server and of Anthropic (free; without a key the
// cloud APIs answer 401, which proves them reachable: the guard holds no
// key, clients send their own).
func probePath(k kind) string {
	switch k {
	case kOllama:
		return "/api/version"
	case kLlamaCpp:
		return "/health"
	}
	return "/v1/models"
}

// probeBackends returns each backend's reachability, probed at most every
// healthTTL.
func (g *Guard) probeBackends(ctx context.Context) map[string]probeResult {
	c := &g.health
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probes != nil && time.Since(c.at) < healthTTL {
		return c.probes
	}
	// A health check that goes away does not make the backends look down
	// to the next one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	out := make(map[string]probeResult, len(g.backends))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k, b := range g.backends {
		wg.Go(func() {
			p := g.probe(ctx, b)
			mu.Lock()
			out[string(k)] = p
			mu.Unlock()
		})
	}
	wg.Wait()
	c.probes, c.at = out, time.Now()
	return out
}

// probe asks one backend its probePath.
func (g *Guard) probe(ctx context.Context, b *backend) probeResult {
	path := probePath(b.kind)
	p := probeResult{URL: b.base.Redacted(), Probe: "GET " + path}
	u := *b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		p.State, p.Error = stateUnreachable, err.Error()
		return p
	}
	resp, err := b.client.Do(req)
	p.LatencyMs = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		p.State, p.Error = stateUnreachable, err.Error()
		if g.standby(b) {
			p.State, p.Note = stateStandby, "stopped by the arbiter; started when a request needs it"
		}
		return p
	}
	defer resp.Body.Close()
	body, _ := readLimited(resp.Body, 64<<10, "probe answer")
	p.Status = resp.StatusCode
	switch {
	case resp.StatusCode >= 500:
		p.State = stateFailing
		p.Error = fmt.Sprintf("answered %d: %s", resp.StatusCode, truncate(strings.TrimSpace(string(body)), 200))
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		p.State = stateUp
		p.Note = "answered without credentials, so it is reachable; the guard holds no key, clients' own are forwarded"
	default:
		p.State = stateUp
	}
	if b.kind == kOllama && resp.StatusCode == http.StatusOK {
		var v struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(body, &v) == nil {
			p.Version = v.Version
		}
	}
	return p
}

// standby says whether b is a llama.cpp the arbiter stops and starts, not
// the active runtime: not answering is what it should do.
func (g *Guard) standby(b *backend) bool {
	if g.arb == nil || b.kind != kLlamaCpp || g.opts.Arbiter.LlamaCppCmd == "" {
		return false
	}
	g.arb.mu.Lock()
	defer g.arb.mu.Unlock()
	return g.arb.active != kLlamaCpp
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// serveHealth answers GET /ctxkit/health: the overall status (ok when
// every backend serves, degraded when some do, down and 503 when none
// does), each backend's probe, the policy, the counters and the
// calibrations.
func (g *Guard) serveHealth(w http.ResponseWriter, r *http.Request) {
	type calib struct {
		Scale   float64 `json:"scale"`
		Samples int     `json:"samples"`
	}
	cal := map[string]calib{}
	g.calib.Range(func(k, v any) bool {
		c := v.(*calibration)
		c.mu.Lock()
		cal[strings.ReplaceAll(k.(string), "\x00", "/")] = calib{c.scale, c.samples}
		c.mu.Unlock()
		return true
	})
	probes := g.probeBackends(r.Context())
	serving := 0
	for _, p := range probes {
		if p.State == stateUp || p.State == stateStandby {
			serving++
		}
	}
	status, code := "ok", http.StatusOK
	switch {
	case serving == 0:
		status, code = "down", http.StatusServiceUnavailable
	case serving < len(probes):
		status = "degraded"
	}
	health := map[string]any{
		"status": status, "policy": g.opts.Policy, "backends": probes,
		"stats": map[string]int64{
			"requests": g.stats.requests.Load(), "compacted": g.stats.compacted.Load(), "refused": g.stats.refused.Load(),
			"retried": g.stats.retried.Load(), "truncation_detected": g.stats.truncated.Load(),
			"overloaded": g.stats.overloaded.Load(), "host_refused": g.stats.hostRefused.Load(),
		},
		"calibration": cal,
	}
	if g.slots != nil {
		health["requests_in_flight"] = len(g.slots)
		health["max_concurrent"] = cap(g.slots)
	}
	if g.opts.UpstreamTimeout > 0 {
		health["upstream_timeout_seconds"] = g.opts.UpstreamTimeout.Seconds()
	}
	if g.arb != nil {
		health["runtime"] = g.arb.status(r.Context())
	}
	if g.sum != nil {
		health["summarizer"] = g.sum.status()
	}
	writeJSON(w, code, health)
}
