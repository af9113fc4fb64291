package vaultauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault"
)

func TestMiddleware(t *testing.T) {
	r, err := vault.Open(vault.Options{DataDir: t.TempDir(), Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	owner, err := r.OwnerToken(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	bot, err := r.CreateAgent(ctx, "bot")
	if err != nil {
		t.Fatal(err)
	}
	a := New(r)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return clock }
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, _ := Caller(req.Context())
		w.Write([]byte(c))
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
		{"Bearer " + owner, 200, vault.Owner},
		{"bearer " + bot, 200, "bot"},
		{"", 401, ""},
		{"Basic " + bot, 401, ""},
		{"Bearer ctxk_nope", 401, ""},
		{"Bearer " + owner + "x", 401, ""},
	} {
		rec := call(tc.auth, "10.0.0.1:1234")
		if rec.Code != tc.status || (tc.status == 200 && rec.Body.String() != tc.body) {
			t.Errorf("%q: %d %s", tc.auth, rec.Code, rec.Body)
		}
		if tc.status == 401 {
			var body struct{ Error Error }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != "unauthorized" || body.Error.Message == "" {
				t.Errorf("%q: error body %s", tc.auth, rec.Body)
			}
		}
	}
	// Four failures so far from 10.0.0.1; six more use up the burst.
	for range failureBurst - 4 {
		call("Bearer wrong", "10.0.0.1:1")
	}
	if rec := call("Bearer "+bot, "10.0.0.1:1"); rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("after ten failures: %d %v", rec.Code, rec.Header())
	}
	if rec := call("Bearer "+bot, "10.0.0.2:1"); rec.Code != 200 {
		t.Errorf("another address is not limited: %d", rec.Code)
	}
	clock = clock.Add(time.Minute)
	if rec := call("Bearer "+bot, "10.0.0.1:1"); rec.Code != 200 {
		t.Errorf("a minute later: %d", rec.Code)
	}
}
