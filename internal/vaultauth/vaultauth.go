// Package vaultauth authenticates callers of the vault server (the REST
// API, its compatibility routes and the MCP endpoint) by bearer token: the
// owner's token or an agent's (see vault.Registry.Caller). It also holds
// the JSON error shape every route answers with, so that an
// authentication failure looks like any other error.
//
// Failed authentications are rate-limited per client address: a caller
// that keeps guessing tokens gets 429 with Retry-After, and successful
// calls are never slowed.
package vaultauth

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ctxkit/ctxkit/vault"
)

// Error is the body of every error answer: {"error": {...}}.
type Error struct {
	// Code is a stable machine-readable name (bad_request, unauthorized,
	// forbidden, not_found, conflict, too_large, rate_limited, internal).
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// WriteError answers with status and the error body.
func WriteError(w http.ResponseWriter, status int, code, message string, details map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Error Error `json:"error"`
	}{Error{Code: code, Message: message, Details: details}})
}

type callerKey struct{}

// WithCaller returns ctx carrying the authenticated caller.
func WithCaller(ctx context.Context, agent string) context.Context {
	return context.WithValue(ctx, callerKey{}, agent)
}

// Caller returns the caller the middleware authenticated: vault.Owner or
// an agent's name.
func Caller(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(callerKey{}).(string)
	return a, ok && a != ""
}

// Limits of failed authentications per client address.
const (
	failuresPerMinute = 10
	failureBurst      = 10
	limiterIdle       = 10 * time.Minute
)

// Authenticator checks bearer tokens against a registry.
type Authenticator struct {
	r  *vault.Registry
	mu sync.Mutex
	// failures holds a limiter per client address that has failed.
	failures map[string]*clientLimit
	now      func() time.Time
}

type clientLimit struct {
	lim  *rate.Limiter
	seen time.Time
}

// New returns an Authenticator over r.
func New(r *vault.Registry) *Authenticator {
	return &Authenticator{r: r, failures: map[string]*clientLimit{}, now: time.Now}
}

// Bearer returns the token of an Authorization: Bearer header.
func Bearer(req *http.Request) (string, bool) {
	h := req.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

func clientAddr(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// blocked reports whether addr has used up its failures, and for how long.
func (a *Authenticator) blocked(addr string) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.failures[addr]
	if c == nil {
		return 0, false
	}
	now := a.now()
	if c.lim.TokensAt(now) >= 1 {
		return 0, false
	}
	return time.Duration(float64(time.Second) * (1 - c.lim.TokensAt(now)) / float64(c.lim.Limit())), true
}

// fail records a failed authentication of addr.
func (a *Authenticator) fail(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for k, c := range a.failures {
		if now.Sub(c.seen) > limiterIdle {
			delete(a.failures, k)
		}
	}
	c := a.failures[addr]
	if c == nil {
		c = &clientLimit{lim: rate.NewLimiter(rate.Every(time.Minute/failuresPerMinute), failureBurst)}
		a.failures[addr] = c
	}
	c.seen = now
	c.lim.AllowN(now, 1)
}

// Authenticate returns the caller of req, or writes the error answer (401,
// or 429 after too many failures from the same address) and returns
// false.
func (a *Authenticator) Authenticate(w http.ResponseWriter, req *http.Request) (string, bool) {
	addr := clientAddr(req)
	if wait, ok := a.blocked(addr); ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		WriteError(w, http.StatusTooManyRequests, "rate_limited", "too many failed authentications from this address; wait and retry with a valid token", nil)
		return "", false
	}
	tok, ok := Bearer(req)
	if !ok {
		a.fail(addr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit"`)
		WriteError(w, http.StatusUnauthorized, "unauthorized",
			"missing bearer token: send Authorization: Bearer <token> with an agent's token (ctxkit agent create NAME) or the owner's token", nil)
		return "", false
	}
	caller, err := a.r.Caller(req.Context(), tok)
	if errors.Is(err, vault.ErrUnauthenticated) {
		a.fail(addr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit", error="invalid_token"`)
		WriteError(w, http.StatusUnauthorized, "unauthorized", "invalid token: it matches no agent (revoked?) and is not the owner's token", nil)
		return "", false
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "internal", "could not check the token", nil)
		return "", false
	}
	return caller, true
}

// Middleware authenticates every request and passes the caller on in the
// request's context (Caller).
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		caller, ok := a.Authenticate(w, req)
		if !ok {
			return
		}
		next.ServeHTTP(w, req.WithContext(WithCaller(req.Context(), caller)))
	})
}
