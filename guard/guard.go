package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
)

// Policy is what the guard does with a prompt that does not fit.
type Policy string

// The policies.
const (
	// PolicyCompact compacts the prompt to fit (the default).
	PolicyCompact Policy = "compact"
	// PolicyStrict refuses it with 413 before any compaction work.
	PolicyStrict Policy = "strict"
	// PolicyObserve passes it through and reports what would have been
	// evicted, and detects the upstream's silent truncation.
	PolicyObserve Policy = "observe"
	// PolicyOff passes everything through untouched.
	PolicyOff Policy = "off"
)

// PolicyHeader, on a request, overrides Options.Policy for that request
// alone: an agent can ask for strict or observe without a guard of its
// own. It is not sent upstream.
const PolicyHeader = "X-Ctxkit-Policy"

// policyKey is the context key of a request's own policy.
type policyKey struct{}

// policy is the policy of r: its PolicyHeader, else Options.Policy.
func (g *Guard) policy(r *http.Request) Policy {
	if p, ok := r.Context().Value(policyKey{}).(Policy); ok {
		return p
	}
	return g.opts.Policy
}

// ParsePolicy returns the policy named s ("" is PolicyCompact).
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicyCompact, nil
	case PolicyCompact, PolicyStrict, PolicyObserve, PolicyOff:
		return p, nil
	}
	return "", fmt.Errorf("unknown policy %q (want compact, strict, observe or off)", s)
}

// Defaults of Options.
const (
	DefaultWindow  = 4096
	DefaultReserve = 512
	DefaultMargin  = 128
	// EvictedTTL is how long an evicted span stays retrievable from when
	// it was stored (a replayed plan does not store it again).
	EvictedTTL = 24 * time.Hour
	// maxBody is the largest request body the guard reads to compact.
	maxBody = 256 << 20
	// DefaultUpstreamTimeout bounds the wait for an upstream's response
	// headers. They come after the model is loaded and the prompt
	// evaluated, and for an answer that is not streamed after the whole
	// generation: Ollama itself lets a load stall for 5 minutes
	// (OLLAMA_LOAD_TIMEOUT) before giving up, a long prompt on a CPU takes
	// minutes more, and the OpenAI and Anthropic SDKs give a request 10
	// minutes. So 10 minutes: an upstream that accepted the connection and
	// hung is answered 504 instead of holding the client for ever, and no
	// slow but working one is cut.
	DefaultUpstreamTimeout = 10 * time.Minute
	// DefaultMaxConcurrent caps the requests in flight. Each holds its
	// body and the compaction's copies, and a local runtime serves a few
	// at a time (Ollama 1 to 4 in parallel) while the rest wait in its
	// queue: 64 is more than a machine's agents keep busy, and bounds the
	// guard's memory.
	DefaultMaxConcurrent = 64
)

