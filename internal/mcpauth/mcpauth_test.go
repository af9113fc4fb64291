package mcpauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// env is one test's servers, token directory and captured output.
type env struct {
	t    *testing.T
	as   *testAS
	rs   *testRS
	dir  string
	logs *syncBuffer
	errs *syncBuffer
}

func newEnv(t *testing.T) *env {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CTXKIT_HOME", t.TempDir())
	as := newTestAS(t)
	return &env{
		t:    t,
		as:   as,
		rs:   newTestRS(t, as),
		dir:  filepath.Join(os.Getenv("CTXKIT_HOME"), "oauth"),
		logs: &syncBuffer{},
		errs: &syncBuffer{},
	}
}

// handler is a new Handler for serverURL, as a new process would make it.
func (e *env) handler(serverURL string, open func(string) error) *Handler {
	e.t.Helper()
	h, err := NewHandler(Config{
		ServerURL:   serverURL,
		TokenDir:    e.dir,
		Stderr:      e.errs,
		OpenBrowser: open,
		Logger:      slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		FlowTimeout: time.Minute, // a guard against a hung test, not a measurement
	})
	if err != nil {
		e.t.Fatalf("NewHandler: %v", err)
	}
	return h
}

// record reads the token file of serverURL.
func (e *env) record(serverURL string) record {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, TokenFileName(serverURL)))
	if err != nil {
		e.t.Fatalf("read token file: %v", err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		e.t.Fatalf("decode token file: %v", err)
	}
	return r
}

// expireStored moves the stored token's expiry into the past, as if the
// process had slept past it.
func (e *env) expireStored(serverURL string) {
	e.t.Helper()
	s, err := newFileStore(e.dir, serverURL)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.update(func(r *record) { r.Token.Expiry = time.Now().Add(-time.Minute) }); err != nil {
		e.t.Fatal(err)
	}
}

// checkNoLeak fails if a code or token the authorization server minted
// appears in the logs or on stderr.
func (e *env) checkNoLeak() {
	e.t.Helper()
	logs, errs := e.logs.String(), e.errs.String()
	for _, s := range e.as.secrets() {
		if strings.Contains(logs, s) || strings.Contains(errs, s) {
			e.t.Errorf("secret %.6s... appears in the logs or on stderr", s)
		}
	}
}

// callWhoami connects with transport, calls the tool and closes.
func callWhoami(t *testing.T, transport mcp.Transport) (string, error) {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "ctxkit-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	return whoami(ctx, cs)
}

func whoami(ctx context.Context, cs *mcp.ClientSession) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", errors.New("unexpected tool result")
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

func streamable(url string, h *Handler) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h, DisableStandaloneSSE: true}
}

// authorized starts the servers and runs a first connect through the
// browser flow; it returns the env, the browser and the endpoint URL.
func authorized(t *testing.T) (*env, *browser, string) {
	t.Helper()
	e := newEnv(t)
	b := &browser{t: t}
	url := e.rs.streamableURL()
	if got, err := callWhoami(t, streamable(url, e.handler(url, b.open))); err != nil || got != "hello user-1" {
		t.Fatalf("first connect: %q, %v", got, err)
	}
	return e, b, url
}

func TestFlowStoresTokenAndNextProcessReusesIt(t *testing.T) {
	e := newEnv(t)
	b := &browser{t: t}
	url := e.rs.streamableURL()

	got, err := callWhoami(t, streamable(url, e.handler(url, b.open)))
	if err != nil {
		t.Fatalf("first connect: %v", err)
	}
	if got != "hello user-1" {
		t.Errorf("tool said %q", got)
	}
	if reg, authz, exch, _ := e.as.counts(); reg != 1 || authz != 1 || exch != 1 || b.count() != 1 {
		t.Errorf("registrations, authorizations, exchanges, browser = %d, %d, %d, %d; want 1 each", reg, authz, exch, b.count())
	}
	if !strings.Contains(e.errs.String(), e.as.srv.URL+"/authorize?") {
		t.Errorf("stderr does not show the authorization URL:\n%s", e.errs.String())
	}

	path := filepath.Join(e.dir, TokenFileName(url))
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("token file: %v, mode %v; want 0600", err, fi.Mode().Perm())
		}
		if fi, err := os.Stat(e.dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("token dir: %v, mode %v; want 0700", err, fi.Mode().Perm())
		}
	}
	rec := e.record(url)
	if rec.ServerURL != url || rec.Token == nil || rec.Token.RefreshToken == "" || rec.Client == nil || rec.Client.Issuer != e.as.srv.URL {
		t.Fatalf("stored record incomplete: server %q, token %v, client %+v", rec.ServerURL, rec.Token != nil, rec.Client)
	}
	entries, _ := os.ReadDir(e.dir)
	if len(entries) != 1 {
		t.Errorf("token dir holds %d entries, want the one file (no temp files left)", len(entries))
	}

	// A new process: the stored token is used, no browser, no registration.
	got, err = callWhoami(t, streamable(url, e.handler(url, noBrowser(t))))
	if err != nil || got != "hello user-1" {
		t.Fatalf("second process: %q, %v", got, err)
	}
	if reg, authz, _, refr := e.as.counts(); reg != 1 || authz != 1 || refr != 0 {
		t.Errorf("second process: registrations %d, authorizations %d, refreshes %d; want 1, 1, 0", reg, authz, refr)
	}
	e.checkNoLeak()
}

