package clientconfig

import (
	"testing"
)

func TestPaths(t *testing.T) {
	envs := map[string]Env{
		"linux":  {GOOS: "linux", Home: "/home/u", Cwd: "/work/p"},
		"darwin": {GOOS: "darwin", Home: "/Users/u", Cwd: "/work/p"},
		"windows": {GOOS: "windows", Home: `C:\Users\u`, Cwd: `D:\src\p`, Getenv: func(k string) string {
			return map[string]string{"APPDATA": `C:\Users\u\AppData\Roaming`, "LOCALAPPDATA": `C:\Users\u\AppData\Local`}[k]
		}},
	}
	want := map[string]map[string]string{ // client → GOOS → user path
		"claude-desktop": {
			"linux":   "/home/u/.config/Claude/claude_desktop_config.json",
			"darwin":  "/Users/u/Library/Application Support/Claude/claude_desktop_config.json",
			"windows": `C:\Users\u\AppData\Roaming\Claude\claude_desktop_config.json`,
		},
		"claude-code": {"linux": "/home/u/.claude.json", "darwin": "/Users/u/.claude.json", "windows": `C:\Users\u\.claude.json`},
		"cursor":      {"linux": "/home/u/.cursor/mcp.json", "darwin": "/Users/u/.cursor/mcp.json", "windows": `C:\Users\u\.cursor\mcp.json`},
		"vscode": {
			"linux":   "/home/u/.config/Code/User/mcp.json",
			"darwin":  "/Users/u/Library/Application Support/Code/User/mcp.json",
			"windows": `C:\Users\u\AppData\Roaming\Code\User\mcp.json`,
		},
		"windsurf": {"linux": "/home/u/.codeium/windsurf/mcp_config.json", "darwin": "/Users/u/.codeium/windsurf/mcp_config.json", "windows": `C:\Users\u\.codeium\windsurf\mcp_config.json`},
		"codex":    {"linux": "/home/u/.codex/config.toml", "darwin": "/Users/u/.codex/config.toml", "windows": `C:\Users\u\.codex\config.toml`},
		"gemini":   {"linux": "/home/u/.gemini/settings.json", "darwin": "/Users/u/.gemini/settings.json", "windows": `C:\Users\u\.gemini\settings.json`},
		"zed":      {"linux": "/home/u/.config/zed/settings.json", "darwin": "/Users/u/.config/zed/settings.json", "windows": `C:\Users\u\AppData\Roaming\Zed\settings.json`},
		"cline": {
			"linux":   "/home/u/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
			"darwin":  "/Users/u/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
			"windows": `C:\Users\u\AppData\Roaming\Code\User\globalStorage\saoudrizwan.claude-dev\settings\cline_mcp_settings.json`,
		},
		"opencode": {"linux": "/home/u/.config/opencode/opencode.json", "darwin": "/Users/u/.config/opencode/opencode.json", "windows": `C:\Users\u\.config\opencode\opencode.json`},
	}
	project := map[string][2]string{ // client → linux, windows project path
		"claude-code": {"/work/p/.mcp.json", `D:\src\p\.mcp.json`},
		"cursor":      {"/work/p/.cursor/mcp.json", `D:\src\p\.cursor\mcp.json`},
		"vscode":      {"/work/p/.vscode/mcp.json", `D:\src\p\.vscode\mcp.json`},
		"codex":       {"/work/p/.codex/config.toml", `D:\src\p\.codex\config.toml`},
		"gemini":      {"/work/p/.gemini/settings.json", `D:\src\p\.gemini\settings.json`},
		"zed":         {"/work/p/.zed/settings.json", `D:\src\p\.zed\settings.json`},
		"opencode":    {"/work/p/opencode.json", `D:\src\p\opencode.json`},
	}
	if len(want) != len(Clients()) {
		t.Fatalf("%d clients, %d in the table", len(Clients()), len(want))
	}
	for _, c := range Clients() {
		for goos, env := range envs {
			got, err := c.Path(ScopeUser, env)
			if err != nil || got != want[c.Name][goos] {
				t.Errorf("%s on %s: %q %v, want %q", c.Name, goos, got, err, want[c.Name][goos])
			}
		}
		pp, hasProject := project[c.Name]
		got, err := c.Path(ScopeProject, envs["linux"])
		if hasProject != (err == nil) || (hasProject && got != pp[0]) {
			t.Errorf("%s project: %q %v", c.Name, got, err)
		}
		if hasProject {
			if got, _ := c.Path(ScopeProject, envs["windows"]); got != pp[1] {
				t.Errorf("%s windows project: %q", c.Name, got)
			}
		}
	}
}

func TestPathOverrides(t *testing.T) {
	vars := map[string]string{
		"XDG_CONFIG_HOME":   "/xdg",
		"CODEX_HOME":        "/codex",
		"CLAUDE_CONFIG_DIR": "/claude",
		"LOCALAPPDATA":      `C:\L`,
	}
	env := Env{GOOS: "linux", Home: "/home/u", Getenv: func(k string) string { return vars[k] }}
	for client, want := range map[string]string{
		"claude-desktop": "/xdg/Claude/claude_desktop_config.json",
		"codex":          "/codex/config.toml",
		"claude-code":    "/claude/.claude.json",
		"zed":            "/xdg/zed/settings.json",
		"opencode":       "/xdg/opencode/opencode.json",
		"vscode":         "/xdg/Code/User/mcp.json",
	} {
		c, _ := Lookup(client)
		if got, _ := c.Path(ScopeUser, env); got != want {
			t.Errorf("%s: %q, want %q", client, got, want)
		}
	}
	// Claude Desktop from the Microsoft Store (MSIX) keeps its files in the
	// package's redirected folder; the MSIX path wins when it exists.
	c, _ := Lookup("claude-desktop")
	win := Env{GOOS: "windows", Home: `C:\Users\u`, Getenv: func(k string) string { return vars[k] }}
	if got, _ := c.Path(ScopeUser, win); got != `C:\Users\u\AppData\Roaming\Claude\claude_desktop_config.json` {
		t.Errorf("no MSIX, no APPDATA: %q", got)
	}
	win.Exists = func(p string) bool { return p == `C:\L\Packages\Claude_pzs8sxrjxfjjc` }
	if got, _ := c.Path(ScopeUser, win); got != `C:\L\Packages\Claude_pzs8sxrjxfjjc\LocalCache\Roaming\Claude\claude_desktop_config.json` {
		t.Errorf("MSIX: %q", got)
	}
	if _, err := c.Path(ScopeLocal, win); err == nil {
		t.Error("claude-desktop accepted the local scope")
	}
	if _, err := Lookup("notepad"); err == nil {
		t.Error("unknown client accepted")
	}
}

func TestIsWrapped(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want bool
	}{
		{"ctxkit", []string{"wrap"}, true},
		{"/usr/local/bin/ctxkit", []string{"wrap", "--name", "a"}, true},
		{`C:\bin\CtxKit.exe`, []string{"wrap"}, true},
		{"ctxkit", []string{"offload"}, false},
		{"ctxkit", nil, false},
		{"npx", []string{"ctxkit", "wrap"}, false},
		{"ctxkit-wrap", []string{"wrap"}, false},
	} {
		if got := IsWrapped(tc.cmd, tc.args); got != tc.want {
			t.Errorf("IsWrapped(%q, %q) = %v", tc.cmd, tc.args, got)
		}
	}
}
