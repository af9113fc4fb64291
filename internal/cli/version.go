package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/ctxkit/ctxkit/internal/cli.Version=v1.2.3";
// without it, the module version from the build info is used.
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// versionLine is what `ctxkit version` and `ctxkit --version` print.
func versionLine() string {
	return fmt.Sprintf("ctxkit %s %s/%s %s\n", version(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func newVersionCmd(streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of ctxkit",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(streams.Out, versionLine())
			return err
		},
	}
}
