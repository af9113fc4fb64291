package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/vaultmcp"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/mcpadapter"
	"github.com/ctxkit/ctxkit/vault"
)

// MCPOptions are the inputs of `ctxkit mcp`.
type MCPOptions struct {
	// Agent is who the tools act for; "" is the owner.
	Agent string
	// TokenEnv names the variable holding the agent's token, which is
	// then verified and decides the agent.
	TokenEnv  string
	Threshold int
}

func newMCPCmd(g *globals, streams IO) *cobra.Command {
	opts := &MCPOptions{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the vaults to an AI client as an MCP server (stdio)",
		Long: `Serve the vaults over MCP on stdio, for an AI client to start: tools to list vaults, query and write
documents, read and write skills, and record and correct episodes (list_vaults, query, write_doc, read_doc,
write_episode, query_episodes, supersede_episode, ...). Long results (a long document) are stored and replaced
by a notice; the result_* tools explore them.

The tools act for --agent NAME: its access applies (restricted vaults it is not attached to do not exist for
it), and its name is recorded in the vaults' audit logs. The agent is trusted because you started the process;
with --token-env VAR the agent's token is read from $VAR and verified instead, and decides the agent. Without
either, the tools act for you, the owner, and see every vault.`,
		Example: `  ctxkit mcp --agent claude
  CTXKIT_AGENT_TOKEN=ctxk_... ctxkit mcp --token-env CTXKIT_AGENT_TOKEN`,
		Args:    cobra.NoArgs,
		GroupID: "vaults",
		RunE: func(c *cobra.Command, _ []string) error {
			return runMCP(c.Context(), g, opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Agent, "agent", "", "the agent the tools act for (default: you, the owner)")
	f.StringVar(&opts.TokenEnv, "token-env", "", "an environment variable holding the agent's token, verified instead of trusting --agent")
	f.IntVar(&opts.Threshold, "threshold", mcpadapter.DefaultThreshold, "results with more chars of text than this are stored")
	return cmd
}

// mcpAgent decides who the server acts for.
func mcpAgent(ctx context.Context, r *vault.Registry, opts *MCPOptions) (string, error) {
	if opts.TokenEnv != "" {
		token := os.Getenv(opts.TokenEnv)
		if token == "" {
			return "", fmt.Errorf("$%s is empty: set it to the agent's token (ctxkit agent create NAME prints it)", opts.TokenEnv)
		}
		caller, err := r.Caller(ctx, token)
		if errors.Is(err, vault.ErrUnauthenticated) {
			return "", fmt.Errorf("the token in $%s is not valid: it belongs to no agent (revoked, or mistyped); create one with ctxkit agent create NAME", opts.TokenEnv)
		}
		if err != nil {
			return "", err
		}
		if opts.Agent != "" && opts.Agent != caller {
			return "", fmt.Errorf("the token in $%s is %s's, not %s's: drop --agent, or give %s's token", opts.TokenEnv, caller, opts.Agent, opts.Agent)
		}
		return caller, nil
	}
	if opts.Agent == "" || opts.Agent == vault.Owner {
		return vault.Owner, nil
	}
	if err := vault.ValidName(opts.Agent); err != nil {
		return "", fmt.Errorf("--agent: %w", err)
	}
	agents, err := r.Agents(ctx)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(agents, func(a vault.Agent) bool { return a.Name == opts.Agent }) {
		return "", fmt.Errorf("no agent named %s: create it with ctxkit agent create %s (then attach it to its vaults), or leave --agent out to act as the owner", opts.Agent, opts.Agent)
	}
	return opts.Agent, nil
}

func runMCP(ctx context.Context, g *globals, opts *MCPOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	agent, err := mcpAgent(ctx, r, opts)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := g.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	logger := slog.New(slog.NewTextHandler(streams.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	engine := offload.New(s, offload.WithLogger(logger))
	server := vaultmcp.NewServer(r, vaultmcp.Options{Agent: agent, Engine: engine, Threshold: opts.Threshold,
		Version: version(), Logger: logger})
	err = server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(streams.In), Writer: nopWriteCloser{streams.Out}})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
