package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// timeHelp ends the help of every time flag: how times are read.
const timeHelp = "; RFC 3339 or a bare date, a time without an offset is UTC"

// openEpisodes opens the named episodic vault as the owner. A vault of
// another type is refused with the vault's own message.
func openEpisodes(ctx context.Context, name string) (*vault.Episodes, error) {
	v, err := getVault(ctx, name)
	if err != nil {
		return nil, err
	}
	return v.OpenEpisodes(ctx, vault.Owner, nil)
}

// timeFlag parses the value of a time flag; "" is nil.
func timeFlag(name, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := episodic.ParseTime(s)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	return &t, nil
}

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

// metaFlag reads --meta k=v pairs; values stay strings.
func metaFlag(kvs []string) (map[string]any, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	meta := map[string]any{}
	for _, kv := range kvs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--meta %q: want key=value", kv)
		}
		meta[strings.TrimSpace(k)] = val
	}
	return meta, nil
}

// showTime writes a time compactly but exactly: RFC 3339 in UTC, with the
// microseconds only when there are any.
func showTime(t time.Time) string {
	t = episodic.Normalize(t)
	if t.Nanosecond() == 0 {
		return t.Format(time.RFC3339)
	}
	return episodic.FormatTime(t)
}

// showOptTime is showTime, or "-" for nil.
func showOptTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return showTime(*t)
}

// interval is a valid interval as FROM..TO; an open end is left empty.
func interval(from time.Time, to *time.Time) string {
	if to == nil {
		return showTime(from) + ".."
	}
	return showTime(from) + ".." + showTime(*to)
}

// state is an episode's state, with "disputed" while a dispute is open.
func state(e *episodic.Episode) string {
	s := string(e.State)
	if len(e.DisputedWith) > 0 {
		s += ",disputed"
	}
	return s
}

// VaultWriteEpisodeOptions are the inputs of `ctxkit vault write-episode`.
type VaultWriteEpisodeOptions struct {
	Vault, Content                 string
	Entities                       []string
	Source                         string
	Salience, Confidence           *float64
	OccurredAt, ValidFrom, ValidTo string
	Meta                           []string
	DryRun, JSON                   bool
}

