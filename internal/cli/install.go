package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/internal/clientconfig"
	"github.com/ctxkit/ctxkit/internal/home"
)

// redactHeader shows a -H or --env argument in a message without its
// value, which may be a secret: the name before the colon when there is
// one, else the first three characters.
func redactHeader(arg string) string {
	if name, _, ok := strings.Cut(arg, ":"); ok && !strings.ContainsAny(name, " \t") {
		return fmt.Sprintf("%q: …", name)
	}
	if r := []rune(arg); len(r) > 3 {
		return fmt.Sprintf("%q…", string(r[:3]))
	}
	return fmt.Sprintf("%q", arg)
}

// newClientCmds returns install, uninstall, status and add.
func newClientCmds(streams IO) []*cobra.Command {
	return []*cobra.Command{newInstallCmd(streams), newUninstallCmd(streams), newStatusCmd(streams), newAddCmd(streams)}
}

// newInstaller builds an Installer for this process: the real paths, the
// data directory and the running executable.
func newInstaller() (*clientconfig.Installer, error) {
	dir, err := home.Dir()
	if err != nil {
		return nil, err
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("find home directory: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find working directory: %w", err)
	}
	return clientconfig.New(clientconfig.Options{
		Env: clientconfig.Env{GOOS: runtime.GOOS, Home: h, Cwd: cwd, Getenv: os.Getenv,
			Exists: func(p string) bool { _, err := os.Stat(p); return err == nil }},
		DataDir: dir,
	})
}

var clientsHelp = "Clients: " + strings.Join(clientconfig.ClientNames(), ", ") + "."

// InstallOptions are the inputs of `ctxkit install` and `ctxkit uninstall`.
type InstallOptions struct {
	Client  string
	Servers []string
	Scope   string
	DryRun  bool
	Force   bool
	JSON    bool
}

func addScopeFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "scope", "user", "which file: user, project (relative to the working directory) or local (claude-code: this project in ~/.claude.json)")
}

func newInstallCmd(streams IO) *cobra.Command {
	return newInstallOrUninstallCmd(streams, false, "install CLIENT [SERVER...]",
		"Run a client's MCP servers through ctxkit wrap",
		"Rewrite the client's MCP configuration so that each server (or each named one) runs through "+
			"`ctxkit wrap`, keeping its command or URL, arguments, env and headers. The original entries are "+
			"recorded so `ctxkit uninstall` puts them back exactly. "+clientsHelp)
}

func newUninstallCmd(streams IO) *cobra.Command {
	return newInstallOrUninstallCmd(streams, true, "uninstall CLIENT [SERVER...]",
		"Put back the entries ctxkit install changed",
		"Restore the original entries recorded by `ctxkit install` (and remove those `ctxkit add` created). "+
			"An entry changed since (by the client or by hand) is left alone unless --force. "+clientsHelp)
}

func newInstallOrUninstallCmd(streams IO, uninstall bool, use, short, long string) *cobra.Command {
	opts := &InstallOptions{}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		GroupID: "clients",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Client, opts.Servers = args[0], args[1:]
			return runInstall(cmd.Context(), opts, streams, uninstall)
		},
	}
	addScopeFlag(cmd, &opts.Scope)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the diff of what would change, write nothing")
	if uninstall {
		cmd.Flags().BoolVar(&opts.Force, "force", false, "restore originals even over entries changed since install")
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	return cmd
}

func runInstall(ctx context.Context, opts *InstallOptions, streams IO, uninstall bool) error {
	in, err := newInstaller()
	if err != nil {
		return err
	}
	req := clientconfig.Request{Client: opts.Client, Scope: clientconfig.Scope(opts.Scope), Servers: opts.Servers, DryRun: opts.DryRun, Force: opts.Force}
	var res *clientconfig.Result
	if uninstall {
		res, err = in.Uninstall(ctx, req)
	} else {
		res, err = in.Install(ctx, req)
	}
	if res != nil {
		printResult(streams.Out, res, opts.DryRun, opts.JSON)
	}
	return err
}

