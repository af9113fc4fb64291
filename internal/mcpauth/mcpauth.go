// Package mcpauth authorizes ctxkit, as an MCP client, against remote MCP
// servers that ask for OAuth: the MCP authorization flow (protected-resource
// and authorization-server metadata discovery, dynamic client registration,
// authorization code with PKCE on a loopback redirect), built on the official
// SDK's auth.AuthorizationCodeHandler.
//
// What the SDK leaves to the caller lives here: the loopback redirect
// listener and the browser, remembering the registered client so a server is
// registered with once rather than on every run, and keeping tokens across
// processes in one 0600 JSON file per server URL, refreshed before they
// expire and persisted again after each refresh.
//
// A Handler plugs into mcp.StreamableClientTransport.OAuthHandler; its
// Transport method serves the legacy SSE transport, which has no OAuth hook.
package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultFlowTimeout bounds how long an authorization flow waits for the
// browser to come back when Config.FlowTimeout is zero.
const DefaultFlowTimeout = 5 * time.Minute

// Config says how to authorize against one upstream MCP server.
type Config struct {
	// ServerURL is the MCP endpoint, exactly as the transport's Endpoint.
	ServerURL string
	// TokenDir is where the client registration and tokens live (the caller
	// passes $CTXKIT_HOME/oauth): one file per server, mode 0600, in a 0700
	// directory.
	TokenDir string
	// Stderr receives the authorization URL and progress lines; nil is
	// os.Stderr.
	Stderr io.Writer
	// OpenBrowser opens the authorization URL. Nil tries the platform's
	// opener (xdg-open when a display exists, open, rundll32); a failure is
	// logged and ignored, since the URL is printed anyway. It is called on its
	// own goroutine and need not return before the user is done.
	OpenBrowser func(url string) error
	// HTTPClient makes the discovery, registration and token requests;
	// nil is a client with a 30 s timeout. The SDK adds SSRF protection
	// (no private addresses) to discovery unless the client's transport dials
	// by itself.
	HTTPClient *http.Client
	// Logger receives progress records; it never sees a token, code or
	// secret. Nil discards.
	Logger *slog.Logger
	// FlowTimeout bounds the wait for the browser; zero is
	// DefaultFlowTimeout.
	FlowTimeout time.Duration
}

// Handler is an auth.OAuthHandler for one upstream server. It is safe for
// concurrent use; authorization flows run one at a time.
type Handler struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	store  *fileStore

	flowMu       sync.Mutex // held for a whole Authorize: one flow at a time
	forcedAccess string     // access token of the last refreshNow; guarded by flowMu

	mu       sync.Mutex
	ts       *persistingSource              // current token source, nil when there is no token
	inner    *auth.AuthorizationCodeHandler // SDK handler for innerKey
	innerKey string
	callback *callbackServer // the redirect listener of the running flow
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler returns the handler for cfg.ServerURL, loading a stored token
// if there is one. Assign it to mcp.StreamableClientTransport.OAuthHandler.
func NewHandler(cfg Config) (*Handler, error) {
	u, err := url.Parse(cfg.ServerURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("oauth: server URL %q is not an http(s) URL", displayURL(cfg.ServerURL))
	}
	if cfg.TokenDir == "" {
		return nil, errors.New("oauth: no token directory")
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.OpenBrowser == nil {
		cfg.OpenBrowser = openSystemBrowser
	}
	if cfg.FlowTimeout <= 0 {
		cfg.FlowTimeout = DefaultFlowTimeout
	}
	h := &Handler{cfg: cfg, client: cfg.HTTPClient, log: cfg.Logger}
	if h.client == nil {
		h.client = &http.Client{Timeout: 30 * time.Second}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.log = h.log.With("server", displayURL(cfg.ServerURL))
	h.store, err = newFileStore(cfg.TokenDir, cfg.ServerURL)
	if err != nil {
		return nil, fmt.Errorf("oauth for %s: %w", displayURL(cfg.ServerURL), err)
	}
	rec, err := h.store.load()
	if err != nil {
		h.log.Warn("oauth: ignoring unreadable token file", "err", err)
	}
	if rec.Token != nil && rec.Token.AccessToken != "" && rec.Client != nil && rec.TokenURL != "" {
		h.ts = h.newSource(h.refreshContext(), rec.oauthConfig(), rec.Token)
		h.log.Debug("oauth: loaded stored token", "expiry", rec.Token.Expiry)
	}
	return h, nil
}

// TokenSource returns the source of the bearer token, or nil when there is
// no usable token yet (the request then goes out without one, gets a 401,
// and Authorize runs).
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	ts := h.ts
	h.mu.Unlock()
	// The source's lock is never taken under h.mu (a source drops itself
	// from the handler while holding its own).
	if ts == nil || !ts.usable() {
		return nil, nil
	}
	return ts, nil
}

// Authorize is called by the transport after a 401 or 403. It first tries
// cheap remedies (a token obtained meanwhile by another request, a refresh
// when the server refused a token we thought valid) and otherwise runs the
// authorization flow: discovery, registration (reused when stored), the
// browser, the code exchange. It closes resp.Body.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	h.flowMu.Lock()
	defer h.flowMu.Unlock()

	if resp.StatusCode == http.StatusUnauthorized {
		sent := req.Header.Get("Authorization")
		if tok := h.currentToken(); tok != nil && sent != "Bearer "+tok.AccessToken {
			h.log.Debug("oauth: a newer token is available; retrying")
			return nil
		}
		// Once per refreshed token: if the server refuses a token fresh
		// from the refresh too, only a new authorization can help.
		if sent != "" && sent != "Bearer "+h.forcedAccess && h.refreshNow(ctx) {
			h.log.Info("oauth: server refused the access token; refreshed it")
			return nil
		}
	}
	if err := h.runFlow(ctx, req, resp); err != nil {
		return fmt.Errorf("oauth for %s: %w", displayURL(h.cfg.ServerURL), err)
	}
	return nil
}