// Options configure a Guard. At least one backend URL is required.
type Options struct {
	// Ollama, LlamaCpp, OpenAI and Anthropic are the backends' base URLs
	// (scheme, host, port; an optional path prefix such as /v1 for
	// OpenAI is stripped of its trailing /v1).
	Ollama, LlamaCpp, OpenAI, Anthropic string
	// Policy is PolicyCompact when empty.
	Policy Policy
	// KeepRecent is how many trailing messages are never deleted (0: 4;
	// negative: none).
	KeepRecent int
	// Engine stores evicted spans; nil: they are not kept and the notice
	// says so.
	Engine *offload.Engine
	// KV caches the summarizer's digests (--summarize); nil: none is
	// cached.
	KV store.KV
	// Logger logs compactions, recoveries and truncations (nil: discard).
	Logger *slog.Logger
	// DefaultWindow is the window when the backend does not say (Ollama
	// with no model loaded, OpenAI-compatible and Anthropic servers); 0:
	// DefaultWindow.
	DefaultWindow int
	// Windows gives the window of named models, over DefaultWindow.
	Windows map[string]int
	// Routes send named models' /v1 requests to a backend ("ollama",
	// "llamacpp", "openai" or "anthropic"), before the backends' model
	// lists are asked.
	Routes map[string]string
	// Reserve is the output reserved when the request does not set
	// num_predict or max_tokens (0: DefaultReserve).
	Reserve int
	// Margin is kept free on top of the reserve (0: DefaultMargin).
	Margin int
	// NoExact turns off llama.cpp's exact counts (/apply-template and
	// /tokenize), asked for a prompt that the estimate puts over half the
	// budget; without them an undercounted prompt costs a refused try.
	NoExact bool
	// NoThink turns the models' thinking off with each backend's own
	// switch (see noThink) on every chat and generate request it compacts
	// or forwards; under PolicyOff requests go through untouched.
	NoThink bool
	// Counter is the token estimate before calibration (nil: Estimate).
	// An exact tokenizer can be plugged in here; calibration still only
	// raises it.
	Counter compact.Counter
	// Recall adds a context_recall tool to chat requests that carry tools
	// and answers the model's calls to it inside the guard, so the model
	// can read back what compaction removed (see recall.go).
	Recall bool
	// RecallRounds bounds the context_recall rounds of one request (0:
	// DefaultRecallRounds).
	RecallRounds int
	// Summarize puts a digest of each new evicted span in its notice,
	// written by SummarizerModel (map-reduce over the whole span in chunks
	// that fit the summarizer's window) and cached in Engine by a hash of
	// the span; best effort: on any failure, the plain notice (see
	// summarize.go).
	Summarize bool
	// SummarizerModel writes the digests ("": the request's own model,
	// which is installed and loaded already).
	SummarizerModel string
	// SummarizerURL is the summarizer's server: an Ollama URL, or an
	// OpenAI-compatible one ending in /v1 ("": the backend the guard
	// routes SummarizerModel to).
	SummarizerURL string
	// SummarizeTimeout bounds the digests of one request (0:
	// DefaultSummarizeTimeout).
	SummarizeTimeout time.Duration
	// DigestTokens bounds a digest's length (0: DefaultDigestTokens).
	DigestTokens int
	// Client sends upstream requests (nil: a client without timeout, so
	// that long generations are not cut; the client's own disconnect
	// cancels them).
	Client *http.Client
	// Arbitrate makes Ollama and llama.cpp take turns on one GPU (both
	// backends are required).
	Arbitrate bool
	// Arbiter configures the arbitration (zero values: the defaults).
	Arbiter ArbiterOptions
	// UpstreamTimeout bounds the wait for an upstream's response headers,
	// on every path, passed through or not (0: DefaultUpstreamTimeout;
	// negative: no bound); past it the client gets 504
	// {"error":{"type":"upstream_timeout",...}}. The body that follows
	// is not bounded: a generation takes as long as it takes.
	UpstreamTimeout time.Duration
	// MaxConcurrent caps the requests in flight (0:
	// DefaultMaxConcurrent; negative: no cap); one more gets 503 with
	// Retry-After and {"error":{"type":"overloaded",...}}. The guard's own
	// paths (/ctxkit/*, /metrics) are not counted.
	MaxConcurrent int
	// ListenAddr is the address the guard listens on (host:port). On a
	// loopback address only requests whose Host header names this machine
	// are served (DNS-rebinding protection, as Ollama's; see
	// hostAllowed), and the guard's sensitive paths need no Token. "":
	// the address each request came in on decides.
	ListenAddr string
	// AllowedHosts are more Host names served on a loopback address (the
	// guard behind a reverse proxy): a name (port ignored), ".example.com"
	// for its subdomains, or "*" for any Host.
	AllowedHosts []string
	// Token, when set, must be sent as Authorization: Bearer to read
	// evicted spans (GET /ctxkit/evicted/ID) and pin a runtime (POST
	// /ctxkit/runtime); without one, those paths are served on a loopback
	// address only. It is compared in constant time and never logged.
	Token string
}

// Guard is the proxy. It is an http.Handler, safe for concurrent use.
type Guard struct {
	opts     Options
	log      *slog.Logger
	client   *http.Client
	backends map[kind]*backend
	calib    sync.Map // backend kind + "\x00" + model → *calibration
	plans    *compact.Plans
	base     compact.Counter

	arb *arbiter // nil unless Options.Arbitrate

	sum *summarizer // nil unless Options.Summarize

	routeMu sync.Mutex
	routes  map[string]kind // model → backend, from discovery
	routed  time.Time

	metrics *metrics

	// slots caps the requests in flight (nil: no cap).
	slots chan struct{}
	// hostname is the machine's name, a Host always served.
	hostname string
	// health caches the backends' reachability (/ctxkit/health).
	health healthCache
	// overloadLog and hostLog rate-limit the WARNs of refusals.
	overloadLog, hostLog logLimit

	stats struct {
		requests, compacted, refused, retried, truncated, observed, recallRounds atomic.Int64
		overloaded, hostRefused                                                  atomic.Int64
	}
}

type kind string

const (
	kOllama    kind = "ollama"
	kLlamaCpp  kind = "llamacpp"
	kOpenAI    kind = "openai"
	kAnthropic kind = "anthropic"
)

