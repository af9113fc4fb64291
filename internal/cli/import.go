package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/ctxvault"
)

func newImportCmd(g *globals, streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "import",
		Short:   "Import the vaults of another memory system",
		GroupID: "vaults",
	}
	cmd.AddCommand(newImportCtxVaultCmd(g, streams))
	return cmd
}

// ImportCtxVaultOptions are the inputs of `ctxkit import ctxvault`.
type ImportCtxVaultOptions struct {
	// Dir is where to look for .ctxvault, walking up; "" is the working
	// directory.
	Dir string
	// Home is the home folder holding ~/.ctxvault; "" is the user's.
	Home           string
	Copy           bool
	DryRun         bool
	EmbeddingModel string
	JSON           bool
}

func newImportCtxVaultCmd(g *globals, streams IO) *cobra.Command {
	opts := &ImportCtxVaultOptions{}
	cmd := &cobra.Command{
		Use:   "ctxvault [DIR]",
		Short: "Import CtxVault's vaults: the project's .ctxvault and ~/.ctxvault",
		Long: "Find CtxVault's configuration as CtxVault does (.ctxvault/config.json in DIR or the first folder above it " +
			"that has one, and ~/.ctxvault/config.json) and import every vault it names into a ctxkit vault of the same " +
			"name and scope (the project's vaults local, recorded in the project's .ctxkit/config.json; the others global): " +
			"its type, whether it is restricted and its attached agents (an agent that does not exist yet is attached " +
			"all the same and named: `ctxkit agent create NAME` gives it a token); a semantic vault's documents, indexed " +
			"where they are (the ctxkit vault's folder is CtxVault's) or, with --copy, copied into a folder of ctxkit's, " +
			"and embedded again (Chroma's vectors are not reused); a skill vault's skills under their names; an episodic " +
			"vault's episodes with their whole history (valid and recorded times, invalidations with their reasons, " +
			"supersessions, confirmations, disputes, metadata, recall counts), each closed episode as CtxVault believed it " +
			"before and after it was closed. Importing again adds only what is new; a ctxkit vault of the same name made " +
			"otherwise is left alone. A vault that cannot be read, or whose import fails, is reported and left out, with " +
			"nothing of it written; the others are imported. The exit status is 1 when a vault, a document or a skill " +
			"was not imported. --dry-run reads everything and says what would be done, writing nothing.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			// The store is opened once CtxVault's project is found (it is
			// the project root); a store that cannot be is refused first.
			if err := noPasswordInFlag("--store", g.store); err != nil {
				return err
			}
			if url := g.storeURL(); url != "" {
				if err := schemes.Check(url); err != nil {
					return err
				}
			}
			return runImportCtxVault(cmd.Context(), opts, func(ctx context.Context, p workPaths) (*vaults, error) {
				return g.openVaultsAt(ctx, p, nil, false)
			}, streams)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Copy, "copy", false, "copy semantic vaults' documents into ctxkit's vault folders instead of indexing them where they are")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "say what would be imported, created and skipped, and write nothing")
	fl.StringVar(&opts.EmbeddingModel, "embedding-model", "", "the embedder of the new semantic and episodic vaults (default: ctxkit's)")
	fl.BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

// runImportCtxVault finds CtxVault's data, opens the vaults (open) with
// the CtxVault project as the project root, and imports.
func runImportCtxVault(ctx context.Context, opts *ImportCtxVaultOptions, open func(context.Context, workPaths) (*vaults, error), streams IO) error {
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("find working directory: %w", err)
	}
	dir := opts.Dir
	switch {
	case dir == "":
		dir = cwd
	case !filepath.IsAbs(dir):
		dir = filepath.Join(cwd, dir)
	}
	userHome := opts.Home
	if userHome == "" {
		if userHome, err = os.UserHomeDir(); err != nil {
			return fmt.Errorf("find the home folder (for ~/.ctxvault): %w", err)
		}
	}
	sources, err := ctxvault.Find(dir, userHome)
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("no CtxVault data: no %s/config.json in %s or a folder above it, nor in %s", ctxvault.DirName, dir, filepath.Join(userHome, ctxvault.DirName))
	}
	data, err := home.Dir()
	if err != nil {
		return err
	}
	p := workPaths{home: data, cwd: cwd, root: home.ProjectRoot(dir, data)}
	if sources[0].Scope == vault.Local {
		p.root = sources[0].Root // the project's vaults go into the project CtxVault's are in
	}
	v, err := open(ctx, p)
	if err != nil {
		return err
	}
	defer v.Close()
	o := ctxvault.Options{Copy: opts.Copy, EmbeddingModel: opts.EmbeddingModel, DryRun: opts.DryRun}
	if f, ok := streams.Err.(*os.File); ok && isTerminal(f) && !opts.JSON {
		o.Progress = func(name string, done, total int, path string) {
			fmt.Fprintf(f, "\r\033[K%s [%d/%d] %s", name, done, total, path)
			if done == total {
				fmt.Fprintln(f)
			}
		}
	}
	rep, err := ctxvault.Import(ctx, v.svc, v.caller, sources, o)
	if err != nil {
		return err
	}
	if opts.JSON {
		err = writeJSON(streams.Out, rep)
	} else {
		printImport(rep, streams)
	}
	if err == nil && incomplete(rep) {
		err = errSilent
	}
	return err
}

