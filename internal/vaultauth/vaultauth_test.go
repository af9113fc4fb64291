package vaultauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

func TestMiddleware(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{})
	e.Agent(t, "bot")
	owner, bot := e.Tokens[vault.OwnerName], e.Tokens["bot"]
	a := New(e.Svc, nil)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return clock }
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, _ := Caller(req.Context())
		w.Write([]byte(c.Name()))
	}))
	call := func(auth, addr string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/v1/vaults", nil)
		req.RemoteAddr = addr
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, tc := range []struct {
		auth   string
		status int
		body   string
	}{
		{"Bearer " + owner, 200, vault.OwnerName},
		{"bearer " + bot, 200, "bot"},
		{"Bearer  " + bot + " ", 200, "bot"},
		{"", 401, ""},
		{"Bearer", 401, ""},
		{"Bearer ", 401, ""},
		{"Basic " + bot, 401, ""},
		{"Bearer ctxk_nope", 401, ""},
		{"Bearer " + owner + "x", 401, ""},
		{"Bearer " + bot + "x", 401, ""},
		{"Bearer bot", 401, ""},
	} {
		rec := call(tc.auth, "10.0.0.1:1234")
		if rec.Code != tc.status || (tc.status == 200 && rec.Body.String() != tc.body) {
			t.Errorf("%q: %d %s", tc.auth, rec.Code, rec.Body)
		}
		if tc.status == 401 {
			var body struct{ Error Error }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != string(vault.ClassUnauthenticated) ||
				body.Error.Message == "" || body.Error.Fix == "" {
				t.Errorf("%q: error body %s", tc.auth, rec.Body)
			}
			if rec.Header().Get("WWW-Authenticate") == "" || rec.Header().Get("Connection") != "close" {
				t.Errorf("%q: headers %v", tc.auth, rec.Header())
			}
		}
	}
	// Four wrong tokens so far from 10.0.0.1 (a request without one
	// guesses nothing and does not count); six more use up the burst.
	for range failureBurst - 4 {
		if rec := call("Bearer wrong", "10.0.0.1:1"); rec.Code != 401 {
			t.Fatalf("a failure within the budget: %d", rec.Code)
		}
	}
	rec := call("Bearer wrong", "10.0.0.1:1")
	var body struct{ Error Error }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != 429 || rec.Header().Get("Retry-After") == "" || err != nil || body.Error.Code != "rate_limited" {
		t.Errorf("a wrong token after ten failures: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	// Failures never lock out valid credentials, nor count requests
	// without a token.
	for _, tc := range []struct {
		auth   string
		status int
	}{{"Bearer " + bot, 200}, {"Bearer " + owner, 200}, {"", 401}, {"Bearer wrong", 429}} {
		if rec := call(tc.auth, "10.0.0.1:1"); rec.Code != tc.status {
			t.Errorf("over the budget, %q: %d, want %d", tc.auth, rec.Code, tc.status)
		}
	}
	if rec := call("Bearer wrong", "10.0.0.2:1"); rec.Code != 401 {
		t.Errorf("another address is not limited: %d", rec.Code)
	}
	clock = clock.Add(time.Minute)
	for i := range failureBurst {
		if rec := call("Bearer wrong", "10.0.0.1:1"); rec.Code != 401 {
			t.Fatalf("a minute later, failure %d: %d", i+1, rec.Code)
		}
	}
	if rec := call("Bearer wrong", "10.0.0.1:1"); rec.Code != 429 {
		t.Errorf("a minute later, the budget is ten failures again: %d", rec.Code)
	}
}

// TestFailureTableBounded: the failures are kept per address for at most
// maxLimiters addresses, so that a guesser with many addresses (an IPv6
// network) cannot grow the server's memory without bound; the addresses
// beyond share one budget, until idle ones are forgotten.
func TestFailureTableBounded(t *testing.T) {
	a := New(nil, nil)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return clock }
	for i := range maxLimiters {
		if _, over := a.fail(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255)); over {
			t.Fatalf("address %d is over its budget at its first failure", i)
		}
	}
	for i := range failureBurst {
		if _, over := a.fail(fmt.Sprintf("192.0.2.%d", i)); over {
			t.Fatalf("untracked address %d: over the shared budget at failure %d of %d", i, i+1, failureBurst)
		}
	}
	if _, over := a.fail("198.51.100.1"); !over {
		t.Error("the untracked addresses have no budget")
	}
	if len(a.failures) > maxLimiters {
		t.Errorf("%d addresses kept, at most %d", len(a.failures), maxLimiters)
	}
	if _, over := a.fail("10.0.0.1"); over {
		t.Error("a tracked address lost its budget to the untracked ones")
	}
	// Idle addresses are forgotten, and a new one is tracked again.
	clock = clock.Add(limiterIdle + time.Minute)
	a.fail("203.0.113.1")
	if _, ok := a.failures["203.0.113.1"]; !ok || len(a.failures) != 1 {
		t.Errorf("after the idle time: %d addresses, the new one tracked: %v", len(a.failures), ok)
	}
}

// TestClientAddr: an IPv6 client is its /64, the network a single host
// usually has, so that its addresses share one budget.
func TestClientAddr(t *testing.T) {
	for remote, want := range map[string]string{
		"10.0.0.1:1234":              "10.0.0.1",
		"[2001:db8:1:2::1]:443":      "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::9]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:443":      "2001:db8:1:3::/64",
		"[::ffff:10.0.0.1]:80":       "10.0.0.1",
		"[fe80::1%eth0]:80":          "fe80::/64",
		"[::1]:80":                   "::1",
		"pipe":                       "pipe",
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = remote
		if got := clientAddr(req); got != want {
			t.Errorf("%s: %s, want %s", remote, got, want)
		}
	}
}

// TestUncheckableTokenIsLogged: when the registry cannot be read, a token
// cannot be checked: the answer is a 500 that says so (not a 401 for the
// client, not counted against it), and the cause is in the server's log.
// Before, the cause was logged nowhere.
func TestUncheckableTokenIsLogged(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{})
	e.Agent(t, "bot")
	if err := os.WriteFile(filepath.Join(e.Home, "agents.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	a := New(e.Svc, slog.New(slog.NewTextHandler(&log, nil)))
	h := a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the request went through") }))
	for range failureBurst + 2 {
		req := httptest.NewRequest("GET", "/v1/vaults", nil)
		req.Header.Set("Authorization", "Bearer "+e.Tokens["bot"])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body struct{ Error Error }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 500 || body.Error.Code != string(vault.ClassInternal) {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	if !strings.Contains(log.String(), "agents.json") {
		t.Errorf("the log does not say why: %q", log.String())
	}
}