type backend struct {
	kind  kind
	base  *url.URL
	proxy *httputil.ReverseProxy

	mu   sync.Mutex
	nCtx int // llama.cpp's per-slot n_ctx, once read
	ps   []psEntry
	psAt time.Time
	// shows are Ollama's /api/show answers by model; serverDefault is
	// Ollama's default window as a load showed it (learnDefault), last
	// read at learnedAt.
	shows         map[string]ollamaShow
	serverDefault int
	learnedAt     time.Time
	// client sends this backend's requests, timed into the metrics.
	client *http.Client
}

// New returns a Guard for the backends of opts.
func New(opts Options) (*Guard, error) {
	p, err := ParsePolicy(string(opts.Policy))
	if err != nil {
		return nil, err
	}
	opts.Policy = p
	if opts.DefaultWindow <= 0 {
		opts.DefaultWindow = DefaultWindow
	}
	if opts.Reserve <= 0 {
		opts.Reserve = DefaultReserve
	}
	if opts.Margin <= 0 {
		opts.Margin = DefaultMargin
	}
	if opts.UpstreamTimeout == 0 {
		opts.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if opts.MaxConcurrent == 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	g := &Guard{opts: opts, log: opts.Logger, client: opts.Client, backends: map[kind]*backend{}, plans: compact.NewPlans(0), routes: map[string]kind{}}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxConcurrent > 0 {
		g.slots = make(chan struct{}, opts.MaxConcurrent)
	}
	if name, err := os.Hostname(); err == nil {
		g.hostname = strings.ToLower(name)
	}
	g.base = opts.Counter
	if g.base == nil {
		g.base = compact.CounterFunc(Estimate)
	}
	if g.client == nil {
		g.client = &http.Client{}
	}
	g.metrics = newMetrics(g)
	for k, raw := range map[kind]string{kOllama: opts.Ollama, kLlamaCpp: opts.LlamaCpp, kOpenAI: opts.OpenAI, kAnthropic: opts.Anthropic} {
		if raw == "" {
			continue
		}
		u, err := url.Parse(strings.TrimSuffix(strings.TrimSuffix(raw, "/"), "/v1"))
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("%s backend %q: not an http(s) URL", k, raw)
		}
		b := &backend{kind: k, base: u, client: g.timedClient(k)}
		b.proxy = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Host = u.Host
				pr.Out.Header.Del(PolicyHeader)
			},
			FlushInterval: -1,
			Transport:     b.client.Transport,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				if !isUpstreamTimeout(err) {
					err = fmt.Errorf("%s: %w", k, err)
				}
				g.writeUpstreamError(w, r, err, nil)
			},
		}
		g.backends[k] = b
	}
	if len(g.backends) == 0 {
		return nil, errors.New("guard: no backend (set at least one of Ollama, LlamaCpp, OpenAI, Anthropic)")
	}
	for model, k := range opts.Routes {
		if g.backends[kind(k)] == nil {
			return nil, fmt.Errorf("route %s=%s: no %s backend is configured (want one of %s)", model, k, k, g.backendNames())
		}
	}
	if opts.Summarize {
		if g.sum, err = newSummarizer(g, opts); err != nil {
			return nil, err
		}
	}
	if opts.Arbitrate {
		if g.arb, err = newArbiter(g, opts.Arbiter); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// ServeHTTP routes a request: chat and completion endpoints are fitted into
// the window, everything else is passed through.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if !g.hostAllowed(w, r) {
		return
	}
	if p != "/metrics" && !strings.HasPrefix(p, "/ctxkit/") {
		g.stats.requests.Add(1)
		release, ok := g.acquireSlot(w)
		if !ok {
			return
		}
		defer release()
	}
	if h := r.Header.Get(PolicyHeader); h != "" {
		policy, err := ParsePolicy(h)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_policy", PolicyHeader+": "+err.Error(), nil)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), policyKey{}, policy))
	}
	if g.arb != nil {
		var release func()
		if r, release = g.arbitrate(w, r); r == nil {
			return
		}
		defer release()
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/ctxkit/evicted/"):
		g.serveEvicted(w, r, strings.TrimPrefix(p, "/ctxkit/evicted/"))
	case r.Method == http.MethodGet && p == "/metrics":
		g.metrics.handler.ServeHTTP(w, r)
	case r.Method == http.MethodGet && p == "/ctxkit/health":
		g.serveHealth(w, r)
	case (r.Method == http.MethodGet || r.Method == http.MethodPost) && p == "/ctxkit/runtime":
		if r.Method == http.MethodPost && !g.authorized(w, r) {
			return
		}
		g.serveRuntime(w, r)
	case strings.HasPrefix(p, "/ctxkit/") || p == "/metrics":
		// The guard's own paths never reach a backend, whose answer
		// would be a confusing 404.
		if p == "/metrics" || p == "/ctxkit/health" || p == "/ctxkit/runtime" || strings.HasPrefix(p, "/ctxkit/evicted/") {
			allow := "GET"
			if p == "/ctxkit/runtime" {
				allow = "GET, POST"
			}
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" "+p+" is not served", nil)
			return
		}
		writeError(w, http.StatusNotFound, "not_found", p+": no such ctxkit path (/ctxkit/health, /ctxkit/runtime, /ctxkit/evicted/ID)", nil)
	case r.Method == http.MethodPost && p == "/api/chat":
		g.withBackend(w, r, kOllama, g.ollamaChat)
	case r.Method == http.MethodPost && p == "/api/embed":
		g.withBackend(w, r, kOllama, g.ollamaEmbed)
	case r.Method == http.MethodPost && p == "/api/generate":
		g.withBackend(w, r, kOllama, g.ollamaGenerate)
	case r.Method == http.MethodPost && p == "/v1/chat/completions":
		g.openaiRoute(w, r, g.openaiChat)
	case r.Method == http.MethodPost && p == "/v1/completions":
		g.openaiRoute(w, r, g.openaiCompletion)
	case r.Method == http.MethodPost && p == "/v1/messages":
		g.openaiRoute(w, r, g.anthropicMessages)
	case r.Method == http.MethodPost && p == "/v1/messages/count_tokens":
		g.openaiRoute(w, r, g.anthropicCountTokens)
	case strings.HasPrefix(p, "/v1/messages") && g.backends[kAnthropic] != nil:
		g.backends[kAnthropic].proxy.ServeHTTP(w, r)
	case r.Method == http.MethodGet && p == "/v1/models" && g.policy(r) != PolicyOff:
		g.serveModels(w, r)
	case strings.HasPrefix(p, "/v1/"):
		g.openaiRoute(w, r, nil)
	default:
		if b := g.backends[kOllama]; b != nil {
			b.proxy.ServeHTTP(w, r)
			return
		}
		g.defaultV1().proxy.ServeHTTP(w, r)
	}
}

