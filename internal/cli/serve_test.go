package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startServe runs `ctxkit serve` (runServe, over the default store) on a
// loopback port until ctx ends; it returns the server's base URL and the
// channel runServe's result arrives on.
func startServe(t *testing.T, ctx context.Context) (string, <-chan error) {
	t.Helper()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, &globals{}, &ServeOptions{Addr: "127.0.0.1:0", Grace: 5 * time.Second},
			IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, func(addr string) { addrc <- addr })
	}()
	select {
	case addr := <-addrc:
		return "http://" + addr, done
	case err := <-done:
		t.Fatalf("serve: %v", err)
		return "", nil
	}
}

// TestServe runs `ctxkit serve` on a loopback port: the health check, the
// REST API and the MCP endpoint answer behind one authentication, and a
// cancelled context shuts the server down cleanly.
func TestServe(t *testing.T) {
	token := agentVaults(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, done := startServe(t, ctx)
	owner, err := openTestVaults(t).svc.OwnerToken(ctx, false)
	if err != nil {
		t.Fatalf("the first serve creates the owner token: %v", err)
	}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path, token string
		status      int
		has, hasNot string
	}{
		{"/healthz", "", 200, `"ok"`, ""},
		{"/v1/openapi.json", "", 200, `"3.1.0"`, ""},
		{"/v1/vaults", "", 401, `"unauthenticated"`, ""},
		{"/v1/vaults", token, 200, `"notes"`, "secret"},
		{"/v1/vaults", owner, 200, `"secret"`, ""},
		{"/mcp", "", 401, `"unauthenticated"`, ""},
	} {
		status, body := get(tc.path, tc.token)
		if status != tc.status || !strings.Contains(body, tc.has) || (tc.hasNot != "" && strings.Contains(body, tc.hasNot)) {
			t.Errorf("GET %s: %d %s", tc.path, status, body)
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_vaults"})
	if err != nil || res.IsError || strings.Contains(res.Content[0].(*mcp.TextContent).Text, "secret") {
		t.Errorf("list_vaults over /mcp: %v %+v", err, res)
	}
	cs.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func TestServeRefusesPlainHTTPOnTheNetwork(t *testing.T) {
	vaultEnv(t)
	for _, tc := range []struct {
		opts ServeOptions
		want string
	}{
		{ServeOptions{Addr: "0.0.0.0:0"}, "give --tls-cert and --tls-key, or --insecure"},
		{ServeOptions{Addr: "192.0.2.1:8000"}, "give --tls-cert and --tls-key, or --insecure"},
		{ServeOptions{Addr: "127.0.0.1:0", TLSCert: "c.pem"}, "--tls-cert and --tls-key go together"},
		// CtxVault's header mode trusts an unchecked name: loopback only,
		// even with --insecure or TLS.
		{ServeOptions{Addr: "0.0.0.0:8000", Insecure: true, CtxVaultAuth: "header"}, "serves a loopback address only"},
		{ServeOptions{Addr: "192.0.2.1:8000", Insecure: true, CtxVaultAuth: "header"}, "serves a loopback address only"},
		{ServeOptions{Addr: "127.0.0.1:0", CtxVaultAuth: "trust"}, `--ctxvault-auth "trust": want token or header`},
	} {
		err := runServe(t.Context(), &globals{store: "memory:"}, &tc.opts, IO{Err: io.Discard}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc.opts, err)
		}
	}
}

// TestServeFollowsAVaultPurgedAndCreatedAgain is a regression test (issue
// 14): with `ctxkit serve` running, `ctxkit vault delete X --purge` then
// `ctxkit vault init X` left the server on the deleted vault's stores, and
// its writes answered 201 and were lost. They must land in the new vault.
func TestServeFollowsAVaultPurgedAndCreatedAgain(t *testing.T) {
	vaultEnv(t)
	mustRun(t, "vault", "init", "mem", "--type", "episodic")
	mustRun(t, "vault", "init", "kb")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, done := startServe(t, ctx)
	owner, err := openTestVaults(t).svc.OwnerToken(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string, want int) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+owner)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s; want %d", method, path, res.StatusCode, b, want)
		}
		return string(b)
	}
	// The server opens both vaults' stores (and keeps kb's searcher).
	call("POST", "/v1/vaults/mem/episodes", `{"content": "the old vault's statement"}`, http.StatusCreated)
	call("PUT", "/v1/vaults/kb/documents/old.md", `{"content": "# Old\n\nwords of the old vault\n"}`, http.StatusOK)
	call("POST", "/v1/vaults/kb/query", `{"query": "words"}`, http.StatusOK)

	// Another process purges them and creates them again, same names,
	// same folders.
	for _, args := range [][]string{{"vault", "delete", "mem", "--purge"}, {"vault", "init", "mem", "--type", "episodic"},
		{"vault", "delete", "kb", "--purge"}, {"vault", "init", "kb"}} {
		mustRun(t, args...)
	}

	call("POST", "/v1/vaults/mem/episodes", `{"content": "the new vault's statement"}`, http.StatusCreated)
	call("PUT", "/v1/vaults/kb/documents/new.md", `{"content": "# New\n\nwords of the new vault\n"}`, http.StatusOK)
	var res struct {
		Results []struct {
			Path string `json:"path"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(call("POST", "/v1/vaults/kb/query", `{"query": "words"}`, http.StatusOK)), &res); err != nil ||
		len(res.Results) != 1 || res.Results[0].Path != "new.md" {
		t.Errorf("query through the server after the vault was made again: %v %+v", err, res)
	}

	// A fresh process sees what the server wrote, and only that.
	var eps []episodeJSON
	if err := json.Unmarshal([]byte(mustRun(t, "vault", "episodes", "mem", "--all", "--json")), &eps); err != nil ||
		len(eps) != 1 || eps[0].Content != "the new vault's statement" {
		t.Errorf("episodes of the new vault: %v %+v", err, eps)
	}
	var docs []struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "vault", "docs", "kb", "--json")), &docs); err != nil || len(docs) != 1 || docs[0].Path != "new.md" {
		t.Errorf("documents of the new vault: %v %+v", err, docs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestServeCtxVaultHeader: with --ctxvault-auth header, serve announces it
// in a WARN line, /ctxvault answers a CtxVault client that sends no token,
// and /v1 still wants one.
func TestServeCtxVaultHeader(t *testing.T) {
	agentVaults(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var log strings.Builder
	var mu sync.Mutex
	go func() {
		done <- runServe(ctx, &globals{}, &ServeOptions{Addr: "127.0.0.1:0", Grace: 5 * time.Second, CtxVaultAuth: "header"},
			IO{In: strings.NewReader(""), Out: io.Discard, Err: lockedWriter{&mu, &log}}, func(addr string) { addrc <- addr })
	}()
	var base string
	select {
	case addr := <-addrc:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	mu.Lock()
	announced := log.String()
	mu.Unlock()
	if !strings.Contains(announced, "level=WARN") || !strings.Contains(announced, "--ctxvault-auth header") {
		t.Errorf("the start-up log does not announce the header mode: %s", announced)
	}
	for _, tc := range []struct {
		path   string
		status int
	}{{"/ctxvault/vaults", 200}, {"/ctxvault/docs?vault_name=notes", 200}, {"/ctxvault/docs?vault_name=secret", 403}, {"/v1/vaults", 401}} {
		res, err := http.Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("GET %s without a token: %d %s", tc.path, res.StatusCode, b)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// lockedWriter serialises writes to a builder read by the test.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
