package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// timeHelp ends the help of every time flag: how times are read.
const timeHelp = "; RFC 3339 or a bare date, a time without an offset is UTC"

// floatFlag is the value of a float flag when it was given, nil otherwise.
func floatFlag(cmd *cobra.Command, name string, v float64) *float64 {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	return &v
}

// entitiesFlag is the value of -e for Supersede and Revise: nil when not
// given (inherit), an empty non-nil list for a single empty
// value, as in -e "" (clear).
func entitiesFlag(cmd *cobra.Command, es []string) []string {
	if !cmd.Flags().Changed("entity") {
		return nil
	}
	if len(es) == 1 && strings.TrimSpace(es[0]) == "" {
		return []string{}
	}
	return es
}

// metaFlag reads --meta k=v pairs; values stay strings. nil when there
// are none.
func metaFlag[V any](kvs []string, value func(string) V) (map[string]V, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	meta := map[string]V{}
	for _, kv := range kvs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--meta %q: want key=value", kv)
		}
		meta[strings.TrimSpace(k)] = value(val)
	}
	return meta, nil
}

// showTime writes a time of the wire (episodic.TimeFormat) compactly but
// exactly: without the microseconds when there are none.
func showTime(t string) string { return strings.Replace(t, ".000000Z", "Z", 1) }

// showOptTime is showTime, or "-" for null.
func showOptTime(t *string) string {
	if t == nil {
		return "-"
	}
	return showTime(*t)
}

// interval is a valid interval as FROM..TO; an open end is left empty.
func interval(from string, to *string) string {
	if to == nil {
		return showTime(from) + ".."
	}
	return showTime(from) + ".." + showTime(*to)
}

// state is an episode's state, with "disputed" while a dispute is open.
func state(e *episodic.EpisodeJSON) string {
	s := string(e.State)
	if len(e.DisputedWith) > 0 {
		s += ",disputed"
	}
	return s
}

// VaultWriteEpisodeOptions are the inputs of `ctxkit vault write-episode`.
type VaultWriteEpisodeOptions struct {
	Vault string
	Req   vault.WriteEpisodeRequest
	Meta  []string
	JSON  bool
}

func newVaultWriteEpisodeCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultWriteEpisodeOptions{}
	var salience, confidence float64
	cmd := &cobra.Command{
		Use:   "write-episode VAULT CONTENT",
		Short: "Write a statement into an episodic vault",
		Long: "Write a statement that holds from --valid-from (else --occurred-at, else now) until --valid-to, or " +
			"with no known end. Entities are trimmed and de-duplicated case-insensitively; the source is the " +
			"writer's name (owner, or the agent's) unless given. Prints the new episode's id on standard output (so " +
			"id=$(ctxkit vault write-episode ...) works) and, on standard error, a hint line per open statement " +
			"sharing an entity that it closely resembles, with the action that fits: confirm, supersede, revise or " +
			"dispute. Nothing is merged automatically; --dry-run shows the hints without writing; --json prints " +
			"{episode, hints}.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Req.Content = args[0], args[1]
			opts.Req.Salience = floatFlag(cmd, "salience", salience)
			opts.Req.Confidence = floatFlag(cmd, "confidence", confidence)
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultWriteEpisode(cmd.Context(), v, opts, streams) })
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&opts.Req.Entities, "entity", "e", nil, "an entity the statement is about (repeatable)")
	fl.StringVar(&opts.Req.Source, "source", "", "who or what said it (default the writer's name)")
	fl.Float64Var(&salience, "salience", 0.5, "how much it matters, 0..1")
	fl.Float64Var(&confidence, "confidence", 1, "how sure the writer is, 0..1")
	fl.StringVar(&opts.Req.OccurredAt, "occurred-at", "", "when the event happened"+timeHelp)
	fl.StringVar(&opts.Req.ValidFrom, "valid-from", "", "when it starts to hold, default --occurred-at, then now"+timeHelp)
	fl.StringVar(&opts.Req.ValidTo, "valid-to", "", "when it stops holding, default no known end"+timeHelp)
	fl.StringArrayVar(&opts.Meta, "meta", nil, "metadata, k=v with a string value (repeatable)")
	fl.BoolVar(&opts.Req.DryRun, "dry-run", false, "check the statement and show its hints without writing it")
	fl.BoolVar(&opts.JSON, "json", false, "print {episode, hints} as JSON")
	return cmd
}