func printResult(w io.Writer, res *clientconfig.Result, dry, asJSON bool) {
	if asJSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "%s (%s): %s\n", res.Client, res.Scope, res.Path)
	if len(res.Changes) == 0 {
		fmt.Fprintln(w, "  no servers to change")
	}
	for _, c := range res.Changes {
		if c.Detail != "" {
			fmt.Fprintf(w, "  %s: %s (%s)\n", c.Server, c.Action, c.Detail)
		} else {
			fmt.Fprintf(w, "  %s: %s\n", c.Server, c.Action)
		}
	}
	switch {
	case dry && res.Diff != "":
		fmt.Fprint(w, res.Diff)
		fmt.Fprintln(w, "dry run: nothing written")
	case res.Wrote && res.Backup != "":
		fmt.Fprintf(w, "backup: %s\n", res.Backup)
	}
	if res.Wrote {
		fmt.Fprintln(w, "restart the client (or reload its MCP servers) to apply")
	}
}

// StatusOptions are the inputs of `ctxkit status`.
type StatusOptions struct {
	Clients []string
	JSON    bool
}

func newStatusCmd(streams IO) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [CLIENT...]",
		Short: "Show which servers of each client run through ctxkit, and drift",
		Long: "For each client (every client with a configuration file when none is named) and scope: the file, " +
			"each server wrapped or not, and drift (an entry changed or dropped since install, as clients that " +
			"rewrite their own file do). " + clientsHelp,
		GroupID: "clients",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Clients = args
			return runStatus(cmd.Context(), opts, streams)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func runStatus(ctx context.Context, opts *StatusOptions, streams IO) error {
	in, err := newInstaller()
	if err != nil {
		return err
	}
	st, err := in.Status(ctx, opts.Clients...)
	if err != nil {
		return err
	}
	if opts.JSON {
		if st == nil {
			st = []clientconfig.LocationStatus{}
		}
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintln(streams.Out, string(b))
		return nil
	}
	if len(st) == 0 {
		fmt.Fprintln(streams.Out, "no client configuration found")
		return nil
	}
	tw := tabwriter.NewWriter(streams.Out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tSCOPE\tSERVER\tSTATE\tNOTE")
	for _, ls := range st {
		note := ls.Path
		switch {
		case ls.Error != "":
			note += ": " + ls.Error
		case !ls.Exists:
			note += " (no file)"
		}
		fmt.Fprintf(tw, "%s\t%s\t\t\t%s\n", ls.Client, ls.Scope, note)
		for _, s := range ls.Servers {
			note := s.Detail
			if s.Drift != "" {
				note = "drift: " + s.Drift
			}
			fmt.Fprintf(tw, "\t\t%s\t%s\t%s\n", s.Name, s.State, note)
		}
	}
	return tw.Flush()
}

// AddOptions are the inputs of `ctxkit add`.
type AddOptions struct {
	Client    string
	Name      string
	URL       string
	Command   []string
	Headers   []string
	Env       []string
	Transport string
	Scope     string
	Force     bool
	DryRun    bool
	Print     bool
	// Vaults adds ctxkit's own vault MCP server (`ctxkit mcp`), as
	// Agent when set.
	Vaults bool
	Agent  string
}

func newAddCmd(streams IO) *cobra.Command {
	opts := &AddOptions{}
	cmd := &cobra.Command{
		Use:   "add CLIENT NAME (URL | -- COMMAND [ARGS...])",
		Short: "Add a new MCP server to a client, already wrapped",
		Long: "Add a server to the client's configuration that runs through `ctxkit wrap`: a remote URL (with " +
			"-H 'Name: value' headers; ${VAR} in a value stays a reference, resolved at run time) or a stdio " +
			"command after --. --print shows the snippet (and the one-click install link for Cursor and VS Code) " +
			"instead of writing. " + clientsHelp,
		Example: "  ctxkit add cursor github https://api.githubcopilot.com/mcp/ -H 'Authorization: Bearer ${GITHUB_TOKEN}'\n" +
			"  ctxkit add claude-code fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes\n" +
			"  ctxkit add claude-code ctxkit-memory --vaults --agent researcher",
		GroupID: "clients",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				opts.Command = args[dash:]
				args = args[:dash]
			}
			switch {
			case opts.Vaults:
				if len(args) != 2 || len(opts.Command) > 0 {
					return errors.New("add --vaults needs CLIENT NAME and nothing else: it adds `ctxkit mcp`")
				}
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("find the ctxkit executable: %w", err)
				}
				opts.Command = []string{exe, "mcp"}
				if opts.Agent != "" {
					opts.Command = append(opts.Command, "--agent", opts.Agent)
				}
			case opts.Agent != "":
				return errors.New("--agent goes with --vaults")
			case len(args) == 3 && len(opts.Command) == 0:
				opts.URL = args[2]
			case len(args) == 2 && len(opts.Command) > 0:
			default:
				return errors.New("add needs CLIENT NAME and either a URL or -- COMMAND [ARGS...]")
			}
			opts.Client, opts.Name = args[0], args[1]
			return runAdd(cmd.Context(), opts, streams)
		},
	}
	addScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringArrayVarP(&opts.Headers, "header", "H", nil, "header 'Name: value' for a URL server (repeatable)")
	cmd.Flags().StringArrayVar(&opts.Env, "env", nil, "environment variable K=V for a command, written as given (repeatable)")
	cmd.Flags().StringVar(&opts.Transport, "transport", "auto", "URL transport: auto, http or sse")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace an existing server of that name")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the diff of what would change, write nothing")
	cmd.Flags().BoolVar(&opts.Print, "print", false, "print the configuration snippet instead of writing")
	cmd.Flags().BoolVar(&opts.Vaults, "vaults", false, "add ctxkit's vault memory server (ctxkit mcp) under NAME")
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "with --vaults: the agent the client acts as (ctxkit agent create NAME); the owner when empty")
	return cmd
}