func (g *Guard) withBackend(w http.ResponseWriter, r *http.Request, k kind, h func(http.ResponseWriter, *http.Request, *backend, []byte)) {
	b := g.backends[k]
	if b == nil {
		writeError(w, http.StatusBadGateway, "no_backend", fmt.Sprintf("no %s backend is configured", k), nil)
		return
	}
	if g.policy(r) == PolicyOff {
		b.proxy.ServeHTTP(w, r)
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeBodyError(w, err)
		return
	}
	h(w, r, b, body)
}

// readBody reads a client's request body, at most maxBody bytes; one
// whose Content-Length says it is larger is refused before a byte of it is
// read.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBody {
		return nil, &tooLargeError{what: "request body", limit: maxBody}
	}
	return readSized(r.Body, r.ContentLength, maxBody, "request body")
}

// writeBodyError answers a request whose body could not be read: 413 when
// it is over maxBody (and the connection closed: the rest of the body is
// not read), else 400.
func writeBodyError(w http.ResponseWriter, err error) {
	if isTooLarge(err) {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", err.Error(), nil)
		return
	}
	writeError(w, http.StatusBadRequest, "bad_request", err.Error(), nil)
}

// send posts body to the backend's path with the client's headers and
// context (a client that leaves cancels it).
func (g *Guard) send(ctx context.Context, r *http.Request, b *backend, body []byte) (*http.Response, error) {
	u := *b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + r.URL.Path
	u.RawQuery = r.URL.RawQuery
	if g.opts.NoThink {
		body = noThink(body, b.kind, r.URL.Path)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build upstream request: %w", err)
	}
	for k, v := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Te", "Trailer", "Proxy-Connection", "Accept-Encoding", PolicyHeader:
			continue
		}
		req.Header[k] = v
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", b.kind, r.URL.Path, err)
	}
	return resp, nil
}

// getJSON reads a backend's JSON endpoint into v.
func (g *Guard) getJSON(ctx context.Context, b *backend, path string, v any) error {
	return g.getJSONWith(ctx, b, path, nil, v)
}

// getJSONWith is getJSON sending header too (a client's credentials, for
// an endpoint that wants them).
func (g *Guard) getJSONWith(ctx context.Context, b *backend, path string, header http.Header, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := *b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", b.kind, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d", b.kind, path, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxUpstreamBody)).Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", b.kind, path, err)
	}
	return nil
}