// currentToken returns the token the next request would carry, or nil.
func (h *Handler) currentToken() *oauth2.Token {
	h.mu.Lock()
	ts := h.ts
	h.mu.Unlock()
	if ts == nil || !ts.usable() {
		return nil
	}
	tok, err := ts.Token()
	if err != nil {
		return nil
	}
	return tok
}

// refreshNow redeems the stored refresh token regardless of the access
// token's expiry and reports whether that gave a new token. The caller
// holds flowMu.
func (h *Handler) refreshNow(ctx context.Context) bool {
	rec, err := h.store.load()
	if err != nil || !rec.refreshable() {
		return false
	}
	src := h.newSource(h.refreshContext(), rec.oauthConfig(), &oauth2.Token{RefreshToken: rec.Token.RefreshToken})
	tok, err := src.Token()
	if err != nil {
		h.log.Info("oauth: refresh failed", "err", err)
		return false
	}
	h.forcedAccess = tok.AccessToken
	h.setSource(src)
	return ctx.Err() == nil
}

// refreshContext is the context refreshes run under: not tied to any
// request (the token source outlives it), carrying the HTTP client.
func (h *Handler) refreshContext() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
}

func (h *Handler) setSource(s *persistingSource) {
	h.mu.Lock()
	h.ts = s
	h.mu.Unlock()
}

// dropSource forgets s if it is still the current source.
func (h *Handler) dropSource(s *persistingSource) {
	h.mu.Lock()
	if h.ts == s {
		h.ts = nil
	}
	h.mu.Unlock()
}

