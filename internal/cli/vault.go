package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/vault"
)

// withVaults runs fn with the vault service, acting as f says.
func (g *globals) withVaults(ctx context.Context, f *vaultFlags, fn func(*vaults) error) error {
	v, err := g.openVaults(ctx, f, false)
	if err != nil {
		return err
	}
	defer v.Close()
	return fn(v)
}

func newVaultCmd(g *globals, streams IO) *cobra.Command {
	f := &vaultFlags{}
	cmd := &cobra.Command{
		Use:   "vault",
		Short: "Create vaults, control which agents may use them, and use them",
		Long: "Vaults are memory for agents, of one type each: semantic (documents), skill (SKILL.md instructions) " +
			"or episodic (time-stamped facts). Local vaults are recorded in .ctxkit/config.json of the project " +
			"(found by walking up from the working directory, as git does) with paths relative to it, so the file " +
			"can be committed; global vaults live in $CTXKIT_HOME/vaults. A local vault hides a global one of the " +
			"same name.\n\n" +
			"Vaults are public until an agent is attached. The CLI acts for you, the owner, who is never restricted; " +
			"--agent NAME or --token-env VAR makes it act as an agent, with that agent's access.",
		GroupID: "vaults",
	}
	f.register(cmd, true)
	cmd.AddCommand(newVaultInitCmd(g, f, streams), newVaultListCmd(g, f, streams), newVaultAttachCmd(g, f, streams),
		newVaultDetachCmd(g, f, streams), newVaultPublishCmd(g, f, streams), newVaultAuditCmd(g, f, streams),
		newVaultIndexCmd(g, f, streams), newVaultQueryCmd(g, f, streams), newVaultDocsCmd(g, f, streams),
		newVaultReadCmd(g, f, streams), newVaultWriteCmd(g, f, streams), newVaultDeleteCmd(g, f, streams),
		newVaultReindexCmd(g, f, streams), newVaultWatchCmd(g, f, streams),
		newVaultSkillsCmd(g, f, streams), newVaultSkillCmd(g, f, streams), newVaultWriteSkillCmd(g, f, streams),
		newVaultWriteEpisodeCmd(g, f, streams), newVaultEpisodesCmd(g, f, streams), newVaultEpisodeCmd(g, f, streams),
		newVaultInvalidateCmd(g, f, streams), newVaultSupersedeCmd(g, f, streams), newVaultReviseCmd(g, f, streams),
		newVaultConfirmCmd(g, f, streams), newVaultDisputeCmd(g, f, streams), newVaultExportCmd(g, f, streams),
		newVaultImportCmd(g, f, streams))
	return cmd
}

// VaultInitOptions are the inputs of `ctxkit vault init`.
type VaultInitOptions struct {
	Name           string
	Type           string
	Path           string
	Global         bool
	Restricted     bool
	EmbeddingModel string
}

func newVaultInitCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultInitOptions{}
	cmd := &cobra.Command{
		Use:   "init NAME",
		Short: "Create a vault",
		Long: "Create a vault folder and record it: locally in .ctxkit/config.json of the project (the folder " +
			"defaults to .ctxkit/vaults/NAME) or, with --global, in $CTXKIT_HOME (folder $CTXKIT_HOME/vaults/NAME, " +
			"mode 0700). Names are 1 to 64 letters, digits, '-', '_' or '.'. The embedding model is pinned at init: " +
			"builtin (in process; the default for semantic vaults once `ctxkit model pull all-MiniLM-L6-v2` has " +
			"installed it), none (lexical search only, the default otherwise), ollama:MODEL or openai:MODEL. " +
			"A folder that is your home folder, the file system's root or holds $CTXKIT_HOME is refused. " +
			"On a store that hosts its vaults (one database several machines share) a vault has no folder and " +
			"is global: --path is refused; write documents with `ctxkit vault write`, or upload a folder with " +
			"`ctxkit vault index NAME --from DIR`.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultInit(cmd.Context(), v, opts, streams) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Type, "type", "semantic", "vault type: semantic, skill or episodic")
	fl.StringVar(&opts.Path, "path", "", "vault folder (relative to the working directory); default .ctxkit/vaults/NAME, or $CTXKIT_HOME/vaults/NAME with --global")
	fl.BoolVar(&opts.Global, "global", false, "record the vault in $CTXKIT_HOME, visible from every project")
	fl.BoolVar(&opts.Restricted, "restricted", false, "only the owner and attached agents may use the vault")
	fl.StringVar(&opts.EmbeddingModel, "embedding-model", "", "embedder for semantic and episodic vaults: none, builtin[:MODEL], ollama:MODEL, openai:MODEL, or a sentence-transformers name such as all-MiniLM-L6-v2 (default: builtin once installed, else none)")
	return cmd
}