func TestExpiredTokenIsRefreshedAndPersisted(t *testing.T) {
	e, _, url := authorized(t)
	before := e.record(url).Token

	// A later process finds the stored token expired.
	e.expireStored(url)
	if _, err := callWhoami(t, streamable(url, e.handler(url, noBrowser(t)))); err != nil {
		t.Fatalf("connect with an expired stored token: %v", err)
	}
	after := e.record(url).Token
	if _, _, _, refr := e.as.counts(); refr != 1 {
		t.Errorf("refreshes = %d, want 1", refr)
	}
	if after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
		t.Errorf("the refreshed (rotated) token was not persisted")
	}
	if !after.Expiry.After(time.Now()) {
		t.Errorf("persisted expiry %v is not in the future", after.Expiry)
	}
	e.checkNoLeak()
}

func TestTinyExpiryRefreshesDuringSession(t *testing.T) {
	e := newEnv(t)
	e.as.setTTL(time.Second)
	b := &browser{t: t}
	url := e.rs.streamableURL()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "ctxkit-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, streamable(url, e.handler(url, b.open)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	first := e.record(url).Token

	// Wait until the one-second token is past its expiry; the next call must
	// refresh it rather than fail.
	for !time.Now().After(first.Expiry) {
		time.Sleep(50 * time.Millisecond)
	}
	if got, err := whoami(ctx, cs); err != nil || got != "hello user-1" {
		t.Fatalf("call after expiry: %q, %v", got, err)
	}
	if _, _, _, refr := e.as.counts(); refr < 1 {
		t.Errorf("no refresh happened")
	}
	if b.count() != 1 {
		t.Errorf("browser opened %d times, want 1", b.count())
	}
	if now := e.record(url).Token; now.AccessToken == first.AccessToken {
		t.Errorf("refreshed token not persisted")
	}
	e.checkNoLeak()
}

func TestRevokedRefreshTokenFallsBackToBrowser(t *testing.T) {
	e, b, url := authorized(t)
	e.as.revokeRefresh()
	e.expireStored(url)

	if got, err := callWhoami(t, streamable(url, e.handler(url, b.open))); err != nil || got != "hello user-1" {
		t.Fatalf("connect after revocation: %q, %v", got, err)
	}
	reg, authz, _, refr := e.as.counts()
	if b.count() != 2 || authz != 2 || refr != 0 {
		t.Errorf("browser %d, authorizations %d, refreshes %d; want 2, 2, 0", b.count(), authz, refr)
	}
	if reg != 1 {
		t.Errorf("registrations = %d; the stored client should have been reused", reg)
	}
	if rec := e.record(url); rec.Token == nil {
		t.Errorf("the new token was not stored")
	}
	e.checkNoLeak()
}

func TestBusyRedirectPortRegistersAgain(t *testing.T) {
	e, b, url := authorized(t)
	port, ok := redirectPort(e.record(url).Client.RedirectURI)
	if !ok {
		t.Fatalf("stored redirect URI %q", e.record(url).Client.RedirectURI)
	}
	// Another program now holds the port the client was registered with.
	lis, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("cannot take port %d: %v", port, err)
	}
	defer lis.Close()
	e.as.revokeRefresh()
	e.expireStored(url)

	if got, err := callWhoami(t, streamable(url, e.handler(url, b.open))); err != nil || got != "hello user-1" {
		t.Fatalf("connect: %q, %v", got, err)
	}
	if reg, _, _, _ := e.as.counts(); reg != 2 {
		t.Errorf("registrations = %d, want 2 (a new client on a free port)", reg)
	}
	if p, _ := redirectPort(e.record(url).Client.RedirectURI); p == port {
		t.Errorf("the new registration kept the busy port")
	}
}