func runVaultWriteEpisode(ctx context.Context, v *vaults, opts *VaultWriteEpisodeOptions, streams IO) error {
	var err error
	if opts.Req.Metadata, err = metaFlag(opts.Meta, func(v string) any { return v }); err != nil {
		return err
	}
	res, err := v.svc.WriteEpisode(ctx, v.caller, opts.Vault, opts.Req)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, res)
	}
	if opts.Req.DryRun {
		fmt.Fprintln(streams.Err, "dry run: nothing written")
	} else {
		fmt.Fprintln(streams.Out, res.Episode.ID)
	}
	for _, h := range res.Hints {
		fmt.Fprintf(streams.Err, "hint: %s %s (similarity %.2f): %s [%s]\n", h.Action, h.Episode.ID, h.Similarity, h.Why, snippet(h.Episode.Content, 60))
	}
	return nil
}

// VaultEpisodesOptions are the inputs of `ctxkit vault episodes`.
type VaultEpisodesOptions struct {
	Vault        string
	Req          vault.QueryEpisodesRequest
	Stats        bool
	EntityCounts bool
	MinEpisodes  int
	JSON         bool
}

func newVaultEpisodesCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultEpisodesOptions{}
	var wRel, wRec, wSal, halfLife float64
	cmd := &cobra.Command{
		Use:   "episodes VAULT [TEXT...]",
		Short: "Query an episodic vault: what holds, and what was believed when",
		Long: "List the statements that hold at --valid-at (default now) as the vault believed them at --known-at " +
			"(default now): together they reconstruct what the vault believed at K about T, whatever the order of " +
			"later corrections. --all drops the valid-time test (closed statements too). TEXT is matched by BM25 " +
			"(and vector similarity when the vault has an embedder). --order-by relevance (the default with TEXT; " +
			"it needs TEXT), recency (the default without; halves every --half-life-days), salience, or composite " +
			"(weights × relevance + recency + salience). Each line shows the id, the valid interval (an open end is " +
			"left empty), the state, the score and its parts, and the content. --stats counts the statements held at " +
			"--known-at; --entities counts statements per entity.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Req.Query = args[0], strings.Join(args[1:], " ")
			if w := (episodic.Weights{Relevance: floatFlag(cmd, "w-relevance", wRel), Recency: floatFlag(cmd, "w-recency", wRec),
				Salience: floatFlag(cmd, "w-salience", wSal)}); w != (episodic.Weights{}) {
				opts.Req.Weights = &w
			}
			opts.Req.HalfLifeDays = floatFlag(cmd, "half-life-days", halfLife)
			if cmd.Flags().Changed("min-episodes") && !opts.EntityCounts {
				return errors.New("--min-episodes goes with --entities")
			}
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultEpisodes(cmd.Context(), v, opts, streams) })
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&opts.Req.Entities, "entity", "e", nil, "only statements about this entity, case-insensitively (repeatable: any of them)")
	fl.StringVar(&opts.Req.Source, "source", "", "only statements from this source")
	fl.StringVar(&opts.Req.ValidAt, "valid-at", "", "world time: what held then, default now"+timeHelp)
	fl.StringVar(&opts.Req.KnownAt, "known-at", "", "belief time: as the vault believed it then, default now"+timeHelp)
	fl.BoolVar(&opts.Req.IncludeClosed, "all", false, "no valid-time test: closed statements too (unless --valid-at)")
	fl.BoolVar(&opts.Req.Disputed, "disputed", false, "only statements in an open dispute")
	fl.StringVar(&opts.Req.OrderBy, "order-by", "", "relevance, recency, salience or composite (default relevance with TEXT, recency without)")
	fl.IntVarP(&opts.Req.Limit, "n", "n", episodic.DefaultLimit, fmt.Sprintf("how many results (1 to %d; also --limit)", episodic.MaxLimit))
	flagAlias(fl, "limit", "n")
	fl.Float64Var(&halfLife, "half-life-days", 30, "days for recency to halve")
	fl.Float64Var(&wRel, "w-relevance", 1, "composite weight of relevance")
	fl.Float64Var(&wRec, "w-recency", 1, "composite weight of recency")
	fl.Float64Var(&wSal, "w-salience", 1, "composite weight of salience")
	fl.Float64Var(&opts.Req.MinConfidence, "min-confidence", 0, "only statements at least this confident")
	fl.BoolVar(&opts.Req.Reinforce, "reinforce", false, "record that the results were recalled (a write)")
	fl.BoolVar(&opts.Stats, "stats", false, "count the statements held at --known-at: total, open, closed, disputed")
	fl.BoolVar(&opts.EntityCounts, "entities", false, "count the selected statements per entity")
	fl.IntVar(&opts.MinEpisodes, "min-episodes", 1, "with --entities: only entities named by at least N statements")
	fl.BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	cmd.MarkFlagsMutuallyExclusive("stats", "entities")
	return cmd
}

