package guard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
)

// Defaults of ArbiterOptions.
const (
	// DefaultMinHold is how long a runtime keeps the GPU after a switch
	// before the other may take it.
	DefaultMinHold = 20 * time.Second
	// DefaultQueueLimit is how many requests may wait for the GPU.
	DefaultQueueLimit = 64
	// DefaultQueueTimeout is how long a request waits for the GPU.
	DefaultQueueTimeout = 2 * time.Minute
	// DefaultStartTimeout bounds a llama.cpp start (or a router-mode
	// load) until /health answers 200.
	DefaultStartTimeout = 60 * time.Second
	// DefaultEvictTimeout bounds an unload until /api/ps (or router
	// mode's /models) shows nothing loaded.
	DefaultEvictTimeout = 15 * time.Second
	// DefaultStopGrace is how long a started llama.cpp may take to exit
	// after SIGTERM before it is killed.
	DefaultStopGrace = 10 * time.Second
)

// The llama.cpp modes the arbiter reports.
const (
	// LlamaCppRouter is a llama-server in router mode: models are
	// unloaded and loaded with POST /models/unload and /models/load.
	LlamaCppRouter = "router"
	// LlamaCppProcess is a llama-server the guard starts and stops
	// (ArbiterOptions.LlamaCppCmd).
	LlamaCppProcess = "process"
	// LlamaCppExternal is a llama-server the guard did not start and
	// cannot unload: it is left running and said so.
	LlamaCppExternal = "external"
)

// ArbiterOptions configure the GPU arbiter (Options.Arbitrate): Ollama and
// llama.cpp take turns on one GPU.
type ArbiterOptions struct {
	// LlamaCppCmd starts llama-server (run with sh -c in its own process
	// group; stopped with SIGTERM to the group, then SIGKILL after
	// StopGrace). Empty: the guard cannot start or stop it, only unload
	// its models in router mode.
	LlamaCppCmd string
	// MinHold is how long a runtime keeps the GPU after a switch before
	// a request for the other may take it (0: DefaultMinHold; negative:
	// none).
	MinHold time.Duration
	// QueueLimit is how many requests may wait for the GPU at once (0:
	// DefaultQueueLimit); one more is answered 503.
	QueueLimit int
	// QueueTimeout is how long a request waits for the GPU before a 503
	// with Retry-After (0: DefaultQueueTimeout). It also bounds the wait
	// for the other runtime's requests in flight to finish.
	QueueTimeout time.Duration
	// StartTimeout bounds a llama.cpp start or router-mode load (0:
	// DefaultStartTimeout).
	StartTimeout time.Duration
	// EvictTimeout bounds an unload (0: DefaultEvictTimeout).
	EvictTimeout time.Duration
	// StopGrace is how long a started llama.cpp has to exit after
	// SIGTERM (0: DefaultStopGrace).
	StopGrace time.Duration
	// StateFile keeps the pin across restarts (written atomically);
	// empty: the pin lasts as long as the process.
	StateFile string
}

// arbiter makes Ollama and llama.cpp take turns on the GPU. Requests hold
// the runtime they use while in flight; a request for the other runtime
// waits in a FIFO queue until the min-hold is over and the requests in
// flight are done, then switches.
type arbiter struct {
	g             *Guard
	opts          ArbiterOptions
	ollama, llama *backend

	// pinMu orders setPin calls, so that the state file and pinned agree
	// when two clients pin at once.
	pinMu sync.Mutex

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	active    kind          // "" until the first switch, or after a failed one
	since     time.Time     // when active took the GPU
	pinned    kind
	switching bool
	inflight  map[kind]int
	queue     []*waiter
	proc      *llamaProc
	lastMode  string
	note      string
	lastMs    float64
	stats     struct{ switches, queued, timedOut, full, blockedByPin, failed int64 }
}

type waiter struct {
	want  kind
	model string
	force bool
}

// arbError is an acquire that failed; status 0 means the client left.
type arbError struct {
	status     int
	typ, msg   string
	active     kind
	wanted     kind
	retryAfter int
}

