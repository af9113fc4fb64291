// Package vaultapi is the vault server's REST API under /v1, and the
// reference system's (CtxVault's) API under /ctxvault with its request and
// response shapes, for programs written for it (compat.go says where it
// deliberately differs: a token is always required, no match is 200 with
// an empty list, top_k is read). Under /v1: vaults
// (list, and create, attach, detach, publish with the owner's token),
// documents, queries, skills and episodes, all through package vault, as
// the CLI and the MCP server use it, so that the interfaces cannot drift.
//
// Every route is described once, in a table (routes), with the Go types
// its handler decodes and encodes; the mux is built from that table, and
// so is the OpenAPI 3.1 document served at GET /v1/openapi.json, which
// therefore cannot disagree with the handlers.
//
// Every answer is JSON (except the episode export, JSON lines); every
// error has the shape of vaultauth.WriteError, with the status mapped
// from the vault package's sentinel errors (fail). A restricted vault is
// invisible to the agents not attached to it: absent from lists, and
// every route naming it answers 404, never 403.
//
// The helpers shared by the routes (decode, fail, vaultFor, writeJSON)
// serve the /ctxvault compatibility routes too; those are not in the
// OpenAPI document, which describes /v1.
package vaultapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// DefaultMaxBodyBytes bounds request bodies unless Options say otherwise.
const DefaultMaxBodyBytes = 8 << 20

// Options configure the API.
type Options struct {
	// Auth authenticates every request but GET /v1/openapi.json. When nil,
	// the handler expects the caller in the request's context
	// (vaultauth.WithCaller, as vaultauth's Middleware puts it), and
	// answers 401 without one.
	Auth *vaultauth.Authenticator
	// MaxBodyBytes bounds a request body (413 beyond); 0 is
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Logger receives the errors that are bugs (500); nil is
	// slog.Default().
	Logger *slog.Logger
}

// api holds what the handlers share. It keeps no mutable state: every
// request reads the registry afresh.
type api struct {
	r       *vault.Registry
	log     *slog.Logger
	maxBody int64
}

// New returns the handler of the routes under /v1.
func New(r *vault.Registry, opts Options) http.Handler {
	a := &api{r: r, log: cmp.Or(opts.Logger, slog.Default()), maxBody: cmp.Or(opts.MaxBodyBytes, DefaultMaxBodyBytes)}
	inner := http.NewServeMux()
	for _, rt := range a.routes() {
		inner.Handle(rt.Method+" "+rt.Pattern, rt.handler)
	}
	var authed http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, ok := vaultauth.Caller(req.Context()); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit"`)
			vaultauth.WriteError(w, http.StatusUnauthorized, "unauthorized", "missing bearer token: send Authorization: Bearer <token>", nil)
			return
		}
		dispatch(inner, w, req)
	})
	if opts.Auth != nil {
		authed = opts.Auth.Middleware(authed)
	}
	doc, err := a.openAPI()
	outer := http.NewServeMux()
	outer.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, req *http.Request) {
		if err != nil {
			a.log.Error("vault API: build the OpenAPI document", "err", err)
			vaultauth.WriteError(w, http.StatusInternalServerError, "internal", "the OpenAPI document could not be built", nil)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	outer.Handle("/v1/", authed)
	outer.Handle("/ctxvault/", a.compat(opts.Auth))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body != nil {
			req.Body = &limitedBody{ReadCloser: http.MaxBytesReader(w, req.Body, a.maxBody)}
		}
		dispatch(outer, w, req)
	})
}

// dispatch serves req with mux, answering a request that matches no
// route (404) or not with this method (405) with the JSON error shape.
func dispatch(mux *http.ServeMux, w http.ResponseWriter, req *http.Request) {
	h, pattern := mux.Handler(req)
	if pattern != "" {
		mux.ServeHTTP(w, req)
		return
	}
	// Let the mux say which (404 or 405, with Allow), then answer in JSON.
	probe := &statusProbe{header: http.Header{}}
	h.ServeHTTP(probe, req)
	if allow := probe.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	if probe.status == http.StatusMethodNotAllowed {
		vaultauth.WriteError(w, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("%s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, probe.header.Get("Allow")), nil)
		return
	}
	vaultauth.WriteError(w, http.StatusNotFound, "not_found", "no such route: "+req.Method+" "+req.URL.Path+" (see GET /v1/openapi.json)", nil)
}

// statusProbe records the status and headers the mux's fallback handler
// would answer with, and drops its body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }
func (p *statusProbe) WriteHeader(s int) {
	if p.status == 0 {
		p.status = s
	}
}
func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}

// limitedBody is a request body under http.MaxBytesReader that remembers
// having hit the limit, so that fail answers 413 even when a reader
// (such as an import's line scanner) turned the error into another.
type limitedBody struct {
	io.ReadCloser
	tooLarge bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		b.tooLarge = true
	}
	return n, err
}

// caller returns the authenticated caller of req: vault.Owner or an
// agent's name.
func caller(req *http.Request) string {
	c, _ := vaultauth.Caller(req.Context())
	return c
}

