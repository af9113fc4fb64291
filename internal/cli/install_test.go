package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/clientconfig"
)

// clientEnv gives the test its own home, data directory and working
// directory, so no real client configuration is read or written.
func clientEnv(t *testing.T) (homeDir, cwd string) {
	t.Helper()
	root := t.TempDir()
	homeDir, cwd = filepath.Join(root, "home"), filepath.Join(root, "project")
	for _, d := range []string{homeDir, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", homeDir)
	t.Setenv("USERPROFILE", homeDir)
	t.Setenv("CTXKIT_HOME", filepath.Join(root, "data"))
	for _, v := range []string{"XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "APPDATA", "LOCALAPPDATA"} {
		t.Setenv(v, "")
	}
	t.Chdir(cwd)
	return homeDir, cwd
}

func TestInstallUninstallStatus(t *testing.T) {
	homeDir, _ := clientEnv(t)
	cfg := filepath.Join(homeDir, ".cursor", "mcp.json")
	original := "{\n  // mine\n  \"mcpServers\": {\n    \"gh\": {\"url\": \"https://api.githubcopilot.com/mcp/\", \"headers\": {\"Authorization\": \"Bearer ${env:GH}\"}},\n    \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"server-filesystem\"]}\n  }\n}\n"
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := clientconfig.ResolveExecutable()
	if err != nil {
		t.Fatal(err)
	}

	code, out, stderr := ctxkit(t, "install", "cursor", "--dry-run")
	if code != 0 || !strings.Contains(out, "-    \"fs\": {\"command\": \"npx\"") || !strings.Contains(out, "dry run: nothing written") {
		t.Fatalf("dry run: %d %s %s", code, out, stderr)
	}
	if b, _ := os.ReadFile(cfg); string(b) != original {
		t.Fatal("dry run wrote")
	}

	code, out, stderr = ctxkit(t, "install", "cursor")
	if code != 0 || !strings.Contains(out, "gh: wrapped") || !strings.Contains(out, "fs: wrapped") || !strings.Contains(out, "backup: ") {
		t.Fatalf("install: %d %s %s", code, out, stderr)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `"command": `+mustJSON(exe)) || !strings.Contains(string(b), "// mine") {
		t.Errorf("installed file:\n%s", b)
	}

	code, out, _ = ctxkit(t, "install", "cursor")
	if code != 0 || !strings.Contains(out, "gh: already wrapped") {
		t.Errorf("second install: %d %s", code, out)
	}

	code, out, _ = ctxkit(t, "status", "cursor")
	if code != 0 || !strings.Contains(out, "CLIENT") || !regexpLine(out, "gh", "wrapped") || !strings.Contains(out, cfg) {
		t.Errorf("status: %d %s", code, out)
	}
	code, out, _ = ctxkit(t, "status", "--json")
	var st []clientconfig.LocationStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || len(st[0].Servers) != 2 || !st[0].Servers[0].Managed {
		t.Errorf("status --json: %d %s", code, out)
	}

	code, out, stderr = ctxkit(t, "uninstall", "cursor")
	if code != 0 || !strings.Contains(out, "gh: restored") {
		t.Fatalf("uninstall: %d %s %s", code, out, stderr)
	}
	if b, _ := os.ReadFile(cfg); string(b) != original {
		t.Errorf("uninstall did not give back the original:\n%s", b)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// regexpLine reports whether some line holds all the words, in order.
func regexpLine(out string, words ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		rest, ok := l, true
		for _, w := range words {
			i := strings.Index(rest, w)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(w):]
		}
		if ok {
			return true
		}
	}
	return false
}

func TestAddAndPrint(t *testing.T) {
	_, cwd := clientEnv(t)
	code, out, stderr := ctxkit(t, "add", "claude-code", "gh", "https://api.githubcopilot.com/mcp/", "-H", "Authorization: Bearer ${GITHUB_TOKEN}", "--transport", "http", "--scope", "project")
	if code != 0 || !strings.Contains(out, "gh: added") {
		t.Fatalf("add: %d %s %s", code, out, stderr)
	}
	b, err := os.ReadFile(filepath.Join(cwd, ".mcp.json"))
	if err != nil || !strings.Contains(string(b), `"--transport", "http", "https://api.githubcopilot.com/mcp/", "--header-env", "Authorization=CTXKIT_HEADER_AUTHORIZATION"],`) ||
		!strings.Contains(string(b), `"env": {"CTXKIT_HEADER_AUTHORIZATION": "Bearer ${GITHUB_TOKEN}"}`) {
		t.Fatalf("project .mcp.json: %s %v", b, err)
	}
	code, _, stderr = ctxkit(t, "add", "claude-code", "gh", "https://other", "--scope", "project")
	if code != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("add over an existing name: %d %s", code, stderr)
	}
	code, out, _ = ctxkit(t, "add", "claude-code", "mem", "--scope", "project", "--env", "FILE=/tmp/m.json", "--", "npx", "-y", "@modelcontextprotocol/server-memory")
	if code != 0 || !strings.Contains(out, "mem: added") {
		t.Errorf("add a command: %d %s", code, out)
	}
	code, out, _ = ctxkit(t, "add", "claude-code", "ctxkit-memory", "--vaults", "--agent", "researcher", "--scope", "project")
	b, _ = os.ReadFile(filepath.Join(cwd, ".mcp.json"))
	if code != 0 || !regexpLine(string(b), `"--name", "ctxkit-memory", "--", "`, `", "mcp", "--agent", "researcher"]`) {
		t.Errorf("add --vaults: %d %s\n%s", code, out, b)
	}
	code, out, _ = ctxkit(t, "uninstall", "claude-code", "--scope", "project")
	if code != 0 || !strings.Contains(out, "gh: removed") || !strings.Contains(out, "mem: removed") || !strings.Contains(out, "ctxkit-memory: removed") {
		t.Errorf("uninstall of added servers: %d %s", code, out)
	}

	code, out, _ = ctxkit(t, "add", "vscode", "mem", "--print", "--", "npx", "-y", "server-memory")
	if code != 0 || !strings.Contains(out, `"servers": {`) || !strings.Contains(out, "vscode:mcp/install?%7B%22name%22%3A%20%22mem%22") {
		t.Errorf("--print vscode: %d %s", code, out)
	}
	code, out, _ = ctxkit(t, "add", "cursor", "gh", "https://h/mcp", "-H", "X-Key: ${KEY}", "--print")
	if code != 0 || !strings.Contains(out, `"CTXKIT_HEADER_X_KEY": "${env:KEY}"`) || !strings.Contains(out, "cursor://anysphere.cursor-deeplink/mcp/install?name=gh&config=") {
		t.Errorf("--print cursor: %d %s", code, out)
	}
	code, out, _ = ctxkit(t, "add", "codex", "gh", "https://h/mcp", "-H", "Authorization: Bearer ${TOKEN}", "--print")
	if code != 0 || !strings.Contains(out, "[mcp_servers.gh]") || !strings.Contains(out, `env_vars = ["TOKEN"]`) {
		t.Errorf("--print codex: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(cwd, ".vscode")); err == nil {
		t.Error("--print wrote a file")
	}
}

func TestClientCommandErrors(t *testing.T) {
	homeDir, _ := clientEnv(t)
	cfg := filepath.Join(homeDir, ".gemini", "settings.json")
	bad := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",,}\n  }\n}\n"
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"install", "gemini"}, cfg + ": line 3, column 26"},
		{[]string{"install", "notepad"}, `unknown client "notepad"`},
		{[]string{"install", "windsurf", "--scope", "project"}, "no project configuration file"},
		{[]string{"add", "cursor", "x"}, "either a URL or -- COMMAND"},
		{[]string{"add", "cursor", "x", "https://h", "--vaults"}, "add --vaults needs CLIENT NAME and nothing else"},
		{[]string{"add", "cursor", "x", "https://h", "--agent", "a"}, "--agent goes with --vaults"},
		{[]string{"add", "cursor", "x", "https://h", "--", "npx"}, "either a URL or -- COMMAND"},
		{[]string{"add", "cursor", "x", "https://h", "-H", "nocolon"}, "want 'Name: value'"},
		{[]string{"add", "cursor", "x", "https://h", "--transport", "ws"}, "want auto, http or sse"},
		{[]string{"uninstall", "cursor", "never"}, "no such server"},
	} {
		code, _, stderr := ctxkit(t, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: %d %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
	if b, _ := os.ReadFile(cfg); string(b) != bad {
		t.Error("an unparseable file was changed")
	}
}

func TestUninstallDriftNeedsForce(t *testing.T) {
	homeDir, _ := clientEnv(t)
	cfg := filepath.Join(homeDir, ".codeium", "windsurf", "mcp_config.json")
	original := `{"mcpServers": {"a": {"command": "x"}}}`
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := ctxkit(t, "install", "windsurf"); code != 0 {
		t.Fatal(stderr)
	}
	edited := `{"mcpServers": {"a": {"command": "edited"}}}`
	if err := os.WriteFile(cfg, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := ctxkit(t, "status", "windsurf")
	if code != 0 || !regexpLine(out, "a", "not wrapped", "drift: unwrapped since install") {
		t.Errorf("status: %s", out)
	}
	code, out, stderr := ctxkit(t, "uninstall", "windsurf")
	if code != 1 || !strings.Contains(out, "a: drift") || !strings.Contains(stderr, "--force") {
		t.Errorf("uninstall over drift: %d %s %s", code, out, stderr)
	}
	if b, _ := os.ReadFile(cfg); string(b) != edited {
		t.Error("drifted file changed without --force")
	}
	if code, _, stderr := ctxkit(t, "uninstall", "windsurf", "--force"); code != 0 {
		t.Fatal(stderr)
	}
	if b, _ := os.ReadFile(cfg); string(b) != original {
		t.Errorf("forced uninstall: %s", b)
	}
}

// A malformed -H or --env never echoes its value, which may be a secret.
func TestAddErrorsDoNotEchoSecrets(t *testing.T) {
	clientEnv(t)
	const secret = "ghp_s3cr3tT0k3nValue"
	for _, args := range [][]string{
		{"add", "cursor", "x", "https://h", "-H", "Bearer " + secret},
		{"add", "cursor", "x", "https://h", "-H", "Authorization: ok", "-H", secret},
		{"add", "cursor", "x", "https://h", "-H", "Authorization Bearer " + secret + ": x"},
		{"add", "cursor", "x", "--env", secret, "--", "npx"},
	} {
		code, out, stderr := ctxkit(t, args...)
		if code != 1 || strings.Contains(stderr+out, secret[3:]) || !strings.Contains(stderr, "want ") {
			t.Errorf("%v: %d %q %q", args, code, out, stderr)
		}
	}
}
