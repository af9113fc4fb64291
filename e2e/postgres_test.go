package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
)

// pgInstance is one `ctxkit serve` process on the shared database.
type pgInstance struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
}

var serveURL = regexp.MustCompile(`ctxkit serve: (http://\S+) `)

// startServes starts n `ctxkit serve` processes on one database at once
// (so that their migrations race) and waits until each listens.
func startServes(t *testing.T, n int, env []string) []*pgInstance {
	t.Helper()
	insts := make([]*pgInstance, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range insts {
		wg.Go(func() { insts[i], errs[i] = startServe(t, env) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
	}
	return insts
}

func startServe(t *testing.T, env []string) (*pgInstance, error) {
	cmd := exec.Command(ctxkitBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = env
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inst := &pgInstance{cmd: cmd, stderr: &bytes.Buffer{}}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		pw.Close()
		if t.Failed() {
			t.Logf("serve %s stderr:\n%s", inst.url, inst.stderr)
		}
	})
	found := make(chan string, 1)
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			inst.stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := serveURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case inst.url = <-found:
		return inst, nil
	case <-time.After(callTimeout):
		mu.Lock()
		defer mu.Unlock()
		return nil, fmt.Errorf("serve did not start in %s:\n%s", callTimeout, inst.stderr)
	}
}

// roundRobin is a reverse proxy that sends each request to the next
// instance in turn, as a load balancer without health checks does: a
// request to a dead instance fails (502).
func roundRobin(t *testing.T, insts []*pgInstance) *httptest.Server {
	var proxies []*httputil.ReverseProxy
	for _, in := range insts {
		u, err := url.Parse(in.url)
		if err != nil {
			t.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.ErrorLog = nil
		p.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
		proxies = append(proxies, p)
	}
	var next atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		proxies[next.Add(1)%uint64(len(proxies))].ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// apiClient calls the REST API with a bearer token.
type apiClient struct {
	token string
	hc    *http.Client
}

func (c *apiClient) do(ctx context.Context, method, u string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// must calls and fails the test unless the answer is a success.
func (c *apiClient) must(t *testing.T, method, u string, body, out any) {
	t.Helper()
	code, b, err := c.do(t.Context(), method, u, body)
	if err != nil || code/100 != 2 {
		t.Fatalf("%s %s: %d %s %v", method, u, code, b, err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, u, err, b)
		}
	}
}

// TestPostgresInstances runs three `ctxkit serve` processes on one
// PostgreSQL database behind a round-robin proxy: eight writers write
// documents and episodes through it while one instance is killed with
// SIGKILL; every acknowledged write is stored once, and every surviving
// instance gives the same answers. Then, on the survivors: a write through
// one is seen by a query on another at once, two instances superseding one
// episode at the same moment give one winner and one conflict naming the
// successor, an agent revoked through the CLI is refused by every instance
// at once, and an MCP client works through the balancer.
func TestPostgresInstances(t *testing.T) {
	dbURL := pgtest.URL(t)
	home := t.TempDir()
	env := append(os.Environ(), "CTXKIT_HOME="+home, "HOME="+t.TempDir(), "CTXKIT_STORE="+dbURL)
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(ctxkitBin, args...)
		cmd.Env = env
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("ctxkit %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return string(out)
	}
	insts := startServes(t, 3, env)
	tok, err := os.ReadFile(filepath.Join(home, "owner-token"))
	if err != nil {
		t.Fatal(err)
	}
	owner := &apiClient{token: strings.TrimSpace(string(tok)), hc: &http.Client{Timeout: callTimeout}}
	lb := roundRobin(t, insts)

	owner.must(t, "POST", lb.URL+"/v1/vaults", map[string]any{"name": "notes", "type": "semantic"}, nil)
	owner.must(t, "POST", lb.URL+"/v1/vaults", map[string]any{"name": "events", "type": "episodic"}, nil)

	// Eight writers; instance 1 is killed once a third of the writes are acknowledged.
	const writers, each = 8, 24
	var acked sync.Map // doc path or episode content → true
	var nacked atomic.Int64
	killed := make(chan struct{})
	var killOnce sync.Once
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for j := range each {
				var code int
				var err error
				key := fmt.Sprintf("w%d/d%d.md", w, j)
				if j%2 == 0 {
					code, _, err = owner.do(t.Context(), "PUT", lb.URL+"/v1/vaults/notes/documents/"+key,
						map[string]any{"content": fmt.Sprintf("# Writer %d\n\nzeppelin report %d of writer %d\n", w, j, w)})
				} else {
					key = fmt.Sprintf("writer %d statement %d", w, j)
					code, _, err = owner.do(t.Context(), "POST", lb.URL+"/v1/vaults/events/episodes",
						map[string]any{"content": key, "entities": []string{fmt.Sprintf("w%d", w)}})
				}
				if err == nil && code/100 == 2 {
					acked.Store(key, true)
					if nacked.Add(1) == writers*each/3 {
						killOnce.Do(func() {
							insts[1].cmd.Process.Kill()
							close(killed)
						})
					}
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatal("the writers finished before an instance was killed")
	}
	if n := nacked.Load(); n < writers*each/2 {
		t.Fatalf("only %d of %d writes acknowledged", n, writers*each)
	}
	alive := []*pgInstance{insts[0], insts[2]}

	// Every acknowledged write is stored exactly once, seen alike by every survivor.
	var answers []string
	for _, in := range alive {
		var docs struct {
			Documents []struct {
				Path string `json:"path"`
			} `json:"documents"`
		}
		owner.must(t, "GET", in.url+"/v1/vaults/notes/documents", nil, &docs)
		var eps struct {
			Results []struct {
				Content string `json:"content"`
			} `json:"results"`
		}
		owner.must(t, "POST", in.url+"/v1/vaults/events/episodes/query", map[string]any{"limit": 200}, &eps)
		stored := map[string]int{}
		for _, d := range docs.Documents {
			stored[d.Path]++
		}
		for _, e := range eps.Results {
			stored[e.Content]++
		}
		acked.Range(func(k, _ any) bool {
			if stored[k.(string)] == 0 {
				t.Errorf("%s: acknowledged write %q is not stored", in.url, k)
			}
			return true
		})
		for k, n := range stored {
			if n > 1 {
				t.Errorf("%s: %q stored %d times", in.url, k, n)
			}
		}
		var q json.RawMessage
		owner.must(t, "POST", in.url+"/v1/vaults/notes/query", map[string]any{"query": "zeppelin report writer", "n_results": 20}, &q)
		answers = append(answers, fmt.Sprintf("%d docs, %d episodes, query %s", len(docs.Documents), len(eps.Results), q))
	}
	if answers[0] != answers[1] {
		t.Errorf("the survivors answer differently:\n%s\n%s", answers[0], answers[1])
	}

	// A write acknowledged by one instance is seen by the other at once.
	for i := range 5 {
		word := fmt.Sprintf("quokka%d", i)
		owner.must(t, "PUT", alive[i%2].url+"/v1/vaults/notes/documents/seen"+word+".md", map[string]any{"content": "# Seen\n\n" + word + " at once\n"}, nil)
		var res struct {
			Results []struct {
				Path string `json:"path"`
			} `json:"results"`
		}
		owner.must(t, "POST", alive[(i+1)%2].url+"/v1/vaults/notes/query", map[string]any{"query": word}, &res)
		if len(res.Results) == 0 || res.Results[0].Path != "seen"+word+".md" {
			t.Errorf("a document written through %s is not found through %s at once: %+v", alive[i%2].url, alive[(i+1)%2].url, res)
		}
	}

	// Two instances supersede one episode at the same moment: one wins.
	for i := range 5 {
		var w struct {
			Episode struct {
				ID string `json:"id"`
			} `json:"episode"`
		}
		owner.must(t, "POST", alive[0].url+"/v1/vaults/events/episodes", map[string]any{"content": fmt.Sprintf("race %d starts", i)}, &w)
		codes := make([]int, 2)
		bodies := make([][]byte, 2)
		var rg sync.WaitGroup
		for k, in := range alive {
			rg.Go(func() {
				codes[k], bodies[k], _ = owner.do(t.Context(), "POST", in.url+"/v1/vaults/events/episodes/"+w.Episode.ID+"/supersede",
					map[string]any{"content": fmt.Sprintf("race %d won by %d", i, k)})
			})
		}
		rg.Wait()
		win, lose := 0, 1
		if codes[1]/100 == 2 {
			win, lose = 1, 0
		}
		if codes[win]/100 != 2 || codes[lose] != http.StatusConflict {
			t.Fatalf("race %d: answers %d %s and %d %s, want one 200 and one 409", i, codes[0], bodies[0], codes[1], bodies[1])
		}
		var won struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(bodies[win], &won); err != nil || won.ID == "" || !bytes.Contains(bodies[lose], []byte(won.ID)) {
			t.Errorf("race %d: the conflict %s does not name the successor %q", i, bodies[lose], won.ID)
		}
	}

	// An agent revoked through the CLI is refused by every instance at once.
	out := cli("agent", "create", "bob")
	m := regexp.MustCompile(`ctxk_[A-Za-z0-9_-]+`).FindString(out)
	if m == "" {
		t.Fatalf("no token in %q", out)
	}
	bob := &apiClient{token: m, hc: owner.hc}
	for _, in := range alive {
		bob.must(t, "GET", in.url+"/v1/vaults", nil, nil)
	}
	cli("agent", "revoke", "bob")
	for _, in := range alive {
		if code, b, err := bob.do(t.Context(), "GET", in.url+"/v1/vaults", nil); err != nil || code != http.StatusUnauthorized {
			t.Errorf("%s: a revoked agent's request answered %d %s %v, want 401", in.url, code, b, err)
		}
	}

	// MCP over streamable HTTP through a balancer over the survivors.
	lb2 := roundRobin(t, alive)
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb2.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{owner.token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 4 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"vault": "notes", "query": "quokka0"}})
		if err != nil || res.IsError {
			t.Fatalf("MCP call %d through the balancer: %v %+v", i, err, res)
		}
		if b, _ := json.Marshal(res.StructuredContent); !bytes.Contains(b, []byte("seenquokka0.md")) {
			t.Errorf("MCP call %d: %s lacks the document", i, b)
		}
	}
}

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}