// runFlow runs the full authorization flow for the challenge in resp.
func (h *Handler) runFlow(ctx context.Context, req *http.Request, resp *http.Response) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.FlowTimeout)
	defer cancel()

	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return fmt.Errorf("parse WWW-Authenticate: %w", err)
	}
	if resp.StatusCode == http.StatusForbidden && challengeParam(challenges, "error") != "insufficient_scope" {
		// Not an authorization problem a new token would fix; the
		// transport retries once and reports the 403.
		return nil
	}
	prm, foundPRM, err := h.resourceMetadata(ctx, challenges)
	if err != nil {
		return err
	}
	asm, foundASM, err := h.authServerMetadata(ctx, prm.AuthorizationServers[0])
	if err != nil {
		return err
	}
	h.log.Info("oauth: authorization required", "issuer", asm.Issuer)

	client, cb, err := h.clientFor(ctx, asm)
	if err != nil {
		if !foundPRM && !foundASM {
			return fmt.Errorf("%w: the server answered %d but publishes neither protected resource nor authorization server metadata, and the default registration failed (%v); if it expects a fixed credential, send it as a header",
				ErrNoOAuth, resp.StatusCode, err)
		}
		return err
	}
	defer cb.close()
	h.mu.Lock()
	h.callback = cb
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.callback = nil
		h.mu.Unlock()
	}()

	inner, err := h.innerFor(client)
	if err != nil {
		return err
	}
	// The SDK takes the resource from the request URL; the legacy SSE
	// transport posts to a message URL, so name the endpoint itself.
	r := req.Clone(ctx)
	if r.URL, err = url.Parse(h.cfg.ServerURL); err != nil {
		return fmt.Errorf("parse server URL: %w", err)
	}
	if err := inner.Authorize(ctx, r, resp); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrDenied) {
			return fmt.Errorf("no authorization within %s (waiting on %s): %w", h.cfg.FlowTimeout, client.RedirectURI, err)
		}
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
			// The server no longer knows the stored client: register afresh next time.
			h.log.Info("oauth: client registration refused; it will be renewed", "code", re.ErrorCode)
			_ = h.store.update(func(rec *record) { rec.Client = nil; rec.Token = nil })
		}
		return err
	}
	ts, err := inner.TokenSource(ctx)
	if err != nil {
		return err
	}
	src, ok := ts.(*persistingSource)
	if !ok || src == nil {
		return errors.New("authorization finished without a token")
	}
	h.setSource(src)
	fmt.Fprintf(h.cfg.Stderr, "ctxkit: authorized with %s.\n", displayURL(h.cfg.ServerURL))
	h.log.Info("oauth: authorized")
	return nil
}

// resourceMetadata discovers the protected resource metadata (RFC 9728) in
// the order the MCP specification gives: the challenge's resource_metadata,
// then the well-known URI at the endpoint's path, then at the root; without
// any, the server's origin is taken as its authorization server (2025-03-26)
// and found is false.
// The SDK's handler repeats this discovery; doing it here too tells us the
// authorization server before the SDK needs a client id.
func (h *Handler) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge) (_ *oauthex.ProtectedResourceMetadata, found bool, _ error) {
	su, err := url.Parse(h.cfg.ServerURL)
	if err != nil {
		return nil, false, fmt.Errorf("parse server URL: %w", err)
	}
	type candidate struct{ metadata, resource string }
	var cands []candidate
	if m := challengeParam(challenges, "resource_metadata"); m != "" {
		cands = append(cands, candidate{m, h.cfg.ServerURL})
	}
	u := *su
	u.RawQuery, u.Fragment = "", ""
	u.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(su.Path, "/")
	u.RawPath = ""
	cands = append(cands, candidate{u.String(), h.cfg.ServerURL})
	u.Path = "/.well-known/oauth-protected-resource"
	origin := url.URL{Scheme: su.Scheme, Host: su.Host}
	cands = append(cands, candidate{u.String(), origin.String()})
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.metadata, c.resource, h.client)
		if err != nil || prm == nil {
			h.log.Debug("oauth: no protected resource metadata", "url", c.metadata, "err", err)
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, false, fmt.Errorf("protected resource metadata at %s names no authorization server", c.metadata)
		}
		return prm, true, nil
	}
	return &oauthex.ProtectedResourceMetadata{Resource: h.cfg.ServerURL, AuthorizationServers: []string{origin.String()}}, false, nil
}

// authServerMetadata fetches the authorization server metadata (RFC 8414 or
// OpenID discovery), falling back to the 2025-03-26 default endpoints
// (found is then false).
func (h *Handler) authServerMetadata(ctx context.Context, issuer string) (_ *oauthex.AuthServerMeta, found bool, _ error) {
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, h.client)
	if err != nil {
		return nil, false, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
	}
	if asm != nil {
		return asm, true, nil
	}
	base := strings.TrimSuffix(issuer, "/")
	return &oauthex.AuthServerMeta{
		Issuer:                issuer,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
	}, false, nil
}

