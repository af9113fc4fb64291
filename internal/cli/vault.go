package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/vault"
)

// openRegistry opens the vault registry seen from the working directory.
func openRegistry() (*vault.Registry, string, error) {
	dir, err := home.Dir()
	if err != nil {
		return nil, "", err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, "", fmt.Errorf("find working directory: %w", err)
	}
	r, err := vault.Open(vault.Options{DataDir: dir, Cwd: cwd})
	return r, cwd, err
}

func newVaultCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vault",
		Short: "Create vaults and control which agents may use them",
		Long: "Vaults are directory-backed memory for agents, of one type each: semantic (documents), " +
			"skill (SKILL.md instructions) or episodic (time-stamped facts). Local vaults are recorded in " +
			".ctxkit/config.json of the project (found by walking up from the working directory, as git does) " +
			"with paths relative to it, so the file can be committed; global vaults live in $CTXKIT_HOME/vaults. " +
			"A local vault hides a global one of the same name.\n\n" +
			"Vaults are public until an agent is attached; the CLI is the owner's and is never restricted.",
		GroupID: "vaults",
	}
	cmd.AddCommand(newVaultInitCmd(streams), newVaultListCmd(streams), newVaultAttachCmd(streams),
		newVaultDetachCmd(streams), newVaultPublishCmd(streams), newVaultAuditCmd(streams),
		newVaultIndexCmd(streams), newVaultQueryCmd(streams), newVaultDocsCmd(streams),
		newVaultWriteCmd(streams), newVaultDeleteCmd(streams), newVaultReindexCmd(streams), newVaultWatchCmd(streams),
		newVaultSkillsCmd(streams), newVaultSkillCmd(streams), newVaultWriteSkillCmd(streams),
		newVaultWriteEpisodeCmd(streams), newVaultEpisodesCmd(streams), newVaultEpisodeCmd(streams),
		newVaultInvalidateCmd(streams), newVaultSupersedeCmd(streams), newVaultReviseCmd(streams),
		newVaultConfirmCmd(streams), newVaultDisputeCmd(streams), newVaultExportCmd(streams), newVaultImportCmd(streams))
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