func TestRejectedAccessTokenIsRefreshedWithoutBrowser(t *testing.T) {
	e, _, url := authorized(t)
	// The server forgets the access token although it has not expired.
	e.as.revokeAccess()
	if got, err := callWhoami(t, streamable(url, e.handler(url, noBrowser(t)))); err != nil || got != "hello user-1" {
		t.Fatalf("connect: %q, %v", got, err)
	}
	if _, authz, _, refr := e.as.counts(); authz != 1 || refr != 1 {
		t.Errorf("authorizations %d, refreshes %d; want 1, 1", authz, refr)
	}
}

func TestRefusedRefreshedTokenLeadsToBrowser(t *testing.T) {
	e, b, url := authorized(t)
	e.as.revokeAccess()
	e.as.mu.Lock()
	e.as.refreshedUnusable = true
	e.as.mu.Unlock()

	// The refresh gives a token the server refuses too. The transport
	// retries a request once, so depending on how many requests the
	// connect makes, the browser flow comes in this connect or the next;
	// either way there is one refresh, not a refresh loop.
	h := e.handler(url, b.open)
	got, err := callWhoami(t, streamable(url, h))
	if err != nil {
		got, err = callWhoami(t, streamable(url, h))
	}
	if err != nil || got != "hello user-1" {
		t.Fatalf("connect: %q, %v", got, err)
	}
	if _, authz, _, refr := e.as.counts(); authz != 2 || refr != 1 || b.count() != 2 {
		t.Errorf("authorizations %d, refreshes %d, browser %d; want 2, 1, 2", authz, refr, b.count())
	}
}

func TestDeniedAuthorization(t *testing.T) {
	e := newEnv(t)
	e.as.setDeny(true)
	b := &browser{t: t}
	url := e.rs.streamableURL()
	_, err := callWhoami(t, streamable(url, e.handler(url, b.open)))
	if err == nil {
		t.Fatal("connect succeeded although the user denied")
	}
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "access_denied") || !strings.Contains(err.Error(), url) {
		t.Errorf("error %q: want ErrDenied naming access_denied and the server", err)
	}
	if rec := e.record(url); rec.Token != nil {
		t.Errorf("a token was stored after a denial")
	}
}

func TestForgedCallbackIsIgnored(t *testing.T) {
	e := newEnv(t)
	b := &browser{t: t}
	b.before = func(authURL string) {
		// A local page tries to complete the flow with its own code.
		u, _ := neturl.Parse(authURL)
		forged := u.Query().Get("redirect_uri") + "?code=evil&state=wrong"
		resp, err := http.Get(forged)
		if err != nil {
			t.Errorf("forged callback: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("forged callback got %s, want 400", resp.Status)
		}
	}
	url := e.rs.streamableURL()
	if got, err := callWhoami(t, streamable(url, e.handler(url, b.open))); err != nil || got != "hello user-1" {
		t.Fatalf("connect: %q, %v", got, err)
	}
}

func TestUnauthorizedWithoutOAuth(t *testing.T) {
	e := newEnv(t)
	// A server that wants a fixed API key: 401, no metadata anywhere.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k" {
			http.Error(w, "missing key", http.StatusUnauthorized)
			return
		}
		http.NotFound(w, r)
	}))
	defer plain.Close()
	url := plain.URL + "/mcp"
	_, err := callWhoami(t, streamable(url, e.handler(url, noBrowser(t))))
	if !errors.Is(err, ErrNoOAuth) || !strings.Contains(err.Error(), url) {
		t.Errorf("error %v: want ErrNoOAuth naming the server", err)
	}
}

