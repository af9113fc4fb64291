package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/vault"
)

// VaultIndexOptions are the inputs of `ctxkit vault index` and `reindex`.
type VaultIndexOptions struct {
	Vault   string
	Path    string
	Reindex bool
	JSON    bool
	// From is a local folder to upload into a hosted vault first.
	From string
}

func newVaultIndexCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultIndexOptions{}
	cmd := &cobra.Command{
		Use:   "index VAULT",
		Short: "Index a semantic vault's documents for search",
		Long: "Extract, chunk, embed and index the vault's documents (.md, .txt, .pdf, .docx, .html, .json, .csv; " +
			"hidden files and folders are never documents). Only new and changed files are processed; removed files " +
			"leave the index. A file that fails is reported at the end and does not stop the run. --reindex " +
			"rebuilds the index whole, as needed after a change of embedding model. A skill vault is checked instead: " +
			"its skills are listed and its invalid files reported. On a store that hosts its vaults, --from DIR " +
			"first uploads the files of a local folder into the vault (the same files an index run takes from a " +
			"folder; each replaces the vault's file of its path), then indexes; a vault that is a folder refuses it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault = args[0]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultIndex(cmd.Context(), v, opts, streams) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Path, "path", "", "index only this file or folder of the vault")
	fl.BoolVar(&opts.Reindex, "reindex", false, "drop the index and build it again")
	fl.BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	fl.StringVar(&opts.From, "from", "", "upload this local folder into the (hosted) vault, then index it")
	cmd.MarkFlagsMutuallyExclusive("from", "path")
	cmd.MarkFlagsMutuallyExclusive("from", "reindex")
	return cmd
}

func runVaultIndex(ctx context.Context, v *vaults, opts *VaultIndexOptions, streams IO) error {
	var progress func(done, total int, path string)
	if f := progressTerminal(streams); f != nil && !opts.JSON {
		progress = countProgress(f)
	}
	if opts.From != "" {
		return runVaultUpload(ctx, v, opts, progress, streams)
	}
	rep, err := v.svc.Index(ctx, v.caller, opts.Vault, vault.IndexRequest{Path: opts.Path, Reindex: opts.Reindex}, progress)
	if errors.Is(err, vault.ErrWrongType) && opts.Path == "" && !opts.Reindex {
		// A skill vault has no search index: indexing validates its
		// skills.
		if info, derr := v.svc.DescribeVault(ctx, v.caller, opts.Vault); derr == nil && info.Type == vault.Skill {
			return runVaultSkills(ctx, v, opts.Vault, opts.JSON, streams)
		}
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, rep)
	}
	return printIndexReport(rep, streams)
}

// runVaultUpload uploads a local folder into a hosted vault, which the
// service then indexes (or, for a skill vault, checks).
func runVaultUpload(ctx context.Context, v *vaults, opts *VaultIndexOptions, progress func(int, int, string), streams IO) error {
	dir := opts.From
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(v.cwd, dir)
	}
	root, err := os.OpenRoot(dir) // no link in it leads the upload out of it
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer root.Close()
	rep, err := v.svc.UploadDocs(ctx, v.caller, opts.Vault, root.FS(), progress)
	if err != nil {
		return err
	}
	if opts.JSON {
		if err := writeJSON(streams.Out, rep); err != nil {
			return err
		}
		if len(rep.Failed) > 0 || (rep.Index != nil && len(rep.Index.Failed) > 0) || (rep.Skills != nil && len(rep.Skills.Problems) > 0) {
			return errSilent
		}
		return nil
	}
	fmt.Fprintf(streams.Out, "uploaded %s from %s\n", english.Count(rep.Uploaded, "file", "files"), opts.From)
	for _, f := range rep.Failed {
		fmt.Fprintf(streams.Out, "not uploaded: %s: %s\n", f.Path, f.Error)
	}
	switch {
	case rep.Index != nil:
		err = printIndexReport(rep.Index, streams)
	case rep.Skills != nil:
		err = printSkills(rep.Skills, false, streams)
	}
	if err == nil && len(rep.Failed) > 0 {
		err = errSilent
	}
	return err
}

// indexedFiles is "N files (M chunks)" of an index run.
func indexedFiles(files, chunks int) string {
	return english.Count(files, "file", "files") + " (" + english.Count(chunks, "chunk", "chunks") + ")"
}

