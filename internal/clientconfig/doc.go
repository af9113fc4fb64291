// Package clientconfig installs `ctxkit wrap` into AI clients' MCP
// configuration files (ctxkit install, uninstall, status and add): Claude
// Desktop, Claude Code, Cursor, VS Code, Windsurf, Codex, Gemini CLI, Zed,
// Cline and OpenCode.
//
// # Never damaging a configuration
//
// A file is parsed completely before anything is changed; a file that does
// not parse is refused with its line and column, and nothing is written.
// Every JSON file is read as JSONC (comments, trailing commas). Edits are
// byte splices: the hujson syntax tree (JSON) and go-toml's unstable parser
// (TOML, checked first with go-toml's decoder) give the byte range of each
// entry, and only those bytes are replaced, so comments, key order,
// indentation and the trailing newline of the rest of the file stay as
// they were. A rewritten entry keeps every member ctxkit does not change
// byte for byte; comments between an entry's own members are not carried
// into the wrapped entry (uninstall brings them back with the original).
// Codex entries are edited only when written as one [mcp_servers.NAME]
// block (with its sub-tables); dotted keys and inline tables are reported
// as unsupported. The edited bytes are parsed again and each rewritten
// entry must be found wrapped, spanning exactly the text the manifest
// records, before anything is written. Generated text follows the file's
// line endings (CR LF or LF). Files that are not UTF-8 and objects naming a
// server twice are refused. A configuration file that is a symlink
// (dotfiles managers) stays one: its target is read and replaced, while the
// manifest and messages use the path the client uses. Just before the
// rename the file is read again: if another program (Claude Code rewrites
// ~/.claude.json often) changed it since ctxkit read it, the whole edit is
// redone once on the new content, and a second change is refused with
// ErrConcurrentEdit, nothing written (a window of a few microseconds
// between that check and the rename remains). Before each write the old
// file is copied to
// $CTXKIT_HOME/backups/CLIENT/TIMESTAMP-NAME-HASH (0600; kept out of
// project directories so backups holding secrets are not committed), then
// the file is replaced atomically (temporary file in the same directory,
// fsync, rename) keeping its mode. A missing file is created by add (0600,
// or 0644 in a project); an empty file counts as {}.
//
// # The manifest
//
// $CTXKIT_HOME/install/manifest.json (written atomically; every command that
// writes holds the operating system's lock, flock or LockFileEx, on
// $CTXKIT_HOME/install/lock, which a crashed process releases, so no stale
// lock is ever broken) records, per client, file, servers
// object and server, the exact original text of the entry and the text
// ctxkit wrote. Uninstall puts the original bytes back where the wrapped
// entry is, so install followed by uninstall gives back the original file
// byte for byte. If the entry changed since install (drift: the client
// rewrote its file, as Claude Desktop does, or the user edited it), or is
// gone, uninstall leaves it alone and fails with ErrDrift; --force restores
// the original anyway (re-adding it if it is gone). Status shows drift.
// An entry ctxkit add created is removed by uninstall, with the separator
// add wrote before it (TOML) or the servers object's old text when add
// filled an empty one, so add then uninstall also gives back the original
// bytes; a servers object or file that add had to create stays. An added
// entry the user removed is simply forgotten by uninstall. add --force over
// an entry ctxkit wrote keeps the record's original (or that add created
// it), so uninstall still gives back the user's entry.
//
// # Wrapped entries
//
// A stdio entry keeps its env and every other key; command becomes ctxkit
// and args become wrap --name NAME -- COMMAND ARGS.... A remote entry (url,
// serverUrl, httpUrl) becomes a stdio entry: wrap --name NAME --transport
// http|sse|auto URL --header-env Name=VAR... (see Headers). Transports: an
// explicit type wins; Gemini's httpUrl is http and its url sse; Codex urls
// are http; otherwise auto. An entry whose command's base name is ctxkit and whose first
// argument is wrap is already wrapped and left alone.
//
// The command written is "ctxkit" when the ctxkit on PATH is the running
// binary, else the running binary's absolute path (Options.Executable
// overrides it).
//
// Headers: secrets stay references in the client's own syntax, and no
// secret is ever an argument of ctxkit (other local users can read a
// process's arguments, with ps). A header's value moves, verbatim, into the
// entry's env under a generated name (CTXKIT_HEADER_AUTHORIZATION) and the
// argument is --header-env Authorization=CTXKIT_HEADER_AUTHORIZATION: wrap
// reads the value from that variable at run time. The client resolves its
// own references inside env (${VAR} for Claude Code, ${env:X} for Cursor,
// Windsurf and VS Code, ${input:x} for VS Code, $X for Gemini, {env:X} for
// OpenCode), and no argument holds a reference a client that expands
// arguments (Claude Code) would turn into the secret, nor a space (some
// clients do not quote arguments on Windows). Codex expands nothing and
// passes a stdio server only a fixed whitelist of variables plus env_vars:
// env_http_headers {H = "X"} becomes --header-env H=X and
// bearer_token_env_var = "X" becomes -H 'Authorization:Bearer ${X}' (the
// argument holds the literal ${X}, which wrap expands), with X added to
// env_vars; literal http_headers values go into the entry's env table
// ([mcp_servers.NAME.env], or its inline or dotted env) and --header-env.
// ctxkit add takes headers in ctxkit's ${VAR} syntax and translates them
// into the client's syntax in env; for clients without interpolation
// (Claude Desktop, Zed, Cline) a value that is one ${VAR} becomes
// --header-env H=VAR and one with more text stays -H 'H:value' with the
// literal reference, which wrap expands; a value without a reference goes
// into env.
//
// Windows: the original command line is kept exactly after `--`, a
// `cmd /c npx ...` form included, and wrap starts it as the client did. The
// client now starts ctxkit.exe, a real executable, so the `spawn npx
// ENOENT` failure of clients that cannot start .cmd files without a shell
// goes away: wrap starts a bare npx or uvx with Go's os/exec, whose
// LookPath finds the .cmd shim through PATHEXT. Nothing is rewritten in the
// command, so uninstall gives back what the user had.
//
// # Paths
//
// Client.Path is a pure function of Env (GOOS, home, working directory,
// environment lookup, existence check), so every operating system's paths
// are computed and tested on any machine. Claude Desktop on Windows uses
// the MSIX location when %LOCALAPPDATA%\Packages\Claude_pzs8sxrjxfjjc
// exists. Scopes: user; project (files relative to the working directory:
// .mcp.json, .cursor/mcp.json, .vscode/mcp.json, .codex/config.toml,
// .gemini/settings.json, .zed/settings.json, opencode.json); and, for
// Claude Code, local (projects["/abs/cwd"].mcpServers in ~/.claude.json).
package clientconfig
