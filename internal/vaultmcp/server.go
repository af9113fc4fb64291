// Package vaultmcp is the MCP server of ctxkit's vaults: the tools an agent
// uses to read and write its memory (documents, skills and episodes) over
// the official MCP Go SDK. `ctxkit mcp` serves it on stdio for one agent,
// and `ctxkit serve` mounts HTTPHandler at /mcp behind the vault server's
// authentication.
//
// Every tool acts for one agent, fixed for the life of an MCP session: the
// agent given to NewServer (the owner when none), or the caller that
// internal/vaultauth authenticated for the request that opened an HTTP
// session. Every tool goes through vault.Registry.VaultFor first, so a
// restricted vault the agent is not attached to is "no vault named X",
// exactly like a missing one, from every tool.
//
// Errors are tool results (isError) whose message says how to fix the
// call, never protocol errors. Large results (a long document) go through
// the offload engine (offload/mcpadapter): they are stored and replaced by a
// notice, and the result_* tools explore them. Nothing is loaded before the
// first call: the tools answer at once.
package vaultmcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// ServerName is the server's name in the MCP handshake and in the offload
// store's metadata.
const ServerName = "ctxkit-memory"

// Options configure the server.
type Options struct {
	// Agent is who the tools act for; "" is the owner (vault.Owner).
	// HTTPHandler ignores it and takes the authenticated caller instead.
	Agent string
	// Engine stores large results; nil is an in-memory engine of its own.
	Engine *offload.Engine
	// Threshold is the result size, in chars, above which a result is
	// offloaded; 0 is mcpadapter.DefaultThreshold.
	Threshold int
	// Version is the server's version in the MCP handshake.
	Version string
	// Logger receives failures to store a result; nil discards them.
	Logger *slog.Logger

	// perSession keeps stored results private to the HTTP session.
	perSession bool
	// schemas is shared by the servers of HTTP sessions, which would
	// otherwise infer every tool's schemas again for each session.
	schemas *mcp.SchemaCache
}

// server holds what the tools share.
type server struct {
	r     *vault.Registry
	agent string
}

// NewServer returns the MCP server acting for opts.Agent, with every tool
// registered and large results offloaded.
func NewServer(r *vault.Registry, opts Options) *mcp.Server {
	if opts.Engine == nil {
		opts.Engine = offload.New(memstore.New(memstore.Options{}))
	}
	agent := opts.Agent
	if agent == "" {
		agent = vault.Owner
	}
	adapter := mcpadapter.New(opts.Engine, mcpadapter.Options{Threshold: opts.Threshold, Server: ServerName,
		PerSession: opts.perSession, Logger: opts.Logger})
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "ctxkit vaults", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions + " " + adapter.Instructions(), SchemaCache: opts.schemas})
	srv := &server{r: r, agent: agent}
	srv.addVaultTools(s)
	srv.addEpisodeTools(s)
	adapter.Install(s)
	s.AddReceivingMiddleware(explainArgumentErrors)
	return s
}

// explainArgumentErrors completes the SDK's message for arguments that do
// not fit a tool's input schema (a missing field, a wrong type), which
// names the problem but not what to do.
func explainArgumentErrors(next mcp.MethodHandler) mcp.MethodHandler {
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
		if !ok || !(strings.HasPrefix(tc.Text, `validating "arguments"`) || strings.HasPrefix(tc.Text, "json: ")) {
			return res, err
		}
		name := ""
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
			name = p.Name
		}
		tc.Text = fmt.Sprintf("the arguments do not fit %s's input schema (%s); call %s again with every required field, "+
			"each of the type the schema gives (times as RFC 3339 strings)", name, tc.Text, name)
		return res, err
	}
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
// A request without an authenticated caller is refused (401).
func HTTPHandler(r *vault.Registry, opts Options) http.Handler {
	if opts.Engine == nil {
		opts.Engine = offload.New(memstore.New(memstore.Options{}))
	}
	opts.perSession = true
	opts.schemas = mcp.NewSchemaCache()
	h := mcp.NewStreamableHTTPHandler(func(req *http.Request) *mcp.Server {
		caller, ok := vaultauth.Caller(req.Context())
		if !ok {
			return nil // unreachable: bindCaller refused the request
		}
		o := opts
		o.Agent = caller
		return NewServer(r, o)
	}, &mcp.StreamableHTTPOptions{Logger: opts.Logger, SessionTimeout: time.Hour})
	return bindCaller(h)
}

// bindCaller hands the authenticated caller to the SDK as the session's
// user, whose check refuses a session's requests from anyone else.
func bindCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		caller, ok := vaultauth.Caller(req.Context())
		if !ok || caller == "" {
			vaultauth.WriteError(w, http.StatusUnauthorized, "unauthorized",
				"the MCP endpoint needs a token: send Authorization: Bearer with an agent's token (ctxkit agent create NAME) or the owner's", nil)
			return
		}
		// The expiry only satisfies the SDK's type: the token was checked
		// by vaultauth for this very request.
		info := &auth.TokenInfo{UserID: caller, Expiration: time.Now().Add(time.Hour)}
		auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return info, nil
		}, nil)(next).ServeHTTP(w, req)
	})
}

