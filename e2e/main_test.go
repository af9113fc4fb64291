package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Binaries built once by TestMain, and what is missing for the node-based
// tests ("" when node and the npm packages are there). Set before m.Run and
// only read by the tests.
var (
	ctxkitBin   string
	upstreamBin string
	nodeMissing string
	nodeDir     string // absolute path of e2e/node
)

// callTimeout bounds every test's conversation so that a wrapper that stops
// answering fails the test instead of hanging it; it is not a latency bound.
const callTimeout = 60 * time.Second

// threshold is ctxkit wrap's default --threshold, which the tests rely on.
const threshold = 8000

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ctxkit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctxkitBin = filepath.Join(dir, "ctxkit")
	upstreamBin = filepath.Join(dir, "e2e-upstream")
	for _, b := range []struct{ out, pkg string }{
		{ctxkitBin, "./cmd/ctxkit"},
		{upstreamBin, "./e2e/internal/upstream/e2e-upstream"},
	} {
		if err := goBuild(root, b.out, b.pkg); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	nodeDir = filepath.Join(root, "e2e", "node")
	nodeMissing = checkNode(nodeDir)
	if nodeMissing != "" {
		fmt.Fprintf(os.Stderr, "e2e: SKIPPING the tests that need node: %s\n", nodeMissing)
	}
	return m.Run()
}

// goBuild builds pkg into out, with the race detector when the tests run
// with it, so that a data race in the wrapper shows up on its stderr.
func goBuild(root, out, pkg string) error {
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(b))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the ctxkit module")
	}
	return filepath.Dir(gomod), nil
}

// checkNode says what is missing for the node-based tests, or "".
func checkNode(dir string) string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH"
	}
	for _, p := range []string{"sdk", "server-everything", "server-filesystem"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", p, "package.json")); err != nil {
			return fmt.Sprintf("@modelcontextprotocol/%s is not installed (run `npm ci --prefix e2e/node`)", p)
		}
	}
	return ""
}

// requireNode skips the test when node or the pinned npm packages are missing.
func requireNode(t testing.TB) {
	t.Helper()
	if nodeMissing != "" {
		t.Skipf("SKIP (needs node): %s", nodeMissing)
	}
}

// nodeServer is the entry point of a pinned reference server.
func nodeServer(pkg string) string {
	return filepath.Join(nodeDir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
}

// isolate points CTXKIT_HOME and HOME at temporary directories and returns
// a temporary SQLite store path for --store.
func isolate(t testing.TB) string {
	t.Helper()
	t.Setenv("CTXKIT_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	return filepath.Join(t.TempDir(), "ctxkit.db")
}

// wrapArgs is the command line of ctxkit wrap over a stdio upstream.
func wrapArgs(store string, flags []string, upstream ...string) []string {
	args := append([]string{"wrap", "--store", store}, flags...)
	return append(append(args, "--"), upstream...)
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is one MCP server process and the client session talking to it.
type process struct {
	cs     *mcp.ClientSession
	stderr *lockedBuffer
}

// start runs name with args as a stdio MCP server and connects a Go SDK
// client to it. The error is the client's; stderr is kept either way.
func start(ctx context.Context, opts *mcp.ClientOptions, env []string, name string, args ...string) (*process, error) {
	return startVersion(ctx, "", opts, env, name, args...)
}

// legacyProtocol is the newest protocol version the node reference servers
// speak. Tests that compare answers speak it to both sides: a newer version
// adds fields (resultType, serverInfo _meta, ...) that only the wrapper's Go
// SDK server would send.
const legacyProtocol = "2025-11-25"

// startVersion is start with the protocol version the client asks for
// ("" for the SDK's newest).
func startVersion(ctx context.Context, version string, opts *mcp.ClientOptions, env []string, name string, args ...string) (*process, error) {
	return startCollecting(ctx, new(lockedBuffer), version, opts, env, name, args...)
}

// startCollecting is startVersion with the buffer that collects the
// process's stderr, for a test that reads it while the client connects.
func startCollecting(ctx context.Context, stderr *lockedBuffer, version string, opts *mcp.ClientOptions, env []string, name string, args ...string) (*process, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "ctxkit-e2e", Version: "1.0.0"}, opts)
	// Upstreams run directly are stopped quickly: node servers stay up
	// after stdin closes while they have timers. The wrapper must exit on
	// its own; the long wait only bounds a hang.
	terminate := time.Second
	if name == ctxkitBin {
		terminate = 20 * time.Second
	}
	var sessionOpts *mcp.ClientSessionOptions
	if version != "" {
		sessionOpts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminate}, sessionOpts)
	if err != nil {
		// The transport started the process; make sure it is gone.
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return &process{stderr: stderr}, err
	}
	return &process{cs: cs, stderr: stderr}, nil
}

