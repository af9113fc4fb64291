package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/internal/vaultmcp"
	"github.com/ctxkit/ctxkit/vault"
)

// vaultsSummary is what e2e/node/vaults.mjs prints.
type vaultsSummary struct {
	Connected    bool     `json:"connected"`
	Error        string   `json:"error"`
	Instructions string   `json:"instructions"`
	Tools        []string `json:"tools"`
	Calls        []struct {
		Name       string         `json:"name"`
		IsError    bool           `json:"isError"`
		Text       string         `json:"text"`
		Structured map[string]any `json:"structured"`
		Error      string         `json:"error"`
	} `json:"calls"`
}

// vaultsFixture makes agents a and b and three global vaults in the test's
// CTXKIT_HOME: notes (public, with a long document), events (public,
// episodic) and secret (restricted to b). It returns the registry, the
// tokens and a working directory without a project.
func vaultsFixture(t *testing.T) (*vault.Registry, map[string]string, string) {
	t.Helper()
	ctx := t.Context()
	cwd := t.TempDir()
	r, err := vault.Open(vault.Options{DataDir: os.Getenv("CTXKIT_HOME"), Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, a := range []string{"a", "b"} {
		if tokens[a], err = r.CreateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []struct {
		name string
		typ  vault.Type
	}{{"notes", vault.Semantic}, {"events", vault.Episodic}, {"secret", vault.Semantic}} {
		if _, err := r.Init(ctx, vault.InitOptions{Name: v.name, Type: v.typ, Scope: vault.Global}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Attach(ctx, "secret", "b", false); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ vault, path, text string }{
		{"notes", "long.md", largeMarkdown(200 << 10)}, {"secret", "plan.md", "# Plan\n\n" + needle + "\n"}} {
		v, err := r.Get(ctx, d.vault)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Write(ctx, vault.WriteOptions{Agent: vault.Owner, Path: d.path, Content: []byte(d.text)}); err != nil {
			t.Fatal(err)
		}
	}
	return r, tokens, cwd
}

// vaultCalls is the conversation: every kind of tool, a long document, an
// error, and a's attempts on b's vault.
var vaultCalls = []map[string]any{
	{"name": "list_vaults"}, // 0
	{"name": "write_doc", "arguments": map[string]any{"vault": "notes", "path": "ts.md", "content": "# TS\n\nThe zeppelin lands at noon.\n"}},
	{"name": "query", "arguments": map[string]any{"vault": "notes", "query": "zeppelin"}},
	{"name": "read_doc", "arguments": map[string]any{"vault": "notes", "path": "long.md"}},                                     // 3: offloaded
	{"name": "result_search_in_text", "arguments": map[string]any{"workspace_id": "${3.stored_result}", "query": needleQuery}}, // 4
	{"name": "write_episode", "arguments": map[string]any{"vault": "events", "content": "Alice leads payments", "entities": []string{"Alice"}}},
	{"name": "supersede_episode", "arguments": map[string]any{"vault": "events", "episode_id": "${5.episode.id}", "content": "Bob leads payments"}},
	{"name": "episode_history", "arguments": map[string]any{"vault": "events", "episode_id": "${6.episode.id}"}}, // 7
	{"name": "read_doc", "arguments": map[string]any{"vault": "notes", "path": "missing.md"}},                    // 8: error
	{"name": "read_doc", "arguments": map[string]any{"vault": "secret", "path": "plan.md"}},                      // 9: isolation
	{"name": "query", "arguments": map[string]any{"vault": "secret", "query": needleQuery}},                      // 10: isolation
}

// TestVaultMCPTypeScript drives the vault MCP server with the official
// TypeScript SDK client, as agent a: `ctxkit mcp` over stdio (the agent
// given by its token in an environment variable) and the streamable HTTP
// handler behind vaultauth.
func TestVaultMCPTypeScript(t *testing.T) {
	requireNode(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			store := isolate(t)
			r, tokens, cwd := vaultsFixture(t)
			config := map[string]any{"transport": transport, "calls": vaultCalls}
			if transport == "stdio" {
				t.Setenv("CTXKIT_E2E_TOKEN", tokens["a"])
				config["command"] = ctxkitBin
				config["args"] = []string{"mcp", "--store", store, "--token-env", "CTXKIT_E2E_TOKEN"}
				config["cwd"] = cwd
			} else {
				srv := httptest.NewServer(vaultauth.New(r).Middleware(vaultmcp.HTTPHandler(r, vaultmcp.Options{})))
				t.Cleanup(srv.Close)
				config["url"] = srv.URL + "/"
				config["token"] = tokens["a"]
			}
			s := runVaultsScript(t, config)
			checkVaultsSummary(t, s)
		})
	}
}

func runVaultsScript(t *testing.T, config map[string]any) vaultsSummary {
	t.Helper()
	cmd := exec.CommandContext(testContext(t), "node", filepath.Join(nodeDir, "vaults.mjs"), asJSON(t, config))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if testing.Verbose() || err != nil || strings.Contains(stderr.String(), "DATA RACE") {
		t.Logf("vaults.mjs stderr (including ctxkit mcp's):\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Error("ctxkit mcp reported a data race")
	}
	if err != nil {
		t.Fatalf("node vaults.mjs: %v\nstdout: %s", err, stdout.String())
	}
	var s vaultsSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("vaults.mjs printed no summary: %v\n%s", err, stdout.String())
	}
	if !s.Connected || s.Error != "" {
		t.Fatalf("vaults.mjs: connected %v, error %s", s.Connected, s.Error)
	}
	if len(s.Calls) != len(vaultCalls) {
		t.Fatalf("vaults.mjs made %d calls of %d", len(s.Calls), len(vaultCalls))
	}
	return s
}

func checkVaultsSummary(t *testing.T, s vaultsSummary) {
	t.Helper()
	for _, name := range []string{"list_vaults", "query", "write_doc", "read_doc", "write_episode", "supersede_episode",
		"dispute_episodes", "list_entities", "result_search_in_text"} {
		if !slices.Contains(s.Tools, name) {
			t.Errorf("tools/list lacks %s: %v", name, s.Tools)
		}
	}
	if !strings.Contains(s.Instructions, "list_vaults") {
		t.Errorf("instructions: %q", s.Instructions)
	}
	for i, c := range s.Calls {
		// The TypeScript SDK throws when a structured result does not
		// validate against the tool's outputSchema.
		if c.Error != "" {
			t.Errorf("call %d %s: the TypeScript client refused it: %s", i, c.Name, c.Error)
		}
		if wantErr := i >= 8; c.IsError != wantErr {
			t.Errorf("call %d %s: isError %v, want %v: %.500s", i, c.Name, c.IsError, wantErr, c.Text)
		}
	}
	c := s.Calls
	if got := fmt.Sprint(c[0].Structured["vaults"]); !strings.Contains(got, "notes") || strings.Contains(got, "secret") {
		t.Errorf("list_vaults for a: %s", got)
	}
	if !strings.Contains(c[2].Text, "ts.md") {
		t.Errorf("query does not find the document just written: %s", c[2].Text)
	}
	if len(c[3].Text) > 4000 || strings.Contains(c[3].Text, needle) || c[3].Structured["stored_result"] == nil {
		t.Errorf("read_doc of a long document was not offloaded (%d chars): %.500s", len(c[3].Text), c[3].Text)
	}
	if !strings.Contains(c[4].Text, "quartz heron") {
		t.Errorf("result_search_in_text did not find the needle: %.500s", c[4].Text)
	}
	if got := fmt.Sprint(c[5].Structured["episode"]); !strings.Contains(got, "source:a") {
		t.Errorf("write_episode does not act for a: %s", got)
	}
	if chain, _ := c[7].Structured["chain"].([]any); len(chain) != 2 {
		t.Errorf("episode_history: %v", c[7].Structured)
	}
	if !strings.Contains(c[8].Text, "list_docs shows") {
		t.Errorf("a missing document: %s", c[8].Text)
	}
	for _, i := range []int{9, 10} {
		if want := `no vault named "secret"; list_vaults shows the ones you can use`; c[i].Text != want || strings.Contains(c[i].Text, "quartz") {
			t.Errorf("call %d %s on b's vault: %q, want %q", i, c[i].Name, c[i].Text, want)
		}
	}
}
