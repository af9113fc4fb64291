package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/internal/httpserver"
	"github.com/ctxkit/ctxkit/internal/mcpauth"
	"github.com/ctxkit/ctxkit/internal/mcpwrap"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/mcpadapter"
)

// WrapTokenEnvVar holds the bearer token `ctxkit wrap --http` requires, as
// an alternative to --auth-token (which other users can see in ps).
const WrapTokenEnvVar = "CTXKIT_WRAP_TOKEN"

// WrapOptions are the inputs of `ctxkit wrap`.
type WrapOptions struct {
	Upstream      mcpwrap.Upstream
	Threshold     int
	TTL           time.Duration
	HTTPAddr      string
	AuthToken     string
	AuthTokenFile string
	LogFile       string
	// Grace is how long in-flight requests may take to finish at
	// shutdown (--http).
	Grace time.Duration
	// Limits are the --http server's (zero: the defaults; tests shorten
	// them).
	Limits httpserver.Limits
}

func newWrapCmd(g *globals, streams IO) *cobra.Command {
	opts := &WrapOptions{}
	cmd := &cobra.Command{
		Use:   "wrap [flags] (URL | -- COMMAND [ARGS...])",
		Short: "Serve an MCP server through ctxkit, offloading its large results",
		Long: `Start an MCP server for your client (stdio, or streamable HTTP with --http) that proxies one
upstream MCP server: a remote URL (streamable HTTP, falling back to SSE) or a command (stdio).
Tool results over --threshold chars are stored and replaced by a notice; the result_* tools
explore them. Header values may reference environment variables as ${VAR}.`,
		Example: `  ctxkit wrap -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  ctxkit wrap -H 'Authorization: Bearer ${GITHUB_TOKEN}' https://api.githubcopilot.com/mcp/`,
		GroupID: "offload",
		RunE: func(c *cobra.Command, args []string) error {
			if dash := c.ArgsLenAtDash(); dash >= 0 {
				if dash > 0 {
					return fmt.Errorf("unexpected %q before --: give either a URL or a command after --", args[0])
				}
				opts.Upstream.Command = args
			} else if len(args) == 1 {
				opts.Upstream.URL = args[0]
			} else {
				return errors.New("give the server to wrap: a URL, or a command after --")
			}
			return runWrap(c.Context(), g, opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Upstream.Name, "name", "", "the server's name in logs and in 'ctxkit offload ls' (default: from the URL or command)")
	f.StringArrayVarP(&opts.Upstream.Headers, "header", "H", nil, "an HTTP header for a URL upstream, 'Name: value'; ${VAR} is expanded from the environment")
	f.StringArrayVar(&opts.Upstream.HeaderEnv, "header-env", nil, "an HTTP header whose value is an environment variable, 'Name=VAR' (keeps secrets off the command line)")
	f.StringVar(&opts.Upstream.Transport, "transport", mcpwrap.TransportAuto, "how to reach a URL: auto (streamable HTTP, then SSE), http or sse")
	f.IntVar(&opts.Threshold, "threshold", mcpadapter.DefaultThreshold, "results with more chars of text than this are stored")
	f.DurationVar(&opts.TTL, "ttl", offload.DefaultTTL, "how long stored results are kept")
	f.StringVar(&opts.HTTPAddr, "http", "", "serve streamable HTTP on this address instead of stdio (each session sees only its own results)")
	f.StringVar(&opts.AuthToken, "auth-token", "", "bearer token clients must send with --http (or $"+WrapTokenEnvVar+")")
	f.StringVar(&opts.AuthTokenFile, "auth-token-file", "", "file holding the bearer token for --http")
	f.StringVar(&opts.LogFile, "log-file", "", "append the log here instead of standard error")
	f.DurationVar(&opts.Grace, "grace", 5*time.Second, "with --http: how long requests in flight may take to finish at shutdown")
	return cmd
}

func runWrap(ctx context.Context, g *globals, opts *WrapOptions, streams IO) error {
	if err := opts.Upstream.Validate(); err != nil {
		return err
	}
	logOut := streams.Err
	if opts.LogFile != "" {
		f, err := os.OpenFile(opts.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("open log file: %w", err)
		}
		defer f.Close()
		logOut = f
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if opts.Upstream.Stderr == nil {
		opts.Upstream.Stderr = logOut
	}
	token, err := wrapToken(opts)
	if err != nil {
		return err
	}
	if opts.HTTPAddr != "" {
		if err := httpserver.CheckAddr(opts.HTTPAddr, token != ""); err != nil {
			return fmt.Errorf("--http %w: set --auth-token, --auth-token-file or $%s", err, WrapTokenEnvVar)
		}
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := g.openBackend(ctx, true)
	if err != nil {
		return err
	}
	defer b.Close()
	engine := offload.New(b.Workspaces(), offload.WithTTL(opts.TTL), offload.WithLogger(logger))
	name := opts.Upstream.Name
	if name == "" {
		name = mcpwrap.DefaultName(opts.Upstream)
		opts.Upstream.Name = name
	}
	adapter := mcpadapter.New(engine, mcpadapter.Options{
		Threshold:  opts.Threshold,
		Server:     name,
		PerSession: opts.HTTPAddr != "",
		Logger:     logger,
	})
	if opts.Upstream.URL != "" && !setsHeader(opts.Upstream.Headers, ":", "Authorization") && !setsHeader(opts.Upstream.HeaderEnv, "=", "Authorization") {
		oauth, err := oauthFor(opts.Upstream.URL, streams.Err, logger)
		if err != nil {
			return err
		}
		opts.Upstream.OAuth = oauth
	}
	popts := mcpwrap.Options{Upstream: opts.Upstream, Adapter: adapter, Version: version(), Logger: logger}
	if opts.HTTPAddr != "" {
		h, err := mcpwrap.HTTPHandler(ctx, popts)
		if err != nil {
			return err
		}
		return serveHTTP(ctx, opts, h, token, logger)
	}
	proxy, err := mcpwrap.New(popts)
	if err != nil {
		return err
	}
	defer proxy.Close()
	proxy.Start(ctx)
	err = proxy.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(streams.In), Writer: nopWriteCloser{streams.Out}})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// serveHTTP serves h on opts.HTTPAddr, behind the bearer token if any,
// until ctx ends and the requests in flight are done.
func serveHTTP(ctx context.Context, opts *WrapOptions, h http.Handler, token string, logger *slog.Logger) error {
	if token != "" {
		h = auth.RequireBearerToken(func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
		}, nil)(h)
	}
	srv, err := httpserver.Listen(httpserver.Options{Addr: opts.HTTPAddr, Handler: h, Logger: logger, Grace: opts.Grace, Limits: opts.Limits})
	if err != nil {
		return err
	}
	logger.Info("serving MCP over streamable HTTP", "addr", srv.Addr().String())
	return srv.Run(ctx)
}

// oauthFor prepares the OAuth flow for a URL upstream; it runs only if the
// server answers 401. The authorization URL goes to stderr, the client's log.
func oauthFor(url string, stderr io.Writer, logger *slog.Logger) (*mcpauth.Handler, error) {
	dir, err := home.Dir()
	if err != nil {
		return nil, err
	}
	return mcpauth.NewHandler(mcpauth.Config{
		ServerURL: url,
		TokenDir:  filepath.Join(dir, "oauth"),
		Stderr:    stderr,
		Logger:    logger,
	})
}

// setsHeader reports whether lines ("Name<sep>value") set the header name.
func setsHeader(lines []string, sep, name string) bool {
	for _, l := range lines {
		if n, _, ok := strings.Cut(l, sep); ok && strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
	}
	return false
}

func wrapToken(opts *WrapOptions) (string, error) {
	switch {
	case opts.AuthToken != "":
		return opts.AuthToken, nil
	case opts.AuthTokenFile != "":
		b, err := os.ReadFile(opts.AuthTokenFile)
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("token file %s is empty", opts.AuthTokenFile)
		}
		return t, nil
	}
	return os.Getenv(WrapTokenEnvVar), nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