func newVaultInitCmd(streams IO) *cobra.Command {
	opts := &VaultInitOptions{}
	cmd := &cobra.Command{
		Use:   "init NAME",
		Short: "Create a vault",
		Long: "Create a vault folder and record it: locally in .ctxkit/config.json of the project (the folder " +
			"defaults to .ctxkit/vaults/NAME) or, with --global, in $CTXKIT_HOME (folder $CTXKIT_HOME/vaults/NAME, " +
			"mode 0700). Names are 1 to 64 letters, digits, '-', '_' or '.'. The embedding model is pinned at init: " +
			"builtin (in process; the default for semantic vaults once `ctxkit model pull all-MiniLM-L6-v2` has " +
			"installed it), none (lexical search only, the default otherwise), ollama:MODEL or openai:MODEL.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runVaultInit(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Type, "type", "semantic", "vault type: semantic, skill or episodic")
	f.StringVar(&opts.Path, "path", "", "vault folder (relative to the working directory); default .ctxkit/vaults/NAME, or $CTXKIT_HOME/vaults/NAME with --global")
	f.BoolVar(&opts.Global, "global", false, "record the vault in $CTXKIT_HOME, visible from every project")
	f.BoolVar(&opts.Restricted, "restricted", false, "only the owner and attached agents may use the vault")
	f.StringVar(&opts.EmbeddingModel, "embedding-model", "", "embedder for semantic and episodic vaults: none, builtin, ollama:MODEL or openai:MODEL (default: builtin once installed, else none)")
	return cmd
}

func runVaultInit(ctx context.Context, opts *VaultInitOptions, streams IO) error {
	r, cwd, err := openRegistry()
	if err != nil {
		return err
	}
	scope := vault.Local
	if opts.Global {
		scope = vault.Global
	}
	v, err := r.Init(ctx, vault.InitOptions{Name: opts.Name, Type: vault.Type(opts.Type), Path: opts.Path, Cwd: cwd,
		Scope: scope, Restricted: opts.Restricted, EmbeddingModel: opts.EmbeddingModel})
	if err != nil {
		return err
	}
	w := streams.Out
	fmt.Fprintf(w, "Created %s vault %q (%s) at %s\n", v.Type, v.Name, v.Scope, v.Dir)
	fmt.Fprintf(w, "recorded in %s\n", r.ConfigPath(v.Scope))
	switch {
	case v.EmbeddingModel == "none":
		fmt.Fprintln(w, "embedding model: none (lexical search only; `ctxkit model pull all-MiniLM-L6-v2` installs the builtin model, "+
			"which new semantic vaults then use; or set --embedding-model builtin, ollama:MODEL or openai:MODEL at init)")
	case v.EmbeddingModel != "":
		fmt.Fprintf(w, "embedding model: %s\n", v.EmbeddingModel)
	}
	if v.Restricted {
		fmt.Fprintf(w, "restricted: only you until agents are attached (ctxkit vault attach %s AGENT)\n", v.Name)
	}
	return nil
}

// VaultListOptions are the inputs of `ctxkit vault list`.
type VaultListOptions struct {
	JSON bool
}

func newVaultListCmd(streams IO) *cobra.Command {
	opts := &VaultListOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List local and global vaults",
		Long:    "List the vaults recorded in this project and globally: name, type, access, scope and folder. A global vault hidden by a local one of the same name is marked shadowed.",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVaultList(cmd.Context(), opts, streams)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the vaults as JSON")
	return cmd
}

// vaultJSON is a vault in `vault list --json`.
type vaultJSON struct {
	Name           string      `json:"name"`
	Type           vault.Type  `json:"type"`
	Scope          vault.Scope `json:"scope"`
	Path           string      `json:"path"`
	Access         string      `json:"access"`
	Agents         []grantJSON `json:"agents"`
	EmbeddingModel string      `json:"embedding_model,omitempty"`
	Shadowed       bool        `json:"shadowed,omitempty"`
}

type grantJSON struct {
	Agent    string `json:"agent"`
	ReadOnly bool   `json:"read_only"`
}

func access(v *vault.Vault) string {
	if v.Restricted {
		return "restricted"
	}
	return "public"
}

func runVaultList(ctx context.Context, opts *VaultListOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	all, err := r.List(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		out := make([]vaultJSON, 0, len(all))
		for _, v := range all {
			j := vaultJSON{Name: v.Name, Type: v.Type, Scope: v.Scope, Path: v.Dir, Access: access(v),
				Agents: []grantJSON{}, EmbeddingModel: v.EmbeddingModel, Shadowed: v.Shadowed}
			for _, a := range sortedKeys(v.Agents) {
				j.Agents = append(j.Agents, grantJSON{Agent: a, ReadOnly: v.Agents[a].ReadOnly})
			}
			out = append(out, j)
		}
		return writeJSON(streams.Out, out)
	}
	if len(all) == 0 {
		fmt.Fprintln(streams.Out, "No vaults. Create one with: ctxkit vault init NAME")
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tACCESS\tSCOPE\tPATH")
	for _, v := range all {
		acc := access(v)
		if v.Restricted {
			acc += fmt.Sprintf(" (%d %s)", len(v.Agents), plural(len(v.Agents), "agent", "agents"))
		}
		scope := string(v.Scope)
		if v.Shadowed {
			scope += " (shadowed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Name, v.Type, acc, scope, v.Dir)
	}
	return tw.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// VaultAttachOptions are the inputs of `ctxkit vault attach` and `detach`.
type VaultAttachOptions struct {
	Vault, Agent string
	ReadOnly     bool
}

func newVaultAttachCmd(streams IO) *cobra.Command {
	opts := &VaultAttachOptions{}
	cmd := &cobra.Command{
		Use:   "attach VAULT AGENT",
		Short: "Grant an agent access to a vault (and restrict the vault)",
		Long: "Grant AGENT access to VAULT, read-write or, with --read-only, read-only. The vault becomes " +
			"restricted: agents not attached to it no longer see it. Attaching an attached agent changes its grant.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Agent = args[0], args[1]
			return runVaultAttach(cmd.Context(), opts, streams)
		},
	}
	cmd.Flags().BoolVar(&opts.ReadOnly, "read-only", false, "the agent may read but not write")
	return cmd
}

func runVaultAttach(ctx context.Context, opts *VaultAttachOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	v, err := r.Attach(ctx, opts.Vault, opts.Agent, opts.ReadOnly)
	if err != nil {
		return err
	}
	mode := "read-write"
	if opts.ReadOnly {
		mode = "read-only"
	}
	fmt.Fprintf(streams.Out, "Attached agent %q to vault %q (%s); the vault is restricted: %d %s attached\n",
		opts.Agent, v.Name, mode, len(v.Agents), plural(len(v.Agents), "agent", "agents"))
	if !agentExists(ctx, r, opts.Agent) {
		fmt.Fprintf(streams.Err, "note: there is no agent %q here yet; create its token with: ctxkit agent create %s\n", opts.Agent, opts.Agent)
	}
	return nil
}

func agentExists(ctx context.Context, r *vault.Registry, name string) bool {
	agents, err := r.Agents(ctx)
	if err != nil {
		return true // the agents file is reported by the agent commands
	}
	for _, a := range agents {
		if a.Name == name {
			return true
		}
	}
	return false
}

func newVaultDetachCmd(streams IO) *cobra.Command {
	opts := &VaultAttachOptions{}
	return &cobra.Command{
		Use:   "detach VAULT AGENT",
		Short: "Remove an agent's access to a vault",
		Long:  "Remove AGENT's grant on VAULT. The vault stays restricted, even with no agent left (then only you can use it); `ctxkit vault publish` makes it public.",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Agent = args[0], args[1]
			return runVaultDetach(cmd.Context(), opts, streams)
		},
	}
}

func runVaultDetach(ctx context.Context, opts *VaultAttachOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	v, err := r.Detach(ctx, opts.Vault, opts.Agent)
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "Detached agent %q from vault %q\n", opts.Agent, v.Name)
	if len(v.Agents) == 0 {
		fmt.Fprintf(streams.Out, "no agents left: vault %q stays restricted and only you can use it; make it public with: ctxkit vault publish %s\n", v.Name, v.Name)
	}
	return nil
}

// VaultPublishOptions are the inputs of `ctxkit vault publish`.
type VaultPublishOptions struct {
	Vault string
}

func newVaultPublishCmd(streams IO) *cobra.Command {
	opts := &VaultPublishOptions{}
	return &cobra.Command{
		Use:   "publish VAULT",
		Short: "Make a vault public again (every agent may use it)",
		Long:  "Make VAULT public: every agent may read and write it, and the grants of attached agents are dropped.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault = args[0]
			return runVaultPublish(cmd.Context(), opts, streams)
		},
	}
}

