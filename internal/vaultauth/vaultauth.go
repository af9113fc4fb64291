// Package vaultauth authenticates callers of the vault server (the REST
// API, its compatibility routes and the MCP endpoint) by bearer token,
// through the vault service (vault.Service.Authenticate), and holds the
// JSON error shape every route answers with, so that an authentication
// failure looks like any other error.
//
// Failed authentications are rate-limited per client address (an IPv6
// client's /64): a caller that keeps sending wrong tokens gets 429 with
// Retry-After. At most 10,000 addresses are tracked at once; beyond, the
// addresses share one budget, so that memory stays bounded. A valid token
// is never refused: it is checked even from an address over its budget
// (tokens carry 256 random bits, so the limit only keeps guessers from
// flooding the server and its logs, and failed attempts must never lock
// out valid credentials, as they did when the budget was checked first).
// A request without a token guesses nothing and does not count.
package vaultauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ctxkit/ctxkit/internal/httpserver"
	"github.com/ctxkit/ctxkit/vault"
)

// Error is the body of every error answer: {"error": {...}}.
type Error struct {
	// Code is a stable machine-readable name: a vault.Class (invalid,
	// unauthenticated, forbidden, not_found, exists, conflict, ...) or a
	// transport's own (too_large, rate_limited, method_not_allowed).
	Code    string `json:"code"`
	Message string `json:"message"`
	// Fix says what to do about it, when the caller can.
	Fix     string         `json:"fix,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// statuses are the HTTP statuses of the error classes.
var statuses = map[vault.Class]int{
	vault.ClassInvalid:         http.StatusBadRequest,
	vault.ClassUnauthenticated: http.StatusUnauthorized,
	vault.ClassForbidden:       http.StatusForbidden,
	vault.ClassNotFound:        http.StatusNotFound,
	vault.ClassExists:          http.StatusConflict,
	vault.ClassConflict:        http.StatusConflict,
	vault.ClassCanceled:        499, // nginx's "client closed request": nobody reads it
	vault.ClassUnavailable:     http.StatusServiceUnavailable,
	vault.ClassInternal:        http.StatusInternalServerError,
}

// Status is the HTTP status of an error class.
func Status(c vault.Class) int { return statuses[c] }

// WriteDescribed answers with a service error as vault.Describe described
// it: the status of its class, and its message, fix and field.
func WriteDescribed(w http.ResponseWriter, d vault.Described) {
	e := Error{Code: string(d.Class), Message: d.Message, Fix: d.Fix}
	if d.Field != "" {
		e.Details = map[string]any{"field": d.Field}
	}
	WriteError(w, statuses[d.Class], e)
}

// Unauthorized answers a request that brought no bearer token.
func Unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit"`)
	WriteError(w, http.StatusUnauthorized, Error{Code: string(vault.ClassUnauthenticated), Message: "missing bearer token",
		Fix: "send Authorization: Bearer <token> with an agent's token (ctxkit agent create NAME) or the owner's token"})
}

// WriteError answers with status and the error body.
func WriteError(w http.ResponseWriter, status int, e Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error Error `json:"error"`
	}{e})
}

type callerKey struct{}

