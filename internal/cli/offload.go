package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
)

// maxInput bounds what `offload put` reads, so a runaway pipe cannot exhaust memory.
const maxInput = offload.DefaultMaxBytes

func newOffloadCmd(g *globals, streams IO) *cobra.Command {
	var session string
	cmd := &cobra.Command{
		Use:     "offload",
		Short:   "Store large results and explore them with the result_* tools",
		GroupID: "offload",
	}
	cmd.PersistentFlags().StringVar(&session, "session", "", "act inside this session (its workspaces and shared ones)")
	engine := func(ctx context.Context) (*offload.Engine, context.Context, func(), error) {
		b, err := g.openBackend(ctx, false)
		if err != nil {
			return nil, nil, nil, err
		}
		if session != "" {
			ctx = offload.WithSession(ctx, session)
		}
		return offload.New(b.Workspaces()), ctx, func() { b.Close() }, nil
	}
	cmd.AddCommand(newPutCmd(engine, streams), newCallCmd(engine, streams), newLsCmd(g, streams),
		newShowCmd(engine, streams), newDropCmd(engine, streams), newSweepCmd(engine, streams))
	return cmd
}

// engineFunc opens the engine over the configured store, in the session
// given by flags; the returned func closes the store.
type engineFunc func(ctx context.Context) (*offload.Engine, context.Context, func(), error)

// PutOptions are the inputs of `ctxkit offload put`.
type PutOptions struct {
	Type string
	Tool string
	TTL  time.Duration
	Key  string
	File string // path, or "-" / "" for standard input
}

func newPutCmd(open engineFunc, streams IO) *cobra.Command {
	opts := &PutOptions{}
	cmd := &cobra.Command{
		Use:   "put [FILE|-]",
		Short: "Store a result (JSON, NDJSON, CSV/TSV or text) and print its notice",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.File = args[0]
			}
			e, ctx, done, err := open(c.Context())
			if err != nil {
				return err
			}
			defer done()
			return runPut(ctx, e, opts, streams)
		},
	}
	cmd.Flags().StringVar(&opts.Type, "type", "", "logical type of the result (default: the tool name)")
	cmd.Flags().StringVar(&opts.Tool, "tool", "", "name of the tool that produced the result")
	cmd.Flags().DurationVar(&opts.TTL, "ttl", offload.DefaultTTL, "how long to keep it (0: until dropped)")
	cmd.Flags().StringVar(&opts.Key, "key", "", "deterministic id: storing again with the same key replaces the workspace")
	return cmd
}

func runPut(ctx context.Context, e *offload.Engine, opts *PutOptions, streams IO) error {
	var r io.Reader = streams.In
	if opts.File != "" && opts.File != "-" {
		f, err := os.Open(opts.File)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	if len(data) > maxInput {
		return fmt.Errorf("input is over the %d-byte limit", maxInput)
	}
	ttl := opts.TTL
	if ttl == 0 {
		ttl = -1 // the engine reads 0 as "its default"; the flag's 0 means never expire
	}
	n, err := e.Put(ctx, data, offload.PutOptions{Type: opts.Type, Producer: opts.Tool, TTL: ttl, ID: opts.Key})
	if err != nil {
		return err
	}
	return writeJSON(streams.Out, n)
}

func newCallCmd(open engineFunc, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "call TOOL [JSON-ARGS]",
		Short: "Run an exploration tool and print its JSON result",
		Long:  "Run an exploration tool (result_search, result_pipe, result_read_page, ...) as a model would, and print its JSON result. A tool error is printed as JSON too, and the exit status is 1.",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			e, ctx, done, err := open(c.Context())
			if err != nil {
				return err
			}
			defer done()
			var callArgs any
			if len(args) == 2 {
				callArgs = json.RawMessage(args[1])
			}
			return runCall(ctx, e, args[0], callArgs, streams)
		},
	}
}

