package vaultapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/internal/httpserver"
	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
)

// CtxVaultAuth is how the /ctxvault routes know their caller.
type CtxVaultAuth int

const (
	// CtxVaultToken (the default) authenticates every caller by bearer
	// token, as /v1 does; X-CtxVault-Agent is accepted only with the
	// token of the agent it names.
	CtxVaultToken CtxVaultAuth = iota
	// CtxVaultHeader is CtxVault's own model, for a server on the
	// loopback only (the command line checks it): without a token, a
	// caller is the agent X-CtxVault-Agent names, unauthenticated, or
	// anonymous without the header; public vaults are open to anyone,
	// restricted ones to the agents attached to them. A token, when
	// given, still decides.
	CtxVaultHeader
)

// ParseCtxVaultAuth reads a --ctxvault-auth value: token or header.
func ParseCtxVaultAuth(s string) (CtxVaultAuth, error) {
	switch s {
	case "", "token":
		return CtxVaultToken, nil
	case "header":
		return CtxVaultHeader, nil
	}
	return 0, fmt.Errorf("%q: want token or header", s)
}

func (m CtxVaultAuth) String() string {
	if m == CtxVaultHeader {
		return "header"
	}
	return "token"
}

// compatAgentHeader is CtxVault's agent header.
const compatAgentHeader = "X-CtxVault-Agent"

// headerVia is how an identity asserted by the header is named in the
// audit log.
const headerVia = "the " + compatAgentHeader + " header"

// compat returns the handler of the /ctxvault routes: it finds the
// caller (authenticated by auth, or, when auth is nil, from the request's
// context as for /v1; in header mode, asserted), and answers every error
// with FastAPI's detail beside ctxkit's error.
func (a *api) compat(auth *vaultauth.Authenticator, mode CtxVaultAuth) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range a.compatRoutes() {
		mux.Handle(rt.Method+" "+rt.Pattern, rt.handler)
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		w := &detailWriter{ResponseWriter: rw}
		defer w.finish()
		name := strings.TrimSpace(req.Header.Get(compatAgentHeader))
		_, bearer := httpserver.Bearer(req)
		c, ok := vaultauth.Caller(req.Context())
		switch {
		case ok:
		case bearer && auth != nil:
			if c, ok = auth.Authenticate(w, req); !ok {
				return
			}
		case mode == CtxVaultHeader && !bearer:
			asserted, err := vault.AssertedCaller(name, headerVia)
			if err != nil {
				a.compatFail(w, req, &badRequest{msg: compatAgentHeader + ": " + vault.Describe(err).Message,
					details: map[string]any{"header": compatAgentHeader}}, "")
				return
			}
			dispatch(mux, w, req.WithContext(vaultauth.WithCaller(req.Context(), asserted)))
			return
		case name != "":
			nameOnly(w, name)
			return
		default:
			vaultauth.Unauthorized(w)
			return
		}
		if name != "" && name != c.Name() {
			named := name // never log what may be a token sent in the wrong header
			if vault.ValidName(name) != nil {
				named = "(not an agent name)"
			}
			a.log.Warn("vault API: X-CtxVault-Agent names another identity than the token", "header", named, "caller", c.String())
			whose := fmt.Sprintf("agent %q's", c)
			if c.IsOwner() {
				whose = "the owner's"
			}
			vaultauth.WriteError(w, http.StatusForbidden, vaultauth.Error{Code: string(vault.ClassForbidden),
				Message: fmt.Sprintf("%s names agent %q but the bearer token is %s", compatAgentHeader, name, whose),
				Fix:     "send the token of the agent the header names, or drop the header",
				Details: map[string]any{"header": compatAgentHeader, "agent": name}})
			return
		}
		dispatch(mux, w, req.WithContext(vaultauth.WithCaller(req.Context(), c)))
	})
}

