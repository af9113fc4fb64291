// Package realollama runs a real Ollama server for tests, with the tiny
// generated model of package tinymodel, so that ctxkit's tests meet the
// server itself rather than an emulator of it.
//
// The binary is named by $CTXKIT_TEST_OLLAMA (EnvBinary); .ci/ollama.sh
// builds Ollama v0.17.4 from its Go module and prints its path, and .ci/run
// sets the variable. Without it, Start skips the test and says how to get
// the binary; under CI=true it fails instead, so that CI never passes by
// skipping.
//
// Start runs `ollama serve` on a free loopback port, with its models and
// its home in the test's temporary directory, captures its log (Log, with
// the runner's WARN "truncating input prompt" lines), waits until it
// answers, creates the model "tiny" (DefaultModel: the generated GGUF,
// ChatML template) and stops the server and its runners when the test
// ends. A server takes a few seconds to start and each model load about a
// second, so a package runs one top-level test that starts one server and
// runs its cases as subtests (the server is the test's, no package state).
package realollama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/tinymodel"
)

// EnvBinary names the environment variable that holds the path of the
// ollama binary.
const EnvBinary = "CTXKIT_TEST_OLLAMA"

// DefaultModel is the model Start creates: tinymodel's GGUF with its ChatML
// template and no num_ctx of its own.
const DefaultModel = "tiny"

// Deadlines of the harness; each bounds one wait, never a measurement.
const (
	startDeadline  = 90 * time.Second
	createDeadline = 2 * time.Minute
	stopDeadline   = 20 * time.Second
)

// Options configure a server.
type Options struct {
	// ContextLength sets OLLAMA_CONTEXT_LENGTH, the window of a request
	// that names none (0: unset, the server's default: 4096 on a CPU).
	ContextLength int
	// Debug sets OLLAMA_DEBUG=1, so that the log holds the DEBUG lines
	// (such as "truncating input messages which exceed context length").
	Debug bool
	// Env adds variables (KEY=value) to the server's environment.
	Env []string
}

// Model is a model to create from tinymodel's GGUF.
type Model struct {
	// Name is the model's name ("tiny2"; Ollama adds ":latest").
	Name string
	// NumCtx, when positive, is the Modelfile's PARAMETER num_ctx.
	NumCtx int
}

// Server is a running `ollama serve`.
type Server struct {
	bin, home, gguf string
	host            string // 127.0.0.1:port
	log             *Log
	cmd             *exec.Cmd
	exited          chan struct{}
	waitErr         error
}

// Binary returns the ollama binary named by EnvBinary. Without it the test
// is skipped, or fails when CI=true.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		msg := fmt.Sprintf("no real Ollama: $%s is unset; build one with .ci/ollama.sh and set %s=$(.ci/ollama.sh)", EnvBinary, EnvBinary)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: the real-Ollama tests must run)")
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("$%s: %v", EnvBinary, err)
	}
	return bin
}

// Start starts a server with the model DefaultModel and stops it when the
// test ends; its log is printed when the test failed.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	s := &Server{bin: bin, home: filepath.Join(dir, "home"), gguf: filepath.Join(dir, "tiny.gguf"), log: &Log{}, exited: make(chan struct{})}
	if err := os.MkdirAll(s.home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeModel(s.gguf); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s.host = "127.0.0.1:" + strconv.Itoa(port)

	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(s.env(), "OLLAMA_MODELS="+filepath.Join(dir, "models"), "OLLAMA_NUM_PARALLEL=1", "OLLAMA_MAX_LOADED_MODELS=1")
	if opts.ContextLength > 0 {
		s.cmd.Env = append(s.cmd.Env, "OLLAMA_CONTEXT_LENGTH="+strconv.Itoa(opts.ContextLength))
	}
	if opts.Debug {
		s.cmd.Env = append(s.cmd.Env, "OLLAMA_DEBUG=1")
	}
	s.cmd.Env = append(s.cmd.Env, opts.Env...)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	ownGroup(s.cmd)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("ollama serve: %v", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			t.Logf("ollama serve log:\n%s", s.log.String())
		}
	})
	if err := s.waitReady(); err != nil {
		t.Fatalf("ollama serve on %s: %v\nlog:\n%s", s.host, err, s.log.String())
	}
	s.Create(t, Model{Name: DefaultModel})
	return s
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return "http://" + s.host }

