// Package cli implements the ctxkit command line. Each command has an
// options struct filled from flags and a run function that takes it, so
// commands are tested by calling run functions with buffers, without a
// terminal (the pattern of GitHub's cli/cli).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/pgstore"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
)

// StoreEnvVar names the variable that selects the store, like --store.
const StoreEnvVar = "CTXKIT_STORE"

// IO holds the streams a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// globals are the flags every command shares.
type globals struct {
	store string
}

// errSilent marks an error already reported to the user (for example a tool
// error printed as JSON): the command only needs a non-zero exit status.
var errSilent = errors.New("reported")

// Main runs ctxkit with args (without the program name) and returns the
// process exit status.
func Main(ctx context.Context, args []string, streams IO) int {
	root := newRoot(streams)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	if err := root.ExecuteContext(ctx); err != nil {
		if !errors.Is(err, errSilent) {
			fmt.Fprintln(streams.Err, "ctxkit:", err)
		}
		return 1
	}
	return 0
}

func newRoot(streams IO) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "ctxkit",
		Short:         "The context layer for AI agents",
		Long:          "ctxkit sits between an agent, its tools and its model: it offloads large tool results into explorable workspaces.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(), // --version prints versionLine
	}
	root.SetVersionTemplate(versionLine())
	root.PersistentFlags().StringVar(&g.store, "store", "", "where ctxkit keeps what it stores (workspaces, vault registry and indexes): sqlite:PATH (or a bare PATH), postgres://USER@HOST/DB (password in PGPASSWORD or ~/.pgpass, or the whole URL in $"+StoreEnvVar+") or memory: (env "+StoreEnvVar+"; default sqlite:$CTXKIT_HOME/ctxkit.db)")
	root.AddGroup(&cobra.Group{ID: "offload", Title: "Offload (large tool results):"})
	root.AddCommand(newVersionCmd(streams))
	root.AddCommand(newOffloadCmd(g, streams))
	root.AddGroup(&cobra.Group{ID: "clients", Title: "AI clients (run their MCP servers through ctxkit wrap):"})
	root.AddCommand(newClientCmds(streams)...)
	root.AddCommand(newWrapCmd(g, streams))
	root.AddGroup(&cobra.Group{ID: "vaults", Title: "Vaults (memory for agents):"})
	root.AddCommand(newVaultCmd(g, streams), newAgentCmd(g, streams), newImportCmd(g, streams))
	root.AddCommand(newMCPCmd(g, streams), newServeCmd(g, streams))
	root.AddCommand(newGuardCmd(g, streams))
	root.AddCommand(newModelCmd(streams))
	root.AddCommand(newStoreCmd(g, streams))
	return root
}

// schemes are the store backends this program is built with, by URL
// scheme.
var schemes = store.Schemes{
	"memory":     memstore.OpenBackend,
	"sqlite":     sqlitestore.OpenBackend,
	"postgres":   pgstore.OpenBackend,
	"postgresql": pgstore.OpenBackend,
}

// storeURL is the store named by --store, $CTXKIT_STORE, or "" for the
// default (the SQLite backend in the data directory).
func (g *globals) storeURL() string {
	if g.store != "" {
		return g.store
	}
	return os.Getenv(StoreEnvVar)
}

// noPasswordInFlag refuses a store URL given on the command line that holds
// a password: every user of the machine sees a command's arguments (ps).
func noPasswordInFlag(flag, url string) error {
	if store.Redact(url) == url {
		return nil
	}
	return fmt.Errorf("%s %s holds a password, which every user of this machine sees in ps; "+
		"leave it out and put it in PGPASSWORD or ~/.pgpass, or give the whole URL in $%s", flag, store.Redact(url), StoreEnvVar)
}

// workPaths are where a command works: the data directory, the working
// directory and the project root seen from it.
type workPaths struct{ home, cwd, root string }

func getWorkPaths() (workPaths, error) {
	dir, err := home.Dir()
	if err != nil {
		return workPaths{}, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return workPaths{}, fmt.Errorf("find working directory: %w", err)
	}
	return workPaths{home: dir, cwd: cwd, root: home.ProjectRoot(cwd, dir)}, nil
}

// openBackend opens the backend named by --store, $CTXKIT_STORE, or the
// default SQLite file under the data directory. background lets it build
// search indexes after a call returns (long-running commands).
func (g *globals) openBackend(ctx context.Context, background bool) (store.Backend, error) {
	p, err := getWorkPaths()
	if err != nil {
		return nil, err
	}
	return g.openBackendAt(ctx, p, background)
}

func (g *globals) openBackendAt(ctx context.Context, p workPaths, background bool) (store.Backend, error) {
	if err := noPasswordInFlag("--store", g.store); err != nil {
		return nil, err
	}
	url := g.storeURL()
	if url == "" {
		url = "sqlite:" + filepath.Join(p.home, "ctxkit.db")
	}
	return schemes.Open(ctx, url, store.Options{Home: p.home, Root: p.root, Background: background})
}