func runVaultPublish(ctx context.Context, opts *VaultPublishOptions, streams IO) error {
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	v, err := r.Publish(ctx, opts.Vault)
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "Vault %q is public: every agent may use it\n", v.Name)
	return nil
}

// VaultAuditOptions are the inputs of `ctxkit vault audit`.
type VaultAuditOptions struct {
	Vault string
	N     int
	JSON  bool
}

func newVaultAuditCmd(streams IO) *cobra.Command {
	opts := &VaultAuditOptions{}
	cmd := &cobra.Command{
		Use:   "audit VAULT",
		Short: "Show a vault's audit log (writes and refused accesses)",
		Long: "Show the last events of VAULT's audit log, oldest first: when (UTC), who (an agent, or owner for " +
			"you), what, and the outcome. The log is the append-only file .ctxkit-vault/audit.jsonl in the vault folder.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault = args[0]
			return runVaultAudit(cmd.Context(), opts, streams)
		},
	}
	cmd.Flags().IntVarP(&opts.N, "n", "n", 50, "show the last N events (0: all)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the events as JSON")
	return cmd
}

func runVaultAudit(ctx context.Context, opts *VaultAuditOptions, streams IO) error {
	if opts.N < 0 {
		return errors.New("-n must be 0 (all) or more")
	}
	r, _, err := openRegistry()
	if err != nil {
		return err
	}
	v, err := r.Get(ctx, opts.Vault)
	if err != nil {
		return err
	}
	events, err := v.Audit(ctx, opts.N)
	if err != nil {
		return err
	}
	if opts.JSON {
		if events == nil {
			events = []vault.Event{}
		}
		return writeJSON(streams.Out, events)
	}
	if len(events) == 0 {
		fmt.Fprintf(streams.Out, "No events in vault %q's audit log\n", v.Name)
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tWHO\tACTION\tWHAT\tOUTCOME")
	for _, e := range events {
		outcome := e.Outcome
		if e.Reason != "" {
			outcome += ": " + e.Reason
		}
		what := e.Path
		if e.Detail != "" {
			what = strings.TrimSpace(what + " " + e.Detail)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339), e.Agent, e.Action, what, outcome)
	}
	return tw.Flush()
}