func runVaultEpisodes(ctx context.Context, v *vaults, opts *VaultEpisodesOptions, streams IO) error {
	q := &opts.Req
	if (opts.Stats || opts.EntityCounts) && q.Query != "" {
		return errors.New("--stats and --entities take no TEXT")
	}
	if opts.Stats && (q.ValidAt != "" || q.IncludeClosed || len(q.Entities) > 0 || q.Source != "" || q.Disputed || q.MinConfidence != 0) {
		return errors.New("--stats counts every statement held at --known-at; it takes no other filter")
	}
	if opts.EntityCounts && len(q.Entities) > 0 {
		return errors.New("--entities counts every entity; -e does not apply")
	}
	switch {
	case opts.Stats:
		st, err := v.svc.EpisodeStats(ctx, v.caller, opts.Vault, q.KnownAt)
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(streams.Out, st)
		}
		fmt.Fprintf(streams.Out, "total %d\nopen %d\nclosed %d\ndisputed %d\n", st.Total, st.Open, st.Closed, st.Disputed)
		return nil
	case opts.EntityCounts:
		counts, err := v.svc.Entities(ctx, v.caller, opts.Vault, vault.EntitiesRequest{ValidAt: q.ValidAt, KnownAt: q.KnownAt,
			IncludeClosed: q.IncludeClosed, Source: q.Source, MinConfidence: q.MinConfidence, Disputed: q.Disputed, MinEpisodes: opts.MinEpisodes})
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(streams.Out, counts)
		}
		tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
		for _, c := range counts {
			fmt.Fprintf(tw, "%s\t%d\n", c.Entity, c.Episodes)
		}
		return tw.Flush()
	}
	res, err := v.svc.QueryEpisodes(ctx, v.caller, opts.Vault, *q)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, res.Results)
	}
	if len(res.Results) == 0 {
		fmt.Fprintln(streams.Out, "no match")
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVALID\tSTATE\tSCORE\tREL\tREC\tSAL\tCONTENT")
	for i := range res.Results {
		r := &res.Results[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n", r.ID, interval(r.ValidFrom, r.ValidTo), state(&r.EpisodeJSON),
			r.Score, r.Relevance, r.Recency, r.EpisodeJSON.Salience, snippet(r.Content, 80))
	}
	return tw.Flush()
}

// VaultEpisodeOptions are the inputs of `ctxkit vault episode`.
type VaultEpisodeOptions struct {
	Vault, ID     string
	History, JSON bool
}

func newVaultEpisodeCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultEpisodeOptions{}
	cmd := &cobra.Command{
		Use:   "episode VAULT ID",
		Short: "Show one episode, or with --history its whole chain",
		Long: "Show an episode as the vault holds it now (a revised one as it was last held). --history shows the " +
			"chain of statements it belongs to through supersessions and revisions, oldest first, starting from any " +
			"member, with every version: its number within the statement (1, 2, ...), its place in the vault-wide " +
			"sequence of changes (SEQ, the JSON's \"version\"), when the vault recorded and closed it, its valid " +
			"interval, state and note.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID = args[0], args[1]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultEpisode(cmd.Context(), v, opts, streams) })
		},
	}
	cmd.Flags().BoolVar(&opts.History, "history", false, "the whole chain, oldest first, with every version")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func runVaultEpisode(ctx context.Context, v *vaults, opts *VaultEpisodeOptions, streams IO) error {
	if !opts.History {
		e, err := v.svc.Episode(ctx, v.caller, opts.Vault, opts.ID)
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(streams.Out, e)
		}
		return printEpisode(streams.Out, &e)
	}
	h, err := v.svc.EpisodeHistory(ctx, v.caller, opts.Vault, opts.ID)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, h.Chain)
	}
	for i := range h.Chain {
		if i > 0 {
			fmt.Fprintln(streams.Out)
		}
		printRecord(streams.Out, &h.Chain[i])
	}
	return nil
}

