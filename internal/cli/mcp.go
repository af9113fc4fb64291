package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/vaultmcp"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/mcpadapter"
)

// MCPOptions are the inputs of `ctxkit mcp`.
type MCPOptions struct {
	vaultFlags
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
	opts.vaultFlags.register(cmd, false)
	cmd.Flags().IntVar(&opts.Threshold, "threshold", mcpadapter.DefaultThreshold, "results with more chars of text than this are stored")
	return cmd
}

func runMCP(ctx context.Context, g *globals, opts *MCPOptions, streams IO) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	v, err := g.openVaults(ctx, &opts.vaultFlags, true)
	if err != nil {
		return err
	}
	defer v.Close()
	logger := slog.New(slog.NewTextHandler(streams.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	engine := offload.New(v.b.Workspaces(), offload.WithLogger(logger))
	recheck := func(ctx context.Context) error {
		_, err := callerFor(ctx, v.svc, &opts.vaultFlags)
		return err
	}
	server := vaultmcp.NewServer(v.svc, vaultmcp.Options{Caller: v.caller, Recheck: recheck, Engine: engine,
		Threshold: opts.Threshold, Version: version(), Logger: logger})
	err = server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(streams.In), Writer: nopWriteCloser{streams.Out}})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
