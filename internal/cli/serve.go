package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/httpserver"
	"github.com/ctxkit/ctxkit/internal/vaultapi"
	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/internal/vaultmcp"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault"
)

// ServeOptions are the inputs of `ctxkit serve`.
type ServeOptions struct {
	Addr     string
	TLSCert  string
	TLSKey   string
	Insecure bool
	// MCPStateless serves MCP without sessions, for instances behind a
	// load balancer; the default on a backend several machines share.
	MCPStateless bool
	// Grace is how long in-flight requests may take to finish at shutdown.
	Grace time.Duration
	// Limits are the server's (zero: the defaults; tests shorten them).
	Limits httpserver.Limits
	// CtxVaultAuth is how /ctxvault knows its callers: "token" (the
	// default) or "header" (CtxVault's X-CtxVault-Agent, trusted; on a
	// loopback address only).
	CtxVaultAuth string

	mcpStatelessSet bool // --mcp-stateless was given
}

func newServeCmd(g *globals, streams IO) *cobra.Command {
	opts := &ServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the vaults: REST API, MCP endpoint, health check",
		Long: "Run one HTTP server for the vaults: the REST API under /v1 (its OpenAPI document at /v1/openapi.json), " +
			"the reference system's API under /ctxvault, the MCP server (streamable HTTP) at /mcp, and /healthz. " +
			"Callers send Authorization: Bearer with an agent's token (ctxkit agent create NAME) or the owner's token, " +
			"which the first serve creates in $CTXKIT_HOME/owner-token (readable by you only) and which administrative " +
			"routes need; --ctxvault-auth header lets /ctxvault trust CtxVault's X-CtxVault-Agent header instead (loopback only). A non-loopback address needs --tls-cert and --tls-key, or --insecure. SIGINT or SIGTERM " +
			"stops accepting connections and lets requests in flight finish.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.mcpStatelessSet = cmd.Flags().Changed("mcp-stateless")
			return runServe(ctx, g, opts, streams, nil)
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:8000", "address to listen on")
	cmd.Flags().StringVar(&opts.TLSCert, "tls-cert", "", "TLS certificate file (PEM)")
	cmd.Flags().StringVar(&opts.TLSKey, "tls-key", "", "TLS key file (PEM)")
	cmd.Flags().BoolVar(&opts.Insecure, "insecure", false, "allow plain HTTP on a non-loopback address")
	cmd.Flags().BoolVar(&opts.MCPStateless, "mcp-stateless", false, "serve MCP without sessions, so that any of several instances behind a load balancer answers any request "+
		"(stored results stay private to the caller; the default on a shared store such as postgres://)")
	cmd.Flags().StringVar(&opts.CtxVaultAuth, "ctxvault-auth", "token", "how /ctxvault knows its callers: token (a bearer token, as /v1), or header "+
		"(CtxVault's model: public vaults open without a token, restricted ones to the agent X-CtxVault-Agent names, unchecked; "+
		"a token, when given, still decides; loopback addresses only)")
	cmd.Flags().DurationVar(&opts.Grace, "grace", 30*time.Second, "how long requests in flight may take to finish at shutdown")
	return cmd
}

// serveHandler is the vault server's handler: the REST API (which also
// serves the compatibility routes), the MCP endpoint behind the same
// authentication, and the health check.
func serveHandler(svc *vault.Service, engine *offload.Engine, stateless bool, ctxvaultAuth vaultapi.CtxVaultAuth, logger *slog.Logger) http.Handler {
	auth := vaultauth.New(svc, logger)
	mux := http.NewServeMux()
	api := vaultapi.New(svc, vaultapi.Options{Auth: auth, Logger: logger, CtxVaultAuth: ctxvaultAuth})
	mux.Handle("/v1/", api)
	mux.Handle("/ctxvault/", api)
	mux.Handle("/mcp", auth.Middleware(vaultmcp.HTTPHandler(svc, vaultmcp.Options{Engine: engine, Version: version(), Logger: logger, Stateless: stateless})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	return mux
}

// runServe serves until ctx ends; ready, when set, gets the address
// once listening (tests).
func runServe(ctx context.Context, g *globals, opts *ServeOptions, streams IO, ready func(addr string)) error {
	tls := opts.TLSCert != "" || opts.TLSKey != ""
	if tls && (opts.TLSCert == "" || opts.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if err := httpserver.CheckAddr(opts.Addr, tls || opts.Insecure); err != nil {
		return fmt.Errorf("--addr %w: give --tls-cert and --tls-key, or --insecure to serve plain HTTP anyway", err)
	}
	ctxvaultAuth, err := vaultapi.ParseCtxVaultAuth(opts.CtxVaultAuth)
	if err != nil {
		return fmt.Errorf("--ctxvault-auth %w", err)
	}
	if ctxvaultAuth == vaultapi.CtxVaultHeader && !httpserver.Loopback(opts.Addr) {
		return fmt.Errorf("--ctxvault-auth header trusts an unchecked agent name, so it serves a loopback address only, not %s: "+
			"listen on 127.0.0.1 or [::1], or keep the default (--ctxvault-auth token) and give each agent its token (ctxkit agent create NAME)", opts.Addr)
	}
	v, err := g.openVaults(ctx, nil, true)
	if err != nil {
		return err
	}
	defer v.Close()
	if _, err := v.svc.OwnerToken(ctx, true); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(streams.Err, nil))
	stateless := opts.MCPStateless
	if !opts.mcpStatelessSet && v.b.Hosted() {
		stateless = true
	}
	srv, err := httpserver.Listen(httpserver.Options{
		Addr:    opts.Addr,
		Handler: serveHandler(v.svc, offload.New(v.b.Workspaces(), offload.WithLogger(logger)), stateless, ctxvaultAuth, logger),
		Logger:  logger,
		TLSCert: opts.TLSCert, TLSKey: opts.TLSKey,
		Grace:  opts.Grace,
		Limits: opts.Limits,
	})
	if err != nil {
		return err
	}
	mcpMode := "MCP /mcp"
	if stateless {
		mcpMode = "MCP /mcp without sessions"
	}
	storeName := store.Redact(g.storeURL())
	if storeName == "" {
		storeName = "the default (SQLite in the data directory)"
	}
	fmt.Fprintf(streams.Err, "ctxkit serve: %s (REST /v1, /ctxvault, %s); store %s; owner token in %s\n", srv.URL(), mcpMode, storeName, v.svc.OwnerTokenPath())
	if ctxvaultAuth == vaultapi.CtxVaultHeader {
		logger.Warn("ctxkit serve: /ctxvault trusts the X-CtxVault-Agent header as CtxVault does (--ctxvault-auth header): "+
			"public vaults are open to any local process without a token, and a restricted vault to any process that names an attached agent; "+
			"a token, when given, still decides; /v1 and /mcp still need tokens", "addr", srv.URL())
	}
	if ready != nil {
		ready(srv.Addr().String())
	}
	return srv.Run(ctx)
}
