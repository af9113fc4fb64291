package guard_test

// Faults of the upstream, injected by small servers written here on
// purpose (around the emulators where a dialect's wire format matters):
// streams and bodies cut short, an upstream that never answers, backends
// down; and the guard's own limits (requests in flight, request size).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// cutMode is how an answer is broken.
type cutMode int

const (
	// cutClean ends the body where it is cut, as if it were whole (the
	// chunked encoding ends properly).
	cutClean cutMode = iota
	// cutMidLine sends half of the next line, then drops the connection.
	cutMidLine
	// cutDrop drops the connection after the lines kept.
	cutDrop
)

func (m cutMode) String() string { return [...]string{"clean end", "mid-line", "dropped"}[m] }

var errCut = errors.New("cut by the test")

// cutWriter passes keep lines of an answer, then cuts it as mode says.
type cutWriter struct {
	http.ResponseWriter
	keep int
	mode cutMode
	cut  bool
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, errCut
	}
	n := 0
	for c.keep > 0 && n < len(p) {
		i := bytes.IndexByte(p[n:], '\n')
		if i < 0 {
			n = len(p)
			break
		}
		n += i + 1
		c.keep--
	}
	if c.keep > 0 || n == len(p) {
		return c.ResponseWriter.Write(p)
	}
	if _, err := c.ResponseWriter.Write(p[:n]); err != nil {
		return 0, err
	}
	c.cut = true
	if c.mode == cutMidLine {
		line := p[n:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if _, err := c.ResponseWriter.Write(line[:max(1, len(line)/2)]); err != nil {
			return 0, err
		}
	}
	return n, errCut
}

func (c *cutWriter) Flush() { _ = http.NewResponseController(c.ResponseWriter).Flush() }

// cutter serves h, breaking its answers to POST path after keep lines.
func cutter(t *testing.T, h http.Handler, path string, keep int, mode cutMode) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&cutWriter{ResponseWriter: w, keep: keep, mode: mode}, r)
		if mode == cutClean {
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		conn, _, err := rc.Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	})
}

// logBuffer collects a guard's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// metricsText is a guard's /metrics.
func metricsText(t *testing.T, gw string) string {
	t.Helper()
	resp, err := http.Get(gw + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return string(text)
}

// sseEvents splits an SSE body into its events: the event name and the
// data.
func sseEvents(t *testing.T, body []byte) [][2]string {
	t.Helper()
	var out [][2]string
	for _, block := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		var name, data string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event:"); ok {
				name = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				data += strings.TrimSpace(v)
			}
		}
		if name != "" || data != "" {
			out = append(out, [2]string{name, data})
		}
	}
	return out
}

// cutReport checks the in-band error of a cut stream: its report says
// upstream_cut.
func cutReport(t *testing.T, obj []byte) {
	t.Helper()
	var e struct {
		Ctxkit *guard.Report `json:"ctxkit"`
	}
	if err := json.Unmarshal(obj, &e); err != nil || e.Ctxkit == nil || !e.Ctxkit.UpstreamCut || e.Ctxkit.Backend == "" {
		t.Errorf("the error carries no report saying the answer was cut: %s", obj)
	}
}

// words is a reply of many stream chunks.
func words(llmemu.Turn) llmemu.Reply {
	return llmemu.Reply{Text: "one two three four five six seven eight nine ten eleven twelve"}
}