func (e *arbError) write(w http.ResponseWriter, pinned kind) {
	if e.status == 0 {
		return
	}
	extra := []any{"active", nullable(e.active), "wanted", string(e.wanted)}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.retryAfter))
		extra = append(extra, "retry_after_seconds", e.retryAfter)
	}
	if e.typ == "runtime_pinned" {
		extra = append(extra, "pinned", nullable(pinned))
	}
	writeError(w, e.status, e.typ, e.msg, nil, extra...)
}

func nullable(k kind) any {
	if k == "" {
		return nil
	}
	return string(k)
}

func newArbiter(g *Guard, opts ArbiterOptions) (*arbiter, error) {
	a := &arbiter{g: g, opts: opts, ollama: g.backends[kOllama], llama: g.backends[kLlamaCpp],
		changed: make(chan struct{}), inflight: map[kind]int{}}
	if a.ollama == nil || a.llama == nil {
		return nil, errors.New("guard: arbitration needs both an Ollama and a llama.cpp backend")
	}
	o := &a.opts
	if o.MinHold == 0 {
		o.MinHold = DefaultMinHold
	}
	if o.QueueLimit <= 0 {
		o.QueueLimit = DefaultQueueLimit
	}
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = DefaultQueueTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.EvictTimeout <= 0 {
		o.EvictTimeout = DefaultEvictTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.StateFile != "" {
		data, err := os.ReadFile(o.StateFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("guard: read runtime state: %w", err)
		default:
			var st runtimeState
			if err := json.Unmarshal(data, &st); err != nil {
				return nil, fmt.Errorf("guard: runtime state %s: %w", o.StateFile, err)
			}
			if st.Pinned != nil {
				k, err := parseRuntime(*st.Pinned)
				if err != nil {
					return nil, fmt.Errorf("guard: runtime state %s: %w", o.StateFile, err)
				}
				a.pinned = k
			}
		}
	}
	return a, nil
}

// runtimeState is the state file's content.
type runtimeState struct {
	Pinned *string `json:"pinned"`
}

func parseRuntime(s string) (kind, error) {
	switch k := kind(s); k {
	case kOllama, kLlamaCpp:
		return k, nil
	}
	return "", fmt.Errorf("unknown runtime %q (want ollama or llamacpp)", s)
}

// notify wakes every waiter; a.mu is held.
func (a *arbiter) notify() {
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *arbiter) remove(w *waiter) {
	if i := slices.Index(a.queue, w); i >= 0 {
		a.queue = slices.Delete(a.queue, i, i+1)
	}
	a.notify()
}

type action int

const (
	aWait action = iota
	aProceed
	aSwitch
)

// decide says what waiter w does now, and until when it waits when only
// the min-hold stops it; a.mu is held.
func (a *arbiter) decide(w *waiter, now time.Time) (action, time.Time) {
	if a.switching {
		return aWait, time.Time{}
	}
	if a.active == kLlamaCpp && a.proc != nil && !a.proc.running() {
		// The llama.cpp the guard started died: the next request for
		// it starts it again.
		a.active = ""
	}
	idx := slices.Index(a.queue, w)
	holdEnd := a.since.Add(a.opts.MinHold)
	inHold := a.active != "" && a.opts.MinHold > 0 && now.Before(holdEnd)
	if a.active == w.want {
		// During the hold the active runtime serves at once; after it,
		// an earlier request for the other runtime goes first.
		if inHold || a.pinned == w.want {
			return aProceed, time.Time{}
		}
		for _, o := range a.queue[:idx] {
			if o.want != a.active {
				return aWait, time.Time{}
			}
		}
		return aProceed, time.Time{}
	}
	if idx != 0 {
		return aWait, time.Time{}
	}
	if inHold && !w.force && a.pinned != w.want {
		return aWait, holdEnd
	}
	for k, n := range a.inflight {
		if k != w.want && n > 0 {
			return aWait, time.Time{}
		}
	}
	return aSwitch, time.Time{}
}

// grant is an acquired runtime.
type grant struct {
	a        *arbiter
	k        kind
	once     sync.Once
	switched time.Duration // > 0: this request switched
	waited   time.Duration // time in the queue
}

func (gr *grant) release() {
	gr.once.Do(func() {
		gr.a.mu.Lock()
		gr.a.inflight[gr.k]--
		gr.a.notify()
		gr.a.mu.Unlock()
	})
}

// acquire waits until want holds the GPU, switching to it when its turn
// comes; the grant must be released when the request is done. force
// (a pin) jumps the queue and ignores the min-hold.
func (a *arbiter) acquire(ctx context.Context, want kind, model string, force bool) (*grant, *arbError) {
	start := time.Now()
	w := &waiter{want: want, model: model, force: force}
	a.mu.Lock()
	if force {
		a.queue = slices.Insert(a.queue, 0, w)
	} else {
		a.queue = append(a.queue, w)
	}
	var timeout *time.Timer
	defer func() {
		if timeout != nil {
			timeout.Stop()
		}
	}()
	for {
		if a.pinned != "" && want != a.pinned && !force {
			a.stats.blockedByPin++
			a.remove(w)
			e := &arbError{status: http.StatusConflict, typ: "runtime_pinned", active: a.active, wanted: want,
				msg: fmt.Sprintf("the GPU is pinned to %s and this request needs %s; unpin with POST /ctxkit/runtime {\"pin\":null}", a.pinned, want)}
			a.mu.Unlock()
			return nil, e
		}
		act, until := a.decide(w, time.Now())
		switch act {
		case aProceed:
			a.remove(w)
			a.inflight[want]++
			a.mu.Unlock()
			return &grant{a: a, k: want, waited: time.Since(start)}, nil
		case aSwitch:
			a.switching = true
			from := a.active
			a.mu.Unlock()
			// The switch finishes even if this client leaves: the
			// requests behind it want the same.
			d, err := a.doSwitch(context.WithoutCancel(ctx), want, model)
			a.mu.Lock()
			a.switching = false
			a.lastMs = ms(d)
			if err != nil {
				a.active = ""
				a.stats.failed++
				a.remove(w)
				a.mu.Unlock()
				a.g.log.Error("runtime switch failed", "from", from, "to", want, "err", err)
				return nil, &arbError{status: http.StatusServiceUnavailable, typ: "runtime_switch_failed", active: "", wanted: want,
					msg: fmt.Sprintf("switching the GPU to %s failed: %v", want, err)}
			}
			a.active, a.since = want, time.Now()
			a.stats.switches++
			a.remove(w)
			a.inflight[want]++
			a.mu.Unlock()
			a.g.log.Info("runtime switched", "from", from, "to", want, "ms", ms(d))
			return &grant{a: a, k: want, switched: max(d, time.Nanosecond), waited: time.Since(start) - d}, nil
		}
		if timeout == nil {
			if len(a.queue)-1 >= a.opts.QueueLimit {
				a.stats.full++
				a.remove(w)
				e := a.unavailable(want, fmt.Sprintf("the GPU is busy with %s and %d requests are already waiting for it", a.activeName(), a.opts.QueueLimit))
				a.mu.Unlock()
				return nil, e
			}
			a.stats.queued++
			timeout = time.NewTimer(a.opts.QueueTimeout)
		}
		ch := a.changed
		a.mu.Unlock()
		var hold <-chan time.Time
		var holdTimer *time.Timer
		if !until.IsZero() {
			holdTimer = time.NewTimer(time.Until(until))
			hold = holdTimer.C
		}
		stopHold := func() {
			if holdTimer != nil {
				holdTimer.Stop()
			}
		}
		select {
		case <-ch:
			stopHold()
		case <-hold:
		case <-timeout.C:
			stopHold()
			a.mu.Lock()
			a.stats.timedOut++
			a.remove(w)
			e := a.unavailable(want, fmt.Sprintf("waited %s for the GPU, held by %s", a.opts.QueueTimeout, a.activeName()))
			a.mu.Unlock()
			return nil, e
		case <-ctx.Done():
			stopHold()
			a.mu.Lock()
			a.remove(w)
			a.mu.Unlock()
			return nil, &arbError{}
		}
		a.mu.Lock()
	}
}

// unavailable is a 503 for a request that could not get the GPU; a.mu is
// held.
func (a *arbiter) unavailable(want kind, msg string) *arbError {
	retry := 1
	if a.opts.MinHold > 0 && a.active != "" {
		if left := time.Until(a.since.Add(a.opts.MinHold)); left > 0 {
			retry = max(1, int(math.Ceil(left.Seconds())))
		}
	}
	return &arbError{status: http.StatusServiceUnavailable, typ: "runtime_unavailable", msg: msg, active: a.active, wanted: want, retryAfter: retry}
}

func (a *arbiter) activeName() string {
	if a.active == "" {
		return "no runtime yet"
	}
	return string(a.active)
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())/10) / 100 }

