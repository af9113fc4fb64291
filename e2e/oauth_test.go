package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/ctxkit/ctxkit/e2e/internal/upstream"
)

// oauthUpstream is a remote MCP server that asks for OAuth (a 401 with
// WWW-Authenticate naming its protected-resource metadata) and the
// authorization server it trusts: discovery, dynamic registration, the
// authorization code with PKCE (S256 checked) and the token endpoint.
type oauthUpstream struct {
	mcpURL string

	mu         sync.Mutex
	challenges map[string]string // code → code_challenge
	issued     map[string]bool   // access tokens
	exchanges  int
}

const oauthAccessPrefix = "e2e-access-"

func newOAuthUpstream(t *testing.T) *oauthUpstream {
	t.Helper()
	u := &oauthUpstream{challenges: map[string]string{}, issued: map[string]bool{}}

	as := http.NewServeMux()
	asSrv := httptest.NewServer(as)
	t.Cleanup(asSrv.Close)
	as.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, http.StatusOK, map[string]any{
			"issuer":                                asSrv.URL,
			"authorization_endpoint":                asSrv.URL + "/authorize",
			"token_endpoint":                        asSrv.URL + "/token",
			"registration_endpoint":                 asSrv.URL + "/register",
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	as.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req["client_id"] = "e2e-client"
		req["token_endpoint_auth_method"] = "none"
		writeJSONBody(w, http.StatusCreated, req)
	})
	as.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "e2e-client" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		code := "code-" + q.Get("state")
		u.mu.Lock()
		u.challenges[code] = q.Get("code_challenge")
		u.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
	})
	as.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "authorization_code" {
			writeJSONBody(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		u.mu.Lock()
		defer u.mu.Unlock()
		challenge, ok := u.challenges[r.Form.Get("code")]
		delete(u.challenges, r.Form.Get("code"))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			writeJSONBody(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		u.exchanges++
		token := oauthAccessPrefix + r.Form.Get("code")
		u.issued[token] = true
		writeJSONBody(w, http.StatusOK, map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "refresh-" + token})
	})

	rs := http.NewServeMux()
	rsSrv := httptest.NewServer(rs)
	t.Cleanup(rsSrv.Close)
	u.mcpURL = rsSrv.URL + "/mcp"
	metadataURL := rsSrv.URL + "/.well-known/oauth-protected-resource/mcp"
	prm := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: u.mcpURL, AuthorizationServers: []string{asSrv.URL}})
	rs.Handle("/.well-known/oauth-protected-resource/mcp", prm)
	rs.Handle("/.well-known/oauth-protected-resource", prm)
	server := upstream.New(upstream.Hooks{})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		if !u.issued[token] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	rs.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	return u
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var authorizeURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/authorize\?\S+`)

// A remote upstream that asks for OAuth: ctxkit wrap prints the sign-in URL
// on stderr; opening it (here: an HTTP GET that follows the redirect to the
// wrapper's loopback listener) completes the flow, the upstream's tools
// appear and a call goes through; the token is kept 0600 and never shown.
func TestOAuthSignInThroughWrap(t *testing.T) {
	store := isolate(t)
	up := newOAuthUpstream(t)
	ctx := testContext(t)

	// No DISPLAY: the wrapper must not try to open a browser here.
	env := []string{"HOME=" + os.Getenv("HOME"), "CTXKIT_HOME=" + os.Getenv("CTXKIT_HOME"), "PATH=" + os.Getenv("PATH")}
	type started struct {
		p   *process
		err error
	}
	done := make(chan started, 1)
	stderr := new(lockedBuffer)
	go func() {
		p, err := startCollecting(ctx, stderr, "", nil, env, ctxkitBin, "wrap", "--store", store, "--name", "signin", up.mcpURL)
		done <- started{p, err}
	}()

	// Act as the person at the browser: find the URL in the wrapper's
	// stderr and open it.
	var signedIn bool
	var p *process
	for p == nil {
		select {
		case s := <-done:
			if s.err != nil {
				t.Fatalf("connect to the wrapper: %v\nstderr:\n%s", s.err, s.p.stderr)
			}
			p = s.p
		case <-time.After(50 * time.Millisecond):
			if signedIn {
				continue
			}
			if link := authorizeURL.FindString(stderr.String()); link != "" {
				resp, err := http.Get(link)
				if err != nil {
					t.Fatalf("open the sign-in URL: %v", err)
				}
				resp.Body.Close()
				signedIn = true
			}
		case <-ctx.Done():
			t.Fatal("the wrapper never connected")
		}
	}
	t.Cleanup(func() { p.close(t, true) })
	if !signedIn {
		t.Fatalf("the wrapper connected without a sign-in; stderr:\n%s", p.stderr)
	}

	// The upstream's tools arrive with initialize or, if the sign-in took
	// longer, with list_changed.
	deadline := time.Now().Add(callTimeout)
	for !hasTool(t, ctx, p.cs, "echo") {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream's tools never appeared; stderr:\n%s", p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "signed in"}})
	if err != nil || res.IsError || !strings.Contains(texts(res), "signed in") {
		t.Fatalf("call after sign-in: %v %v", res, err)
	}

	files, _ := filepath.Glob(filepath.Join(os.Getenv("CTXKIT_HOME"), "oauth", "*"))
	var tokenFile bool
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), oauthAccessPrefix) {
			continue
		}
		tokenFile = true
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
			t.Errorf("token file %s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if !tokenFile {
		t.Errorf("no token file under $CTXKIT_HOME/oauth: %v", files)
	}
	if strings.Contains(p.stderr.String(), oauthAccessPrefix) {
		t.Errorf("the access token appears on stderr")
	}
}

func hasTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string) bool {
	t.Helper()
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == name {
			return true
		}
	}
	return false
}
