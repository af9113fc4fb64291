package guard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// childEnv makes the test binary a llama.cpp emulator serving on the
// address it names (the process-mode child the guard starts).
const childEnv = "CTXKIT_TEST_LLAMACPP_ADDR"

func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		os.Exit(serveChild(addr))
	}
	os.Exit(m.Run())
}

// serveChild serves a llama.cpp emulator on addr until SIGTERM.
func serveChild(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "llama.cpp emulator:", err)
		return 1
	}
	srv := &http.Server{Handler: llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{}), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return 1
	}
	return 0
}

// childCmd is a --llamacpp-cmd that starts this test binary as a
// llama.cpp emulator on a free port, and that port's URL.
func childCmd(t testing.TB) (cmd, url string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s=%s exec '%s' -test.run='^$'", childEnv, addr, strings.ReplaceAll(exe, "'", `'\''`)), "http://" + addr
}

// rig is a guard arbitrating between an Ollama emulator and a llama.cpp
// (emulated in process, or a child process).
type rig struct {
	g         *guard.Guard
	url       string
	ollamaURL string
	ollama    *llmemu.Ollama
	llama     *llmemu.LlamaCpp // nil in process mode
	// overlap counts requests served while the other runtime had a
	// model loaded.
	overlap atomic.Int64
}

type rigOpts struct {
	process, router bool
	arb             guard.ArbiterOptions
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	rg := &rig{ollama: llmemu.NewOllama(llmemu.OllamaOptions{Models: []string{"llama3.2:latest", "qwen3:8b"}, Preload: true})}
	var llamaURL string
	if o.process {
		o.arb.LlamaCppCmd, llamaURL = childCmd(t)
	} else {
		rg.llama = llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{Router: o.router, RouterModels: []string{"a.gguf", "b.gguf"}})
		llamaURL = serveTB(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "completions") && len(rg.ollama.Loaded()) > 0 {
				rg.overlap.Add(1)
			}
			rg.llama.ServeHTTP(w, r)
		}))
	}
	rg.ollamaURL = serveTB(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rg.llama != nil && o.router && r.Method == http.MethodPost && r.URL.Path == "/api/chat" && len(rg.llama.RouterLoaded()) > 0 {
			rg.overlap.Add(1)
		}
		rg.ollama.ServeHTTP(w, r)
	}))
	if o.arb.MinHold == 0 {
		o.arb.MinHold = -1
	}
	if o.arb.QueueTimeout == 0 {
		o.arb.QueueTimeout = time.Minute
	}
	g, err := guard.New(guard.Options{Ollama: rg.ollamaURL, LlamaCpp: llamaURL, Arbitrate: true, Arbiter: o.arb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	rg.g, rg.url = g, serveTB(t, g)
	return rg
}

// serveTB starts h for a test or a benchmark.
func serveTB(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

type result struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func post(ctx context.Context, url string, body any) result {
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: out, err: err}
}

func (rg *rig) ollamaChat(ctx context.Context) result {
	return post(ctx, rg.url+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": "hi"}}})
}

func (rg *rig) llamaChat(ctx context.Context, model string) result {
	return post(ctx, rg.url+"/v1/chat/completions", msg{"model": model, "messages": []msg{{"role": "user", "content": "hi"}}})
}

func (rg *rig) status(t testing.TB) map[string]any {
	t.Helper()
	resp, err := http.Get(rg.url + "/ctxkit/runtime")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func stat(st map[string]any, key string) float64 {
	f, _ := st["stats"].(map[string]any)[key].(float64)
	return f
}

func mustOK(t testing.TB, what string, r result) {
	t.Helper()
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("%s: status %d, err %v: %s", what, r.status, r.err, r.body)
	}
}

// TestArbiterSwitch switches Ollama → llama.cpp → Ollama in process mode
// (the guard starts and stops a real child process) and in router mode
// (models unloaded and loaded through /models).
func TestArbiterSwitch(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    rigOpts
		mode string
	}{
		{"process", rigOpts{process: true}, guard.LlamaCppProcess},
		{"router", rigOpts{router: true}, guard.LlamaCppRouter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, tc.o)
			ctx := context.Background()
			r := rg.ollamaChat(ctx)
			mustOK(t, "ollama", r)
			if st := rg.status(t); st["active"] != "ollama" || st["llamacpp_mode"] != tc.mode {
				t.Fatalf("after an Ollama request: %v", st)
			}
			for round := range 2 {
				r = rg.llamaChat(ctx, "a.gguf")
				mustOK(t, "llama.cpp", r)
				if r.header.Get("X-Ctxkit-Runtime-Switch-Ms") == "" {
					t.Errorf("round %d: no switch header on the request that switched to llama.cpp", round)
				}
				if n := len(rg.ollama.Loaded()); n != 0 {
					t.Errorf("round %d: Ollama still has %d models loaded", round, n)
				}
				st := rg.status(t)
				if st["active"] != "llamacpp" || st["llamacpp_alive"] != true || st["llamacpp_mode"] != tc.mode {
					t.Errorf("round %d: after llama.cpp: %v", round, st)
				}
				if tc.o.process && st["llamacpp_started_by_guard"] != true {
					t.Errorf("round %d: process not reported as started by the guard: %v", round, st)
				}
				if tc.o.router && fmt.Sprint(rg.llama.RouterLoaded()) != "[a.gguf]" {
					t.Errorf("round %d: router loaded %v, want [a.gguf]", round, rg.llama.RouterLoaded())
				}
				// A second request runs on the active runtime: no switch.
				r = rg.llamaChat(ctx, "a.gguf")
				mustOK(t, "llama.cpp again", r)
				if h := r.header.Get("X-Ctxkit-Runtime-Switch-Ms"); h != "" {
					t.Errorf("round %d: switch header %q on a request that did not switch", round, h)
				}

				r = rg.ollamaChat(ctx)
				mustOK(t, "back to ollama", r)
				if r.header.Get("X-Ctxkit-Runtime-Switch-Ms") == "" {
					t.Errorf("round %d: no switch header on the request that switched back", round)
				}
				st = rg.status(t)
				if st["active"] != "ollama" {
					t.Errorf("round %d: after Ollama: %v", round, st)
				}
				if tc.o.process && (st["llamacpp_alive"] != false || st["llamacpp_started_by_guard"] != false) {
					t.Errorf("round %d: llama.cpp process not stopped: %v", round, st)
				}
				if tc.o.router && len(rg.llama.RouterLoaded()) != 0 {
					t.Errorf("round %d: router still has %v loaded", round, rg.llama.RouterLoaded())
				}
				if len(rg.ollama.Loaded()) == 0 {
					t.Errorf("round %d: Ollama did not load its model", round)
				}
			}
			st := rg.status(t)
			if stat(st, "switches") != 5 || st["last_switch_ms"] == nil {
				t.Errorf("stats: %v, want 5 switches (first Ollama, then 2 rounds of 2)", st)
			}
			if rg.overlap.Load() != 0 {
				t.Errorf("%d requests served while the other runtime held a model", rg.overlap.Load())
			}
		})
	}
}

// TestArbiterQueue: during the min-hold a request for the other runtime
// waits and then succeeds; past the queue timeout or with the queue full
// it gets 503 with Retry-After; a client that leaves leaves the queue.
func TestArbiterQueue(t *testing.T) {
	ctx := context.Background()
	t.Run("waits out the hold", func(t *testing.T) {
		// The hold must outlast the gap between the two requests, however
		// loaded the machine, for the second to be queued: a second is
		// plenty and costs this test a second.
		rg := newRig(t, rigOpts{router: true, arb: guard.ArbiterOptions{MinHold: time.Second}})
		mustOK(t, "ollama", rg.ollamaChat(ctx))
		r := rg.llamaChat(ctx, "b.gguf")
		mustOK(t, "llama.cpp after the hold", r)
		if r.header.Get("X-Ctxkit-Runtime-Wait-Ms") == "" || r.header.Get("X-Ctxkit-Runtime-Switch-Ms") == "" {
			t.Errorf("headers %v: want the wait and the switch", r.header)
		}
		if st := rg.status(t); stat(st, "queued") != 1 || st["active"] != "llamacpp" {
			t.Errorf("status %v: want 1 queued, llamacpp active", st)
		}
	})
	for _, tc := range []struct {
		name   string
		arb    guard.ArbiterOptions
		reason string
		fill   bool
	}{
		{"timeout", guard.ArbiterOptions{MinHold: time.Hour, QueueTimeout: 30 * time.Millisecond}, "timed_out", false},
		{"queue full", guard.ArbiterOptions{MinHold: time.Hour, QueueLimit: 1}, "queue_full", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, rigOpts{router: true, arb: tc.arb})
			mustOK(t, "ollama", rg.ollamaChat(ctx))
			var wg sync.WaitGroup
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if tc.fill {
				wg.Go(func() { rg.llamaChat(cctx, "a.gguf") })
				waitFor(t, func() bool { return rg.status(t)["queue"].(map[string]any)["waiting"] == 1.0 })
			}
			r := rg.llamaChat(ctx, "a.gguf")
			if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
				t.Fatalf("status %d, Retry-After %q: %s", r.status, r.header.Get("Retry-After"), r.body)
			}
			var e struct {
				Error struct {
					Type       string `json:"type"`
					Active     string `json:"active"`
					Wanted     string `json:"wanted"`
					RetryAfter int    `json:"retry_after_seconds"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Error.Type != "runtime_unavailable" || e.Error.Active != "ollama" || e.Error.Wanted != "llamacpp" || e.Error.RetryAfter < 1 {
				t.Errorf("body %s", r.body)
			}
			if st := rg.status(t); stat(st, tc.reason) != 1 {
				t.Errorf("stats %v: want %s 1", st["stats"], tc.reason)
			}
			if tc.fill {
				// The queued client leaves: the queue empties and Ollama
				// still serves.
				cancel()
				wg.Wait()
				waitFor(t, func() bool { return rg.status(t)["queue"].(map[string]any)["waiting"] == 0.0 })
				mustOK(t, "ollama after the cancel", rg.ollamaChat(ctx))
			}
			if rg.status(t)["active"] != "ollama" {
				t.Errorf("the refused requests switched the GPU")
			}
		})
	}
}