// doSwitch makes the runtime other than to release the GPU, whatever the
// arbiter thinks is active (it may hold the GPU since before the guard
// started), and readies llama.cpp when it is to (Ollama loads on demand).
func (a *arbiter) doSwitch(ctx context.Context, to kind, model string) (time.Duration, error) {
	start := time.Now()
	var err error
	if to == kLlamaCpp {
		if err = a.evictOllama(ctx); err == nil {
			err = a.readyLlama(ctx, model)
		}
	} else {
		err = a.releaseLlama(ctx)
	}
	return time.Since(start), err
}

// --- Ollama ---

func (a *arbiter) ollamaLoaded(ctx context.Context) ([]string, error) {
	var ps struct {
		Models []psEntry `json:"models"`
	}
	if err := a.g.getJSON(ctx, a.ollama, "/api/ps", &ps); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ps.Models))
	for _, m := range ps.Models {
		names = append(names, cmp.Or(m.Name, m.Model))
	}
	return names, nil
}

// evictOllama unloads every model in /api/ps (keep_alive 0) and waits
// until /api/ps is empty. An Ollama that does not answer holds nothing.
func (a *arbiter) evictOllama(ctx context.Context) error {
	names, err := a.ollamaLoaded(ctx)
	if err != nil {
		a.g.log.Warn("ollama not answering /api/ps; taking it as holding nothing", "err", err)
		return nil
	}
	for _, n := range names {
		body, _ := json.Marshal(map[string]any{"model": n, "keep_alive": 0})
		var out map[string]any
		if err := a.g.postJSON(ctx, a.ollama, "/api/generate", body, &out); err != nil {
			return fmt.Errorf("unload ollama model %s: %w", n, err)
		}
	}
	// The guard's cached /api/ps is stale now.
	a.ollama.mu.Lock()
	a.ollama.psAt = time.Time{}
	a.ollama.mu.Unlock()
	return poll(ctx, a.opts.EvictTimeout, func() (bool, error) {
		names, err := a.ollamaLoaded(ctx)
		return err == nil && len(names) == 0, nil
	}, func() string { return "ollama still lists loaded models in /api/ps" })
}