func runVaultInit(ctx context.Context, v *vaults, opts *VaultInitOptions, streams IO) error {
	var scope vault.Scope // the service's default: local, or global on a store that hosts vaults
	if opts.Global {
		scope = vault.Global
	}
	path := opts.Path
	if path != "" && !filepath.IsAbs(path) {
		path = filepath.Join(v.cwd, path)
	}
	info, err := v.svc.CreateVault(ctx, v.caller, vault.CreateVaultRequest{Name: opts.Name, Type: vault.Type(opts.Type), Path: path,
		Scope: scope, Restricted: opts.Restricted, EmbeddingModel: opts.EmbeddingModel})
	if err != nil {
		return err
	}
	w := streams.Out
	where := "at " + info.Path
	if info.Path == "" {
		where = "hosted by the store (no folder)"
	}
	fmt.Fprintf(w, "Created %s vault %q (%s) %s\n", info.Type, info.Name, info.Scope, where)
	switch {
	case info.EmbeddingModel == "none":
		fmt.Fprintln(w, "embedding model: none (lexical search only; `ctxkit model pull all-MiniLM-L6-v2` installs the builtin model, "+
			"which new semantic vaults then use; or set --embedding-model builtin, ollama:MODEL or openai:MODEL at init)")
	case info.EmbeddingModel != "":
		fmt.Fprintf(w, "embedding model: %s\n", info.EmbeddingModel)
		if st, err := v.svc.Embedder(ctx, v.caller, info.Name); err == nil && !st.Available {
			fmt.Fprintf(w, "not installed yet: index and query refuse to run until it is; %s\n", st.Fix)
		}
	}
	if info.Restricted {
		fmt.Fprintf(w, "restricted: only you until agents are attached (ctxkit vault attach %s AGENT)\n", info.Name)
	}
	return nil
}

// VaultListOptions are the inputs of `ctxkit vault list`.
type VaultListOptions struct {
	JSON bool
}

func newVaultListCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultListOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the vaults",
		Long: "List the vaults you may use: name, type, access, scope and folder. A global vault hidden by a local " +
			"one of the same name is marked shadowed. As an agent, only its vaults, without folders.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultList(cmd.Context(), v, opts, streams) })
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the vaults as JSON")
	return cmd
}

func access(v vault.VaultInfo) string {
	if v.Restricted {
		return "restricted"
	}
	return "public"
}

func runVaultList(ctx context.Context, v *vaults, opts *VaultListOptions, streams IO) error {
	all, err := v.svc.ListVaults(ctx, v.caller)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, all)
	}
	if len(all) == 0 {
		fmt.Fprintln(streams.Out, v.svc.NoVaults(v.caller))
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tACCESS\tSCOPE\tPATH")
	for _, vi := range all {
		acc := access(vi)
		if vi.Restricted && v.caller.IsOwner() {
			acc += fmt.Sprintf(" (%d %s)", len(vi.Agents), english.Plural(len(vi.Agents), "agent", "agents"))
		}
		scope := string(vi.Scope)
		if vi.Shadowed {
			scope += " (shadowed)"
		}
		path := vi.Path
		if path == "" && v.caller.IsOwner() {
			path = "(hosted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", vi.Name, vi.Type, acc, scope, path)
	}
	return tw.Flush()
}

// VaultAttachOptions are the inputs of `ctxkit vault attach` and `detach`.
type VaultAttachOptions struct {
	Vault, Agent string
	ReadOnly     bool
}

func newVaultAttachCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultAttachOptions{}
	cmd := &cobra.Command{
		Use:   "attach VAULT AGENT",
		Short: "Grant an agent access to a vault (and restrict the vault)",
		Long: "Grant AGENT access to VAULT, read-write or, with --read-only, read-only. The vault becomes " +
			"restricted: agents not attached to it no longer see it. Attaching an attached agent changes its grant.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Agent = args[0], args[1]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultAttach(cmd.Context(), v, opts, streams) })
		},
	}
	cmd.Flags().BoolVar(&opts.ReadOnly, "read-only", false, "the agent may read but not write")
	return cmd
}

func runVaultAttach(ctx context.Context, v *vaults, opts *VaultAttachOptions, streams IO) error {
	info, err := v.svc.Attach(ctx, v.caller, opts.Vault, opts.Agent, opts.ReadOnly)
	if err != nil {
		return err
	}
	mode := "read-write"
	if opts.ReadOnly {
		mode = "read-only"
	}
	fmt.Fprintf(streams.Out, "Attached agent %q to vault %q (%s); the vault is restricted: %d %s attached\n",
		opts.Agent, info.Name, mode, len(info.Agents), english.Plural(len(info.Agents), "agent", "agents"))
	return nil
}

func newVaultDetachCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultAttachOptions{}
	return &cobra.Command{
		Use:   "detach VAULT AGENT",
		Short: "Remove an agent's access to a vault",
		Long:  "Remove AGENT's grant on VAULT. The vault stays restricted, even with no agent left (then only you can use it); `ctxkit vault publish` makes it public.",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Agent = args[0], args[1]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				info, err := v.svc.Detach(cmd.Context(), v.caller, opts.Vault, opts.Agent)
				if err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "Detached agent %q from vault %q\n", opts.Agent, info.Name)
				if len(info.Agents) == 0 {
					fmt.Fprintf(streams.Out, "no agents left: vault %q stays restricted and only you can use it; make it public with: ctxkit vault publish %s\n", info.Name, info.Name)
				}
				return nil
			})
		},
	}
}

func newVaultPublishCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "publish VAULT",
		Short: "Make a vault public again (every agent may use it)",
		Long:  "Make VAULT public: every agent may read and write it, and the grants of attached agents are dropped.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				info, err := v.svc.Publish(cmd.Context(), v.caller, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "Vault %q is public: every agent may use it\n", info.Name)
				return nil
			})
		},
	}
}

// VaultAuditOptions are the inputs of `ctxkit vault audit`.
type VaultAuditOptions struct {
	Vault string
	N     int
	JSON  bool
}

func newVaultAuditCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultAuditOptions{}
	cmd := &cobra.Command{
		Use:   "audit VAULT",
		Short: "Show a vault's audit log (writes and refused accesses)",
		Long: "Show the last events of VAULT's audit log, oldest first: when (UTC), who (an agent, or owner for " +
			"you), what, and the outcome. Refusals of one caller are coalesced: at most one a minute per operation " +
			"and reason is logged, with the number of those that were not (repeated).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault = args[0]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultAudit(cmd.Context(), v, opts, streams) })
		},
	}
	cmd.Flags().IntVarP(&opts.N, "n", "n", vault.DefaultAuditEvents, "show the last N events (0: all)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the events as JSON")
	return cmd
}

func runVaultAudit(ctx context.Context, v *vaults, opts *VaultAuditOptions, streams IO) error {
	events, err := v.svc.Audit(ctx, v.caller, opts.Vault, opts.N)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, events)
	}
	if len(events) == 0 {
		fmt.Fprintf(streams.Out, "No events in vault %q's audit log\n", opts.Vault)
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tWHO\tACTION\tWHAT\tOUTCOME")
	for _, e := range events {
		outcome := e.Outcome
		if e.Reason != "" {
			outcome += ": " + e.Reason
		}
		if e.Repeated > 0 {
			outcome += fmt.Sprintf(" (and %d more before)", e.Repeated)
		}
		what := e.Path
		if e.Detail != "" {
			what = strings.TrimSpace(what + " " + e.Detail)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339), e.Agent, e.Action, what, outcome)
	}
	return tw.Flush()
}