// TestStreamCut: a stream the upstream cuts (the body ends as if whole,
// ends inside a line, or the connection drops) reaches the client as an
// error in its dialect's in-band shape carrying the report, never as a
// clean end; no fragment of a line is relayed; the official clients see
// an error; the guard logs a WARN and counts it.
func TestStreamCut(t *testing.T) {
	type dialect struct {
		name     string
		path     string
		keep     int // lines passed before the cut (whole events)
		upstream func() http.Handler
		opts     func(url string) guard.Options
		body     msg
		check    func(t *testing.T, body []byte)
		client   func(gw string) error
	}
	ollamaMsgs := []msg{{"role": "user", "content": "count"}}
	dialects := []dialect{
		{
			name: "ollama", path: "/api/chat", keep: 3,
			upstream: func() http.Handler { return llmemu.NewOllama(llmemu.OllamaOptions{Responder: words}) },
			opts:     func(u string) guard.Options { return guard.Options{Ollama: u} },
			body:     msg{"model": "llama3.2", "messages": ollamaMsgs},
			check: func(t *testing.T, body []byte) {
				lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
				for i, line := range lines {
					var obj struct {
						Done  bool   `json:"done"`
						Error string `json:"error"`
					}
					if err := json.Unmarshal([]byte(line), &obj); err != nil {
						t.Fatalf("line %d is not JSON (a fragment relayed?): %q", i, line)
					}
					if obj.Done {
						t.Fatalf("a done chunk in a cut stream: %s", line)
					}
					if last := i == len(lines)-1; last != (obj.Error != "") {
						t.Fatalf("line %d of %d, error %q: %s", i, len(lines), obj.Error, body)
					}
				}
				if len(lines) != 4 {
					t.Errorf("%d lines, want the 3 chunks kept and the error", len(lines))
				}
				cutReport(t, []byte(lines[len(lines)-1]))
			},
			client: func(gw string) error {
				u, _ := url.Parse(gw)
				return ollama.NewClient(u, http.DefaultClient).Chat(context.Background(),
					&ollama.ChatRequest{Model: "llama3.2", Messages: []ollama.Message{{Role: "user", Content: "count"}}},
					func(ollama.ChatResponse) error { return nil })
			},
		},
		{
			name: "openai", path: "/v1/chat/completions", keep: 6,
			upstream: func() http.Handler { return llmemu.NewOpenAI(llmemu.OpenAIOptions{Responder: words}) },
			opts:     func(u string) guard.Options { return guard.Options{OpenAI: u} },
			body:     msg{"model": "gpt-4o-mini", "stream": true, "messages": ollamaMsgs},
			check: func(t *testing.T, body []byte) {
				evs := sseEvents(t, body)
				for i, ev := range evs {
					if ev[1] == "[DONE]" || !json.Valid([]byte(ev[1])) {
						t.Fatalf("event %d of a cut stream: %q", i, ev[1])
					}
				}
				if len(evs) != 4 {
					t.Fatalf("%d events, want the 3 kept and the error: %s", len(evs), body)
				}
				var e struct {
					Error struct{ Type, Message string } `json:"error"`
				}
				last := []byte(evs[len(evs)-1][1])
				if json.Unmarshal(last, &e) != nil || e.Error.Type != "upstream_cut" || e.Error.Message == "" {
					t.Errorf("last event %s", last)
				}
				cutReport(t, last)
			},
			client: func(gw string) error {
				c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
				s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")}})
				for s.Next() {
				}
				return s.Err()
			},
		},
		{
			name: "anthropic", path: "/v1/messages", keep: 9,
			upstream: func() http.Handler { return llmemu.NewAnthropic(llmemu.AnthropicOptions{Responder: words}) },
			opts:     func(u string) guard.Options { return guard.Options{Anthropic: u} },
			body:     msg{"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true, "messages": ollamaMsgs},
			check: func(t *testing.T, body []byte) {
				evs := sseEvents(t, body)
				for i, ev := range evs[:len(evs)-1] {
					if ev[0] == "message_stop" || ev[0] == "error" || !json.Valid([]byte(ev[1])) {
						t.Fatalf("event %d of a cut stream: %v", i, ev)
					}
				}
				if len(evs) != 4 {
					t.Fatalf("%d events, want the 3 kept and the error: %s", len(evs), body)
				}
				last := evs[len(evs)-1]
				var e struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if last[0] != "error" || json.Unmarshal([]byte(last[1]), &e) != nil || e.Type != "error" || e.Error.Type != "api_error" || e.Error.Message == "" {
					t.Errorf("last event %v", last)
				}
				cutReport(t, []byte(last[1]))
			},
			client: func(gw string) error {
				c := anthropic.NewClient(aopt.WithBaseURL(gw), aopt.WithAPIKey("x"), aopt.WithMaxRetries(0))
				s := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count"))}})
				for s.Next() {
				}
				return s.Err()
			},
		},
	}
	for _, d := range dialects {
		for _, mode := range []cutMode{cutClean, cutMidLine, cutDrop} {
			t.Run(d.name+"/"+mode.String(), func(t *testing.T) {
				var logs logBuffer
				opts := d.opts(serve(t, cutter(t, d.upstream(), d.path, d.keep, mode)))
				opts.Logger = logs.logger()
				opts.Windows = map[string]int{"gpt-4o-mini": 8192, "claude-sonnet-4-5": 8192}
				gw := newGuard(t, opts)
				resp, body := postJSON(t, gw+d.path, d.body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				d.check(t, body)
				if err := d.client(gw); err == nil {
					t.Error("the official client took the cut stream for a whole one")
				}
				// The guard counts after the client has its error: wait
				// for the handler's end.
				want := fmt.Sprintf("ctxkit_guard_upstream_cuts_total{backend=%q} 2\n", d.name)
				waitFor(t, func() bool { return strings.Contains(metricsText(t, gw), want) })
				if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "upstream answer cut short") {
					t.Errorf("no WARN: %s", l)
				}
			})
		}
	}
}

// TestStreamWhole: the same streams, whole, end cleanly: no error is
// added and nothing is counted (the cut detection does not fire on a
// whole answer).
func TestStreamWhole(t *testing.T) {
	for _, tc := range []struct {
		path     string
		upstream http.Handler
		opts     func(string) guard.Options
		body     msg
		last     string
	}{
		{"/api/chat", llmemu.NewOllama(llmemu.OllamaOptions{Responder: words}), func(u string) guard.Options { return guard.Options{Ollama: u} },
			msg{"model": "llama3.2", "messages": []msg{{"role": "user", "content": "count"}}}, `"done":true`},
		{"/v1/chat/completions", llmemu.NewOpenAI(llmemu.OpenAIOptions{Responder: words}), func(u string) guard.Options { return guard.Options{OpenAI: u} },
			msg{"model": "gpt-4o-mini", "stream": true, "messages": []msg{{"role": "user", "content": "count"}}}, "data: [DONE]"},
		{"/v1/messages", llmemu.NewAnthropic(llmemu.AnthropicOptions{Responder: words}), func(u string) guard.Options { return guard.Options{Anthropic: u} },
			msg{"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true, "messages": []msg{{"role": "user", "content": "count"}}}, "event: message_stop"},
	} {
		gw := newGuard(t, tc.opts(serve(t, tc.upstream)))
		resp, body := postJSON(t, gw+tc.path, tc.body)
		if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte("upstream_cut")) || !bytes.Contains(body, []byte(tc.last)) {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
		if m := metricsText(t, gw); strings.Contains(m, "ctxkit_guard_upstream_cuts_total{") {
			t.Errorf("%s: a cut counted", tc.path)
		}
	}
}

// TestBodyCut: an answer that is not streamed and ends early (the
// connection drops inside it, or closes where the body has no length)
// is a 502 with the report, not a 200 with half a JSON object.
func TestBodyCut(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{})
	closeDelimited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			emu.ServeHTTP(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n" +
			`{"model":"llama3.2","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"half`)
		_ = buf.Flush()
	})
	tools := []msg{{"type": "function", "function": msg{"name": "read_file", "parameters": msg{"type": "object"}}}}
	for name, tc := range map[string]struct {
		up     http.Handler
		recall bool
	}{
		"dropped inside":          {cutter(t, emu, "/api/chat", 0, cutMidLine), false},
		"closed without a length": {closeDelimited, false},
		"in the recall loop":      {cutter(t, emu, "/api/chat", 0, cutMidLine), true},
	} {
		t.Run(name, func(t *testing.T) {
			var logs logBuffer
			gw := newGuard(t, guard.Options{Ollama: serve(t, tc.up), Logger: logs.logger(), Recall: tc.recall})
			resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "tools": tools, "messages": []msg{{"role": "user", "content": "hi"}}})
			var e struct {
				Error  struct{ Type string } `json:"error"`
				Ctxkit *guard.Report         `json:"ctxkit"`
			}
			if resp.StatusCode != http.StatusBadGateway || json.Unmarshal(body, &e) != nil || e.Error.Type != "upstream_cut" || e.Ctxkit == nil || !e.Ctxkit.UpstreamCut {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			waitFor(t, func() bool {
				return strings.Contains(metricsText(t, gw), `ctxkit_guard_upstream_cuts_total{backend="ollama"} 1`)
			})
			if !strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("not logged: %s", logs.String())
			}
		})
	}
}