// poll calls done with a growing interval (5 ms to 200 ms) until it says
// true, returns an error, or limit passes.
func poll(ctx context.Context, limit time.Duration, done func() (bool, error), what func() string) error {
	deadline := time.Now().Add(limit)
	wait := 5 * time.Millisecond
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s after %s", what(), limit)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// --- llama.cpp ---

// routerModel is one model in router mode's GET /models.
type routerModel struct {
	ID     string `json:"id"`
	Status *struct {
		Value string `json:"value"`
	} `json:"status"`
}

// llamaProbe is what llama.cpp answers now.
type llamaProbe struct {
	alive  bool // /health 200
	router bool
	models []routerModel
}

func (a *arbiter) probeLlama(ctx context.Context) llamaProbe {
	var p llamaProbe
	var h map[string]any
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if a.g.getJSON(hctx, a.llama, "/health", &h) != nil {
		return p
	}
	p.alive = true
	var list struct {
		Data []routerModel `json:"data"`
	}
	if a.g.getJSON(hctx, a.llama, "/models", &list) == nil && len(list.Data) > 0 {
		p.router = true
		for _, m := range list.Data {
			if m.Status == nil {
				p.router = false
			}
		}
		if p.router {
			p.models = list.Data
		}
	}
	return p
}

// ours tells whether the guard's llama.cpp process is running; a.mu is
// held.
func (a *arbiter) ours() bool { return a.proc != nil && a.proc.running() }

// mode names how llama.cpp is handled, from a probe; a.mu is held.
func (a *arbiter) mode(p llamaProbe) string {
	switch {
	case p.router:
		return LlamaCppRouter
	case a.ours():
		return LlamaCppProcess
	case a.opts.LlamaCppCmd != "" && !p.alive:
		return LlamaCppProcess
	}
	return LlamaCppExternal
}

func (a *arbiter) setMode(p llamaProbe) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.mode(p)
	a.lastMode = m
	return m, a.ours()
}