// errAdmin refuses an administrative route to an agent.
var errAdmin = fmt.Errorf("%w: this route needs the owner's token", vault.ErrForbidden)

// vaultFor resolves the vault named in the request's {vault} for its
// caller, checking op and logging a refusal under action: a missing vault
// and a restricted one the caller is not attached to are both
// vault.ErrNotFound, a write through a read-only grant vault.ErrForbidden.
func (a *api) vaultFor(req *http.Request, op vault.Op, action string) (*vault.Vault, error) {
	return a.vaultNamed(req, req.PathValue("vault"), op, action)
}

// vaultNamed is vaultFor for a vault named elsewhere than in the path (a
// body's or query's field, as the compatibility routes name it).
func (a *api) vaultNamed(req *http.Request, name string, op vault.Op, action string) (*vault.Vault, error) {
	if name == "" {
		return nil, errBad("name the vault")
	}
	return a.r.VaultFor(req.Context(), caller(req), name, op, action)
}

// adminVault resolves the vault of an administrative route: the owner
// gets it; an agent gets ErrNotFound for a vault it cannot see (so the
// route leaks nothing) and errAdmin for one it can.
func (a *api) adminVault(req *http.Request, action string) (*vault.Vault, error) {
	v, err := a.vaultFor(req, vault.Read, action)
	if err != nil {
		return nil, err
	}
	if caller(req) != vault.Owner {
		return nil, errAdmin
	}
	return v, nil
}

// badRequest is an error of the caller's input that no sentinel names.
type badRequest struct {
	msg     string
	details map[string]any
}

func (e *badRequest) Error() string { return e.msg }

// errBad returns a 400 error with a formatted message.
func errBad(format string, args ...any) error {
	return &badRequest{msg: fmt.Sprintf(format, args...)}
}

// decode reads req's JSON body into dst: an empty body leaves dst at its
// zero value; a field dst does not have, a value of the wrong type, or
// anything after the object is a 400 that names the problem; a body over
// the limit is a 413.
func decode(req *http.Request, dst any) error {
	if req.Body == nil {
		return nil
	}
	dec := json.NewDecoder(req.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			var mb *http.MaxBytesError
			if errors.As(terr, &mb) {
				return terr
			}
			return errBad("the body holds more than one JSON value")
		}
		return nil
	}
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return err
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field = strings.Trim(field, `"`)
		return &badRequest{msg: fmt.Sprintf("unknown field %q in the request body", field), details: map[string]any{"field": field}}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &badRequest{msg: fmt.Sprintf("field %q: want %s, not a JSON %s", te.Field, te.Type, te.Value), details: map[string]any{"field": te.Field}}
	}
	return errBad("the body is not valid JSON: %v", err)
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client may be gone; nothing more to tell it
}

// fail answers err with the status its kind maps to: 400 bad input
// (including an operation that does not fit the vault's type, or a path
// leaving it), 401, 403, 404, 409, 413; anything else is a bug, logged
// and answered 500 without its details.
func (a *api) fail(w http.ResponseWriter, req *http.Request, err error) {
	var br *badRequest
	var mb *http.MaxBytesError
	if lb, ok := req.Body.(*limitedBody); ok && lb.tooLarge || errors.As(err, &mb) {
		vaultauth.WriteError(w, http.StatusRequestEntityTooLarge, "too_large",
			fmt.Sprintf("the request body is over %d bytes", a.maxBody), map[string]any{"max_bytes": a.maxBody})
		return
	}
	status, code := 0, ""
	switch {
	case errors.As(err, &br):
		vaultauth.WriteError(w, http.StatusBadRequest, "bad_request", br.msg, br.details)
		return
	case errors.Is(err, vault.ErrNotFound), errors.Is(err, vault.ErrNoAgent),
		errors.Is(err, episodic.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(err, vault.ErrForbidden):
		status, code = http.StatusForbidden, "forbidden"
	case errors.Is(err, vault.ErrExists), errors.Is(err, episodic.ErrConflict):
		status, code = http.StatusConflict, "conflict"
	case errors.Is(err, vault.ErrInvalid), errors.Is(err, vault.ErrOutside),
		errors.Is(err, vault.ErrWrongType), errors.Is(err, episodic.ErrInvalid):
		status, code = http.StatusBadRequest, "bad_request"
	case errors.Is(err, vault.ErrUnauthenticated):
		status, code = http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, context.Canceled) && req.Context().Err() != nil:
		// The client went away: nobody reads the answer.
		a.log.Debug("vault API: request canceled", "method", req.Method, "path", req.URL.Path)
		vaultauth.WriteError(w, 499, "canceled", "the request was canceled", nil)
		return
	default:
		a.log.Error("vault API: internal error", "method", req.Method, "path", req.URL.Path, "caller", caller(req), "err", err)
		vaultauth.WriteError(w, http.StatusInternalServerError, "internal", "internal error; the server's log has the details", nil)
		return
	}
	vaultauth.WriteError(w, status, code, err.Error(), nil)
}
