package mcpauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// testAS is an OAuth 2.1 authorization server for the tests: RFC 8414
// metadata, RFC 7591 registration, /authorize checking client, redirect URI,
// S256 challenge and state, and /token for the authorization_code (PKCE
// verified) and refresh_token (rotating) grants.
type testAS struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	clients   map[string][]string // client id → registered redirect URIs
	codes     map[string]issuedCode
	access    map[string]time.Time // access token → expiry
	refresh   map[string]string    // refresh token → client id
	accessTTL time.Duration
	deny      bool
	// refreshedUnusable makes tokens minted by the refresh grant unknown
	// to the resource server.
	refreshedUnusable bool
	minted            []string // every code and token handed out, for leak checks

	registrations, authorizations, exchanges, refreshes int
}

type issuedCode struct {
	clientID, redirectURI, challenge, resource string
}

func newTestAS(t *testing.T) *testAS {
	a := &testAS{
		t:         t,
		clients:   map[string][]string{},
		codes:     map[string]issuedCode{},
		access:    map[string]time.Time{},
		refresh:   map[string]string{},
		accessTTL: time.Hour,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *testAS) metadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                a.srv.URL,
		"authorization_endpoint":                a.srv.URL + "/authorize",
		"token_endpoint":                        a.srv.URL + "/token",
		"registration_endpoint":                 a.srv.URL + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      []string{"mcp", "offline_access"},
	})
}

func (a *testAS) register(w http.ResponseWriter, r *http.Request) {
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	for _, u := range meta.RedirectURIs {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri"})
			return
		}
	}
	a.mu.Lock()
	id := "client-" + rand.Text()
	a.clients[id] = meta.RedirectURIs
	a.registrations++
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  id,
		"redirect_uris":              meta.RedirectURIs,
		"token_endpoint_auth_method": "none",
		"grant_types":                meta.GrantTypes,
	})
}

// authorize plays the user's consent: it validates the request and
// redirects back with a code, or with error=access_denied when deny is set.
func (a *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	defer a.mu.Unlock()
	redirects, known := a.clients[q.Get("client_id")]
	switch {
	case !known:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case !slices.Contains(redirects, q.Get("redirect_uri")):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	case q.Get("state") == "":
		http.Error(w, "state required", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := url.Values{"state": {q.Get("state")}}
	if a.deny {
		v.Set("error", "access_denied")
		v.Set("error_description", "The user declined.")
	} else {
		code := "code-" + rand.Text()
		a.codes[code] = issuedCode{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), resource: q.Get("resource")}
		a.minted = append(a.minted, code)
		a.authorizations++
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (a *testAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	clientID := r.PostForm.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok {
		clientID, _ = url.QueryUnescape(id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.clients[clientID]; !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := a.codes[r.PostForm.Get("code")]
		delete(a.codes, r.PostForm.Get("code")) // single use
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || c.clientID != clientID || c.redirectURI != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		a.exchanges++
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		if a.refresh[rt] != clientID {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token revoked"})
			return
		}
		delete(a.refresh, rt) // rotation
		a.refreshes++
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "at-"+rand.Text(), "rt-"+rand.Text()
	if !a.refreshedUnusable || r.PostForm.Get("grant_type") != "refresh_token" {
		a.access[at] = time.Now().Add(a.accessTTL)
	}
	a.refresh[rt] = clientID
	a.minted = append(a.minted, at, rt)
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token":  at,
		"token_type":    "Bearer",
		"expires_in":    int(a.accessTTL / time.Second),
		"refresh_token": rt,
		"scope":         "mcp",
	})
}

// verify is the resource server's token verifier: it accepts unexpired
// access tokens this server minted.
func (a *testAS) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.access[token]
	if !ok || time.Now().After(exp) {
		return nil, fmt.Errorf("%w: unknown or expired", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Scopes: []string{"mcp"}, Expiration: exp, UserID: "user-1"}, nil
}

// revokeRefresh invalidates every refresh token; revokeAccess every access token.
func (a *testAS) revokeRefresh() { a.mu.Lock(); clear(a.refresh); a.mu.Unlock() }
func (a *testAS) revokeAccess()  { a.mu.Lock(); clear(a.access); a.mu.Unlock() }

func (a *testAS) setTTL(d time.Duration) { a.mu.Lock(); a.accessTTL = d; a.mu.Unlock() }
func (a *testAS) setDeny(b bool)         { a.mu.Lock(); a.deny = b; a.mu.Unlock() }

// counts returns registrations, authorizations, exchanges and refreshes.
func (a *testAS) counts() (reg, authz, exch, refr int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registrations, a.authorizations, a.exchanges, a.refreshes
}

func (a *testAS) secrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.minted)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// testRS is a protected MCP server with one tool, "whoami", behind
// auth.RequireBearerToken, over streamable HTTP at /mcp and SSE at /sse.
type testRS struct {
	srv *httptest.Server
}

func (r *testRS) streamableURL() string { return r.srv.URL + "/mcp" }
func (r *testRS) sseURL() string        { return r.srv.URL + "/sse" }

func newTestRS(t *testing.T, as *testAS) *testRS {
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Says who the token belongs to."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			user := "nobody"
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				user = req.Extra.TokenInfo.UserID
			} else if ti := auth.TokenInfoFromContext(ctx); ti != nil {
				user = ti.UserID
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + user}}}, nil, nil
		})
	rs := &testRS{}
	mux := http.NewServeMux()
	rs.srv = httptest.NewServer(mux)
	t.Cleanup(rs.srv.Close)
	for path, h := range map[string]http.Handler{
		"/mcp": mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil),
		"/sse": mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil),
	} {
		meta := "/.well-known/oauth-protected-resource" + path
		mux.Handle(meta, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             rs.srv.URL + path,
			AuthorizationServers: []string{as.srv.URL},
			ScopesSupported:      []string{"mcp"},
		}))
		mux.Handle(path, auth.RequireBearerToken(as.verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: rs.srv.URL + meta,
		})(h))
	}
	return rs
}

// browser is the test's user agent: it follows the authorization URL
// through the authorization server's redirect to the loopback listener.
type browser struct {
	t      *testing.T
	mu     sync.Mutex
	opened int
	// before, if set, runs before the real URL is visited.
	before func(authURL string)
}

func (b *browser) open(authURL string) error {
	b.mu.Lock()
	b.opened++
	before := b.before
	b.mu.Unlock()
	if before != nil {
		before(authURL)
	}
	resp, err := http.Get(authURL)
	if err != nil {
		b.t.Errorf("browser: %v", err)
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusForbidden {
		b.t.Errorf("browser: %s ended at %s with %s", authURL, resp.Request.URL.Redacted(), resp.Status)
	}
	return nil
}

func (b *browser) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opened
}

// noBrowser fails the test if a flow needs the browser.
func noBrowser(t *testing.T) func(string) error {
	return func(string) error {
		t.Errorf("the browser was opened; the stored token should have been used")
		return errors.New("no browser in this test")
	}
}