// WithCaller returns ctx carrying the authenticated caller.
func WithCaller(ctx context.Context, c vault.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// Caller returns the caller the middleware authenticated.
func Caller(ctx context.Context) (vault.Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(vault.Caller)
	return c, ok && c.Name() != ""
}

// Limits of failed authentications per client address.
const (
	failuresPerMinute = 10
	failureBurst      = 10
	limiterIdle       = 10 * time.Minute
	maxLimiters       = 10000
)

// Authenticator checks bearer tokens with the vault service.
type Authenticator struct {
	svc *vault.Service
	log *slog.Logger
	mu  sync.Mutex
	// failures holds a limiter per client address that has failed, at
	// most maxLimiters; the addresses beyond share untracked.
	failures  map[string]*clientLimit
	untracked *clientLimit
	// swept is when idle addresses were last forgotten.
	swept time.Time
	now   func() time.Time
}

type clientLimit struct {
	lim  *rate.Limiter
	seen time.Time
}

// New returns an Authenticator over svc that reports the tokens it could
// not check to log (nil: slog.Default()).
func New(svc *vault.Service, log *slog.Logger) *Authenticator {
	return &Authenticator{svc: svc, log: cmp.Or(log, slog.Default()), failures: map[string]*clientLimit{}, untracked: newLimit(), now: time.Now}
}

func newLimit() *clientLimit {
	return &clientLimit{lim: rate.NewLimiter(rate.Every(time.Minute/failuresPerMinute), failureBurst)}
}

// clientAddr names the budget a request's failures count against: its
// IP address, or an IPv6 client's /64, the network one host usually has,
// so that a guesser cannot take a fresh budget per address.
func clientAddr(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip = ip.Unmap(); ip.Is4() || ip.IsLoopback() {
		return ip.String()
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return host
	}
	return p.String()
}

// fail records a failed authentication of addr and reports whether addr
// is now over its budget, and for how long.
func (a *Authenticator) fail(addr string) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	c := a.failures[addr]
	if c == nil {
		c = a.track(addr, now)
	}
	c.seen = now
	if c.lim.AllowN(now, 1) {
		return 0, false
	}
	return time.Duration(float64(time.Second) * (1 - c.lim.TokensAt(now)) / float64(c.lim.Limit())), true
}

// track returns a new limiter for addr, kept in the table; when the
// table is full even after forgetting idle addresses (at most once a
// minute: each time reads the whole table), the one the untracked
// addresses share, so that memory stays bounded whatever the number of
// addresses that fail.
func (a *Authenticator) track(addr string, now time.Time) *clientLimit {
	if len(a.failures) >= maxLimiters && now.Sub(a.swept) >= time.Minute {
		a.swept = now
		for k, c := range a.failures {
			if now.Sub(c.seen) > limiterIdle {
				delete(a.failures, k)
			}
		}
	}
	if len(a.failures) >= maxLimiters {
		return a.untracked
	}
	c := newLimit()
	a.failures[addr] = c
	return c
}

// Authenticate returns the caller of req, or writes the error answer (401,
// or 429 after too many failures from the same address) and returns
// false. An error answer closes the connection, so that a body the client
// never sends cannot hold it.
func (a *Authenticator) Authenticate(w http.ResponseWriter, req *http.Request) (vault.Caller, bool) {
	tok, ok := httpserver.Bearer(req)
	if !ok {
		w.Header().Set("Connection", "close")
		Unauthorized(w)
		return vault.Caller{}, false
	}
	c, err := a.svc.Authenticate(req.Context(), tok)
	if err == nil {
		return c, true
	}
	w.Header().Set("Connection", "close")
	if !errors.Is(err, vault.ErrUnauthenticated) {
		// The token could not be checked (the registry failed, or the
		// client left): never counted as a failure of the client's.
		d := vault.Describe(err)
		if d.Class == vault.ClassInternal {
			a.log.Error("vault server: check a token", "err", err)
			d.Message = "the token could not be checked; the server's log has the details"
		}
		WriteDescribed(w, d)
		return vault.Caller{}, false
	}
	if wait, over := a.fail(clientAddr(req)); over {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		WriteError(w, http.StatusTooManyRequests, Error{Code: "rate_limited",
			Message: "too many failed authentications from this address", Fix: "wait, and retry with a valid token"})
		return vault.Caller{}, false
	}
	d := vault.Describe(err)
	w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit", error="invalid_token"`)
	WriteError(w, http.StatusUnauthorized, Error{Code: string(d.Class), Message: d.Message, Fix: d.Fix})
	return vault.Caller{}, false
}

// Middleware authenticates every request and passes the caller on in the
// request's context (Caller).
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, ok := a.Authenticate(w, req)
		if !ok {
			return
		}
		next.ServeHTTP(w, req.WithContext(WithCaller(req.Context(), c)))
	})
}
