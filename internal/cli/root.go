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
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
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
	}
	root.PersistentFlags().StringVar(&g.store, "store", "", "where workspaces live: a SQLite file path or memory: (env "+StoreEnvVar+"; default $CTXKIT_HOME/ctxkit.db)")
	root.AddGroup(&cobra.Group{ID: "offload", Title: "Offload (large tool results):"})
	root.AddCommand(newVersionCmd(streams))
	root.AddCommand(newOffloadCmd(g, streams))
	root.AddGroup(&cobra.Group{ID: "clients", Title: "AI clients (run their MCP servers through ctxkit wrap):"})
	root.AddCommand(newClientCmds(streams)...)
	root.AddCommand(newWrapCmd(g, streams))
	root.AddGroup(&cobra.Group{ID: "vaults", Title: "Vaults (memory for agents):"})
	root.AddCommand(newVaultCmd(streams), newAgentCmd(streams))
	root.AddCommand(newMCPCmd(g, streams), newServeCmd(g, streams))
	root.AddCommand(newGuardCmd(g, streams))
	root.AddCommand(newModelCmd(streams))
	return root
}

// openStore opens the store named by --store, $CTXKIT_STORE, or the default
// SQLite file under the data directory.
func (g *globals) openStore(ctx context.Context) (store.Store, error) {
	spec := g.store
	if spec == "" {
		spec = os.Getenv(StoreEnvVar)
	}
	switch {
	case spec == "memory:":
		return memstore.New(memstore.Options{}), nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return nil, errors.New("the PostgreSQL store is not available yet; use a SQLite path or memory: instead")
	case spec == "":
		dir, err := home.Dir()
		if err != nil {
			return nil, err
		}
		spec = filepath.Join(dir, "ctxkit.db")
	}
	s, err := sqlitestore.Open(ctx, spec, sqlitestore.Options{NoBackgroundIndex: true})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", spec, err)
	}
	return s, nil
}