func newVaultWriteEpisodeCmd(streams IO) *cobra.Command {
	opts := &VaultWriteEpisodeOptions{}
	var salience, confidence float64
	cmd := &cobra.Command{
		Use:   "write-episode VAULT CONTENT",
		Short: "Write a statement into an episodic vault",
		Long: "Write a statement that holds from --valid-from (else --occurred-at, else now) until --valid-to, or " +
			"with no known end. Entities are trimmed and de-duplicated case-insensitively; the source is left empty " +
			"unless given. Prints the new episode's id on standard output (so id=$(ctxkit vault write-episode ...) " +
			"works) and, on standard error, a hint line per open statement sharing an entity that it closely " +
			"resembles, with the action that fits: confirm, supersede, revise or dispute. Nothing is merged " +
			"automatically; --dry-run shows the hints without writing; --json prints {episode, hints}.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Content = args[0], args[1]
			opts.Salience = floatFlag(cmd, "salience", salience)
			opts.Confidence = floatFlag(cmd, "confidence", confidence)
			return runVaultWriteEpisode(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&opts.Entities, "entity", "e", nil, "an entity the statement is about (repeatable)")
	f.StringVar(&opts.Source, "source", "", "who or what said it (default empty)")
	f.Float64Var(&salience, "salience", 0.5, "how much it matters, 0..1")
	f.Float64Var(&confidence, "confidence", 1, "how sure the writer is, 0..1")
	f.StringVar(&opts.OccurredAt, "occurred-at", "", "when the event happened"+timeHelp)
	f.StringVar(&opts.ValidFrom, "valid-from", "", "when it starts to hold, default --occurred-at, then now"+timeHelp)
	f.StringVar(&opts.ValidTo, "valid-to", "", "when it stops holding, default no known end"+timeHelp)
	f.StringArrayVar(&opts.Meta, "meta", nil, "metadata, k=v with a string value (repeatable)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "check the statement and show its hints without writing it")
	f.BoolVar(&opts.JSON, "json", false, "print {episode, hints} as JSON")
	return cmd
}

// writeEpisodeJSON is the output of `write-episode --json`.
type writeEpisodeJSON struct {
	Episode episodic.Episode `json:"episode"`
	Hints   []episodic.Hint  `json:"hints"`
	DryRun  bool             `json:"dry_run,omitempty"`
}

func runVaultWriteEpisode(ctx context.Context, opts *VaultWriteEpisodeOptions, streams IO) error {
	w := episodic.Write{Content: opts.Content, Entities: opts.Entities, Source: opts.Source,
		Salience: opts.Salience, Confidence: opts.Confidence, DryRun: opts.DryRun}
	var err error
	if w.OccurredAt, err = timeFlag("occurred-at", opts.OccurredAt); err != nil {
		return err
	}
	if w.ValidFrom, err = timeFlag("valid-from", opts.ValidFrom); err != nil {
		return err
	}
	if w.ValidTo, err = timeFlag("valid-to", opts.ValidTo); err != nil {
		return err
	}
	if w.Metadata, err = metaFlag(opts.Meta); err != nil {
		return err
	}
	m, err := openEpisodes(ctx, opts.Vault)
	if err != nil {
		return err
	}
	defer m.Close()
	res, err := m.Write(ctx, w)
	if err != nil {
		return err
	}
	if opts.JSON {
		hints := res.Hints
		if hints == nil {
			hints = []episodic.Hint{}
		}
		return writeJSON(streams.Out, writeEpisodeJSON{Episode: res.Episode, Hints: hints, DryRun: opts.DryRun})
	}
	if opts.DryRun {
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
	Vault, Text   string
	Entities      []string
	Source        string
	ValidAt       string
	KnownAt       string
	All, Disputed bool
	OrderBy       string
	N             int
	HalfLifeDays  float64
	Weights       episodic.Weights
	MinConfidence float64
	Stats         bool
	EntityCounts  bool
	MinEpisodes   int
	JSON          bool
}

func newVaultEpisodesCmd(streams IO) *cobra.Command {
	opts := &VaultEpisodesOptions{}
	var wRel, wRec, wSal float64
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
			opts.Vault, opts.Text = args[0], strings.Join(args[1:], " ")
			opts.Weights = episodic.Weights{Relevance: floatFlag(cmd, "w-relevance", wRel),
				Recency: floatFlag(cmd, "w-recency", wRec), Salience: floatFlag(cmd, "w-salience", wSal)}
			if cmd.Flags().Changed("min-episodes") && !opts.EntityCounts {
				return errors.New("--min-episodes goes with --entities")
			}
			return runVaultEpisodes(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&opts.Entities, "entity", "e", nil, "only statements about this entity, case-insensitively (repeatable: any of them)")
	f.StringVar(&opts.Source, "source", "", "only statements from this source")
	f.StringVar(&opts.ValidAt, "valid-at", "", "world time: what held then, default now"+timeHelp)
	f.StringVar(&opts.KnownAt, "known-at", "", "belief time: as the vault believed it then, default now"+timeHelp)
	f.BoolVar(&opts.All, "all", false, "no valid-time test: closed statements too (unless --valid-at)")
	f.BoolVar(&opts.Disputed, "disputed", false, "only statements in an open dispute")
	f.StringVar(&opts.OrderBy, "order-by", "", "relevance, recency, salience or composite (default relevance with TEXT, recency without)")
	f.IntVarP(&opts.N, "n", "n", 10, fmt.Sprintf("how many results (at most %d)", episodic.MaxLimit))
	f.Float64Var(&opts.HalfLifeDays, "half-life-days", 30, "days for recency to halve")
	f.Float64Var(&wRel, "w-relevance", 1, "composite weight of relevance")
	f.Float64Var(&wRec, "w-recency", 1, "composite weight of recency")
	f.Float64Var(&wSal, "w-salience", 1, "composite weight of salience")
	f.Float64Var(&opts.MinConfidence, "min-confidence", 0, "only statements at least this confident")
	f.BoolVar(&opts.Stats, "stats", false, "count the statements held at --known-at: total, open, closed, disputed")
	f.BoolVar(&opts.EntityCounts, "entities", false, "count the selected statements per entity")
	f.IntVar(&opts.MinEpisodes, "min-episodes", 1, "with --entities: only entities named by at least N statements")
	f.BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	cmd.MarkFlagsMutuallyExclusive("stats", "entities")
	return cmd
}

func runVaultEpisodes(ctx context.Context, opts *VaultEpisodesOptions, streams IO) error {
	validAt, err := timeFlag("valid-at", opts.ValidAt)
	if err != nil {
		return err
	}
	knownAt, err := timeFlag("known-at", opts.KnownAt)
	if err != nil {
		return err
	}
	if !(opts.HalfLifeDays > 0) {
		return errors.New("--half-life-days must be more than 0")
	}
	w := opts.Weights
	if (w.Relevance != nil || w.Recency != nil || w.Salience != nil) && opts.OrderBy != episodic.OrderComposite {
		return errors.New("--w-relevance, --w-recency and --w-salience weigh --order-by composite only")
	}
	if (opts.Stats || opts.EntityCounts) && opts.Text != "" {
		return errors.New("--stats and --entities take no TEXT")
	}
	if opts.Stats && (opts.ValidAt != "" || opts.All || len(opts.Entities) > 0 || opts.Source != "" || opts.Disputed || opts.MinConfidence != 0) {
		return errors.New("--stats counts every statement held at --known-at; it takes no other filter")
	}
	if opts.EntityCounts && len(opts.Entities) > 0 {
		return errors.New("--entities counts every entity; -e does not apply")
	}
	m, err := openEpisodes(ctx, opts.Vault)
	if err != nil {
		return err
	}
	defer m.Close()
	filter := episodic.Filter{ValidAt: validAt, KnownAt: knownAt, All: opts.All, Entities: opts.Entities,
		Source: opts.Source, MinConfidence: opts.MinConfidence, Disputed: opts.Disputed}
	switch {
	case opts.Stats:
		st, err := m.Stats(ctx, knownAt)
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(streams.Out, st)
		}
		fmt.Fprintf(streams.Out, "total %d\nopen %d\nclosed %d\ndisputed %d\n", st.Total, st.Open, st.Closed, st.Disputed)
		return nil
	case opts.EntityCounts:
		counts, err := m.Entities(ctx, filter, opts.MinEpisodes)
		if err != nil {
			return err
		}
		if opts.JSON {
			if counts == nil {
				counts = []episodic.EntityCount{}
			}
			return writeJSON(streams.Out, counts)
		}
		tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
		for _, c := range counts {
			fmt.Fprintf(tw, "%s\t%d\n", c.Entity, c.Episodes)
		}
		return tw.Flush()
	}
	res, err := m.Query(ctx, episodic.Query{Filter: filter, Text: opts.Text, OrderBy: opts.OrderBy, Limit: opts.N,
		HalfLife: time.Duration(opts.HalfLifeDays * float64(24*time.Hour)), Weights: w})
	if err != nil {
		return err
	}
	if opts.JSON {
		if res == nil {
			res = []episodic.Match{}
		}
		return writeJSON(streams.Out, res)
	}
	if len(res) == 0 {
		fmt.Fprintln(streams.Out, "no match")
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVALID\tSTATE\tSCORE\tREL\tREC\tSAL\tCONTENT")
	for i := range res {
		r := &res[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n", r.ID, interval(r.ValidFrom, r.ValidTo), state(&r.Episode),
			r.Score, r.Relevance, r.Recency, r.Salience, snippet(r.Content, 80))
	}
	return tw.Flush()
}

// VaultEpisodeOptions are the inputs of `ctxkit vault episode`.
type VaultEpisodeOptions struct {
	Vault, ID     string
	History, JSON bool
}

func newVaultEpisodeCmd(streams IO) *cobra.Command {
	opts := &VaultEpisodeOptions{}
	cmd := &cobra.Command{
		Use:   "episode VAULT ID",
		Short: "Show one episode, or with --history its whole chain",
		Long: "Show an episode as the vault holds it now (a revised one as it was last held). --history shows the " +
			"chain of statements it belongs to through supersessions and revisions, oldest first, starting from any " +
			"member, with every version: when the vault recorded and closed it, its valid interval, state and note.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID = args[0], args[1]
			return runVaultEpisode(cmd.Context(), opts, streams)
		},
	}
	cmd.Flags().BoolVar(&opts.History, "history", false, "the whole chain, oldest first, with every version")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func runVaultEpisode(ctx context.Context, opts *VaultEpisodeOptions, streams IO) error {
	m, err := openEpisodes(ctx, opts.Vault)
	if err != nil {
		return err
	}
	defer m.Close()
	if !opts.History {
		e, err := m.Get(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(streams.Out, e)
		}
		return printEpisode(streams.Out, &e)
	}
	chain, err := m.History(ctx, opts.ID)
	if err != nil {
		return err
	}
	if opts.JSON {
		out := make([]episodic.RecordJSON, len(chain))
		for i, r := range chain {
			out[i] = r.JSON()
		}
		return writeJSON(streams.Out, out)
	}
	for i, r := range chain {
		if i > 0 {
			fmt.Fprintln(streams.Out)
		}
		printRecord(streams.Out, r)
	}
	return nil
}

// printEpisode writes every field of an episode, one per line.
func printEpisode(w io.Writer, e *episodic.Episode) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", e.ID)
	row("content", e.Content)
	st := string(e.State)
	if e.Note != "" {
		st += " (" + e.Note + ")"
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
		keys := make([]string, 0, len(e.Metadata))
		for k := range e.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		kvs := make([]string, len(keys))
		for i, k := range keys {
			kvs[i] = fmt.Sprintf("%s=%v", k, e.Metadata[k])
		}
		row("metadata", strings.Join(kvs, " "))
	}
	row("recorded_at", showTime(e.FirstRecordedAt))
	row("version", fmt.Sprintf("%d, recorded %s", e.Seq, showTime(e.RecordedAt)))
	if e.InvalidatedAt != nil {
		row("invalidated_at", showTime(*e.InvalidatedAt))
	}
	row("supersedes", e.Supersedes)
	row("superseded_by", e.SupersededBy)
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
func printRecord(w io.Writer, r *episodic.Record) {
	s := &r.Statement
	fmt.Fprintf(w, "%s %s\n", s.ID, snippet(s.Content, 200))
	if s.Supersedes != "" {
		fmt.Fprintf(w, "  supersedes %s\n", s.Supersedes)
	}
	if s.Revises != "" {
		fmt.Fprintf(w, "  revises %s\n", s.Revises)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  VERSION\tRECORDED\tCLOSED\tVALID\tSTATE\tNOTE")
	for _, v := range r.Versions {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", v.Seq, showTime(v.RecordedAt), showOptTime(v.ClosedAt),
			interval(v.ValidFrom, v.ValidTo), v.State, v.Note)
	}
	_ = tw.Flush()
	for _, a := range r.Attestations {
		fmt.Fprintf(w, "  confirmed at %s by %q (recorded %s)\n", showTime(a.At), a.Source, showTime(a.RecordedAt))
	}
	for _, d := range r.Disputes {
		other := d.B
		if other == s.ID {
			other = d.A
		}
		fmt.Fprintf(w, "  disputed with %s (recorded %s)", other, showTime(d.RecordedAt))
		if d.Note != "" {
			fmt.Fprintf(w, ": %s", d.Note)
		}
		fmt.Fprintln(w)
	}
}

// episodeChange runs one change on an opened vault and prints its
// result: the episode as JSON, or text.
func episodeChange(ctx context.Context, name string, asJSON bool, streams IO,
	change func(*vault.Episodes) (episodic.Episode, error), text func(*episodic.Episode) string) error {
	m, err := openEpisodes(ctx, name)
	if err != nil {
		return err
	}
	defer m.Close()
	e, err := change(m)
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
	Vault, ID       string
	ValidTo, Reason string
	JSON            bool
}

func newVaultInvalidateCmd(streams IO) *cobra.Command {
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
			return runVaultInvalidate(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.ValidTo, "valid-to", "", "when it stopped holding, default now"+timeHelp)
	f.StringVar(&opts.Reason, "reason", "", "why it was closed")
	f.BoolVar(&opts.JSON, "json", false, "print the episode as JSON")
	return cmd
}

func runVaultInvalidate(ctx context.Context, opts *VaultInvalidateOptions, streams IO) error {
	to, err := timeFlag("valid-to", opts.ValidTo)
	if err != nil {
		return err
	}
	return episodeChange(ctx, opts.Vault, opts.JSON, streams,
		func(m *vault.Episodes) (episodic.Episode, error) { return m.Invalidate(ctx, opts.ID, to, opts.Reason) },
		func(e *episodic.Episode) string {
			return fmt.Sprintf("invalidated %s: valid %s", e.ID, interval(e.ValidFrom, e.ValidTo))
		})
}

// VaultSuccessorOptions are the inputs of `ctxkit vault supersede` and
// `revise`.
type VaultSuccessorOptions struct {
	Vault, ID, Content string
	// Entities nil: inherited; empty: cleared.
	Entities  []string
	Source    string
	Salience  *float64
	ValidFrom string // supersede only
	JSON      bool
}

func newVaultSupersedeCmd(streams IO) *cobra.Command {
	return newSuccessorCmd(streams, true)
}

func newVaultReviseCmd(streams IO) *cobra.Command {
	return newSuccessorCmd(streams, false)
}

func newSuccessorCmd(streams IO, supersede bool) *cobra.Command {
	opts := &VaultSuccessorOptions{}
	var entities []string
	var salience float64
	cmd := &cobra.Command{
		Use:   "revise VAULT ID CONTENT",
		Short: "Replace an open episode by a better wording (the world unchanged)",
		Long: "Write a better wording of an open episode: the revision holds over the same valid interval and " +
			"inherits its attestations, entities, salience, confidence, metadata, source and open disputes unless " +
			"given; the original is closed in transaction time only, so a query known at a time before the revision " +
			"still finds it. -e '' clears the entities.",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID, opts.Content = args[0], args[1], args[2]
			opts.Entities = entitiesFlag(cmd, entities)
			opts.Salience = floatFlag(cmd, "salience", salience)
			return runVaultSuccessor(cmd.Context(), opts, supersede, streams)
		},
	}
	if supersede {
		cmd.Use = "supersede VAULT ID CONTENT"
		cmd.Short = "Replace an open episode by a new statement (the world changed)"
		cmd.Long = "In one transaction, close an open episode exactly where a new statement opens (--valid-from, " +
			"default now) and link them. Entities and salience are inherited unless given (-e '' clears the " +
			"entities); the source is empty unless given, confidence is 1 and metadata starts fresh. If another " +
			"writer superseded it first, the conflict names the successor."
	}
	f := cmd.Flags()
	f.StringArrayVarP(&entities, "entity", "e", nil, "an entity of the new statement (repeatable; replaces the inherited ones; -e '' clears them)")
	f.StringVar(&opts.Source, "source", "", "who or what said it")
	f.Float64Var(&salience, "salience", 0, "how much it matters, 0..1 (default inherited)")
	if supersede {
		f.StringVar(&opts.ValidFrom, "valid-from", "", "where the old statement ends and the new one starts, default now"+timeHelp)
	}
	f.BoolVar(&opts.JSON, "json", false, "print the new episode as JSON")
	return cmd
}

func runVaultSuccessor(ctx context.Context, opts *VaultSuccessorOptions, supersede bool, streams IO) error {
	from, err := timeFlag("valid-from", opts.ValidFrom)
	if err != nil {
		return err
	}
	n := episodic.Successor{Content: opts.Content, Entities: opts.Entities, Source: opts.Source, Salience: opts.Salience, ValidFrom: from}
	return episodeChange(ctx, opts.Vault, opts.JSON, streams,
		func(m *vault.Episodes) (episodic.Episode, error) {
			if supersede {
				return m.Supersede(ctx, opts.ID, n)
			}
			return m.Revise(ctx, opts.ID, n)
		},
		func(e *episodic.Episode) string {
			if supersede {
				return fmt.Sprintf("%s\nsuperseded %s from %s", e.ID, opts.ID, showTime(e.ValidFrom))
			}
			return fmt.Sprintf("%s\nrevised %s", e.ID, opts.ID)
		})
}

// VaultConfirmOptions are the inputs of `ctxkit vault confirm`.
type VaultConfirmOptions struct {
	Vault, ID  string
	At, Source string
	JSON       bool
}

func newVaultConfirmCmd(streams IO) *cobra.Command {
	opts := &VaultConfirmOptions{}
	cmd := &cobra.Command{
		Use:   "confirm VAULT ID",
		Short: "Record one more attestation of an open episode",
		Long: "Record that an open episode was heard again, at --at (default now; never before its valid_from). " +
			"The statement is unchanged; its confirmed_count and last_confirmed_at follow.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID = args[0], args[1]
			return runVaultConfirm(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.At, "at", "", "when it was heard again, default now"+timeHelp)
	f.StringVar(&opts.Source, "source", "", "who or what said it again")
	f.BoolVar(&opts.JSON, "json", false, "print the episode as JSON")
	return cmd
}

func runVaultConfirm(ctx context.Context, opts *VaultConfirmOptions, streams IO) error {
	at, err := timeFlag("at", opts.At)
	if err != nil {
		return err
	}
	return episodeChange(ctx, opts.Vault, opts.JSON, streams,
		func(m *vault.Episodes) (episodic.Episode, error) { return m.Confirm(ctx, opts.ID, at, opts.Source) },
		func(e *episodic.Episode) string {
			return fmt.Sprintf("confirmed %s: %d %s, last %s", e.ID, e.ConfirmedCount,
				plural(e.ConfirmedCount, "confirmation", "confirmations"), showOptTime(e.LastConfirmedAt))
		})
}

// VaultDisputeOptions are the inputs of `ctxkit vault dispute`.
type VaultDisputeOptions struct {
	Vault, ID, Other string
	Note             string
	JSON             bool
}

func newVaultDisputeCmd(streams IO) *cobra.Command {
	opts := &VaultDisputeOptions{}
	cmd := &cobra.Command{
		Use:   "dispute VAULT ID OTHER",
		Short: "Record that two open episodes cannot both hold",
		Long: "Record that two open episodes contradict each other. Neither is closed: both keep coming back, each " +
			"listing the other in disputed_with, until either is invalidated or superseded (a revision carries the " +
			"dispute over). `ctxkit vault episodes VAULT --disputed` lists what is unsettled.",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.ID, opts.Other = args[0], args[1], args[2]
			return runVaultDispute(cmd.Context(), opts, streams)
		},
	}
	cmd.Flags().StringVar(&opts.Note, "note", "", "why they cannot both hold")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print both episodes as JSON: {episode, other}")
	return cmd
}

func runVaultDispute(ctx context.Context, opts *VaultDisputeOptions, streams IO) error {
	m, err := openEpisodes(ctx, opts.Vault)
	if err != nil {
		return err
	}
	defer m.Close()
	a, b, err := m.Dispute(ctx, opts.ID, opts.Other, opts.Note)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, struct {
			Episode episodic.Episode `json:"episode"`
			Other   episodic.Episode `json:"other"`
		}{a, b})
	}
	fmt.Fprintf(streams.Out, "disputed %s and %s\n", a.ID, b.ID)
	return nil
}

