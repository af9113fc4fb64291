package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/vault"
)

// VaultIndexOptions are the inputs of `ctxkit vault index`.
type VaultIndexOptions struct {
	Vault   string
	Path    string
	Reindex bool
	Force   bool
	JSON    bool
}

func newVaultIndexCmd(streams IO) *cobra.Command {
	opts := &VaultIndexOptions{}
	cmd := &cobra.Command{
		Use:   "index VAULT",
		Short: "Index a semantic vault's documents for search",
		Long: "Extract, chunk, embed and index the vault's documents (.md, .txt, .pdf, .docx, .html, .json, .csv). " +
			"Only new and changed files are processed; removed files leave the index. A file that fails is " +
			"reported at the end and does not stop the run. --reindex rebuilds the index whole, as needed after " +
			"a change of embedding model.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault = args[0]
			return runVaultIndex(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Path, "path", "", "index only this file or folder of the vault")
	f.BoolVar(&opts.Reindex, "reindex", false, "drop the index and build it again")
	f.BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func runVaultIndex(ctx context.Context, opts *VaultIndexOptions, streams IO) error {
	v, err := getVault(ctx, opts.Vault)
	if err != nil {
		return err
	}
	if v.Type == vault.Skill {
		// A skill vault has no search index: indexing validates its skills.
		return runVaultSkills(ctx, v, opts.JSON, streams)
	}
	iopts := vault.IndexOptions{Path: opts.Path, Reindex: opts.Reindex, Force: opts.Force}
	if f, ok := streams.Err.(*os.File); ok && isTerminal(f) && !opts.JSON {
		iopts.Progress = func(done, total int, path string) {
			fmt.Fprintf(f, "\r\033[K[%d/%d] %s", done, total, path)
			if done == total {
				fmt.Fprintln(f)
			}
		}
	}
	rep, err := v.Index(ctx, iopts)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, rep)
	}
	fmt.Fprintf(streams.Out, "indexed %d files (%d chunks), %d unchanged, %d removed; embedder: %s\n",
		rep.Indexed, rep.Chunks, rep.Unchanged, rep.Removed, rep.Embedder)
	for _, f := range rep.Failed {
		fmt.Fprintf(streams.Out, "failed: %s: %s\n", f.Path, f.Error)
	}
	if len(rep.Failed) > 0 {
		return errSilent
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal), for
// the progress line.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func getVault(ctx context.Context, name string) (*vault.Vault, error) {
	r, _, err := openRegistry()
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, name)
}

// VaultQueryOptions are the inputs of `ctxkit vault query`.
type VaultQueryOptions struct {
	Vault string
	Text  string
	N     int
	JSON  bool
}

func newVaultQueryCmd(streams IO) *cobra.Command {
	opts := &VaultQueryOptions{}
	cmd := &cobra.Command{
		Use:   "query VAULT TEXT...",
		Short: "Search a semantic vault",
		Long: "Search the vault's index: BM25 and, when the vault has an embedder, vector similarity, fused by " +
			"reciprocal rank. Each result names its file, heading path, page and chunk, with each signal's rank " +
			"and score. No match is an empty list.",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Text = args[0], strings.Join(args[1:], " ")
			return runVaultQuery(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&opts.N, "n", "n", 5, "how many results")
	f.BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	return cmd
}

func runVaultQuery(ctx context.Context, opts *VaultQueryOptions, streams IO) error {
	v, err := getVault(ctx, opts.Vault)
	if err != nil {
		return err
	}
	res, err := v.Query(ctx, opts.Text, opts.N, nil)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, res)
	}
	if res.Mode == "lexical" {
		fmt.Fprintln(streams.Err, "lexical search only: the vault has no embedder")
	}
	if len(res.Results) == 0 {
		fmt.Fprintln(streams.Out, "no match")
	}
	for i, r := range res.Results {
		where := r.Path
		if r.Heading != "" {
			where += " › " + r.Heading
		}
		if r.Page > 0 {
			where += fmt.Sprintf(" (page %d)", r.Page)
		}
		fmt.Fprintf(streams.Out, "%d. %s [chunk %d, score %.4f]\n   %s\n", i+1, where, r.Chunk, r.Score, snippet(r.Text, 200))
	}
	return nil
}