// nameOnly refuses, in token mode, an agent named by the header without
// its token, and says how to get one.
func nameOnly(w http.ResponseWriter, name string) {
	shown := name
	if vault.ValidName(name) != nil {
		shown = "NAME"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit"`)
	vaultauth.WriteError(w, http.StatusUnauthorized, vaultauth.Error{Code: string(vault.ClassUnauthenticated),
		Message: compatAgentHeader + " alone does not identify an agent",
		Fix: fmt.Sprintf("send the agent's token as Authorization: Bearer <token> (with the header or without it); "+
			"the owner creates a token with: ctxkit agent create %s (or runs ctxkit serve --ctxvault-auth header "+
			"on the loopback to trust the header as CtxVault does)", shown),
		Details: map[string]any{"header": compatAgentHeader, "agent": name}})
}

// compatErrorBody is an error answer of the /ctxvault routes: FastAPI's
// detail (a message, or the list of a 422) and ctxkit's error.
type compatErrorBody struct {
	Detail any             `json:"detail"`
	Error  vaultauth.Error `json:"error"`
}

// errNoResults is CtxVault's answer to a semantic query that matched
// nothing: 404.
var errNoResults = errors.New("no results found")

// compatFail answers err as CtxVault would: 422 for a request that does
// not fit the route's model; 400 for a missing vault, an operation the
// vault's type does not support, and bad input; 403 for a restricted
// vault the caller is not attached to (anonymous callers included) and a
// write through a read-only grant; 404 for a missing document, skill or
// episode and a query without results; 409 for an existing file or a
// closed episode. vaultName is the vault the request names, for the 403's
// message.
func (a *api) compatFail(w http.ResponseWriter, req *http.Request, err error, vaultName string) {
	var ve *validationError
	var br *badRequest
	status, e := 0, vaultauth.Error{}
	big, tooLarge := a.tooLarge(req, err)
	switch {
	case tooLarge:
		status, e = http.StatusRequestEntityTooLarge, big
	case errors.As(err, &ve):
		writeJSON(w, http.StatusUnprocessableEntity, compatErrorBody{Detail: ve.items, Error: vaultauth.Error{Code: string(vault.ClassInvalid),
			Message: ve.Error(), Fix: "correct the fields that detail lists (loc names each one) and send the request again",
			Details: map[string]any{"errors": len(ve.items)}}})
		return
	case errors.Is(err, errNoResults):
		status, e = http.StatusNotFound, vaultauth.Error{Code: string(vault.ClassNotFound), Message: "No results found.",
			Fix: "ask in other words, or index the vault's documents first (PUT /ctxvault/index)"}
	case errors.As(err, &br):
		status, e = http.StatusBadRequest, vaultauth.Error{Code: string(vault.ClassInvalid), Message: br.msg, Details: br.details}
	default:
		d := a.describe(req, err)
		status, e = vaultauth.Status(d.Class), vaultauth.Error{Code: string(d.Class), Message: d.Message, Fix: d.Fix}
		if d.Field != "" {
			e.Details = map[string]any{"field": d.Field}
		}
		switch {
		case errors.Is(err, vault.ErrRestricted):
			status, e.Code = http.StatusForbidden, string(vault.ClassForbidden)
			e.Message = fmt.Sprintf("Agent '%s' is not authorized to access vault '%s'", agentShown(caller(req)), vaultName)
			e.Fix = "send X-CtxVault-Agent (with its token, unless the server trusts the header) naming an agent attached to the vault; the owner attaches one with: ctxkit vault attach " + vaultName + " AGENT"
		case d.Class == vault.ClassNotFound && d.Field == "vault":
			status = http.StatusBadRequest // CtxVault's VaultNotFoundError
		}
	}
	writeJSON(w, status, compatErrorBody{Detail: e.Message, Error: e})
}

// agentShown is the agent name a 403 names, as CtxVault prints it (None
// for no agent).
func agentShown(c vault.Caller) string {
	if c.Name() == "" {
		return "None"
	}
	return c.Name()
}

// detailWriter holds back an error answer in ctxkit's shape ({"error":
// {...}}, from the authentication or the mux) to add FastAPI's detail to
// it; other answers pass through.
type detailWriter struct {
	http.ResponseWriter
	status int
	held   bytes.Buffer
}

func (d *detailWriter) WriteHeader(status int) {
	if d.status != 0 {
		return
	}
	d.status = status
	if status < 400 {
		d.ResponseWriter.WriteHeader(status)
	}
}

func (d *detailWriter) Write(b []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	if d.status >= 400 {
		return d.held.Write(b)
	}
	return d.ResponseWriter.Write(b)
}

// finish sends a held error answer, with detail added when it lacks one.
func (d *detailWriter) finish() {
	if d.status < 400 {
		return
	}
	body := d.held.Bytes()
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil && m["detail"] == nil && m["error"] != nil {
		var e vaultauth.Error
		if json.Unmarshal(m["error"], &e) == nil {
			if b, err := json.Marshal(compatErrorBody{Detail: e.Message, Error: e}); err == nil {
				body = append(b, '\n')
			}
		}
	}
	d.ResponseWriter.WriteHeader(d.status)
	_, _ = d.ResponseWriter.Write(body) // the client may be gone
}
