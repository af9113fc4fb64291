package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newAgentCmd(g *globals, streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Create and revoke agent identities for vaults",
		Long: "Agents are identities with secret tokens: the HTTP API and the MCP server authenticate an agent " +
			"by its token, never by a bare name. Only a hash of each token is kept (with the SQLite backend, in $CTXKIT_HOME/agents.json).",
		GroupID: "vaults",
	}
	cmd.AddCommand(newAgentCreateCmd(g, streams), newAgentListCmd(g, streams), newAgentRevokeCmd(g, streams))
	return cmd
}

// AgentOptions are the inputs of `ctxkit agent create`, `list` and `revoke`.
type AgentOptions struct {
	Name string
	JSON bool
}

func newAgentCreateCmd(g *globals, streams IO) *cobra.Command {
	opts := &AgentOptions{}
	return &cobra.Command{
		Use:   "create NAME",
		Short: "Create an agent and print its token (shown once)",
		Long:  "Create an agent and print its token on stdout, once: only its hash is stored, so a lost token cannot be shown again (revoke the agent and create one under a new name).",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return g.withVaults(cmd.Context(), nil, func(v *vaults) error { return runAgentCreate(cmd.Context(), v, opts, streams) })
		},
	}
}

func runAgentCreate(ctx context.Context, v *vaults, opts *AgentOptions, streams IO) error {
	token, err := v.svc.CreateAgent(ctx, v.caller, opts.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Err, "Created agent %q. Its token follows; it is shown only this once, so store it now:\n", opts.Name)
	fmt.Fprintln(streams.Out, token)
	return nil
}

func newAgentListCmd(g *globals, streams IO) *cobra.Command {
	opts := &AgentOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List agents (never their tokens)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), nil, func(v *vaults) error { return runAgentList(cmd.Context(), v, opts, streams) })
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the agents as JSON")
	return cmd
}

func runAgentList(ctx context.Context, v *vaults, opts *AgentOptions, streams IO) error {
	agents, err := v.svc.Agents(ctx, v.caller)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, agents)
	}
	if len(agents) == 0 {
		fmt.Fprintln(streams.Out, "No agents. Create one with: ctxkit agent create NAME")
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tLAST USED")
	for _, a := range agents {
		last := "never"
		if a.LastUsed != nil {
			last = a.LastUsed.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Name, a.Created.UTC().Format(time.RFC3339), last)
	}
	return tw.Flush()
}

func newAgentRevokeCmd(g *globals, streams IO) *cobra.Command {
	opts := &AgentOptions{}
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Delete an agent: its token stops working",
		Long:  "Delete the agent: its token stops working at once. Its name is never given out again, since its grants may stay in vault configs (which may be committed); remove them with 'ctxkit vault detach'.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return g.withVaults(cmd.Context(), nil, func(v *vaults) error { return runAgentRevoke(cmd.Context(), v, opts, streams) })
		},
	}
}

func runAgentRevoke(ctx context.Context, v *vaults, opts *AgentOptions, streams IO) error {
	if err := v.svc.RevokeAgent(ctx, v.caller, opts.Name); err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "Revoked agent %q: its token no longer works\n", opts.Name)
	return nil
}