// waitFor polls cond (the state, never a duration, is what is tested).
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition never met")
}

// TestArbiterPin: a pin switches now, refuses the other runtime with 409,
// and survives a new Guard on the same state file.
func TestArbiterPin(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "runtime.json")
	rg := newRig(t, rigOpts{router: true, arb: guard.ArbiterOptions{StateFile: state, MinHold: time.Hour}})
	mustOK(t, "ollama", rg.ollamaChat(ctx))
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"pin":"gpu"}`, http.StatusBadRequest},
		{`{}`, http.StatusBadRequest},
		{`nope`, http.StatusBadRequest},
		{`{"pin":"llamacpp"}`, http.StatusOK},
	} {
		resp, err := http.Post(rg.url+"/ctxkit/runtime", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("POST %s: %d, want %d", tc.body, resp.StatusCode, tc.status)
		}
	}
	// The pin switched at once, min-hold notwithstanding.
	if st := rg.status(t); st["pinned"] != "llamacpp" || st["active"] != "llamacpp" || len(rg.ollama.Loaded()) != 0 {
		t.Fatalf("after the pin: %v, ollama loaded %v", st, rg.ollama.Loaded())
	}
	check409 := func(rg *rig) {
		t.Helper()
		r := rg.ollamaChat(ctx)
		if r.status != http.StatusConflict || !bytes.Contains(r.body, []byte(`"runtime_pinned"`)) || !bytes.Contains(r.body, []byte(`"pinned":"llamacpp"`)) {
			t.Errorf("ollama while pinned: %d %s", r.status, r.body)
		}
		mustOK(t, "llama.cpp while pinned", rg.llamaChat(ctx, "a.gguf"))
	}
	check409(rg)
	data, err := os.ReadFile(state)
	if err != nil || !bytes.Contains(data, []byte(`"pinned":"llamacpp"`)) {
		t.Fatalf("state file: %s, %v", data, err)
	}

	// A new guard reads the pin back.
	rg2 := newRig(t, rigOpts{router: true, arb: guard.ArbiterOptions{StateFile: state}})
	if st := rg2.status(t); st["pinned"] != "llamacpp" || stat(st, "blocked_by_pin") != 0 {
		t.Fatalf("new guard: %v", st)
	}
	check409(rg2)
	resp, err := http.Post(rg2.url+"/ctxkit/runtime", "application/json", strings.NewReader(`{"pin":null}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mustOK(t, "ollama unpinned", rg2.ollamaChat(ctx))
	if st := rg2.status(t); st["pinned"] != nil || st["active"] != "ollama" || stat(st, "blocked_by_pin") != 1 {
		t.Errorf("unpinned: %v", st)
	}
}