// readyLlama makes llama.cpp able to serve: in router mode, model is
// loaded if the router lists it unloaded (the router autoloads others);
// a stopped process is started and waited for.
func (a *arbiter) readyLlama(ctx context.Context, model string) error {
	p := a.probeLlama(ctx)
	mode, _ := a.setMode(p)
	switch {
	case p.router:
		a.setNote("")
		for _, m := range p.models {
			if m.ID == model && m.Status.Value == "unloaded" {
				return a.routerLoad(ctx, model)
			}
		}
		return nil
	case p.alive:
		if mode == LlamaCppExternal {
			a.setNote(a.externalNote())
		}
		return nil
	case a.opts.LlamaCppCmd == "":
		return fmt.Errorf("llama.cpp at %s does not answer /health and no llama.cpp command is set to start it", a.llama.base.Redacted())
	}
	return a.startLlama(ctx)
}

// externalNote says that llama.cpp is a server the guard can neither stop
// nor unload.
func (a *arbiter) externalNote() string {
	return "llama-server at " + a.llama.base.Redacted() + " was not started by the guard and has no router mode: the guard cannot unload it"
}

func (a *arbiter) setNote(s string) {
	a.mu.Lock()
	a.note = s
	a.mu.Unlock()
}

func (a *arbiter) routerLoad(ctx context.Context, model string) error {
	body, _ := json.Marshal(map[string]string{"model": model})
	var out map[string]any
	if err := a.g.postJSON(ctx, a.llama, "/models/load", body, &out); err != nil {
		return fmt.Errorf("router load %s: %w", model, err)
	}
	return poll(ctx, a.opts.StartTimeout, func() (bool, error) {
		for _, m := range a.probeLlama(ctx).models {
			if m.ID == model {
				return m.Status.Value == "loaded", nil
			}
		}
		return false, nil
	}, func() string { return "llama.cpp router has not loaded " + model })
}

// startLlama starts LlamaCppCmd and waits for /health 200.
func (a *arbiter) startLlama(ctx context.Context) error {
	p, err := startProc(a.opts.LlamaCppCmd)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.proc = p
	a.lastMode = LlamaCppProcess
	a.note = ""
	a.mu.Unlock()
	// Not the command: it may carry llama-server's --api-key.
	a.g.log.Info("llama.cpp started", "pid", p.pid())
	err = poll(ctx, a.opts.StartTimeout, func() (bool, error) {
		if !p.running() {
			return false, fmt.Errorf("llama.cpp exited before answering /health (%v); its output ends with: %s", p.exitErr(), p.tail())
		}
		var h map[string]any
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return a.g.getJSON(hctx, a.llama, "/health", &h) == nil, nil
	}, func() string { return "llama.cpp does not answer /health 200; its output ends with: " + p.tail() })
	if err != nil {
		_ = p.stop(a.opts.StopGrace)
	}
	return err
}

// releaseLlama makes llama.cpp give up the GPU: router mode unloads every
// loaded model, a process the guard started is stopped, and a server it
// did not start is left alone (and said so).
func (a *arbiter) releaseLlama(ctx context.Context) error {
	p := a.probeLlama(ctx)
	mode, ours := a.setMode(p)
	switch {
	case p.router:
		for _, m := range p.models {
			if m.Status.Value == "unloaded" {
				continue
			}
			body, _ := json.Marshal(map[string]string{"model": m.ID})
			var out map[string]any
			if err := a.g.postJSON(ctx, a.llama, "/models/unload", body, &out); err != nil {
				return fmt.Errorf("router unload %s: %w", m.ID, err)
			}
		}
		return poll(ctx, a.opts.EvictTimeout, func() (bool, error) {
			for _, m := range a.probeLlama(ctx).models {
				if m.Status.Value != "unloaded" {
					return false, nil
				}
			}
			return true, nil
		}, func() string { return "llama.cpp router still has a model loaded" })
	case ours:
		a.mu.Lock()
		proc := a.proc
		a.mu.Unlock()
		if err := proc.stop(a.opts.StopGrace); err != nil {
			return err
		}
		a.g.log.Info("llama.cpp stopped", "pid", proc.pid())
		return nil
	case p.alive && mode == LlamaCppExternal:
		msg := "llama-server at " + a.llama.base.Redacted() + " was not started by the guard and has no router mode: it was left running and may still hold GPU memory"
		a.setNote(msg)
		a.g.log.Warn(msg)
	}
	return nil
}