// printEpisode writes every field of an episode, one per line.
func printEpisode(w io.Writer, e *episodic.EpisodeJSON) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", e.ID)
	row("content", e.Content)
	st := string(e.State)
	if e.InvalidationNote != "" {
		st += " (" + e.InvalidationNote + ")"
	}
	row("state", st)
	row("valid", interval(e.ValidFrom, e.ValidTo))
	if e.OccurredAt != nil {
		row("occurred_at", showTime(*e.OccurredAt))
	}
	row("entities", strings.Join(e.Entities, ", "))
	row("source", e.Source)
	row("confidence", fmt.Sprintf("%g", e.Confidence))
	row("salience", fmt.Sprintf("%g", e.Salience))
	if len(e.Metadata) > 0 {
		keys := slices.Sorted(maps.Keys(e.Metadata))
		kvs := make([]string, len(keys))
		for i, k := range keys {
			kvs[i] = fmt.Sprintf("%s=%v", k, e.Metadata[k])
		}
		row("metadata", strings.Join(kvs, " "))
	}
	row("recorded_at", showTime(e.RecordedAt))
	row("version_recorded_at", fmt.Sprintf("%s (seq %d in the vault)", showTime(e.VersionRecordedAt), e.Version))
	if e.InvalidatedAt != nil {
		row("invalidated_at", showTime(*e.InvalidatedAt))
	}
	row("supersedes", e.Supersedes)
	if e.SupersededBy != nil {
		row("superseded_by", *e.SupersededBy)
	}
	row("revises", e.Revises)
	row("revised_by", e.RevisedBy)
	confirmed := fmt.Sprintf("%d", e.ConfirmedCount)
	if e.LastConfirmedAt != nil {
		confirmed += ", last " + showTime(*e.LastConfirmedAt)
	}
	row("confirmed", confirmed)
	row("disputed_with", strings.Join(e.DisputedWith, ", "))
	recalled := fmt.Sprintf("%d", e.RecallCount)
	if e.LastRecalledAt != nil {
		recalled += ", last " + showTime(*e.LastRecalledAt)
	}
	row("recalled", recalled)
	return tw.Flush()
}

// printRecord writes one statement of a history with all its versions.
func printRecord(w io.Writer, r *episodic.RecordJSON) {
	fmt.Fprintf(w, "%s %s\n", r.ID, snippet(r.Content, 200))
	if r.Supersedes != "" {
		fmt.Fprintf(w, "  supersedes %s\n", r.Supersedes)
	}
	if r.Revises != "" {
		fmt.Fprintf(w, "  revises %s\n", r.Revises)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// VERSION counts the statement's own versions (they come oldest
	// first); SEQ is the vault-wide sequence the JSON calls "version".
	fmt.Fprintln(tw, "  VERSION\tSEQ\tRECORDED\tCLOSED\tVALID\tSTATE\tNOTE")
	for i, v := range r.Versions {
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\n", i+1, v.Version, showTime(v.RecordedAt), showOptTime(v.ClosedAt),
			interval(v.ValidFrom, v.ValidTo), v.State, v.Note)
	}
	_ = tw.Flush()
	for _, a := range r.Attestations {
		fmt.Fprintf(w, "  confirmed at %s by %q (recorded %s)\n", showTime(a.At), a.Source, showTime(a.RecordedAt))
	}
	for _, d := range r.Disputes {
		other := d.B
		if other == r.ID {
			other = d.A
		}
		fmt.Fprintf(w, "  disputed with %s (recorded %s)", other, showTime(d.RecordedAt))
		if d.Note != "" {
			fmt.Fprintf(w, ": %s", d.Note)
		}
		fmt.Fprintln(w)
	}
}

// printChange prints the episode a change returned: as JSON, or text.
func printChange(e episodic.EpisodeJSON, err error, asJSON bool, streams IO, text func(*episodic.EpisodeJSON) string) error {
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(streams.Out, e)
	}
	fmt.Fprintln(streams.Out, text(&e))
	return nil
}

// VaultInvalidateOptions are the inputs of `ctxkit vault invalidate`.
type VaultInvalidateOptions struct {
	Vault, ID string
	Req       vault.InvalidateRequest
	JSON      bool
}

func newVaultInvalidateCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultInvalidateOptions{}
	cmd := &cobra.Command{
		Use:   "invalidate VAULT ID",
		Short: "Close an open episode: it stopped holding at --valid-to",
		Long: "Record that an open episode stopped holding at --valid-to (default now), never before its valid_from. " +
			"Nothing is overwritten: a query known at a time before this still returns the episode as it was " +
			"believed then. Closing a closed episode is a conflict.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID = args[0], args[1]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				e, err := v.svc.Invalidate(cmd.Context(), v.caller, opts.Vault, opts.ID, opts.Req)
				return printChange(e, err, opts.JSON, streams, func(e *episodic.EpisodeJSON) string {
					return fmt.Sprintf("invalidated %s: valid %s", e.ID, interval(e.ValidFrom, e.ValidTo))
				})
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Req.ValidTo, "valid-to", "", "when it stopped holding, default now"+timeHelp)
	fl.StringVar(&opts.Req.Reason, "reason", "", "why it was closed")
	fl.BoolVar(&opts.JSON, "json", false, "print the episode as JSON")
	return cmd
}

// VaultSuccessorOptions are the inputs of `ctxkit vault supersede` and
// `revise`.
type VaultSuccessorOptions struct {
	Vault, ID string
	Req       vault.SuccessorRequest
	Meta      []string
	JSON      bool
}

func newVaultSupersedeCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	return newSuccessorCmd(g, f, streams, true)
}

func newVaultReviseCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	return newSuccessorCmd(g, f, streams, false)
}

func newSuccessorCmd(g *globals, f *vaultFlags, streams IO, supersede bool) *cobra.Command {
	opts := &VaultSuccessorOptions{}
	var entities []string
	var salience, confidence float64
	cmd := &cobra.Command{
		Use:   "revise VAULT ID CONTENT",
		Short: "Replace an open episode by a better wording (the world unchanged)",
		Long: "Write a better wording of an open episode: the revision holds over the same valid interval and " +
			"inherits its attestations, entities, salience, confidence, metadata and open disputes unless given; " +
			"the original is closed in transaction time only, so a query known at a time before the revision still " +
			"finds it. -e '' clears the entities. Prints the revision's id on standard output (so " +
			"id=$(ctxkit vault revise ...) works) and what was revised on standard error.",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID, opts.Req.Content = args[0], args[1], args[2]
			opts.Req.Entities = entitiesFlag(cmd, entities)
			opts.Req.Salience = floatFlag(cmd, "salience", salience)
			opts.Req.Confidence = floatFlag(cmd, "confidence", confidence)
			var err error
			if opts.Req.Metadata, err = metaFlag(opts.Meta, func(v string) any { return v }); err != nil {
				return err
			}
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				do, verb := v.svc.Revise, "revised"
				if supersede {
					do, verb = v.svc.Supersede, "superseded"
				}
				e, err := do(cmd.Context(), v.caller, opts.Vault, opts.ID, opts.Req)
				// Only the new id on stdout, so that id=$(...) works.
				if err := printChange(e, err, opts.JSON, streams, func(e *episodic.EpisodeJSON) string { return e.ID }); err != nil || opts.JSON {
					return err
				}
				fmt.Fprintf(streams.Err, "%s %s from %s\n", verb, opts.ID, showTime(e.ValidFrom))
				return nil
			})
		},
	}
	if supersede {
		cmd.Use = "supersede VAULT ID CONTENT"
		cmd.Short = "Replace an open episode by a new statement (the world changed)"
		cmd.Long = "In one transaction, close an open episode exactly where a new statement opens (--valid-from, " +
			"default now) and link them. Entities and salience are inherited unless given (-e '' clears the " +
			"entities); the source is the writer's name unless given, confidence is 1 and metadata starts fresh. If " +
			"another writer superseded it first, the conflict names the successor. Prints the new episode's id on " +
			"standard output (so id=$(ctxkit vault supersede ...) works) and what was replaced on standard error."
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&entities, "entity", "e", nil, "an entity of the new statement (repeatable; replaces the inherited ones; -e '' clears them)")
	fl.StringVar(&opts.Req.Source, "source", "", "who or what said it")
	fl.Float64Var(&salience, "salience", 0, "how much it matters, 0..1 (default inherited)")
	confidenceHelp := "how sure the writer is, 0..1 (default inherited)"
	if supersede {
		confidenceHelp = "how sure the writer is, 0..1 (default 1)"
	}
	fl.Float64Var(&confidence, "confidence", 0, confidenceHelp)
	fl.StringVar(&opts.Req.OccurredAt, "occurred-at", "", "when it happened"+timeHelp)
	fl.StringArrayVar(&opts.Meta, "meta", nil, "metadata, k=v with a string value (repeatable)")
	if supersede {
		fl.StringVar(&opts.Req.ValidFrom, "valid-from", "", "where the old statement ends and the new one starts, default now"+timeHelp)
	}
	fl.BoolVar(&opts.JSON, "json", false, "print the new episode as JSON")
	return cmd
}