// printIndexReport prints an index run's report; failed files make the
// command fail (silently: they are printed).
func printIndexReport(rep *vault.IndexReport, streams IO) error {
	if rep.Warning != "" {
		fmt.Fprintln(streams.Err, "warning:", rep.Warning)
	}
	fmt.Fprintf(streams.Out, "indexed %s, %d unchanged, %d removed; embedder: %s\n",
		indexedFiles(rep.Indexed, rep.Chunks), rep.Unchanged, rep.Removed, rep.Embedder)
	for _, f := range rep.Failed {
		fmt.Fprintf(streams.Out, "failed: %s: %s\n", f.Path, f.Error)
	}
	if len(rep.Failed) > 0 {
		return errSilent
	}
	return nil
}

// VaultQueryOptions are the inputs of `ctxkit vault query`.
type VaultQueryOptions struct {
	Vault   string
	Text    string
	N       int
	Lexical bool
	JSON    bool
}

func newVaultQueryCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultQueryOptions{}
	cmd := &cobra.Command{
		Use:   "query VAULT TEXT...",
		Short: "Search a semantic vault",
		Long: "Search the vault's index: BM25 and, when the vault has an embedder, vector similarity, fused by " +
			"reciprocal rank. Each result names its file, heading path, where it is in the file (pages of a PDF, " +
			"paragraphs of a DOCX, lines of text and Markdown) and chunk, with each signal's rank and score. " +
			"No match is an empty list. A vault whose embedder is not available here is refused (exit " +
			"status 1) with what to do: it is never searched by words only behind your back; --lexical does that " +
			"on purpose. --limit is -n's other name (CtxVault's).",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Text = args[0], strings.Join(args[1:], " ")
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultQuery(cmd.Context(), v, opts, streams) })
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&opts.N, "n", "n", vault.DefaultQueryResults, fmt.Sprintf("how many results (1 to %d; also --limit)", vault.MaxQueryResults))
	flagAlias(fl, "limit", "n")
	fl.BoolVar(&opts.Lexical, "lexical", false, "search by words only, without the vault's embedder (for a vault whose embedder is not available)")
	fl.BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	return cmd
}

// flagAlias makes --alias another name of the flag name: one flag, one
// value, the help listing name only (its usage names the alias).
func flagAlias(fl *pflag.FlagSet, alias, name string) {
	prev := fl.GetNormalizeFunc()
	fl.SetNormalizeFunc(func(f *pflag.FlagSet, n string) pflag.NormalizedName {
		if n == alias {
			n = name
		}
		return prev(f, n)
	})
}

func runVaultQuery(ctx context.Context, v *vaults, opts *VaultQueryOptions, streams IO) error {
	res, err := v.svc.Query(ctx, v.caller, opts.Vault, vault.QueryRequest{Query: opts.Text, NResults: opts.N, Lexical: opts.Lexical})
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(streams.Out, res)
	}
	switch {
	case res.Warning != "":
		fmt.Fprintln(streams.Err, "warning:", res.Warning)
	case res.Mode == "lexical" && !opts.Lexical:
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
		if r.Locator != nil {
			where += " (" + r.Locator.Label + ")"
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

func newVaultDocsCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "docs VAULT",
		Short: "List a semantic vault's indexed documents",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				docs, err := v.svc.Docs(cmd.Context(), v.caller, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(streams.Out, docs)
				}
				for _, d := range docs {
					fmt.Fprintf(streams.Out, "%s\t%s\tindexed %s\n", d.Path, english.Count(d.Chunks, "chunk", "chunks"), d.Indexed.Format("2006-01-02 15:04"))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the documents as JSON")
	return cmd
}

func newVaultReadCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "read VAULT PATH",
		Short: "Print a document's text as extracted for indexing",
		Long: "Print the text of one document of a semantic vault as the index sees it: headings and paragraphs " +
			"separated by blank lines (Markdown headings keep their #), pages by a form feed.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				d, err := v.svc.ReadDoc(cmd.Context(), v.caller, args[0], args[1])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(streams.Out, d)
				}
				fmt.Fprintln(streams.Out, d.Text)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the document as JSON: path, title, text, bytes")
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

func newVaultWriteCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
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
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultWrite(cmd.Context(), v, opts, streams) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Content, "content", "", "the document's text")
	fl.StringVar(&opts.FromFile, "from-file", "", "read the document from this file (- for standard input)")
	fl.BoolVar(&opts.Overwrite, "overwrite", false, "replace the file if it exists")
	fl.StringArrayVar(&opts.Meta, "meta", nil, "metadata kept with the document, k=v (repeatable)")
	cmd.MarkFlagsMutuallyExclusive("content", "from-file")
	cmd.MarkFlagsOneRequired("content", "from-file")
	return cmd
}

