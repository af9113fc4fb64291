package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/embed/hub"
)

func newModelCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Install and try the builtin embedding models",
		Long: "Builtin embedding models run in process for semantic vaults (--embedding-model builtin:NAME). " +
			"They live in $CTXKIT_HOME/models/NAME, one folder each, in the Hugging Face layout: " +
			hub.RequiredListing + ".",
		GroupID: "vaults",
	}
	cmd.AddCommand(newModelPullCmd(streams), newModelListCmd(streams), newModelRmCmd(streams), newModelEmbedCmd(streams))
	return cmd
}

// modelsDir is $CTXKIT_HOME/models.
func modelsDir() (string, error) {
	dir, err := home.Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "models"), nil
}

// modelDir checks a model name and returns its folder: NAME or the last
// part of OWNER/NAME.
func modelDir(name string) (repo, local, dir string, err error) {
	if m, ok := embed.LookupModel(name); ok {
		// A known name: its own repo (bge-small-en-v1.5 is BAAI's), or
		// why the builtin embedder cannot run it.
		if _, err := embed.Resolve(name); err != nil {
			return "", "", "", err
		}
		name = m.Repo
	}
	repo, err = hub.RepoID(name)
	if err != nil {
		return "", "", "", err
	}
	models, err := modelsDir()
	if err != nil {
		return "", "", "", err
	}
	local = hub.LocalName(repo)
	return repo, local, filepath.Join(models, local), nil
}

// ModelPullOptions are the inputs of `ctxkit model pull`.
type ModelPullOptions struct {
	Name     string
	Revision string
	From     string
}

func newModelPullCmd(streams IO) *cobra.Command {
	opts := &ModelPullOptions{}
	cmd := &cobra.Command{
		Use:   "pull NAME",
		Short: "Download a model from the Hugging Face Hub, or install it from a folder",
		Long: "Download config.json, tokenizer.json (vocab.txt when the repo has no tokenizer.json), model.safetensors, " +
			"modules.json and 1_Pooling/config.json of a model repo into $CTXKIT_HOME/models/NAME. A short NAME such as " +
			"all-MiniLM-L6-v2 is sentence-transformers/NAME; OWNER/NAME names any repo and installs as NAME. " +
			"An interrupted download resumes when run again; the weights are checked against the Hub's sha256. " +
			"HF_ENDPOINT selects a mirror and HF_TOKEN is sent for gated or private repos.\n\n" +
			"--from DIR installs the same files from a folder, for machines without network.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runModelPull(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Revision, "revision", "main", "branch, tag or commit of the repo")
	f.StringVar(&opts.From, "from", "", "install from the files in this folder instead of the Hub")
	return cmd
}

func runModelPull(ctx context.Context, opts *ModelPullOptions, streams IO) error {
	repo, local, dir, err := modelDir(opts.Name)
	if err != nil {
		return err
	}
	if opts.From != "" {
		res, err := hub.InstallFrom(opts.From, dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(streams.Out, "installed %s from %s in %s (%s)\n", local, opts.From, dir, fileList(res.Files))
		return nil
	}
	hopts := hub.Options{Revision: opts.Revision}
	if f := progressTerminal(streams); f != nil {
		hopts.Progress = progressBar(f)
	}
	res, err := hub.Download(ctx, repo, dir, hopts)
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "installed %s from %s@%s (commit %s) in %s (%s)\n", local, repo, res.Revision, res.Commit, dir, fileList(res.Files))
	if len(res.Verified) > 0 {
		fmt.Fprintf(streams.Out, "sha256 checked: %s\n", strings.Join(res.Verified, ", "))
	}
	fmt.Fprintf(streams.Out, "use it with --embedding-model builtin:%s\n", local)
	return nil
}

func fileList(files map[string]int64) string {
	var total int64
	for _, n := range files {
		total += n
	}
	return english.Count(len(files), "file", "files") + ", " + byteSize(total)
}

// ModelListOptions are the inputs of `ctxkit model list`.
type ModelListOptions struct {
	JSON bool
}

func newModelListCmd(streams IO) *cobra.Command {
	opts := &ModelListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the installed models, with their size and dimension",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModelList(opts, streams)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the list as JSON")
	return cmd
}

func runModelList(opts *ModelListOptions, streams IO) error {
	models, err := modelsDir()
	if err != nil {
		return err
	}
	list, err := hub.List(models)
	if err != nil {
		return err
	}
	if opts.JSON {
		if list == nil {
			list = []hub.Installed{}
		}
		return writeJSON(streams.Out, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(streams.Out, "no models in %s; install one with: ctxkit model pull %s\n", models, embed.DefaultBuiltinModel)
		return nil
	}
	for _, m := range list {
		note := ""
		if !m.Complete {
			note = "\tincomplete (pull it again)"
		}
		fmt.Fprintf(streams.Out, "%s\t%s\t%d dims%s\n", m.Name, byteSize(m.Size), m.Dimension, note)
	}
	return nil
}

func newModelRmCmd(streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove an installed model",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModelRm(args[0], streams)
		},
	}
}

func runModelRm(name string, streams IO) error {
	_, local, dir, err := modelDir(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("model %s is not installed (no %s)", local, dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove model %s: %w", local, err)
	}
	fmt.Fprintf(streams.Out, "removed %s\n", dir)
	return nil
}

func newModelEmbedCmd(streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "embed NAME TEXT...",
		Short: "Print the vectors of texts as JSON, one array per text",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModelEmbed(cmd.Context(), args[0], args[1:], streams)
		},
	}
}

func runModelEmbed(ctx context.Context, name string, texts []string, streams IO) error {
	_, local, _, err := modelDir(name)
	if err != nil {
		return err
	}
	models, err := modelsDir()
	if err != nil {
		return err
	}
	e, err := embed.New(embed.Builtin+":"+local, embed.Options{ModelsDir: models})
	if err != nil {
		if errors.Is(err, embed.ErrUnavailable) {
			return fmt.Errorf("%w (or run: ctxkit model pull %s)", err, name)
		}
		return err
	}
	vectors, err := e.Embed(ctx, texts)
	if err != nil {
		return err
	}
	// One vector a line: an array of arrays that stays readable.
	var b strings.Builder
	b.WriteString("[")
	for i, v := range vectors {
		line, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("format vectors: %w", err)
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	_, err = io.WriteString(streams.Out, b.String())
	return err
}