// --- status and pin ---

func (a *arbiter) status(ctx context.Context) map[string]any {
	p := a.probeLlama(ctx)
	loaded, err := a.ollamaLoaded(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	mode := a.mode(p)
	st := map[string]any{
		"enabled": true, "active": nullable(a.active), "pinned": nullable(a.pinned),
		"llamacpp_alive": p.alive, "llamacpp_mode": mode, "llamacpp_started_by_guard": a.ours(),
		"ollama_models_loaded": loaded,
		"stats": map[string]int64{
			"switches": a.stats.switches, "queued": a.stats.queued, "timed_out": a.stats.timedOut,
			"queue_full": a.stats.full, "blocked_by_pin": a.stats.blockedByPin, "switch_failed": a.stats.failed,
		},
		"min_hold_seconds": max(a.opts.MinHold, 0).Seconds(), "last_switch_ms": a.lastMs,
		"queue":     map[string]any{"waiting": len(a.queue), "limit": a.opts.QueueLimit, "timeout_seconds": a.opts.QueueTimeout.Seconds()},
		"in_flight": map[string]int{string(kOllama): a.inflight[kOllama], string(kLlamaCpp): a.inflight[kLlamaCpp]},
	}
	if loaded == nil {
		st["ollama_models_loaded"] = []string{}
	}
	if err != nil {
		st["ollama_error"] = err.Error()
	}
	if p.router {
		names := []string{}
		for _, m := range p.models {
			if m.Status.Value != "unloaded" {
				names = append(names, m.ID)
			}
		}
		st["llamacpp_models_loaded"] = names
	}
	if a.ours() {
		st["llamacpp_pid"] = a.proc.pid()
	}
	if a.active != "" && a.opts.MinHold > 0 {
		st["hold_left_seconds"] = max(time.Until(a.since.Add(a.opts.MinHold)), 0).Seconds()
	}
	note := a.note
	if mode == LlamaCppExternal && p.alive && note == "" {
		note = a.externalNote()
	}
	if note != "" {
		st["note"] = note
	}
	return st
}

// serveRuntime answers GET and POST /ctxkit/runtime.
func (g *Guard) serveRuntime(w http.ResponseWriter, r *http.Request) {
	a := g.arb
	if a == nil {
		if r.Method == http.MethodGet {
			writeJSON(w, http.StatusOK, map[string]any{"enabled": false})
			return
		}
		writeError(w, http.StatusConflict, "arbitration_disabled", "GPU arbitration is off (start the guard with --arbitrate)", nil)
		return
	}
	if r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, a.status(r.Context()))
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeBodyError(w, err)
		return
	}
	// The pin must be named, null included: {} is a mistake, not an unpin.
	var req map[string]json.RawMessage
	var name *string
	if json.Unmarshal(body, &req) != nil || req["pin"] == nil || json.Unmarshal(req["pin"], &name) != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "want {\"pin\": \"ollama\" | \"llamacpp\" | null}", nil)
		return
	}
	var pin kind
	if name != nil {
		if pin, err = parseRuntime(*name); err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", err.Error(), nil)
			return
		}
	}
	if err := a.setPin(pin); err != nil {
		writeError(w, http.StatusInternalServerError, "state_write_failed", err.Error(), nil)
		return
	}
	if pin != "" {
		gr, e := a.acquire(r.Context(), pin, "", true)
		if e != nil {
			if e.status == http.StatusServiceUnavailable {
				e.msg += " (the pin is set and kept)"
			}
			e.write(w, pin)
			return
		}
		gr.release()
		if gr.switched > 0 {
			w.Header().Set("X-Ctxkit-Runtime-Switch-Ms", fmt.Sprint(ms(gr.switched)))
		}
	}
	writeJSON(w, http.StatusOK, a.status(r.Context()))
}