// VaultConfirmOptions are the inputs of `ctxkit vault confirm`.
type VaultConfirmOptions struct {
	Vault, ID string
	Req       vault.ConfirmRequest
	JSON      bool
}

func newVaultConfirmCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultConfirmOptions{}
	cmd := &cobra.Command{
		Use:   "confirm VAULT ID",
		Short: "Record one more attestation of an open episode",
		Long: "Record that an open episode was heard again, at --at (default now; never before its valid_from). " +
			"The statement is unchanged; its confirmed_count and last_confirmed_at follow.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID = args[0], args[1]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				e, err := v.svc.Confirm(cmd.Context(), v.caller, opts.Vault, opts.ID, opts.Req)
				return printChange(e, err, opts.JSON, streams, func(e *episodic.EpisodeJSON) string {
					return fmt.Sprintf("confirmed %s: %d %s, last %s", e.ID, e.ConfirmedCount,
						english.Plural(e.ConfirmedCount, "confirmation", "confirmations"), showOptTime(e.LastConfirmedAt))
				})
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Req.At, "at", "", "when it was heard again, default now"+timeHelp)
	fl.StringVar(&opts.Req.Source, "source", "", "who or what said it again (default your name)")
	fl.BoolVar(&opts.JSON, "json", false, "print the episode as JSON")
	return cmd
}

func newVaultDisputeCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	var req vault.DisputeRequest
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "dispute VAULT ID OTHER",
		Short: "Record that two open episodes cannot both hold",
		Long: "Record that two open episodes contradict each other. Neither is closed: both keep coming back, each " +
			"listing the other in disputed_with, until either is invalidated or superseded (a revision carries the " +
			"dispute over). `ctxkit vault episodes VAULT --disputed` lists what is unsettled.",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Other = args[2]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				res, err := v.svc.Dispute(cmd.Context(), v.caller, args[0], args[1], req)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(streams.Out, res)
				}
				fmt.Fprintf(streams.Out, "disputed %s and %s\n", res.Episode.ID, res.Other.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&req.Note, "note", "", "why they cannot both hold")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print both episodes as JSON: {episode, other}")
	return cmd
}

func newVaultExportCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export VAULT [-o FILE]",
		Short: "Export an episodic vault as JSON lines",
		Long: "Write every statement of an episodic vault with its versions, attestations, disputes and recalls as " +
			"JSON lines, oldest statement first: a lossless copy that `ctxkit vault import` reads back, and that " +
			"diffs well. To standard output, or with -o to FILE, replaced atomically.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				if output == "" || output == "-" {
					return v.svc.ExportEpisodes(cmd.Context(), v.caller, args[0], streams.Out)
				}
				var buf bytes.Buffer
				if err := v.svc.ExportEpisodes(cmd.Context(), v.caller, args[0], &buf); err != nil {
					return err
				}
				if err := atomicfile.WriteFile(output, buf.Bytes(), 0o600, 0o700, nil); err != nil {
					return err
				}
				fmt.Fprintf(streams.Err, "exported vault %q to %s\n", args[0], output)
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file (atomically) instead of standard output")
	return cmd
}

func newVaultImportCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "import VAULT FILE",
		Short: "Import an export into an episodic vault",
		Long: "Read an export (FILE, or - for standard input) into an episodic vault in one transaction, with its " +
			"times: all or nothing, refused as a conflict if any statement exists already.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := streams.In
			if args[1] != "-" {
				file, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer file.Close()
				in = file
			}
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				n, err := v.svc.ImportEpisodes(cmd.Context(), v.caller, args[0], in)
				if err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "imported %d %s into vault %q\n", n, english.Plural(n, "statement", "statements"), args[0])
				return nil
			})
		},
	}
}