// TestRecallStreamCut: the recall loop's streams are checked as well: a
// stream cut before its done chunk ends with the error and the report,
// and a context_recall call cut short starts no round.
func TestRecallStreamCut(t *testing.T) {
	recallCall := func(llmemu.Turn) llmemu.Reply {
		return llmemu.Reply{Text: "let me look", ToolCalls: []llmemu.ToolCall{{Name: guard.RecallTool, Arguments: json.RawMessage(`{"id":"evicted_0"}`)}}}
	}
	for name, tc := range map[string]struct {
		responder llmemu.Responder
		keep      int
	}{
		"text":            {words, 3},
		"before the call": {recallCall, 1},
		"inside the call": {recallCall, len(llmemu.Tokenize("let me look"))},
	} {
		t.Run(name, func(t *testing.T) {
			emu := llmemu.NewOllama(llmemu.OllamaOptions{Responder: tc.responder})
			gw := newGuard(t, guard.Options{Ollama: serve(t, cutter(t, emu, "/api/chat", tc.keep, cutMidLine)), Recall: true})
			tools := []msg{{"type": "function", "function": msg{"name": "read_file", "parameters": msg{"type": "object"}}}}
			resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "tools": tools, "messages": []msg{{"role": "user", "content": "count"}}})
			lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
			last := []byte(lines[len(lines)-1])
			var e struct {
				Error string `json:"error"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(last, &e) != nil || e.Error == "" {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			cutReport(t, last)
			for _, l := range lines {
				if !json.Valid([]byte(l)) {
					t.Errorf("a fragment relayed: %q", l)
				}
			}
			if n := len(emu.Evals()); n != 1 {
				t.Errorf("%d generations upstream: a round ran on a cut answer", n)
			}
		})
	}
}

// hang serves next, except that it never answers paths (until the test
// ends or the request is cancelled); the channel says when a request was
// cancelled.
func hang(t *testing.T, next http.Handler, paths ...string) (string, <-chan struct{}) {
	cancelled := make(chan struct{}, 16)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range paths {
			if r.URL.Path == p {
				// Read to the end, so that the server notices the
				// client's leaving.
				_, _ = io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
					cancelled <- struct{}{}
				case <-stop:
				}
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // first: Close waits for the handlers
	return srv.URL, cancelled
}

// TestUpstreamTimeout: an upstream that never sends its response headers
// is answered 504 upstream_timeout after Options.UpstreamTimeout, on the
// compacted paths and passed through alike, and the upstream request is
// cancelled; an answer whose headers came is not cut however long its
// body takes.
func TestUpstreamTimeout(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{})
	up, cancelled := hang(t, emu, "/api/chat", "/api/tags", "/v1/chat/completions")
	const timeout = 100 * time.Millisecond
	gw := newGuard(t, guard.Options{Ollama: up, UpstreamTimeout: timeout})
	get := func(path string) (*http.Response, []byte) {
		resp, err := http.Get(gw + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	chat := msg{"model": "llama3.2", "messages": []msg{{"role": "user", "content": "hi"}}}
	for name, do := range map[string]func() (*http.Response, []byte){
		"chat":         func() (*http.Response, []byte) { return postJSON(t, gw+"/api/chat", chat) },
		"/v1 chat":     func() (*http.Response, []byte) { return postJSON(t, gw+"/v1/chat/completions", chat) },
		"pass-through": func() (*http.Response, []byte) { return get("/api/tags") },
	} {
		resp, body := do()
		var e struct {
			Error struct {
				Type           string
				TimeoutSeconds float64 `json:"timeout_seconds"`
			}
		}
		if resp.StatusCode != http.StatusGatewayTimeout || json.Unmarshal(body, &e) != nil || e.Error.Type != "upstream_timeout" || e.Error.TimeoutSeconds != timeout.Seconds() {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the upstream request was not cancelled", name)
		}
	}
	if m := metricsText(t, gw); !strings.Contains(m, `ctxkit_guard_upstream_timeouts_total{backend="ollama"} 3`) {
		t.Errorf("timeouts not counted:\n%s", m)
	}

	// Headers at once, then a body slower than the timeout: not cut.
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		time.Sleep(3 * timeout)
		_, _ = io.WriteString(w, `{"model":"llama3.2","message":{"role":"assistant","content":"late"},"done":false}`+"\n"+
			`{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":3}`+"\n")
	})
	gw2 := newGuard(t, guard.Options{Ollama: serve(t, slow), UpstreamTimeout: timeout})
	resp, body := postJSON(t, gw2+"/api/chat", chat)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("late")) || bytes.Contains(body, []byte(`"error"`)) {
		t.Errorf("a slow body: %d %s", resp.StatusCode, body)
	}
}