func newVaultExportCmd(streams IO) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export VAULT [-o FILE]",
		Short: "Export an episodic vault as JSON lines",
		Long: "Write every statement of an episodic vault with its versions, attestations, disputes and recalls as " +
			"JSON lines, oldest statement first: a lossless copy that `ctxkit vault import` reads back, and that " +
			"diffs well. To standard output, or with -o to FILE, replaced atomically.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVaultExport(cmd.Context(), args[0], output, streams)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file (atomically) instead of standard output")
	return cmd
}

func runVaultExport(ctx context.Context, name, output string, streams IO) error {
	m, err := openEpisodes(ctx, name)
	if err != nil {
		return err
	}
	defer m.Close()
	if output == "" || output == "-" {
		return m.Export(ctx, streams.Out)
	}
	var buf bytes.Buffer
	if err := m.Export(ctx, &buf); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(output, buf.Bytes(), 0o600, 0o700, nil); err != nil {
		return err
	}
	fmt.Fprintf(streams.Err, "exported vault %q to %s\n", name, output)
	return nil
}

func newVaultImportCmd(streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "import VAULT FILE",
		Short: "Import an export into an episodic vault",
		Long: "Read an export (FILE, or - for standard input) into an episodic vault in one transaction, with its " +
			"times: all or nothing, refused as a conflict if any statement exists already.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVaultImport(cmd.Context(), args[0], args[1], streams)
		},
	}
}

func runVaultImport(ctx context.Context, name, file string, streams IO) error {
	in := streams.In
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	m, err := openEpisodes(ctx, name)
	if err != nil {
		return err
	}
	defer m.Close()
	n, err := m.Import(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "imported %d %s into vault %q\n", n, plural(n, "statement", "statements"), name)
	return nil
}