// setPin persists and sets the pin; requests waiting for the other
// runtime are refused at once.
func (a *arbiter) setPin(pin kind) error {
	a.pinMu.Lock()
	defer a.pinMu.Unlock()
	if a.opts.StateFile != "" {
		st := runtimeState{}
		if pin != "" {
			s := string(pin)
			st.Pinned = &s
		}
		data, _ := json.Marshal(st)
		if err := atomicfile.WriteFile(a.opts.StateFile, append(data, '\n'), 0o600, 0o700, nil); err != nil {
			return fmt.Errorf("write runtime state: %w", err)
		}
	}
	a.mu.Lock()
	a.pinned = pin
	a.notify()
	a.mu.Unlock()
	a.g.log.Info("runtime pin", "pinned", pin)
	return nil
}

// close stops the llama.cpp the guard started.
func (a *arbiter) close() error {
	a.mu.Lock()
	p := a.proc
	a.mu.Unlock()
	if p == nil || !p.running() {
		return nil
	}
	return p.stop(a.opts.StopGrace)
}

// Close stops what the guard started (the llama.cpp process of
// ArbiterOptions.LlamaCppCmd); the Guard must not serve afterwards.
func (g *Guard) Close() error {
	if g.arb == nil {
		return nil
	}
	return g.arb.close()
}

// --- which runtime a request needs ---

// ollamaNoGPU are Ollama's POST paths that do not touch the GPU.
var ollamaNoGPU = []string{"/api/show", "/api/pull", "/api/push", "/api/create", "/api/copy", "/api/delete", "/api/blobs/"}

// needs returns the runtime request r runs on ("" for none), the model it
// names, and r with its body restored when it had to be read to find the
// model; ok is false when it answered the request itself (a body it could
// not read).
func (g *Guard) needs(w http.ResponseWriter, r *http.Request) (kind, string, *http.Request, bool) {
	p := r.URL.Path
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions || strings.HasPrefix(p, "/ctxkit/") {
		return "", "", r, true
	}
	switch {
	case strings.HasPrefix(p, "/v1/"):
		body, err := readBody(r)
		if err != nil {
			writeBodyError(w, err)
			return "", "", nil, false
		}
		var m struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &m)
		r = withBody(r, body)
		k := g.v1Backend(r.Context(), p, m.Model).kind
		if k == kOllama && p == "/v1/messages/count_tokens" {
			k = "" // the guard counts for Ollama itself (anthropicCountTokens)
		}
		return k, m.Model, r, true
	case strings.HasPrefix(p, "/api/"):
		for _, q := range ollamaNoGPU {
			if p == q || strings.HasPrefix(p, q) && strings.HasSuffix(q, "/") {
				return "", "", r, true
			}
		}
	}
	// Everything else goes to Ollama, which arbitration requires.
	return kOllama, "", r, true
}

// arbitrate acquires the runtime r needs; it returns the request to serve
// and the release, or nil when it answered.
func (g *Guard) arbitrate(w http.ResponseWriter, r *http.Request) (*http.Request, func()) {
	k, model, r, ok := g.needs(w, r)
	if !ok {
		return nil, nil
	}
	if k != kOllama && k != kLlamaCpp {
		return r, func() {}
	}
	gr, e := g.arb.acquire(r.Context(), k, model, false)
	if e != nil {
		g.arb.mu.Lock()
		pinned := g.arb.pinned
		g.arb.mu.Unlock()
		e.write(w, pinned)
		return nil, nil
	}
	if gr.switched > 0 {
		w.Header().Set("X-Ctxkit-Runtime-Switch-Ms", fmt.Sprint(ms(gr.switched)))
	}
	if gr.waited >= time.Millisecond {
		w.Header().Set("X-Ctxkit-Runtime-Wait-Ms", fmt.Sprint(ms(gr.waited)))
	}
	return r, gr.release
}
