// Package vaultmcp is the MCP server of ctxkit's vaults: the tools an agent
// uses to read and write its memory (documents, skills and episodes) over
// the official MCP Go SDK. `ctxkit mcp` serves it on stdio for one agent,
// and `ctxkit serve` mounts HTTPHandler at /mcp behind the vault server's
// authentication.
//
// Every tool acts for one caller, fixed for the life of an MCP session: the
// caller given to NewServer, or the one internal/vaultauth authenticated
// for the request that opened an HTTP session. Every tool only translates:
// its input is the vault service's request type with the vault's name (and
// the document, skill or episode it acts on), its output the service's
// answer; the service authorizes, validates and audits, so a restricted
// vault the agent is not attached to is "no vault named X", exactly like a
// missing one, and a read-only grant cannot write through any tool.
//
// Errors are tool results (isError) whose text is JSON,
// {"error": {"code", "message", "fix", "details": {"field"}}}, the shape of
// the REST API's errors (vaultauth.Error): the class of the error
// (vault.Describe), what is wrong, what to do about it, and the argument at
// fault; never protocol errors. Large results (a long document) go through
// the offload engine (offload/mcpadapter): they are stored and replaced by
// a notice, and the result_* tools explore them; stored results are the
// caller's own (over HTTP, the session's own). Nothing is loaded before
// the first call: the tools answer at once.
package vaultmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/mcpadapter"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/vault"
)

// ServerName is the server's name in the MCP handshake and in the offload
// store's metadata.
const ServerName = "ctxkit-memory"

// Options configure the server.
type Options struct {
	// Caller is who the tools act for (vault.Owner() for the owner; the
	// zero Caller is anonymous and refused everywhere). HTTPHandler
	// ignores it and takes the authenticated caller instead.
	Caller vault.Caller
	// Recheck, when set, is asked before every tool call whether the
	// caller still holds: a long-lived stdio server re-reads the token or
	// the agent it was started with, so that an agent revoked meanwhile
	// is refused at once (over HTTP, every request is authenticated
	// anyway).
	Recheck func(context.Context) error
	// Engine stores large results; nil is an in-memory engine of its own.
	Engine *offload.Engine
	// Threshold is the result size, in chars, above which a result is
	// offloaded; 0 is mcpadapter.DefaultThreshold.
	Threshold int
	// Version is the server's version in the MCP handshake.
	Version string
	// Logger receives the internal errors of the tools (whose answer
	// says only "internal error") and failures to store a result; nil
	// discards them.
	Logger *slog.Logger

	// Stateless serves HTTP without sessions (HTTPHandler): every request
	// stands alone, so that instances behind a load balancer can answer
	// any of them. Stored results are then private to the caller, not to
	// a session, and the server cannot send requests to the client.
	Stateless bool

	// perSession keeps stored results private to the HTTP session.
	perSession bool
	// schemas is shared by the servers of HTTP sessions, which would
	// otherwise infer every tool's schemas again for each session.
	schemas *mcp.SchemaCache
}

// server holds what the tools share.
type server struct {
	svc     *vault.Service
	caller  vault.Caller
	log     *slog.Logger
	recheck func(context.Context) error
}

// NewServer returns the MCP server acting for opts.Caller, with every tool
// registered and large results offloaded.
func NewServer(svc *vault.Service, opts Options) *mcp.Server {
	if opts.Engine == nil {
		opts.Engine = offload.New(memstore.New(memstore.Options{}))
	}
	c := opts.Caller
	adapter := mcpadapter.New(opts.Engine, mcpadapter.Options{Threshold: opts.Threshold, Server: ServerName,
		PerSession: opts.perSession, Logger: opts.Logger})
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "ctxkit vaults", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions + " " + aliasNote + " " + adapter.Instructions(), SchemaCache: opts.schemas})
	srv := &server{svc: svc, caller: c, log: opts.Logger, recheck: opts.Recheck}
	if srv.log == nil {
		srv.log = slog.New(slog.DiscardHandler)
	}
	srv.addWarmupTool(s)
	srv.addVaultTools(s)
	srv.addEpisodeTools(s)
	adapter.Install(s)
	s.AddReceivingMiddleware(srv.ownResults, srv.explainErrors, srv.checkCaller, srv.ctxvaultArgs)
	return s
}

// ownResults makes the results the server stores private to its caller
// (offload.WithPrivateSession). The store is shared by other processes
// (`ctxkit mcp` acting for other agents, `ctxkit wrap`), whose result_*
// tools would otherwise list and read them, documents of vaults they cannot
// see among them. An HTTP session narrows this to the session itself
// (mcpadapter's PerSession).
func (s *server) ownResults(next mcp.MethodHandler) mcp.MethodHandler {
	session := ServerName + ":" + s.caller.Name()
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		return next(offload.WithPrivateSession(ctx, session), method, req)
	}
}

// checkCaller refuses a tool call when Recheck says the caller no longer
// holds (a revoked agent).
func (s *server) checkCaller(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" && s.recheck != nil {
			if err := s.recheck(ctx); err != nil {
				var res mcp.CallToolResult
				res.SetError(err)
				return &res, nil
			}
		}
		return next(ctx, method, req)
	}
}