// toolError turns err from tool on vault name into an error whose message
// says how to fix the call; the SDK returns it as a result with isError.
func toolError(tool, name string, err error) error {
	var done *fixError
	if errors.As(err, &done) {
		return err
	}
	var msg string
	switch {
	case errors.Is(err, vault.ErrNotFound):
		msg = fmt.Sprintf("no vault named %q; list_vaults shows the ones you can use", name)
	case errors.Is(err, vault.ErrForbidden):
		msg = fmt.Sprintf("vault %q is read-only for you: you can read and query it but not write to it; "+
			"write to a vault list_vaults shows as read-write, or ask the user for write access", name)
	case errors.Is(err, vault.ErrExists):
		msg = fmt.Sprintf("%v; set overwrite to true to replace it, or choose another name", unwrapText(err, vault.ErrExists))
	case errors.Is(err, vault.ErrOutside):
		msg = fmt.Sprintf("%v: give a path relative to the vault, like notes/meeting.md (no leading /, no .., not into .ctxkit-vault)", err)
	case errors.Is(err, vault.ErrWrongType):
		msg = err.Error() + "; list_vaults says which tools fit each vault"
	case errors.Is(err, episodic.ErrNotFound):
		msg = fmt.Sprintf("%v in vault %q; query_episodes (with include_closed true for closed ones) shows the ids", err, name)
	case errors.Is(err, episodic.ErrConflict):
		msg = fmt.Sprintf("%v: the episode is no longer open; episode_history shows what replaced it; act on the open statement of the chain instead", err)
	case errors.Is(err, fs.ErrNotExist) && tool == "read_doc":
		msg = fmt.Sprintf("%v; list_docs shows the vault's documents", err)
	case errors.Is(err, fs.ErrNotExist) && tool == "read_skill":
		msg = fmt.Sprintf("%v; list_skills shows the vault's skills", err)
	case errors.Is(err, vault.ErrInvalid), errors.Is(err, episodic.ErrInvalid), errors.Is(err, errBadInput):
		msg = err.Error() + "; fix the arguments and call " + tool + " again"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		msg = tool + " was cancelled before it finished: " + err.Error()
	default:
		msg = tool + " failed: " + err.Error()
	}
	return &fixError{msg}
}

// fixError is an error whose message says how to fix the call.
type fixError struct{ msg string }

func (e *fixError) Error() string { return e.msg }

// unwrapText is err's text without the sentinel's prefix.
func unwrapText(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}

// errBadInput marks an argument the tool itself refused.
var errBadInput = errors.New("invalid argument")

// badInput returns an argument error with a message for the model.
func badInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadInput, fmt.Sprintf(format, args...))
}

// vaultFor returns the vault for the server's agent after checking op and
// the vault's type for tool.
func (s *server) vaultFor(ctx context.Context, tool, name string, op vault.Op, types ...vault.Type) (*vault.Vault, error) {
	if strings.TrimSpace(name) == "" {
		return nil, badInput("vault is empty: name the vault (list_vaults shows them)")
	}
	v, err := s.r.VaultFor(ctx, s.agent, name, op, tool)
	if err != nil {
		return nil, toolError(tool, name, err)
	}
	if len(types) > 0 && !typeIn(v.Type, types) {
		want := make([]string, len(types))
		for i, t := range types {
			want[i] = string(t)
		}
		return nil, &fixError{fmt.Sprintf("vault %q is a %s vault and %s works on %s vaults; for a %s vault use %s",
			name, v.Type, tool, strings.Join(want, " or "), v.Type, toolsFor[v.Type])}
	}
	return v, nil
}

func typeIn(t vault.Type, types []vault.Type) bool {
	for _, u := range types {
		if t == u {
			return true
		}
	}
	return false
}

// toolsFor names the tools that fit each vault type.
var toolsFor = map[vault.Type]string{
	vault.Semantic: "query, list_docs, read_doc, write_doc",
	vault.Skill:    "list_skills, read_skill, write_skill",
	vault.Episodic: "write_episode, query_episodes, get_episode, episode_history, invalidate_episode, supersede_episode, " +
		"revise_episode, confirm_episode, dispute_episodes, list_entities",
}

// parseTime reads an optional time argument.
func parseTime(field, s string) (*time.Time, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	t, err := episodic.ParseTime(s)
	if err != nil {
		return nil, badInput("%s %q is not a time: use RFC 3339 like 2026-03-01T14:30:00Z, or a bare date like 2026-03-01 (a time without an offset is UTC)", field, s)
	}
	return &t, nil
}
