// Package vaultapi is the vault server's REST API under /v1, and the
// reference system's (CtxVault's) API under /ctxvault with its requests,
// answers, statuses and FastAPI's error shapes, for programs written for
// it (compat.go says where it deliberately differs, for safety: a token
// is required unless the server trusts CtxVault's agent header on the
// loopback, DELETE never empties a vault, score is relevance). Under /v1: vaults (list, and create,
// attach, detach, publish with the owner's token), documents, queries,
// skills, episodes and the audit log. Every route only translates: it
// decodes the request into the vault service's request type, calls the
// service with the authenticated caller, and encodes the service's answer;
// authorization, validation and audit happen in the service, once for
// every front end.
//
// Every route is described once, in a table (routes), with the Go types
// its handler decodes and encodes; the mux is built from that table, and
// so is the OpenAPI 3.1 document served at GET /v1/openapi.json, which
// therefore cannot disagree with the handlers.
//
// Every answer is JSON (except the episode export, JSON lines); every
// error has the shape of vaultauth.WriteError, with the status mapped from
// the error's class (vault.Describe). A restricted vault is invisible to
// the agents not attached to it: absent from lists, and every route naming
// it answers 404, never 403.
//
// The /ctxvault routes decode and answer errors as FastAPI does
// (compat_fastapi.go) and share writeJSON and dispatch; they are not in
// the OpenAPI document, which describes /v1.
package vaultapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
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
	// CtxVaultAuth is how the /ctxvault routes know their caller: by
	// token (the default), or by CtxVault's header (CtxVaultHeader, for
	// a server on the loopback only).
	CtxVaultAuth CtxVaultAuth
}

// api holds what the handlers share. It keeps no mutable state.
type api struct {
	svc     *vault.Service
	log     *slog.Logger
	maxBody int64
}

// New returns the handler of the routes under /v1 and /ctxvault.
func New(svc *vault.Service, opts Options) http.Handler {
	a := &api{svc: svc, log: cmp.Or(opts.Logger, slog.Default()), maxBody: cmp.Or(opts.MaxBodyBytes, DefaultMaxBodyBytes)}
	inner := http.NewServeMux()
	for _, rt := range a.routes() {
		inner.Handle(rt.Method+" "+rt.Pattern, rt.handler)
	}
	var authed http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, ok := vaultauth.Caller(req.Context()); !ok {
			vaultauth.Unauthorized(w)
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
			vaultauth.WriteError(w, http.StatusInternalServerError, vaultauth.Error{Code: string(vault.ClassInternal), Message: "the OpenAPI document could not be built"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	outer.Handle("/v1/", authed)
	outer.Handle("/ctxvault/", a.compat(opts.Auth, opts.CtxVaultAuth))
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
		vaultauth.WriteError(w, http.StatusMethodNotAllowed, vaultauth.Error{Code: "method_not_allowed",
			Message: fmt.Sprintf("%s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, probe.header.Get("Allow"))})
		return
	}
	vaultauth.WriteError(w, http.StatusNotFound, vaultauth.Error{Code: string(vault.ClassNotFound),
		Message: "no such route: " + req.Method + " " + req.URL.Path, Fix: "see GET /v1/openapi.json"})
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

// caller returns the authenticated caller of req.
func caller(req *http.Request) vault.Caller {
	c, _ := vaultauth.Caller(req.Context())
	return c
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

// fail answers err with the status of its class (vault.Describe); a
// request body over the limit is 413, a decoding error of the route's own
// 400. An internal error is logged and answered without its details.
func (a *api) fail(w http.ResponseWriter, req *http.Request, err error) {
	var br *badRequest
	if e, ok := a.tooLarge(req, err); ok {
		vaultauth.WriteError(w, http.StatusRequestEntityTooLarge, e)
		return
	}
	if errors.As(err, &br) {
		vaultauth.WriteError(w, http.StatusBadRequest, vaultauth.Error{Code: string(vault.ClassInvalid), Message: br.msg, Details: br.details})
		return
	}
	vaultauth.WriteDescribed(w, a.describe(req, err))
}

// tooLarge is the answer to a request whose body went over the limit,
// when err (or the body's reader) says it did.
func (a *api) tooLarge(req *http.Request, err error) (vaultauth.Error, bool) {
	var mb *http.MaxBytesError
	if lb, ok := req.Body.(*limitedBody); !(ok && lb.tooLarge) && !errors.As(err, &mb) {
		return vaultauth.Error{}, false
	}
	return vaultauth.Error{Code: "too_large", Message: fmt.Sprintf("the request body is over %d bytes", a.maxBody),
		Details: map[string]any{"max_bytes": a.maxBody}}, true
}

// describe classifies a service error for an answer: an internal error
// is logged and described without its details, a canceled request logged
// at debug level.
func (a *api) describe(req *http.Request, err error) vault.Described {
	d := vault.Describe(err)
	switch d.Class {
	case vault.ClassInternal:
		a.log.Error("vault API: internal error", "method", req.Method, "path", req.URL.Path, "caller", caller(req).String(), "err", err)
		d.Message = "internal error; the server's log has the details"
	case vault.ClassCanceled:
		a.log.Debug("vault API: request canceled", "method", req.Method, "path", req.URL.Path)
	}
	return d
}