// explainErrors writes a failed tool call's result as JSON that names the
// error's class and what to do: the service's errors as vault.Describe
// gives them (for a vault of the wrong type, the tools that fit it; an
// internal error is logged and its details kept from the caller), and the
// SDK's own for arguments that do not fit a tool's input schema (a missing
// field, a wrong type), which name the problem but not what to do.
func (s *server) explainErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" || err != nil {
			return res, err
		}
		r, ok := res.(*mcp.CallToolResult)
		if !ok || !r.IsError || len(r.Content) != 1 {
			return res, err
		}
		tc, ok := r.Content[0].(*mcp.TextContent)
		if !ok {
			return res, err
		}
		p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
		name := ""
		if p != nil {
			name = p.Name
		}
		var e vaultauth.Error
		switch cause := r.GetError(); {
		case cause == nil:
			return res, err // a tool of the offload adapter: its own message
		case strings.HasPrefix(tc.Text, `validating "arguments"`) || strings.HasPrefix(tc.Text, "json: "):
			e = vaultauth.Error{Code: string(vault.ClassInvalid), Message: "the arguments do not fit " + name + "'s input schema: " + tc.Text,
				Fix: "call " + name + " again with every required field, each of the type the schema gives (times as RFC 3339 strings)"}
		default:
			d := vault.Describe(cause)
			if d.Class == vault.ClassInternal {
				s.log.Error("vault MCP: internal error", "tool", name, "caller", s.caller.String(), "err", cause)
				d.Message = "internal error; the server's log has the details"
			}
			e = vaultauth.Error{Code: string(d.Class), Message: d.Message, Fix: d.Fix}
			if errors.Is(cause, vault.ErrWrongType) && p != nil {
				e.Fix = s.toolsFix(ctx, p.Arguments, e.Fix)
			}
			if d.Field != "" {
				e.Details = map[string]any{"field": d.Field}
			}
		}
		b, merr := json.Marshal(struct {
			Error vaultauth.Error `json:"error"`
		}{e})
		if merr == nil {
			tc.Text = string(b)
		}
		return res, err
	}
}

// toolsFix names the tools that fit the type of the vault a call's
// arguments name, for an error that says the vault is of another type; the
// service's fix names the operations by their command names. fix is kept
// when the vault cannot be described.
func (s *server) toolsFix(ctx context.Context, args json.RawMessage, fix string) string {
	var in VaultIn
	if json.Unmarshal(args, &in) != nil {
		return fix
	}
	v, err := s.svc.DescribeVault(ctx, s.caller, in.Vault)
	if err != nil || toolsFor[v.Type] == "" {
		return fix
	}
	return fmt.Sprintf("%s vaults take the tools %s", v.Type, toolsFor[v.Type])
}

// instructions tell the model what the server is for.
const instructions = "Vaults are your long-term memory, kept as files the user can read. Call list_vaults first: " +
	"it names each vault, its type and the tools that work on it. Semantic vaults hold documents (query, read_doc, " +
	"write_doc), skill vaults hold procedures (list_skills, read_skill, write_skill), episodic vaults hold " +
	"time-stamped statements about the world (write_episode, query_episodes and the episode tools). Before writing " +
	"an episode, look for what the vault already says; when something changes, correct the old statement " +
	"(supersede_episode, revise_episode, invalidate_episode, dispute_episodes, confirm_episode) instead of writing " +
	"a contradicting one beside it."

// HTTPHandler returns the streamable HTTP handler of the server, to mount
// behind vaultauth's middleware: each session acts for the caller that
// opened it (vaultauth.Caller), and a request of that session from any
// other caller is refused (403), so a session never changes identity.
// A request without an authenticated caller is refused (401). With
// opts.Stateless there are no sessions: each request is one.
func HTTPHandler(svc *vault.Service, opts Options) http.Handler {
	if opts.Engine == nil {
		opts.Engine = offload.New(memstore.New(memstore.Options{}))
	}
	opts.perSession = true
	opts.schemas = mcp.NewSchemaCache()
	h := mcp.NewStreamableHTTPHandler(func(req *http.Request) *mcp.Server {
		c, ok := vaultauth.Caller(req.Context())
		if !ok {
			return nil // unreachable: bindCaller refused the request
		}
		o := opts
		o.Caller = c
		return NewServer(svc, o)
	}, &mcp.StreamableHTTPOptions{Logger: opts.Logger, SessionTimeout: time.Hour, Stateless: opts.Stateless})
	return bindCaller(h)
}

// bindCaller hands the authenticated caller to the SDK as the session's
// user, whose check refuses a session's requests from anyone else.
func bindCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, ok := vaultauth.Caller(req.Context())
		if !ok {
			vaultauth.Unauthorized(w)
			return
		}
		// The expiry only satisfies the SDK's type: the token was checked
		// by vaultauth for this very request.
		info := &auth.TokenInfo{UserID: c.Name(), Expiration: time.Now().Add(time.Hour)}
		auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return info, nil
		}, nil)(next).ServeHTTP(w, req)
	})
}

// toolsFor names the tools that fit each vault type.
var toolsFor = map[vault.Type]string{
	vault.Semantic: "query, list_docs, read_doc, write_doc, delete_doc",
	vault.Skill:    "list_skills, read_skill, write_skill",
	vault.Episodic: "write_episode, query_episodes, get_episode, episode_history, invalidate_episode, supersede_episode, " +
		"revise_episode, confirm_episode, dispute_episodes, list_entities",
}