// TestArbiterExternal: a llama-server the guard did not start and that has
// no router mode is reported as such, and not pretended unloaded.
func TestArbiterExternal(t *testing.T) {
	ctx := context.Background()
	rg := newRig(t, rigOpts{})
	mustOK(t, "llama.cpp", rg.llamaChat(ctx, "model.gguf"))
	mustOK(t, "ollama", rg.ollamaChat(ctx))
	st := rg.status(t)
	note, _ := st["note"].(string)
	if st["llamacpp_mode"] != "external" || st["llamacpp_alive"] != true || st["llamacpp_started_by_guard"] != false || !strings.Contains(note, "not started by the guard") {
		t.Errorf("status %v", st)
	}
	resp, err := http.Get(rg.url + "/ctxkit/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Runtime map[string]any `json:"runtime"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if h.Runtime["llamacpp_mode"] != "external" || h.Runtime["active"] != "ollama" {
		t.Errorf("health runtime %v", h.Runtime)
	}
}

// TestArbiterStartFails: a llama.cpp command that exits answers 503
// runtime_switch_failed with its output.
func TestArbiterStartFails(t *testing.T) {
	rg := newRig(t, rigOpts{})
	_, dead := childCmd(t)
	g, err := guard.New(guard.Options{Ollama: rg.ollamaURL, LlamaCpp: dead, Arbitrate: true,
		Arbiter: guard.ArbiterOptions{LlamaCppCmd: "echo no model here >&2; exit 3", MinHold: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rg.url = serve(t, g)
	r := rg.llamaChat(context.Background(), "model.gguf")
	if r.status != http.StatusServiceUnavailable || !bytes.Contains(r.body, []byte("runtime_switch_failed")) || !bytes.Contains(r.body, []byte("no model here")) {
		t.Errorf("%d %s", r.status, r.body)
	}
	if st := rg.status(t); stat(st, "switch_failed") != 1 || st["active"] != nil {
		t.Errorf("status %v", st)
	}
}

// TestArbiterConcurrent: requests for both runtimes at once all succeed,
// and neither runtime serves while the other holds a model.
func TestArbiterConcurrent(t *testing.T) {
	rg := newRig(t, rigOpts{router: true, arb: guard.ArbiterOptions{MinHold: 5 * time.Millisecond}})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 16 {
		wg.Go(func() {
			for j := range 4 {
				var r result
				if (i+j)%2 == 0 {
					r = rg.ollamaChat(context.Background())
				} else {
					r = rg.llamaChat(context.Background(), "a.gguf")
				}
				if r.err != nil || r.status != http.StatusOK {
					failed.Add(1)
					t.Errorf("status %d err %v: %s", r.status, r.err, r.body)
				}
			}
		})
	}
	wg.Wait()
	st := rg.status(t)
	if rg.overlap.Load() != 0 || failed.Load() != 0 || stat(st, "switches") < 2 {
		t.Errorf("overlap %d, failed %d, status %v", rg.overlap.Load(), failed.Load(), st)
	}
	if q := st["queue"].(map[string]any)["waiting"]; q != 0.0 {
		t.Errorf("queue not empty: %v", q)
	}
}

// BenchmarkRuntimeSwitch measures a round trip Ollama → llama.cpp →
// Ollama through the guard, two switches, with the emulators: process
// mode starts and stops a child process (this test binary), router mode
// unloads and loads through /models. switch-ms is the guard's own
// measure (X-Ctxkit-Runtime-Switch-Ms), per switch.
func BenchmarkRuntimeSwitch(b *testing.B) {
	for _, tc := range []struct {
		name string
		o    rigOpts
	}{
		{"process", rigOpts{process: true}},
		{"router", rigOpts{router: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rg := newRig(b, tc.o)
			ctx := context.Background()
			mustOK(b, "ollama", rg.ollamaChat(ctx))
			var total, toLlama, toOllama float64
			for b.Loop() {
				r := rg.llamaChat(ctx, "a.gguf")
				mustOK(b, "llama.cpp", r)
				var ms float64
				fmt.Sscan(r.header.Get("X-Ctxkit-Runtime-Switch-Ms"), &ms)
				toLlama += ms
				r = rg.ollamaChat(ctx)
				mustOK(b, "ollama", r)
				var ms2 float64
				fmt.Sscan(r.header.Get("X-Ctxkit-Runtime-Switch-Ms"), &ms2)
				toOllama += ms2
				total += ms + ms2
			}
			b.ReportMetric(toLlama/float64(b.N), "to-llamacpp-ms")
			b.ReportMetric(toOllama/float64(b.N), "to-ollama-ms")
			b.ReportMetric(total/float64(2*b.N), "switch-ms")
		})
	}
}

// TestArbiterRestart: a llama.cpp the guard started that dies is started
// again by the next request for it.
func TestArbiterRestart(t *testing.T) {
	ctx := context.Background()
	rg := newRig(t, rigOpts{process: true})
	mustOK(t, "llama.cpp", rg.llamaChat(ctx, "model.gguf"))
	pid, ok := rg.status(t)["llamacpp_pid"].(float64)
	if !ok {
		t.Fatalf("no pid in %v", rg.status(t))
	}
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return rg.status(t)["llamacpp_started_by_guard"] == false })
	r := rg.llamaChat(ctx, "model.gguf")
	mustOK(t, "llama.cpp restarted", r)
	if r.header.Get("X-Ctxkit-Runtime-Switch-Ms") == "" {
		t.Errorf("no start measured: %v", r.header)
	}
	if st := rg.status(t); st["llamacpp_started_by_guard"] != true || st["llamacpp_pid"] == pid {
		t.Errorf("status %v", st)
	}
}

// TestArbiterCountTokens: /v1/messages/count_tokens for an Ollama model is
// answered by the guard itself, so it takes the GPU from nobody.
func TestArbiterCountTokens(t *testing.T) {
	rg := newRig(t, rigOpts{router: true})
	ctx := context.Background()
	mustOK(t, "llama.cpp", rg.llamaChat(ctx, "a.gguf"))
	r := post(ctx, rg.url+"/v1/messages/count_tokens", msg{"model": "llama3.2", "messages": []msg{{"role": "user", "content": "hi"}}})
	mustOK(t, "count_tokens", r)
	if h := r.header.Get("X-Ctxkit-Runtime-Switch-Ms"); h != "" || !bytes.Contains(r.body, []byte(`"input_tokens"`)) {
		t.Errorf("switch header %q, body %s", h, r.body)
	}
	if st := rg.status(t); st["active"] != "llamacpp" || stat(st, "switches") != 1 {
		t.Errorf("after count_tokens: %v, want llama.cpp still active after 1 switch", st)
	}
}

// TestArbiterPinsAtOnce: clients that pin and unpin at once leave the state
// file saying what the guard holds.
func TestArbiterPinsAtOnce(t *testing.T) {
	state := filepath.Join(t.TempDir(), "runtime.json")
	rg := newRig(t, rigOpts{router: true, arb: guard.ArbiterOptions{StateFile: state}})
	var wg sync.WaitGroup
	for i := range 40 {
		body := msg{"pin": nil}
		if i%2 == 0 {
			body = msg{"pin": "ollama"}
		}
		wg.Go(func() {
			if r := post(context.Background(), rg.url+"/ctxkit/runtime", body); r.err != nil || r.status != http.StatusOK {
				t.Errorf("pin %v: %d %v %s", body, r.status, r.err, r.body)
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Pinned any `json:"pinned"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if st := rg.status(t); st["pinned"] != file.Pinned {
		t.Errorf("the guard holds the pin %v, the state file says %v", st["pinned"], file.Pinned)
	}
}