// Log is the server's log so far, with its runners'.
func (s *Server) Log() *Log { return s.log }

// Create creates m from tinymodel's GGUF with `ollama create`.
func (s *Server) Create(t testing.TB, m Model) {
	t.Helper()
	var mf strings.Builder
	fmt.Fprintf(&mf, "FROM %s\nTEMPLATE \"\"\"%s\"\"\"\n", s.gguf, tinymodel.ChatTemplate)
	if m.NumCtx > 0 {
		fmt.Fprintf(&mf, "PARAMETER num_ctx %d\n", m.NumCtx)
	}
	path := filepath.Join(filepath.Dir(s.gguf), m.Name+".Modelfile")
	if err := os.WriteFile(path, []byte(mf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), createDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, "create", m.Name, "-f", path)
	cmd.Env = s.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ollama create %s: %v\n%s\nserver log:\n%s", m.Name, err, out, s.log.String())
	}
}

// env is the environment of the server and its client commands: the
// server's address and a home of its own (Ollama keeps its key there).
func (s *Server) env() []string {
	env := []string{"OLLAMA_HOST=" + s.host, "HOME=" + s.home}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "TMPDIR" || k == "LANG" {
			env = append(env, kv)
		}
	}
	return env
}

// waitReady polls GET / until the server answers 200, the server exits, or
// the start deadline passes.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startDeadline)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before answering: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not answering after %v (last: %v)", startDeadline, err)
		case <-tick.C:
		}
	}
}

// stop interrupts the server, which unloads its runners and exits; past
// the stop deadline it kills the server's process group (the server is
// still alive then, so the group is still its own).
func (s *Server) stop(t testing.TB) {
	if err := interrupt(s.cmd); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Logf("interrupting ollama serve: %v", err)
	}
	select {
	case <-s.exited:
		return
	case <-time.After(stopDeadline):
	}
	t.Logf("ollama serve still running %v after the interrupt: killed with its runners", stopDeadline)
	killGroup(s.cmd)
	<-s.exited
}

// writeModel writes tinymodel's GGUF to path.
func writeModel(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := tinymodel.WriteGGUF(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Log is a server's output, safe for concurrent writes and reads.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Len is the log's length: a mark for Since.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len()
}

// String is the whole log.
func (l *Log) String() string { return l.Since(0) }

// Since is the log after mark (a Len taken earlier).
func (l *Log) Since(mark int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf.Bytes()[min(mark, l.buf.Len()):])
}

// Records parses the log lines after mark that are log/slog text records
// (time=... level=WARN source=... msg="..." key=value ...); other lines
// (llama.cpp's own output, the request log) are left out.
func (l *Log) Records(mark int) []Record {
	var out []Record
	for line := range strings.Lines(l.Since(mark)) {
		if r, ok := ParseRecord(strings.TrimRight(line, "\r\n")); ok {
			out = append(out, r)
		}
	}
	return out
}

// Record is one slog record of the log.
type Record struct {
	Level, Msg string
	// Attrs holds every key but level and msg, values unquoted.
	Attrs map[string]string
}

// ParseRecord parses a log/slog text line: space-separated key=value
// pairs, values bare or Go-quoted. ok is false unless it has a level and a
// msg.
func ParseRecord(line string) (r Record, ok bool) {
	r.Attrs = map[string]string{}
	for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimLeft(rest, " ") {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || strings.ContainsAny(rest[:eq], " \"") {
			return Record{}, false
		}
		key, val := rest[:eq], rest[eq+1:]
		if strings.HasPrefix(val, `"`) {
			q, err := strconv.QuotedPrefix(val)
			if err != nil {
				return Record{}, false
			}
			rest = val[len(q):]
			val, _ = strconv.Unquote(q)
		} else {
			end := strings.IndexByte(val, ' ')
			if end < 0 {
				end = len(val)
			}
			val, rest = val[:end], val[end:]
		}
		switch key {
		case "level":
			r.Level = val
		case "msg":
			r.Msg = val
		default:
			r.Attrs[key] = val
		}
	}
	return r, r.Level != "" && r.Msg != ""
}
