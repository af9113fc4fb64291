package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newAgentCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Create and revoke agent identities for vaults",
		Long: "Agents are identities with secret tokens: the HTTP API and the MCP server authenticate an agent " +
			"by its token, never by a bare name. Only a hash of each token is kept, in $CTXKIT_HOME/agents.json.",
		GroupID: "vaults",
	}
	cmd.AddCommand(newAgentCreateCmd(streams), newAgentListCmd(streams), newAgentRevokeCmd(streams))
	return cmd
}

// AgentOptions are the inputs of `ctxkit agent create`, `list` and `revoke`.
type AgentOptions struct {
	Name string
	JSON bool
}

func newAgentCreateCmd(streams IO) *cobra.Command {
	opts := &AgentOptions{}
	return &cobra.Command{
		Use:   "create NAME",
		Short: "Create an agent and print its token (shown once)",
		Long:  "Create an agent and print its token on stdout, once: only its hash is stored, so a lost token cannot be shown again (revoke the agent and create one under a new name).",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runAgentCreate(cmd.Context(), opts, streams)
		},
	}
}

func runAgentCreate(ctx context.Context, opts *AgentOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	token, err := r.CreateAgent(ctx, opts.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Err, "Created agent %q. Its token follows; it is shown only this once, so store it now:\n", opts.Name)
	fmt.Fprintln(streams.Out, token)
	return nil
}

func newAgentListCmd(streams IO) *cobra.Command {
	opts := &AgentOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List agents (never their tokens)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgentList(cmd.Context(), opts, streams)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the agents as JSON")
	return cmd
}

type agentJSON struct {
	Name     string     `json:"name"`
	Created  time.Time  `json:"created"`
	LastUsed *time.Time `json:"last_used,omitempty"`
}

func runAgentList(ctx context.Context, opts *AgentOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	agents, err := r.Agents(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		out := make([]agentJSON, 0, len(agents))
		for _, a := range agents {
			j := agentJSON{Name: a.Name, Created: a.Created}
			if !a.LastUsed.IsZero() {
				j.LastUsed = &a.LastUsed
			}
			out = append(out, j)
		}
		return writeJSON(streams.Out, out)
	}
	if len(agents) == 0 {
		fmt.Fprintln(streams.Out, "No agents. Create one with: ctxkit agent create NAME")
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tLAST USED")
	for _, a := range agents {
		last := "never"
		if !a.LastUsed.IsZero() {
			last = a.LastUsed.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Name, a.Created.UTC().Format(time.RFC3339), last)
	}
	return tw.Flush()
}

func newAgentRevokeCmd(streams IO) *cobra.Command {
	opts := &AgentOptions{}
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Delete an agent: its token stops working",
		Long:  "Delete the agent: its token stops working at once. Its name is never given out again, since its grants may stay in vault configs (which may be committed); remove them with 'ctxkit vault detach'.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runAgentRevoke(cmd.Context(), opts, streams)
		},
	}
}

func runAgentRevoke(ctx context.Context, opts *AgentOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	if err := r.RevokeAgent(ctx, opts.Name); err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "Revoked agent %q: its token no longer works\n", opts.Name)
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Compare(a, b) })
}