func TestFlowTimeout(t *testing.T) {
	e := newEnv(t)
	url := e.rs.streamableURL()
	h, err := NewHandler(Config{
		ServerURL:   url,
		TokenDir:    e.dir,
		Stderr:      e.errs,
		OpenBrowser: func(string) error { return nil }, // the user never comes back
		FlowTimeout: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = callWhoami(t, streamable(url, h))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no authorization within") {
		t.Errorf("error %v: want a timeout naming the wait", err)
	}
}

func TestSSETransportAddsToken(t *testing.T) {
	e := newEnv(t)
	b := &browser{t: t}
	url := e.rs.sseURL()
	h := e.handler(url, b.open)
	sse := &mcp.SSEClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: h.Transport(nil)}}
	if got, err := callWhoami(t, sse); err != nil || got != "hello user-1" {
		t.Fatalf("SSE with flow: %q, %v", got, err)
	}
	if b.count() != 1 {
		t.Errorf("browser opened %d times, want 1", b.count())
	}

	// A new process over SSE reuses the stored token; an expired one is refreshed.
	e.expireStored(url)
	h2 := e.handler(url, noBrowser(t))
	sse = &mcp.SSEClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: h2.Transport(nil)}}
	if got, err := callWhoami(t, sse); err != nil || got != "hello user-1" {
		t.Fatalf("SSE with stored token: %q, %v", got, err)
	}
	if _, authz, _, refr := e.as.counts(); authz != 1 || refr != 1 {
		t.Errorf("authorizations %d, refreshes %d; want 1, 1", authz, refr)
	}

	// The header really is what gets the request in.
	req, _ := http.NewRequest(http.MethodGet, e.rs.srv.URL+"/probe", nil)
	var seen string
	probe := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = r.Header.Get("Authorization")
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})
	resp, err := h2.Transport(probe).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := "Bearer " + e.record(url).Token.AccessToken; seen != want {
		t.Errorf("Authorization header %q, want the stored token", seen)
	}
	if req.Header.Get("Authorization") != "" {
		t.Errorf("the caller's request was modified")
	}
	// Another host (a redirect, an SSE endpoint elsewhere) gets no token.
	elsewhere := strings.Replace(e.rs.srv.URL, "127.0.0.1", "localhost", 1) + "/probe"
	req, _ = http.NewRequest(http.MethodGet, elsewhere, nil)
	seen = ""
	if resp, err = h2.Transport(probe).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if seen != "" {
		t.Errorf("a request to %s got Authorization %q", elsewhere, seen)
	}
	e.checkNoLeak()
}

func TestConcurrentUnauthorizedRequestsRunOneFlow(t *testing.T) {
	e := newEnv(t)
	b := &browser{t: t}
	url := e.rs.sseURL()
	h := e.handler(url, b.open)
	client := &http.Client{Transport: h.Transport(nil)}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			// Any request to the protected path will do: it returns 401 until authorized.
			req, _ := http.NewRequest(http.MethodPost, url+"?sessionid=none", strings.NewReader("{}"))
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("request: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				t.Errorf("still 401 after authorization")
			}
		})
	}
	wg.Wait()
	if b.count() != 1 {
		t.Errorf("browser opened %d times for concurrent requests, want 1", b.count())
	}
}

func TestCorruptTokenFileIsReplaced(t *testing.T) {
	e := newEnv(t)
	url := e.rs.streamableURL()
	if err := os.MkdirAll(e.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, TokenFileName(url)), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t}
	if _, err := callWhoami(t, streamable(url, e.handler(url, b.open))); err != nil {
		t.Fatal(err)
	}
	if rec := e.record(url); rec.Token == nil {
		t.Errorf("token not stored over the corrupt file")
	}
}

func TestNewHandlerRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{ServerURL: "ftp://example.com/mcp", TokenDir: t.TempDir()},
		{ServerURL: "not a url", TokenDir: t.TempDir()},
		{ServerURL: "https://example.com/mcp"},
	} {
		if _, err := NewHandler(cfg); err == nil {
			t.Errorf("NewHandler(%+v) succeeded", cfg)
		}
	}
}

func TestDescribeOAuthErrorQuotesAndClips(t *testing.T) {
	for _, tc := range []struct{ code, desc, want string }{
		{"access_denied", "", `"access_denied"`},
		{"access_denied", "no\x1b[31m", `"access_denied": "no\x1b[31m"`},
		{"x", strings.Repeat("d", 400), `"x": "` + strings.Repeat("d", 300) + `..."`},
	} {
		if got := describeOAuthError(tc.code, tc.desc); got != tc.want {
			t.Errorf("describeOAuthError(%q, %q) = %s, want %s", tc.code, tc.desc, got, tc.want)
		}
	}
}

func TestRedirectPort(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		port int
		ok   bool
	}{
		{redirectURI(8123), 8123, true},
		{"http://localhost:8123/callback", 0, false},
		{"http://127.0.0.1/callback", 0, false},
		{"https://127.0.0.1:8123/callback", 0, false},
		{"http://127.0.0.1:8123/other", 0, false},
		{"http://127.0.0.1:99999/callback", 0, false},
	} {
		port, ok := redirectPort(tc.uri)
		if port != tc.port || ok != tc.ok {
			t.Errorf("redirectPort(%q) = %d, %v; want %d, %v", tc.uri, port, ok, tc.port, tc.ok)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