// mustStart is start for a server that must come up; the session is closed
// when the test ends. A wrapped server (ctxkitBin) must also exit cleanly
// when its client goes away and report no data race.
func mustStart(t testing.TB, ctx context.Context, opts *mcp.ClientOptions, name string, args ...string) *mcp.ClientSession {
	t.Helper()
	return mustStartVersion(t, ctx, "", opts, name, args...)
}

// mustStartVersion is mustStart with the protocol version the client asks
// for ("" for the SDK's newest).
func mustStartVersion(t testing.TB, ctx context.Context, version string, opts *mcp.ClientOptions, name string, args ...string) *mcp.ClientSession {
	t.Helper()
	p, err := startVersion(ctx, version, opts, nil, name, args...)
	if err != nil {
		t.Fatalf("connect to %s %s: %v\nstderr:\n%s", name, strings.Join(args, " "), err, p.stderr)
	}
	t.Cleanup(func() { p.close(t, name == ctxkitBin) })
	return p.cs
}

// close ends the session; for the wrapper it checks the exit and stderr.
func (p *process) close(t testing.TB, wrapper bool) {
	t.Helper()
	err := p.cs.Close()
	out := p.stderr.String()
	if wrapper {
		if err != nil {
			t.Errorf("ctxkit wrap did not exit cleanly when its client closed stdin: %v", err)
		}
		if strings.Contains(out, "WARNING: DATA RACE") {
			t.Errorf("ctxkit wrap reported a data race")
		}
	}
	if t.Failed() || testing.Verbose() {
		label := "upstream"
		if wrapper {
			label = "ctxkit wrap"
		}
		t.Logf("%s stderr:\n%s", label, out)
	}
}

// testContext bounds a test's conversation (see callTimeout).
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// texts joins the text content of a result.
func texts(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// call calls a tool and fails the test on a protocol error or a tool error.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("call %s: tool error: %s", name, texts(res))
	}
	return res
}

// callJSON calls an exploration tool and decodes its JSON text answer.
func callJSON(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any, out any) {
	t.Helper()
	res := call(t, ctx, cs, name, args)
	if err := json.Unmarshal([]byte(texts(res)), out); err != nil {
		t.Fatalf("%s answered text that is not the expected JSON: %v\n%s", name, err, texts(res))
	}
}

// asJSON marshals v for comparisons and messages.
func asJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

// wsIDPattern is the form of a stored result's id (ARCHITECTURE.md:
// "<type>_<12 hex>", the type being the tool's name or ws).
var wsIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*_[0-9a-f]{12}$`)

// notice decodes the notice that replaced an offloaded result and checks
// that it names a workspace id of the documented form.
type notice struct {
	StoredResult string `json:"stored_result"`
	Tool         string `json:"tool"`
	Shape        string `json:"shape"`
	Chars        int64  `json:"chars"`
	HowToExplore string `json:"how_to_explore"`
}

func parseNotice(t *testing.T, text string) notice {
	t.Helper()
	var n notice
	if err := json.Unmarshal([]byte(text), &n); err != nil {
		t.Fatalf("the offloaded result's text is not a notice (JSON): %v\n%.2000s", err, text)
	}
	if !wsIDPattern.MatchString(n.StoredResult) {
		t.Fatalf("notice stored_result = %q, want a workspace id <type>_<12 hex>\n%s", n.StoredResult, text)
	}
	if !strings.Contains(n.HowToExplore, n.StoredResult) {
		t.Errorf("notice how_to_explore does not name the workspace %s: %q", n.StoredResult, n.HowToExplore)
	}
	return n
}

var timePattern = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}( ?[AP]M)?`)