// readInput returns text, or what file holds (- for in), bounded.
func readInput(text, file string, in io.Reader) (string, error) {
	switch file {
	case "":
		return text, nil
	case "-":
		file = "standard input"
	default:
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		in = f
	}
	b, err := io.ReadAll(io.LimitReader(in, maxInput+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	if len(b) > maxInput {
		return "", fmt.Errorf("the input is over the %d-byte limit", maxInput)
	}
	return string(b), nil
}

func runVaultWrite(ctx context.Context, v *vaults, opts *VaultWriteOptions, streams IO) error {
	content, err := readInput(opts.Content, opts.FromFile, streams.In)
	if err != nil {
		return err
	}
	meta, err := metaFlag(opts.Meta, func(v string) string { return v })
	if err != nil {
		return err
	}
	res, err := v.svc.WriteDoc(ctx, v.caller, opts.Vault, opts.Path, vault.WriteDocRequest{Content: content, Overwrite: opts.Overwrite, Metadata: meta})
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "wrote and indexed %s in vault %q\n", res.Path, res.Vault)
	return nil
}

func newVaultDeleteCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	var path string
	var purge bool
	cmd := &cobra.Command{
		Use:   "delete VAULT (--path P | --purge)",
		Short: "Delete documents from a semantic vault, or a whole vault",
		Long: "--path deletes a file, or a folder of documents, from the vault and its index. --purge deletes the " +
			"vault itself: its record, its stored data and its folder (refused when the folder holds more than the " +
			"vault: the project root, your home folder, another project).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				if purge {
					info, err := v.svc.RemoveVault(cmd.Context(), v.caller, args[0], true)
					if err != nil {
						return err
					}
					fmt.Fprintf(streams.Out, "deleted vault %q and its folder %s\n", info.Name, info.Path)
					return nil
				}
				deleted, err := v.svc.DeleteDoc(cmd.Context(), v.caller, args[0], path)
				for _, p := range deleted {
					fmt.Fprintf(streams.Out, "deleted %s\n", p)
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "the file or folder to delete, inside the vault")
	cmd.Flags().BoolVar(&purge, "purge", false, "delete the whole vault: its record, its data and its folder")
	cmd.MarkFlagsMutuallyExclusive("path", "purge")
	cmd.MarkFlagsOneRequired("path", "purge")
	return cmd
}

func newVaultReindexCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultIndexOptions{}
	var model string
	cmd := &cobra.Command{
		Use:   "reindex VAULT [--path P] [--embedding-model SPEC]",
		Short: "Rebuild a semantic vault's index, optionally with another embedding model",
		Long: "Process the vault's documents again even if unchanged: the whole index, rebuilt, or only --path. " +
			"--embedding-model pins another embedder first (none, builtin[:MODEL], ollama:MODEL, openai:MODEL, or a " +
			"sentence-transformers name such as all-MiniLM-L6-v2, which is the builtin embedder's); one that is not " +
			"installed is refused, the vault unchanged. The whole index is then rebuilt with it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault = args[0]
			if model != "" && opts.Path != "" {
				return fmt.Errorf("--embedding-model rebuilds the whole index; drop --path")
			}
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				if model != "" {
					if _, err := v.svc.SetEmbeddingModel(cmd.Context(), v.caller, opts.Vault, model); err != nil {
						return err
					}
				}
				opts.Reindex = true
				return runVaultIndex(cmd.Context(), v, opts, streams)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Path, "path", "", "only this file or folder of the vault")
	fl.StringVar(&model, "embedding-model", "", "pin this embedder first, then rebuild")
	fl.BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func newVaultWatchCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "watch VAULT",
		Short: "Keep a semantic vault's index in step with its folder, until interrupted",
		Long:  "Index the vault, then again after each burst of changes to its files (debounced), until Ctrl-C.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return g.withVaults(ctx, f, func(v *vaults) error {
				fmt.Fprintf(streams.Err, "watching vault %q (Ctrl-C to stop)\n", args[0])
				return v.svc.Watch(ctx, v.caller, args[0], vault.WatchOptions{OnIndex: func(rep *vault.IndexReport, err error) {
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
			})
		},
	}
}