// clientFor returns the client to authorize with at asm and the redirect
// listener bound to its redirect URI: the stored client when it is for this
// issuer and its port is free, else a newly registered one (RFC 7591), which
// is stored.
func (h *Handler) clientFor(ctx context.Context, asm *oauthex.AuthServerMeta) (*clientRecord, *callbackServer, error) {
	rec, err := h.store.load()
	if err != nil {
		h.log.Warn("oauth: ignoring unreadable token file", "err", err)
	}
	if c := rec.Client; c.usable(asm.Issuer, time.Now()) {
		if port, ok := redirectPort(c.RedirectURI); ok {
			cb, err := listenCallback(ctx, port, h.log)
			if err == nil {
				return c, cb, nil
			}
			h.log.Info("oauth: redirect port of the registered client is busy; registering again", "err", err)
		}
	}
	if asm.RegistrationEndpoint == "" {
		return nil, nil, fmt.Errorf("authorization server %s offers no dynamic client registration (RFC 7591), and ctxkit has no client registered there", asm.Issuer)
	}
	cb, err := listenCallback(ctx, 0, h.log)
	if err != nil {
		return nil, nil, err
	}
	redirect := redirectURI(cb.port())
	meta := &oauthex.ClientRegistrationMetadata{
		ClientName:              "ctxkit",
		RedirectURIs:            []string{redirect},
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ApplicationType:         "native",
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, h.client)
	if err != nil {
		cb.close()
		return nil, nil, fmt.Errorf("register client at %s: %w", asm.RegistrationEndpoint, err)
	}
	c := &clientRecord{
		ClientID:        reg.ClientID,
		ClientSecret:    reg.ClientSecret,
		SecretExpiresAt: reg.ClientSecretExpiresAt,
		RedirectURI:     redirect,
		Issuer:          asm.Issuer,
	}
	if err := h.store.update(func(r *record) {
		r.Client = c
		r.Issuer = asm.Issuer
		r.Token = nil // tokens of another client cannot be refreshed by this one
	}); err != nil {
		h.log.Warn("oauth: could not store the client registration", "err", err)
	}
	h.log.Info("oauth: registered client", "issuer", asm.Issuer, "redirect_uri", redirect)
	return c, cb, nil
}

// innerFor returns the SDK handler for client, reusing the previous one (and
// with it the scopes granted so far) while the client is the same.
func (h *Handler) innerFor(c *clientRecord) (*auth.AuthorizationCodeHandler, error) {
	key := c.Issuer + "\n" + c.ClientID + "\n" + c.RedirectURI
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inner != nil && h.innerKey == key {
		return h.inner, nil
	}
	creds := &oauthex.ClientCredentials{ClientID: c.ClientID, Issuer: c.Issuer}
	if c.ClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret}
	}
	inner, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient:      creds,
		RedirectURL:              c.RedirectURI,
		AuthorizationCodeFetcher: h.fetchCode,
		RequestRefreshToken:      true,
		Client:                   h.client,
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			src := h.newSource(ctx, oc, tok)
			src.save(tok)
			return src, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("configure authorization: %w", err)
	}
	h.inner, h.innerKey = inner, key
	return inner, nil
}

// fetchCode is the SDK's AuthorizationCodeFetcher: it shows the URL, opens
// the browser and waits on the loopback listener for the response carrying
// the URL's state.
func (h *Handler) fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	h.mu.Lock()
	cb := h.callback
	h.mu.Unlock()
	if cb == nil {
		return nil, errors.New("no redirect listener")
	}
	au, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("parse authorization URL: %w", err)
	}
	state := au.Query().Get("state")
	if state == "" {
		return nil, errors.New("authorization URL carries no state")
	}
	cb.expect(state)
	fmt.Fprintf(h.cfg.Stderr, "ctxkit: %s asks for authorization. Open this URL in a browser to sign in (waiting up to %s):\n\n    %s\n\n",
		displayURL(h.cfg.ServerURL), h.cfg.FlowTimeout, args.URL)
	open := h.cfg.OpenBrowser
	go func() {
		if err := open(args.URL); err != nil {
			h.log.Info("oauth: browser not opened; use the printed URL", "err", err)
		}
	}()
	res, err := cb.wait(ctx)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// challengeParam returns the first value of the auth-param name among the
// challenges, preferring Bearer ones.
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	for _, c := range cs {
		if c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// sameIssuer compares issuer identifiers, ignoring one trailing slash.
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// displayURL is a server URL as messages and logs show it: without user
// info, query or fragment, where keys are often put.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "an unparsable URL"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
