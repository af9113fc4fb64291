package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// vaultEnv gives the test a home, a data directory and a project (with a
// subfolder as the working directory); it returns the temporary root.
func vaultEnv(t *testing.T) (root, project string) {
	t.Helper()
	root = t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	project = filepath.Join(root, "project")
	for _, d := range []string{filepath.Join(root, "home"), filepath.Join(project, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("USERPROFILE", filepath.Join(root, "home"))
	t.Setenv("CTXKIT_HOME", filepath.Join(root, "data"))
	t.Setenv(StoreEnvVar, "")
	t.Chdir(project)
	return root, project
}

// golden compares got with testdata/name (dir is the absolute testdata
// folder: the test changes its working directory).
func golden(t *testing.T, dir, name, got string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestVaultCommands(t *testing.T) {
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	root, project := vaultEnv(t)
	steps := []struct {
		args     []string
		code     int
		out, err string // substrings; "" skips
	}{
		{[]string{"vault", "list"}, 0, "No vaults", ""},
		{[]string{"vault", "init", "notes"}, 0, "lexical search only", ""},
		{[]string{"vault", "init", "notes"}, 1, "", `a vault named "notes" exists already in the local scope`},
		{[]string{"vault", "init", "notes", "--global", "--type", "skill"}, 0, `skill vault "notes" (global)`, ""},
		{[]string{"vault", "init", "mem", "--type", "episodic", "--embedding-model", "ollama:nomic-embed-text", "--restricted"}, 0, "restricted: only you", ""},
		{[]string{"vault", "init", "docs", "--path", "sub/docs", "--embedding-model", "openai:text-embedding-3-small"}, 0, "embedding model: openai:text-embedding-3-small", ""},
		{[]string{"vault", "init", "shared", "--global"}, 0, "", ""},
		{[]string{"vault", "init", "x", "--type", "graph"}, 1, "", `vault type "graph"`},
		{[]string{"vault", "init", "x", "--embedding-model", "ollama:"}, 1, "", "name the model"},
		{[]string{"vault", "init", "x", "--type", "skill", "--embedding-model", "builtin"}, 1, "", "skill vaults do not embed"},
		{[]string{"vault", "init", "../up"}, 1, "", "may hold only letters"},
		{[]string{"vault", "init", strings.Repeat("n", 65)}, 1, "", "1 to 64"},
		{[]string{"vault", "init"}, 1, "", "accepts 1 arg"},
		{[]string{"agent", "create", "bot"}, 0, vault.TokenPrefix, "shown only this once"},
		{[]string{"agent", "create", "bot"}, 1, "", "exists"},
		{[]string{"agent", "create", "owner"}, 1, "", "reserved"},
		{[]string{"vault", "attach", "notes", "bot", "--read-only"}, 0, "(read-only); the vault is restricted: 1 agent attached", ""},
		// An agent that does not exist is refused: a typo would restrict
		// the vault to the owner alone.
		{[]string{"vault", "attach", "notes", "helper"}, 1, "", `there is no agent "helper"`},
		{[]string{"agent", "create", "helper"}, 0, vault.TokenPrefix, ""},
		{[]string{"vault", "attach", "notes", "helper"}, 0, "2 agents attached", ""},
		{[]string{"vault", "attach", "missing", "bot"}, 1, "", `no vault named "missing"`},
		{[]string{"vault", "attach", "shared", "bot"}, 0, "", ""},
		{[]string{"vault", "detach", "notes", "nobody"}, 1, "", "not attached"},
		{[]string{"vault", "audit", "missing"}, 1, "", `no vault named "missing"`},
		{[]string{"vault", "audit", "notes", "-n", "-1"}, 1, "", "n must be 0 (all) or more"},
	}
	for _, s := range steps {
		code, out, errOut := ctxkit(t, s.args...)
		if code != s.code || !strings.Contains(out, s.out) || !strings.Contains(errOut, s.err) {
			t.Fatalf("ctxkit %s: %d\nstdout: %s\nstderr: %s\nwant %d, stdout with %q, stderr with %q",
				strings.Join(s.args, " "), code, out, errOut, s.code, s.out, s.err)
		}
	}
	norm := func(s string) string { return strings.ReplaceAll(s, root, "$ROOT") }
	_, out, _ := ctxkit(t, "vault", "list")
	golden(t, testdata, "vault_list.txt", norm(out))
	_, out, _ = ctxkit(t, "vault", "list", "--json")
	golden(t, testdata, "vault_list.json", norm(out))

	// From a subfolder the same project is found; --path is relative to it.
	t.Chdir(filepath.Join(project, "sub"))
	code, out, errOut := ctxkit(t, "vault", "init", "here", "--path", "h")
	if code != 0 || !strings.Contains(out, filepath.Join(project, "sub", "h")) {
		t.Fatalf("init from a subfolder: %d %s %s", code, out, errOut)
	}
	b, _ := os.ReadFile(filepath.Join(project, ".ctxkit", "config.json"))
	if !strings.Contains(string(b), `"path": "sub/h"`) {
		t.Fatalf("stored path not relative to the project root:\n%s", b)
	}

	// Detach, publish and the audit log.
	for _, args := range [][]string{{"vault", "detach", "notes", "bot"}, {"vault", "detach", "notes", "helper"}} {
		if code, out, errOut := ctxkit(t, args...); code != 0 {
			t.Fatalf("%v: %s %s", args, out, errOut)
		}
	}
	_, out, _ = ctxkit(t, "vault", "list", "--json")
	var list []vault.VaultInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, v := range list {
		if v.Name == "notes" && v.Scope == vault.Local && (!v.Restricted || len(v.Agents) != 0) {
			t.Fatalf("after detaching everyone: %+v", v)
		}
	}
	if code, out, _ := ctxkit(t, "vault", "publish", "notes"); code != 0 || !strings.Contains(out, "public") {
		t.Fatalf("publish: %s", out)
	}
	code, out, _ = ctxkit(t, "vault", "audit", "notes")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 7 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], "create") ||
		!strings.Contains(lines[2], "agent=bot read_only") || !strings.Contains(lines[6], "publish") {
		t.Fatalf("audit:\n%s", out)
	}
	code, out, _ = ctxkit(t, "vault", "audit", "notes", "--json", "-n", "2")
	var events []map[string]string
	if err := json.Unmarshal([]byte(out), &events); code != 0 || err != nil || len(events) != 2 || events[1]["action"] != "publish" || events[1]["agent"] != "owner" {
		t.Fatalf("audit --json -n 2: %v %s", err, out)
	}
	if code, out, _ := ctxkit(t, "vault", "audit", "docs"); code != 0 || !strings.Contains(out, "create") {
		t.Fatalf("audit docs: %s", out)
	}
}

func TestVaultBadConfig(t *testing.T) {
	_, project := vaultEnv(t)
	cfg := filepath.Join(project, ".ctxkit", "config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	bad := "{\n  \"vaults\": {\n    \"a\": {\"path\": \"a\",}\n  }\n}\n"
	os.WriteFile(cfg, []byte(bad), 0o644)
	for _, args := range [][]string{{"vault", "init", "b"}, {"vault", "list"}, {"vault", "attach", "a", "x"}} {
		code, _, errOut := ctxkit(t, args...)
		if code != 1 || !strings.Contains(errOut, cfg+":3:23:") {
			t.Errorf("%v: %d %s", args, code, errOut)
		}
	}
	if b, _ := os.ReadFile(cfg); string(b) != bad {
		t.Fatalf("bad config changed:\n%s", b)
	}
}

func TestAgentCommands(t *testing.T) {
	root, _ := vaultEnv(t)
	if code, out, _ := ctxkit(t, "agent", "list"); code != 0 || !strings.Contains(out, "No agents") {
		t.Fatalf("empty list: %s", out)
	}
	code, token, _ := ctxkit(t, "agent", "create", "bot")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, vault.TokenPrefix) {
		t.Fatalf("create: %q", token)
	}
	ctxkit(t, "agent", "create", "a2")
	code, out, _ := ctxkit(t, "agent", "list")
	if code != 0 || strings.Contains(out, token) || !strings.Contains(out, "bot") || !strings.Contains(out, "never") {
		t.Fatalf("list: %s", out)
	}
	b, _ := os.ReadFile(filepath.Join(root, "data", "agents.json"))
	if strings.Contains(string(b), token) {
		t.Fatal("token stored in clear")
	}
	// The server side authenticates the token; list then shows its use.
	svc := openTestVaults(t).svc
	if c, err := svc.Authenticate(t.Context(), token); err != nil || c.Name() != "bot" {
		t.Fatalf("authenticate: %q %v", c, err)
	}
	_, out, _ = ctxkit(t, "agent", "list", "--json")
	var agents []vault.AgentInfo
	if err := json.Unmarshal([]byte(out), &agents); err != nil || len(agents) != 2 || agents[0].Name != "a2" || agents[0].LastUsed != nil ||
		agents[1].Name != "bot" || agents[1].LastUsed == nil || agents[1].Created.IsZero() || strings.Contains(out, vault.TokenPrefix) {
		t.Fatalf("list --json: %v %s", err, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"agent", "revoke", "bot"}, 0, `Revoked agent "bot"`},
		{[]string{"agent", "revoke", "bot"}, 1, `no agent named "bot"`},
		{[]string{"agent", "create"}, 1, "accepts 1 arg"},
		{[]string{"agent", "create", "a b"}, 1, "may hold only"},
	} {
		code, out, errOut := ctxkit(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: %d %s %s", tc.args, code, out, errOut)
		}
	}
	if _, err := svc.Authenticate(t.Context(), token); !errors.Is(err, vault.ErrUnauthenticated) {
		t.Fatal("revoked token still authenticates")
	}
}

// An empty list says where the vaults were looked for: the project found
// walking up from the working directory (or that there is none) and
// $CTXKIT_HOME; to an agent, without any folder.
func TestVaultListEmpty(t *testing.T) {
	root, project := vaultEnv(t)
	data := filepath.Join(root, "data")
	mustRun(t, "agent", "create", "bot")
	noProject := mustRun(t, "vault", "list")
	mustRun(t, "vault", "init", "x")
	mustRun(t, "vault", "delete", "x", "--purge")
	t.Chdir(filepath.Join(project, "sub"))
	emptyProject := mustRun(t, "vault", "list")
	asAgent := mustRun(t, "vault", "list", "--agent", "bot")
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"no project", noProject, []string{"No vaults: no project at " + project + " or above", "walking up from the working directory",
			"none global in the data directory " + data + " ($CTXKIT_HOME)", "ctxkit vault init NAME (local, which makes " + project + " a project), or with --global"}},
		{"an empty project", emptyProject, []string{"No vaults: none local in the project at " + project + " (found walking up from the working directory)",
			"none global in the data directory " + data + " ($CTXKIT_HOME)", "ctxkit vault init NAME (local to this project), or with --global"}},
		{"an agent", asAgent, []string{`No vaults that agent "bot" may use`}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.out, w) {
				t.Errorf("%s: no %q in\n%s", tc.name, w, tc.out)
			}
		}
	}
	if strings.Contains(asAgent, root) {
		t.Errorf("an agent is shown a folder:\n%s", asAgent)
	}
}
