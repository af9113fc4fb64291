package clientconfig

import (
	"fmt"
	"sort"
	"strings"
)

// Scope selects which of a client's configuration files is edited.
type Scope string

// The scopes. ScopeLocal exists only for Claude Code (projects["/abs"] in
// ~/.claude.json).
const (
	ScopeUser    Scope = "user"
	ScopeProject Scope = "project"
	ScopeLocal   Scope = "local"
)

// Format is the syntax of a configuration file.
type Format int

// The formats: JSON files are read as JSONC (comments, trailing commas).
const (
	FormatJSON Format = iota
	FormatTOML
)

// Env is what configuration paths depend on. Paths are a pure function of it,
// so tests compute every operating system's paths on any machine.
type Env struct {
	GOOS   string              // "linux", "darwin", "windows", ...
	Home   string              // the user's home directory (%USERPROFILE% on Windows)
	Cwd    string              // absolute working directory: project files are relative to it
	Getenv func(string) string // environment lookup; nil means nothing is set
	Exists func(string) bool   // whether a path exists; nil means nothing does
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) exists(p string) bool { return e.Exists != nil && e.Exists(p) }

// join joins path elements with the separator of e.GOOS, whatever the host.
func (e Env) join(elem ...string) string {
	sep := "/"
	if e.GOOS == "windows" {
		sep = `\`
	}
	var parts []string
	for i, p := range elem {
		if p == "" {
			continue
		}
		if i > 0 {
			p = strings.Trim(p, `/\`)
		} else {
			p = strings.TrimRight(p, `/\`)
			if p == "" { // the root itself
				p = sep
			}
		}
		if e.GOOS == "windows" {
			p = strings.ReplaceAll(p, "/", `\`)
		}
		parts = append(parts, p)
	}
	out := strings.Join(parts, sep)
	return strings.ReplaceAll(out, sep+sep, sep)
}

// configDir is the per-user application configuration directory in the
// platform's convention: ~/Library/Application Support, %APPDATA%, or
// $XDG_CONFIG_HOME (default ~/.config).
func (e Env) configDir() string {
	switch e.GOOS {
	case "darwin":
		return e.join(e.Home, "Library", "Application Support")
	case "windows":
		if d := e.getenv("APPDATA"); d != "" {
			return d
		}
		return e.join(e.Home, "AppData", "Roaming")
	default:
		if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
			return d
		}
		return e.join(e.Home, ".config")
	}
}

// xdgConfig is $XDG_CONFIG_HOME or ~/.config on every OS: the tools written
// for Unix (Zed on macOS, OpenCode) use it even where the platform has its own.
func (e Env) xdgConfig() string {
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return e.join(e.Home, ".config")
}

// Client describes one AI client's MCP configuration: where its files are,
// their format, the key that holds the servers and the shape of an entry.
type Client struct {
	Name  string // command-line name, e.g. "claude-desktop"
	Title string // human name
	// Format of every file of the client.
	Format Format
	// RootKey is the object (JSON) or table (TOML) that holds the entries.
	RootKey string
	// ProjectFile is the project-scope file relative to the working
	// directory, slash separated; empty when the client has none.
	ProjectFile string

	userPath func(e Env) string
	d        dialect
}

// dialect is how a client spells an entry.
type dialect struct {
	stdioType    string            // value of "type" for a stdio entry ("stdio", "local"); "" when the client has none
	writeType    bool              // always write "type" on a new entry
	urlKeys      []string          // keys that hold a remote server's URL
	urlTransport map[string]string // URL key → transport when "type" says nothing
	commandArray bool              // "command": [cmd, args...] (OpenCode)
	envKey       string            // "env" or "environment"
	sourceCustom bool              // Zed: "source": "custom" on a new entry
	// ref turns an environment variable name into the client's own
	// reference syntax, or is nil when the client interpolates nothing.
	ref func(name string) string
}

func envColon(n string) string    { return "${env:" + n + "}" }
func dollarBrace(n string) string { return "${" + n + "}" }
func braceEnv(n string) string    { return "{env:" + n + "}" }

var standardURL = map[string]string{"url": "auto"}

var clients = []*Client{
	{
		Name: "claude-desktop", Title: "Claude Desktop", RootKey: "mcpServers",
		userPath: func(e Env) string {
			switch e.GOOS {
			case "windows":
				local := e.getenv("LOCALAPPDATA")
				if local == "" {
					local = e.join(e.Home, "AppData", "Local")
				}
				msix := e.join(local, "Packages", "Claude_pzs8sxrjxfjjc")
				if e.exists(msix) {
					return e.join(msix, "LocalCache", "Roaming", "Claude", "claude_desktop_config.json")
				}
			}
			return e.join(e.configDir(), "Claude", "claude_desktop_config.json")
		},
		d: dialect{envKey: "env"},
	},
	{
		Name: "claude-code", Title: "Claude Code", RootKey: "mcpServers", ProjectFile: ".mcp.json",
		userPath: func(e Env) string {
			if d := e.getenv("CLAUDE_CONFIG_DIR"); d != "" {
				return e.join(d, ".claude.json")
			}
			return e.join(e.Home, ".claude.json")
		},
		d: dialect{stdioType: "stdio", urlKeys: []string{"url"}, urlTransport: standardURL, envKey: "env", ref: dollarBrace},
	},
	{
		Name: "cursor", Title: "Cursor", RootKey: "mcpServers", ProjectFile: ".cursor/mcp.json",
		userPath: func(e Env) string { return e.join(e.Home, ".cursor", "mcp.json") },
		d:        dialect{urlKeys: []string{"url"}, urlTransport: standardURL, envKey: "env", ref: envColon},
	},
	{
		Name: "vscode", Title: "VS Code", RootKey: "servers", ProjectFile: ".vscode/mcp.json",
		userPath: func(e Env) string { return e.join(e.configDir(), "Code", "User", "mcp.json") },
		d:        dialect{stdioType: "stdio", writeType: true, urlKeys: []string{"url"}, urlTransport: standardURL, envKey: "env", ref: envColon},
	},
	{
		Name: "windsurf", Title: "Windsurf", RootKey: "mcpServers",
		userPath: func(e Env) string { return e.join(e.Home, ".codeium", "windsurf", "mcp_config.json") },
		d:        dialect{urlKeys: []string{"serverUrl", "url"}, urlTransport: map[string]string{"serverUrl": "auto", "url": "auto"}, envKey: "env", ref: envColon},
	},
	{
		Name: "codex", Title: "OpenAI Codex", Format: FormatTOML, RootKey: "mcp_servers", ProjectFile: ".codex/config.toml",
		userPath: func(e Env) string {
			if d := e.getenv("CODEX_HOME"); d != "" {
				return e.join(d, "config.toml")
			}
			return e.join(e.Home, ".codex", "config.toml")
		},
		d: dialect{envKey: "env"},
	},
	{
		Name: "gemini", Title: "Gemini CLI", RootKey: "mcpServers", ProjectFile: ".gemini/settings.json",
		userPath: func(e Env) string { return e.join(e.Home, ".gemini", "settings.json") },
		d:        dialect{urlKeys: []string{"httpUrl", "url"}, urlTransport: map[string]string{"httpUrl": "http", "url": "sse"}, envKey: "env", ref: dollarBrace},
	},
	{
		Name: "zed", Title: "Zed", RootKey: "context_servers", ProjectFile: ".zed/settings.json",
		userPath: func(e Env) string {
			if e.GOOS == "windows" {
				return e.join(e.configDir(), "Zed", "settings.json")
			}
			return e.join(e.xdgConfig(), "zed", "settings.json")
		},
		d: dialect{urlKeys: []string{"url"}, urlTransport: standardURL, envKey: "env", sourceCustom: true},
	},
	{
		Name: "cline", Title: "Cline (VS Code extension)", RootKey: "mcpServers",
		userPath: func(e Env) string {
			return e.join(e.configDir(), "Code", "User", "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")
		},
		d: dialect{stdioType: "stdio", urlKeys: []string{"url"}, urlTransport: standardURL, envKey: "env"},
	},
	{
		Name: "opencode", Title: "OpenCode", RootKey: "mcp", ProjectFile: "opencode.json",
		userPath: func(e Env) string { return e.join(e.xdgConfig(), "opencode", "opencode.json") },
		d:        dialect{stdioType: "local", writeType: true, urlKeys: []string{"url"}, urlTransport: standardURL, commandArray: true, envKey: "environment", ref: braceEnv},
	},
}

// Clients returns every supported client, in a stable order.
func Clients() []*Client { return clients }

// ClientNames returns the names accepted on the command line, sorted.
func ClientNames() []string {
	var names []string
	for _, c := range clients {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the client called name.
func Lookup(name string) (*Client, error) {
	for _, c := range clients {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownClient, name, strings.Join(ClientNames(), ", "))
}

// Scopes lists the scopes the client has.
func (c *Client) Scopes() []Scope {
	s := []Scope{ScopeUser}
	if c.ProjectFile != "" {
		s = append(s, ScopeProject)
	}
	if c.Name == "claude-code" {
		s = append(s, ScopeLocal)
	}
	return s
}

// Path returns the configuration file of the client in scope.
func (c *Client) Path(scope Scope, e Env) (string, error) {
	switch scope {
	case ScopeUser, "":
		if e.Home == "" {
			return "", fmt.Errorf("%s: no home directory", c.Name)
		}
		return c.userPath(e), nil
	case ScopeProject:
		if c.ProjectFile == "" {
			return "", fmt.Errorf("%w: %s has no project configuration file (use --scope user)", ErrScope, c.Title)
		}
		if e.Cwd == "" {
			return "", fmt.Errorf("%s: no working directory", c.Name)
		}
		return e.join(append([]string{e.Cwd}, strings.Split(c.ProjectFile, "/")...)...), nil
	case ScopeLocal:
		if c.Name != "claude-code" {
			return "", fmt.Errorf("%w: only claude-code has the local scope", ErrScope)
		}
		return c.userPath(e), nil
	}
	return "", fmt.Errorf("%w %q (user, project or local)", ErrScope, scope)
}

// serversPath is the chain of keys from the document's root to the object
// (or table) that holds the entries.
func (c *Client) serversPath(scope Scope, e Env) []string {
	if scope == ScopeLocal {
		return []string{"projects", e.Cwd, c.RootKey}
	}
	return []string{c.RootKey}
}