// probeHealth reads /ctxkit/health.
func probeHealth(t *testing.T, gw string) (int, string, map[string]map[string]any) {
	t.Helper()
	resp, err := http.Get(gw + "/ctxkit/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Status   string
		Backends map[string]map[string]any
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, h.Status, h.Backends
}

// deadURL is an address where nothing listens.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestHealthProbes: /ctxkit/health probes each backend (without
// credentials and without spending anything) and says ok, degraded or
// down, 503 when no backend serves.
func TestHealthProbes(t *testing.T) {
	oll := serve(t, llmemu.NewOllama(llmemu.OllamaOptions{}))
	loading := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{})
	loading.SetLoading(true)
	// A cloud API without the client's key: 401, reachable.
	cloud := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" || r.URL.Path != "/v1/models" {
			t.Errorf("probe %s %s with credentials %v", r.Method, r.URL.Path, r.Header)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}`)
	}))
	silent, _ := hang(t, http.NotFoundHandler(), "/api/version")
	for _, tc := range []struct {
		name   string
		opts   guard.Options
		code   int
		status string
		states map[string]string
	}{
		{"all up", guard.Options{Ollama: oll, Anthropic: cloud}, http.StatusOK, "ok", map[string]string{"ollama": "up", "anthropic": "up"}},
		{"one loading", guard.Options{Ollama: oll, LlamaCpp: serve(t, loading)}, http.StatusOK, "degraded", map[string]string{"ollama": "up", "llamacpp": "failing"}},
		{"one down", guard.Options{Ollama: deadURL(t), OpenAI: serve(t, llmemu.NewOpenAI(llmemu.OpenAIOptions{}))}, http.StatusOK, "degraded", map[string]string{"ollama": "unreachable", "openai": "up"}},
		{"none", guard.Options{Ollama: deadURL(t)}, http.StatusServiceUnavailable, "down", map[string]string{"ollama": "unreachable"}},
		{"silent", guard.Options{Ollama: silent}, http.StatusServiceUnavailable, "down", map[string]string{"ollama": "unreachable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, status, backends := probeHealth(t, newGuard(t, tc.opts))
			if code != tc.code || status != tc.status || len(backends) != len(tc.states) {
				t.Errorf("%d %s %v", code, status, backends)
			}
			for k, want := range tc.states {
				if b := backends[k]; b["state"] != want || b["url"] == "" || b["probe"] == "" {
					t.Errorf("%s: %v, want %s", k, b, want)
				}
			}
		})
	}
}

// TestMaxConcurrent: past Options.MaxConcurrent requests in flight, one
// more gets 503 with Retry-After and an overloaded error, while the
// guard's own paths still answer; a finished request frees its slot.
func TestMaxConcurrent(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{})
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/chat" && r.URL.Query().Get("hold") != "" {
			entered <- struct{}{}
			<-release
		}
		emu.ServeHTTP(w, r)
	})
	gw := newGuard(t, guard.Options{Ollama: serve(t, up), MaxConcurrent: 2})
	chat := msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": "hi"}}}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if resp, body := postJSON(t, gw+"/api/chat?hold=1", chat); resp.StatusCode != http.StatusOK {
				t.Errorf("a held request: %d %s", resp.StatusCode, body)
			}
		})
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the held requests did not reach the upstream")
		}
	}
	resp, body := postJSON(t, gw+"/api/chat", chat)
	var e struct {
		Error struct {
			Type          string
			MaxConcurrent int `json:"max_concurrent"`
		}
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || json.Unmarshal(body, &e) != nil || e.Error.Type != "overloaded" || e.Error.MaxConcurrent != 2 {
		t.Errorf("over the cap: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if code, _, _ := probeHealth(t, gw); code != http.StatusOK {
		t.Errorf("health over the cap: %d", code)
	}
	if !strings.Contains(metricsText(t, gw), "ctxkit_guard_overloaded_total 1\n") {
		t.Error("the refusal is not counted")
	}
	close(release)
	wg.Wait()
	if resp, body := postJSON(t, gw+"/api/chat", chat); resp.StatusCode != http.StatusOK {
		t.Errorf("after the held requests ended: %d %s", resp.StatusCode, body)
	}
}

// TestContentLengthTooLarge: a request whose Content-Length is over the
// guard's bound is answered 413 before its body is read: the test sends
// the headers and no body at all, and the answer comes.
func TestContentLengthTooLarge(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu)})
	host := strings.TrimPrefix(gw, "http://")
	for _, path := range []string{"/api/chat", "/v1/chat/completions"} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		// A bound on the wait: without the check the guard would wait for
		// a body that never comes.
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, 300<<20)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer before the body: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(body, []byte("request_too_large")) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	for _, r := range emu.Requests() {
		if r.Method == http.MethodPost {
			t.Errorf("%s %s reached the upstream", r.Method, r.Path)
		}
	}
}

// hostRequest sends GET path to gw with the Host header host.
func hostRequest(t *testing.T, gw, path, host string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, gw+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHostCheck: on a loopback address the guard serves only Hosts that
// name this machine, as Ollama does (a DNS-rebinding page's Host is its
// own domain), and refuses the others with 403 before anything reaches a
// backend; AllowedHosts adds names; on another address any Host goes.
func TestHostCheck(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{})
	up := serve(t, emu)
	gw := newGuard(t, guard.Options{Ollama: up})
	port := gw[strings.LastIndex(gw, ":"):]
	for host, want := range map[string]int{
		"127.0.0.1" + port: 200, "localhost" + port: 200, "LocalHost": 200, "[::1]" + port: 200, "0.0.0.0": 200,
		"10.1.2.3:80": 200, "192.168.0.7": 200, "app.localhost": 200, "printer.local": 200, "db.internal": 200,
		"evil.example": 403, "localhost.evil.example" + port: 403, "8.8.8.8": 403, "127.0.0.1.nip.io": 403,
		"guard.example.com": 403,
	} {
		if got := hostRequest(t, gw, "/api/tags", host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
	allowed := 10
	if name, err := os.Hostname(); err == nil && name != "" {
		allowed++
		if got := hostRequest(t, gw, "/api/tags", strings.ToUpper(name)+port); got != 200 {
			t.Errorf("the machine's hostname %q: %d", name, got)
		}
	}
	if got := hostRequest(t, gw, "/ctxkit/health", "evil.example"); got != http.StatusForbidden {
		t.Errorf("the guard's own path for a foreign Host: %d", got)
	}
	if n := emu.RequestCount("/api/tags"); n != allowed {
		t.Errorf("%d requests reached the backend, want the %d allowed", n, allowed)
	}
	if !strings.Contains(metricsText(t, gw), "ctxkit_guard_host_refused_total 6\n") {
		t.Error("refusals not counted")
	}

	proxied := newGuard(t, guard.Options{Ollama: up, AllowedHosts: []string{"guard.example.com", ".corp.example"}})
	for host, want := range map[string]int{"guard.example.com": 200, "GUARD.example.com:443": 200, "a.corp.example": 200, "corp.example": 403, "evil.example": 403} {
		if got := hostRequest(t, proxied, "/api/tags", host); got != want {
			t.Errorf("allowed hosts, Host %q: %d, want %d", host, got, want)
		}
	}
	anyHost := newGuard(t, guard.Options{Ollama: up, AllowedHosts: []string{"*"}})
	if got := hostRequest(t, anyHost, "/api/tags", "evil.example"); got != 200 {
		t.Errorf("--allowed-hosts '*': %d", got)
	}
	// Listening on every address, as Ollama with OLLAMA_HOST=0.0.0.0:
	// other machines use names the guard cannot know.
	wide := newGuard(t, guard.Options{Ollama: up, ListenAddr: "0.0.0.0:11434"})
	if got := hostRequest(t, wide, "/api/tags", "evil.example"); got != 200 {
		t.Errorf("a non-loopback listen address: %d", got)
	}
}

// TestEvictedAccess: GET /ctxkit/evicted/{id} serves only this guard's
// evicted spans (another workspace of the shared store, even under an
// evicted_ id, is the same 404 as a missing id), and needs the token:
// always when one is set, and, without one, it is not served on an
// address other machines reach. The token is never logged.
func TestEvictedAccess(t *testing.T) {
	ctx := context.Background()
	engine := offload.New(memstore.New(memstore.Options{}))
	for _, p := range []offload.PutOptions{
		{Type: "result", Producer: "read_file", ID: "result_secret"},
		{Type: "evicted", Producer: "someone-else", ID: "evicted_forged"},
		{Type: "mcp", Producer: "ctxkit-guard", ID: "evicted_wrongtype"},
	} {
		if _, err := engine.Put(ctx, []byte(`{"password":"hunter2"}`), p); err != nil {
			t.Fatal(err)
		}
	}
	newG := func(opts guard.Options) (string, *logBuffer) {
		var logs logBuffer
		opts.Engine, opts.KV, opts.Logger = engine, memstore.NewKV(), logs.logger()
		opts.Ollama = serve(t, llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096}))
		g, err := guard.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		return serve(t, g), &logs
	}
	get := func(gw, id, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, gw+"/ctxkit/evicted/"+id, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.ReplaceAll(string(body), id, "ID")
	}

	gw, _ := newG(guard.Options{})
	resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": agentHistory(20, 120, false)})
	var got ollamaChatResp
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || got.Ctxkit == nil || len(got.Ctxkit.Evicted) == 0 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	span := got.Ctxkit.Evicted[0].StoreID
	if code, body := get(gw, span, ""); code != http.StatusOK || !strings.Contains(body, "lorem ipsum") {
		t.Fatalf("the guard's own span on loopback: %d %.200s", code, body)
	}
	_, missing := get(gw, "evicted_0000", "")
	for _, id := range []string{"result_secret", "evicted_forged", "evicted_wrongtype"} {
		if code, body := get(gw, id, ""); code != http.StatusNotFound || body != missing || strings.Contains(body, "hunter2") {
			t.Errorf("%s: %d %s, want the 404 of a missing id %s", id, code, body, missing)
		}
	}

	const token = "guard-token-0123456789abcdef"
	withToken, logs := newG(guard.Options{Token: token})
	for _, tc := range []struct {
		token string
		code  int
	}{{"", http.StatusUnauthorized}, {"wrong", http.StatusUnauthorized}, {token + "x", http.StatusUnauthorized}, {token, http.StatusOK}} {
		if code, body := get(withToken, span, tc.token); code != tc.code {
			t.Errorf("token %q: %d %s, want %d", tc.token, code, body, tc.code)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, withToken+"/ctxkit/runtime", strings.NewReader(`{"pin":"ollama"}`))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /ctxkit/runtime without the token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	wide, wideLogs := newG(guard.Options{ListenAddr: "0.0.0.0:11434"})
	if code, body := get(wide, span, ""); code != http.StatusForbidden || !strings.Contains(body, "token_required") {
		t.Errorf("a non-loopback address without a token: %d %s", code, body)
	}
	wideToken, _ := newG(guard.Options{ListenAddr: "0.0.0.0:11434", Token: token})
	if code, _ := get(wideToken, span, ""); code != http.StatusUnauthorized {
		t.Errorf("a non-loopback address, no token sent: %d", code)
	}
	if code, _ := get(wideToken, span, token); code != http.StatusOK {
		t.Errorf("a non-loopback address, the token sent: %d", code)
	}
	for _, l := range []*logBuffer{logs, wideLogs} {
		if strings.Contains(l.String(), token) || strings.Contains(l.String(), "wrong") {
			t.Errorf("a token in the log: %s", l.String())
		}
	}
}
