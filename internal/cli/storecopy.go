package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/transfer"
)

func newStoreCmd(g *globals, streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Move what ctxkit keeps from one store to another",
	}
	cmd.AddCommand(newStoreCopyCmd(g, streams))
	return cmd
}

// StoreCopyOptions are the inputs of `ctxkit store copy`.
type StoreCopyOptions struct {
	// From is the source store's URL; "" means the store of --store,
	// $CTXKIT_STORE or the default one.
	From string
	// To is the destination store's URL.
	To string
}

func newStoreCopyCmd(g *globals, streams IO) *cobra.Command {
	opts := &StoreCopyOptions{}
	cmd := &cobra.Command{
		Use:   "copy --to URL",
		Short: "Copy everything a store holds into another one",
		Long: "Copies everything the source store holds (workspaces, key-value entries, agents, revoked agent names, vaults " +
			"with their grants, pins, document metadata, audit logs, document files, indexes and episodes) into the " +
			"destination, then reads both again and prints, per kind, the count and a checksum of each side.\n\n" +
			"A copy that was interrupted completes when run again: what the destination holds already, identical, is " +
			"skipped; what it holds different stops the copy with its name, and nothing is overwritten. A vault hosted by " +
			"the source copied to a store that keeps vault files in folders gets the folder a new vault would get " +
			"($CTXKIT_HOME/vaults/NAME, or .ctxkit/vaults/NAME in the project for a local vault); a vault with a folder " +
			"keeps it. Both stores are opened with this $CTXKIT_HOME and project: two SQLite stores share the vault " +
			"registry kept there, so between them only workspaces and key-value entries are copied.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			for flag, url := range map[string]string{"--from": opts.From, "--to": opts.To, "--store": g.store} {
				if err := noPasswordInFlag(flag, url); err != nil {
					return err
				}
			}
			p, err := getWorkPaths()
			if err != nil {
				return err
			}
			if opts.From == "" {
				opts.From = g.storeURL()
			}
			if opts.From == "" {
				opts.From = "sqlite:" + filepath.Join(p.home, "ctxkit.db")
			}
			return runStoreCopy(c.Context(), opts, p, streams)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "the source store's URL (default: --store, $"+StoreEnvVar+" or the default store)")
	cmd.Flags().StringVar(&opts.To, "to", "", "the destination store's URL (required)")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// sameStore reports whether two store URLs name one store as written
// (each "memory:" is a store of its own).
func sameStore(a, b string) bool {
	as, ar := store.SplitURL(a)
	bs, br := store.SplitURL(b)
	if as != bs || as == "memory" {
		return false
	}
	return ar == br || (as == "sqlite" && ar != "" && filepath.Clean(ar) == filepath.Clean(br))
}

func runStoreCopy(ctx context.Context, opts *StoreCopyOptions, p workPaths, streams IO) error {
	if opts.To == "" {
		return errors.New("store copy: --to is required")
	}
	if sameStore(opts.From, opts.To) {
		return fmt.Errorf("store copy: the source and the destination are the same store (%s)", store.Redact(opts.To))
	}
	so := store.Options{Home: p.home, Root: p.root}
	src, err := schemes.Open(ctx, opts.From, so)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := schemes.Open(ctx, opts.To, so)
	if err != nil {
		return err
	}
	defer dst.Close()
	from, to := store.Redact(opts.From), store.Redact(opts.To)
	report, err := transfer.Copy(ctx, src, dst, transfer.Options{Folder: newVaultFolder(p)})
	if err != nil {
		copied := 0
		for _, l := range report.Lines {
			copied += l.Copied
		}
		return fmt.Errorf("copy %s to %s: %w (%s copied before it; run the command again to complete the copy once the cause is fixed)",
			from, to, err, english.Count(copied, "unit", "units"))
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "kind\tsource\tdestination\tsource checksum\tdestination checksum\tcopied")
	for _, l := range report.Lines {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\n", l.Kind, l.Source.Count, l.Dest.Count, short(l.Source.Sum), short(l.Dest.Sum), l.Copied)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if bad := report.Mismatched(); len(bad) > 0 {
		names := make([]string, len(bad))
		for i, k := range bad {
			names[i] = string(k)
		}
		return fmt.Errorf("copy %s to %s: the destination differs from the source in: %s (it held something before the copy, or a store changed during it)",
			from, to, strings.Join(names, ", "))
	}
	_, err = fmt.Fprintf(streams.Out, "every count and checksum matches: %s is copied to %s\n", from, to)
	return err
}

// short is the beginning of a checksum, enough to compare by eye.
func short(sum string) string { return sum[:min(len(sum), 16)] }

// newVaultFolder chooses the folder of a vault hosted by the source when
// the destination keeps vault files in folders: the one the vault service
// gives a new vault of that scope.
func newVaultFolder(p workPaths) func(v store.VaultRecord) string {
	return func(v store.VaultRecord) string {
		if v.Dir != "" {
			return "" // keeps its folder
		}
		if v.Scope == store.ScopeLocal && p.root != "" {
			return filepath.Join(p.root, ".ctxkit", "vaults", v.Name)
		}
		return filepath.Join(p.home, "vaults", v.Name)
	}
}
