package vaultauth_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/vaultapi"
	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/internal/vaultmcp"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// endpoint is a request a client sends to one of the server's APIs.
type endpoint struct {
	name, method, path, body string
}

var endpoints = []endpoint{
	{"/v1", "GET", "/v1/vaults", ""},
	{"/ctxvault", "GET", "/ctxvault/vaults", ""},
	{"/mcp", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`},
}

// TestFailuresNeverLockOut is the regression test of a lockout: ten
// requests without a token from 127.0.0.1 made every later call from
// loopback answer 429, valid tokens included, on /v1, /ctxvault and /mcp.
// Here, behind one Authenticator as `ctxkit serve` mounts them, an address
// sends 20 requests without a token and 20 with wrong ones, over the three
// APIs: then a valid agent token and the owner's token from that address
// still succeed on each API, while one more wrong token gets 429.
func TestFailuresNeverLockOut(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{})
	e.Agent(t, "bot")
	e.Vault(t, vault.CreateVaultRequest{Name: "notes"})
	auth := vaultauth.New(e.Svc, nil)
	// The budget refills with time: a fixed clock keeps the test from
	// depending on how fast it runs.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vaultauth.SetClock(auth, func() time.Time { return now })
	api := vaultapi.New(e.Svc, vaultapi.Options{Auth: auth})
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/ctxvault/", api)
	mux.Handle("/mcp", auth.Middleware(vaultmcp.HTTPHandler(e.Svc, vaultmcp.Options{})))
	srv := httptest.NewServer(mux) // every client is 127.0.0.1
	t.Cleanup(srv.Close)

	send := func(ep endpoint, token string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), ep.method, srv.URL+ep.path, strings.NewReader(ep.body))
		if err != nil {
			t.Fatal(err)
		}
		if ep.body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res
	}
	wrong := []string{"ctxk_wrong", "ctxk_owner_wrong", e.Tokens["bot"] + "x", e.Tokens[vault.OwnerName] + "x", "not-a-token"}
	for i := range 20 {
		ep := endpoints[i%len(endpoints)]
		if res := send(ep, "", nil); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without a token, request %d: %s, want 401", ep.name, i+1, res.Status)
		}
		agent := map[string]string{"X-CtxVault-Agent": "bot"}
		if res := send(endpoints[1], "", agent); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("/ctxvault with the agent header alone, request %d: %s, want 401", i+1, res.Status)
		}
	}
	limited := 0
	for i := range 20 {
		ep := endpoints[i%len(endpoints)]
		switch res := send(ep, wrong[i%len(wrong)], nil); res.StatusCode {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("%s with a wrong token, request %d: %s", ep.name, i+1, res.Status)
		}
	}
	if limited != 10 {
		t.Errorf("%d of 20 wrong tokens answered 429; the budget is ten failures", limited)
	}
	for _, ep := range endpoints {
		for _, who := range []string{"bot", vault.OwnerName} {
			if res := send(ep, e.Tokens[who], nil); res.StatusCode != http.StatusOK {
				t.Errorf("%s with %s's valid token after 40 failed requests: %s, want 200", ep.name, who, res.Status)
			}
		}
		res := send(ep, "ctxk_guess", nil)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s with one more wrong token: %s (Retry-After %q), want 429", ep.name, res.Status, res.Header.Get("Retry-After"))
		}
	}
}