// snippet is text on one line, cut at max runes.
func snippet(text string, max int) string {
	s := strings.Join(strings.Fields(text), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

func newVaultDocsCmd(streams IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "docs VAULT",
		Short: "List a semantic vault's indexed documents",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := getVault(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			docs, err := v.Docs(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(streams.Out, docs)
			}
			for _, d := range docs {
				fmt.Fprintf(streams.Out, "%s\t%d chunks\tindexed %s\n", d.Path, d.Chunks, d.Indexed.Format("2006-01-02 15:04"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the documents as JSON")
	return cmd
}

// VaultWriteOptions are the inputs of `ctxkit vault write`.
type VaultWriteOptions struct {
	Vault, Path string
	Content     string
	FromFile    string
	Overwrite   bool
	Meta        []string
}

func newVaultWriteCmd(streams IO) *cobra.Command {
	opts := &VaultWriteOptions{}
	cmd := &cobra.Command{
		Use:   "write VAULT FILE (--content TEXT | --from-file F)",
		Short: "Write a document into a semantic vault and index it",
		Long: "Write a document (a path inside the vault; its extension picks the format) and index it at once. " +
			"An existing file is refused unless --overwrite. --meta k=v pairs stay with the document in the index, " +
			"also when the index is rebuilt.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Path = args[0], args[1]
			return runVaultWrite(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Content, "content", "", "the document's text")
	f.StringVar(&opts.FromFile, "from-file", "", "read the document from this file (- for standard input)")
	f.BoolVar(&opts.Overwrite, "overwrite", false, "replace the file if it exists")
	f.StringArrayVar(&opts.Meta, "meta", nil, "metadata kept with the document, k=v (repeatable)")
	cmd.MarkFlagsMutuallyExclusive("content", "from-file")
	cmd.MarkFlagsOneRequired("content", "from-file")
	return cmd
}

func runVaultWrite(ctx context.Context, opts *VaultWriteOptions, streams IO) error {
	v, err := getVault(ctx, opts.Vault)
	if err != nil {
		return err
	}
	content := []byte(opts.Content)
	switch opts.FromFile {
	case "":
	case "-":
		if content, err = io.ReadAll(io.LimitReader(streams.In, maxInput+1)); err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
	default:
		if content, err = os.ReadFile(opts.FromFile); err != nil {
			return err
		}
	}
	if len(content) > maxInput {
		return fmt.Errorf("the document is over the %d-byte limit", maxInput)
	}
	meta := map[string]string{}
	for _, kv := range opts.Meta {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--meta %q: want key=value", kv)
		}
		meta[strings.TrimSpace(k)] = val
	}
	if err := v.Write(ctx, vault.WriteOptions{Agent: vault.Owner, Path: opts.Path, Content: content, Overwrite: opts.Overwrite, Meta: meta}); err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "wrote and indexed %s in vault %q\n", opts.Path, v.Name)
	return nil
}

func newVaultDeleteCmd(streams IO) *cobra.Command {
	var path string
	var purge bool
	cmd := &cobra.Command{
		Use:   "delete VAULT (--path P | --purge)",
		Short: "Delete documents from a semantic vault, or a whole vault",
		Long: "--path deletes a file, or a folder of documents, from the vault and its index. --purge deletes the " +
			"vault itself: its record and its folder (refused when the folder holds more than the vault: the " +
			"project root, your home folder, another project).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if purge {
				r, _, err := openRegistry()
				if err != nil {
					return err
				}
				v, err := r.Remove(cmd.Context(), args[0], true)
				if err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "deleted vault %q and its folder %s\n", v.Name, v.Dir)
				return nil
			}
			v, err := getVault(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			deleted, err := v.Delete(cmd.Context(), vault.Owner, path)
			for _, p := range deleted {
				fmt.Fprintf(streams.Out, "deleted %s\n", p)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "the file or folder to delete, inside the vault")
	cmd.Flags().BoolVar(&purge, "purge", false, "delete the whole vault: its record and its folder")
	cmd.MarkFlagsMutuallyExclusive("path", "purge")
	cmd.MarkFlagsOneRequired("path", "purge")
	return cmd
}

func newVaultReindexCmd(streams IO) *cobra.Command {
	opts := &VaultIndexOptions{}
	var model string
	cmd := &cobra.Command{
		Use:   "reindex VAULT [--path P] [--embedding-model SPEC]",
		Short: "Rebuild a semantic vault's index, optionally with another embedding model",
		Long: "Process the vault's documents again even if unchanged: the whole index, rebuilt from nothing, or only " +
			"--path. --embedding-model pins another embedder first (none, ollama:MODEL, openai:MODEL, builtin); " +
			"the whole index is then rebuilt with it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault = args[0]
			if model != "" {
				if opts.Path != "" {
					return fmt.Errorf("--embedding-model rebuilds the whole index; drop --path")
				}
				r, _, err := openRegistry()
				if err != nil {
					return err
				}
				if _, err := r.SetEmbeddingModel(cmd.Context(), opts.Vault, model); err != nil {
					return err
				}
			}
			opts.Reindex, opts.Force = opts.Path == "", true
			return runVaultIndex(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Path, "path", "", "only this file or folder of the vault")
	f.StringVar(&model, "embedding-model", "", "pin this embedder first, then rebuild")
	f.BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func newVaultWatchCmd(streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "watch VAULT",
		Short: "Keep a semantic vault's index in step with its folder, until interrupted",
		Long:  "Index the vault, then again after each burst of changes to its files (debounced), until Ctrl-C.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := getVault(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(streams.Err, "watching %s (Ctrl-C to stop)\n", v.Dir)
			return v.Watch(ctx, vault.WatchOptions{OnIndex: func(rep *vault.IndexReport, err error) {
				if err != nil {
					fmt.Fprintf(streams.Err, "%s: %v\n", time.Now().Format(time.TimeOnly), err)
					return
				}
				fmt.Fprintf(streams.Out, "%s: indexed %d, unchanged %d, removed %d, failed %d\n",
					time.Now().Format(time.TimeOnly), rep.Indexed, rep.Unchanged, rep.Removed, len(rep.Failed))
				for _, f := range rep.Failed {
					fmt.Fprintf(streams.Out, "failed: %s: %s\n", f.Path, f.Error)
				}
			}})
		},
	}
}