// postJSON posts body to a backend's JSON endpoint and reads the answer
// into v.
func (g *Guard) postJSON(ctx context.Context, b *backend, path string, body []byte, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := *b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", b.kind, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d", b.kind, path, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxUpstreamBody)).Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", b.kind, path, err)
	}
	return nil
}

// storeFunc returns the compact.Options.Store that keeps evicted spans in
// the offload engine under a content-hash id (so a replanned span that is
// the same keeps its notice).
func (g *Guard) storeFunc(ctx context.Context) func([]compact.Message) (string, error) {
	if g.opts.Engine == nil {
		return nil
	}
	return func(msgs []compact.Message) (string, error) {
		data, err := encodeMessages(msgs)
		if err != nil {
			return "", fmt.Errorf("encode evicted span: %w", err)
		}
		sum := sha256.Sum256(data)
		n, err := g.opts.Engine.Put(ctx, data, offload.PutOptions{Type: evictedType, Producer: evictedProducer, ID: "evicted_" + hex.EncodeToString(sum[:8]), TTL: EvictedTTL})
		if err != nil {
			return "", err
		}
		return n.StoredResult, nil
	}
}

func (g *Guard) recallHint(id string) string {
	if g.opts.Recall {
		return "call the " + RecallTool + ` tool with {"id":"` + id + `"} to read it back (GET /ctxkit/evicted/` + id + " on this server also returns it)"
	}
	return "GET /ctxkit/evicted/" + id + " on this server returns it"
}

// Evicted spans are workspaces of this type and producer; no other
// workspace of the shared store is served as one.
const (
	evictedType     = "evicted"
	evictedProducer = "ctxkit-guard"
)

// errNoSpan is the one answer for an id that is not a live evicted span of
// the guard's, whatever the reason (never stored, expired, another
// producer's), so that ids cannot be probed.
var errNoSpan = errors.New("no such evicted span (never stored, or expired)")

// evictedSpan reads the evicted span id: errNoSpan unless it is one the
// guard stored and it has not expired.
func (g *Guard) evictedSpan(ctx context.Context, id string) ([]byte, error) {
	ws, data, err := g.opts.Engine.Raw(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, offload.ErrExpired) {
		return nil, errNoSpan
	}
	if err != nil {
		return nil, err
	}
	if ws.Type != evictedType || ws.Producer != evictedProducer {
		return nil, errNoSpan
	}
	return data, nil
}

func (g *Guard) serveEvicted(w http.ResponseWriter, r *http.Request, id string) {
	if !g.authorized(w, r) {
		return
	}
	if g.opts.Engine == nil {
		writeError(w, http.StatusNotFound, "not_found", "evicted content is not kept (no store)", nil)
		return
	}
	data, err := g.evictedSpan(r.Context(), id)
	if errors.Is(err, errNoSpan) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("evicted span %q: %v", id, err), nil)
		return
	}
	if err != nil {
		g.log.Warn("read an evicted span", "id", id, "err", err)
		writeError(w, http.StatusInternalServerError, "store_failed", fmt.Sprintf("evicted span %q could not be read: %v", id, err), nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// writeUpstreamError answers a request whose upstream gave no answer:
// 504 upstream_timeout when it sent no response headers within
// Options.UpstreamTimeout, else 502 upstream_unreachable; both are
// logged, unless the client went away (and caused the failure).
func (g *Guard) writeUpstreamError(w http.ResponseWriter, r *http.Request, err error, rep *Report) {
	var te *upstreamTimeoutError
	if errors.As(err, &te) {
		g.log.Warn("upstream timed out", "backend", te.backend, "path", r.URL.Path, "timeout", te.timeout)
		writeError(w, http.StatusGatewayTimeout, "upstream_timeout", err.Error()+" (--upstream-timeout)", rep, "timeout_seconds", te.timeout.Seconds())
		return
	}
	if r.Context().Err() == nil {
		g.log.Warn("upstream failed", "path", r.URL.Path, "err", err)
	}
	writeError(w, http.StatusBadGateway, "upstream_unreachable", err.Error(), rep)
}

// writeError answers a machine-readable error, with the report if any.
func writeError(w http.ResponseWriter, status int, typ, msg string, rep *Report, extra ...any) {
	e := map[string]any{"type": typ, "message": msg}
	for i := 0; i+1 < len(extra); i += 2 {
		e[extra[i].(string)] = extra[i+1]
	}
	body := map[string]any{"error": e}
	if rep != nil {
		rep.setHeaders(w.Header())
		body["ctxkit"] = rep
	}
	writeJSON(w, status, body)
}