func runAdd(ctx context.Context, opts *AddOptions, streams IO) error {
	s := clientconfig.Server{Name: opts.Name}
	if opts.URL != "" {
		switch opts.Transport {
		case "auto", "http", "sse":
		default:
			return fmt.Errorf("--transport %q: want auto, http or sse", opts.Transport)
		}
		if len(opts.Env) > 0 {
			return errors.New("--env is for a command; a URL server takes -H headers")
		}
		s.URL, s.Transport = opts.URL, opts.Transport
		for i, h := range opts.Headers {
			k, v, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(strings.TrimSpace(k), " \t\r\n") {
				return fmt.Errorf("-H number %d (%s): want 'Name: value'", i+1, redactHeader(h))
			}
			s.Headers = append(s.Headers, clientconfig.KV{Key: strings.TrimSpace(k), Value: strings.TrimLeft(v, " \t")})
		}
	} else {
		if len(opts.Headers) > 0 {
			return errors.New("-H is for a URL server; a command takes --env")
		}
		s.Command, s.Args = opts.Command[0], opts.Command[1:]
		for i, e := range opts.Env {
			k, v, ok := strings.Cut(e, "=")
			if !ok || k == "" {
				return fmt.Errorf("--env number %d (%s): want K=V", i+1, redactHeader(e))
			}
			s.Env = append(s.Env, clientconfig.KV{Key: k, Value: v})
		}
	}
	in, err := newInstaller()
	if err != nil {
		return err
	}
	if opts.Print {
		sn, err := in.Snippet(opts.Client, s)
		if err != nil {
			return err
		}
		fmt.Fprint(streams.Out, sn.Text)
		if sn.Link != "" {
			fmt.Fprintf(streams.Out, "\none-click install:\n%s\n", sn.Link)
		}
		return nil
	}
	res, err := in.Add(ctx, clientconfig.AddRequest{Client: opts.Client, Scope: clientconfig.Scope(opts.Scope), Server: s, Force: opts.Force, DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	printResult(streams.Out, res, opts.DryRun, false)
	return nil
}