// incomplete reports whether anything was not imported.
func incomplete(rep *ctxvault.Report) bool {
	for _, v := range rep.Vaults {
		if v.NotImported() || len(v.Failed) > 0 || len(v.Problems) > 0 || (v.Index != nil && len(v.Index.Failed) > 0) {
			return true
		}
	}
	return false
}

// printImport prints an import's report, a paragraph per vault.
func printImport(rep *ctxvault.Report, streams IO) {
	w := streams.Out
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: nothing is written")
	}
	var missing []string
	for _, v := range rep.Vaults {
		action := v.Action
		switch {
		case v.Error != "":
			action = "failed"
		case rep.DryRun:
			action = "would " + action
		}
		fmt.Fprintf(w, "%s %s vault %q (%s, from %s)\n", action, v.Scope, v.Vault, v.Type, v.Config)
		switch {
		case v.Error != "":
			fmt.Fprintf(w, "  not imported: %s\n", v.Error)
		case v.Reason != "":
			fmt.Fprintf(w, "  skipped: %s\n", v.Reason)
		}
		if v.Path != "" {
			where := "folder"
			if v.InPlace {
				where = "folder (documents in place)"
			}
			fmt.Fprintf(w, "  %s: %s\n", where, v.Path)
		}
		if len(v.Agents) > 0 {
			fmt.Fprintf(w, "  agents: %s\n", strings.Join(v.Agents, ", "))
		}
		var counts []string
		for _, c := range []struct {
			n         int
			one, many string
		}{{v.Docs, "document", "documents"}, {v.DocsPresent, "document there already", "documents there already"},
			{v.Skills, "skill", "skills"}, {v.SkillsPresent, "skill there already", "skills there already"},
			{v.Episodes, "episode", "episodes"}, {v.Versions, "version", "versions"},
			{v.EpisodesPresent, "episode there already", "episodes there already"}} {
			if c.n > 0 {
				counts = append(counts, english.Count(c.n, c.one, c.many))
			}
		}
		if len(counts) > 0 {
			fmt.Fprintf(w, "  %s\n", strings.Join(counts, ", "))
		}
		if ix := v.Index; ix != nil {
			fmt.Fprintf(w, "  indexed %s, %d unchanged; embedder: %s\n", indexedFiles(ix.Indexed, ix.Chunks), ix.Unchanged, ix.Embedder)
			if ix.Warning != "" {
				fmt.Fprintf(w, "  warning: %s\n", ix.Warning)
			}
			for _, f := range ix.Failed {
				fmt.Fprintf(w, "  not indexed: %s: %s\n", f.Path, f.Error)
			}
		}
		for _, f := range append(v.Problems, v.Failed...) {
			fmt.Fprintf(w, "  not imported: %s: %s\n", f.Path, f.Error)
		}
		for _, n := range v.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, a := range v.MissingAgents {
			if !slices.Contains(missing, a) {
				missing = append(missing, a)
			}
		}
	}
	for _, a := range missing {
		fmt.Fprintf(w, "agent %s does not exist yet: `ctxkit agent create %s` gives it a token (its grants are in place)\n", a, a)
	}
	if !rep.DryRun {
		fmt.Fprintf(w, "%d of %d vaults imported\n", len(rep.Vaults)-rep.NotImported(), len(rep.Vaults))
	}
}