func runCall(ctx context.Context, e *offload.Engine, tool string, args any, streams IO) error {
	res := e.Dispatch(ctx, tool, args)
	if err := writeJSON(streams.Out, res.Output); err != nil {
		return err
	}
	if res.IsError {
		return errSilent
	}
	return nil
}

// LsOptions are the inputs of `ctxkit offload ls`.
type LsOptions struct {
	All     bool
	Session string
	JSON    bool
}

func newLsCmd(g *globals, streams IO) *cobra.Command {
	opts := &LsOptions{}
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List stored workspaces",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			b, err := g.openBackend(c.Context(), false)
			if err != nil {
				return err
			}
			defer b.Close()
			opts.Session, _ = c.Flags().GetString("session")
			return runLs(c.Context(), b.Workspaces(), opts, streams)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "include every session's workspaces and expired ones")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the metadata as JSON")
	return cmd
}

func runLs(ctx context.Context, s store.Store, opts *LsOptions, streams IO) error {
	var list []*store.Workspace
	var err error
	if opts.All {
		list, err = s.List(ctx, store.ListOptions{})
	} else {
		var octx = ctx
		if opts.Session != "" {
			octx = offload.WithSession(ctx, opts.Session)
		}
		list, err = offload.New(s).List(octx)
	}
	if err != nil {
		return err
	}
	// Results stored by a wrapped server say which server, and how the
	// notice the model saw compares with what was stored.
	e := offload.New(s)
	rows := make([]lsRow, len(list))
	for i, ws := range list {
		rows[i] = lsRow{Workspace: ws}
		if server, ok := ws.Meta["server"].(string); ok {
			rows[i].Server = server
			if n, err := e.Notice(offload.WithSession(ctx, ws.Session), ws.ID); err == nil {
				rows[i].NoticeChars = utf8.RuneCountInString(n.String())
			}
		}
	}
	if opts.JSON {
		return writeJSON(streams.Out, rows)
	}
	now := time.Now()
	for _, r := range rows {
		line := offload.DescribeLine(r.Workspace, now)
		if r.Server != "" {
			line += fmt.Sprintf(" · server %s · %d chars stored, %d in the notice", r.Server, r.Chars, r.NoticeChars)
		}
		if _, err := fmt.Fprintln(streams.Out, line); err != nil {
			return err
		}
	}
	return nil
}

// lsRow is one line of `ctxkit offload ls`.
type lsRow struct {
	*store.Workspace
	Server      string `json:"server,omitempty"`
	NoticeChars int    `json:"notice_chars,omitempty"`
}

func newShowCmd(open engineFunc, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print a workspace's metadata and notice as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			e, ctx, done, err := open(c.Context())
			if err != nil {
				return err
			}
			defer done()
			ws, err := e.Workspace(ctx, args[0])
			if err != nil {
				return err
			}
			n, err := e.Notice(ctx, args[0])
			if err != nil {
				return err
			}
			return writeJSON(streams.Out, map[string]any{"workspace": ws, "notice": n})
		},
	}
}

func newDropCmd(open engineFunc, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "drop ID...",
		Short: "Delete workspaces",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			e, ctx, done, err := open(c.Context())
			if err != nil {
				return err
			}
			defer done()
			for _, id := range args {
				if err := e.Drop(ctx, id); err != nil {
					return err
				}
				fmt.Fprintln(streams.Out, "dropped", id)
			}
			return nil
		},
	}
}

func newSweepCmd(open engineFunc, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "sweep",
		Short: "Delete every expired workspace",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			e, ctx, done, err := open(c.Context())
			if err != nil {
				return err
			}
			defer done()
			ids, err := e.Sweep(ctx)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "swept %d expired workspaces\n", len(ids))
			return err
		},
	}
}

// writeJSON prints v indented; raw JSON is re-indented as it is.
func writeJSON(w io.Writer, v any) error {
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return fmt.Errorf("format output: %w", err)
		}
		buf.WriteByte('\n')
		_, err := buf.WriteTo(w)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
