package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/internal/vaultmcp"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
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

// vaultsEnv is the vaults of the TypeScript conversation.
type vaultsEnv struct {
	e *vaulttest.Env
	// roEpisode is the episode of vault ro-events, which a reads only.
	roEpisode string
}

// vaultsFixture makes agents a and b and four vaults over the SQLite
// backend `ctxkit mcp` opens: notes (public, local to the project, with a
// long document), events (public, global, episodic), secret (global,
// restricted to b) and ro-events (global, episodic, read-only for a, with
// one episode). CTXKIT_HOME and HOME point at the test's folders, so that
// the binary sees the same vaults.
func vaultsFixture(t *testing.T) *vaultsEnv {
	t.Helper()
	ctx := t.Context()
	e := vaulttest.New(t, vaulttest.Options{Scheme: "sqlite"})
	t.Setenv("CTXKIT_HOME", e.Home)
	t.Setenv("HOME", t.TempDir())
	e.Agent(t, "a")
	e.Agent(t, "b")
	e.Vault(t, vault.CreateVaultRequest{Name: "notes", Type: vault.Semantic})
	for _, v := range []struct {
		name string
		typ  vault.Type
	}{{"events", vault.Episodic}, {"secret", vault.Semantic}, {"ro-events", vault.Episodic}} {
		e.Vault(t, vault.CreateVaultRequest{Name: v.name, Type: v.typ, Scope: vault.Global})
	}
	e.Attach(t, "secret", "b", false)
	e.Attach(t, "ro-events", "a", true)
	for _, d := range []struct{ vault, path, text string }{
		{"notes", "long.md", largeMarkdown(200 << 10)}, {"secret", "plan.md", "# Plan\n\n" + needle + "\n"}} {
		if _, err := e.Svc.WriteDoc(ctx, vault.Owner(), d.vault, d.path, vault.WriteDocRequest{Content: d.text}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := e.Svc.WriteEpisode(ctx, vault.Owner(), "ro-events", vault.WriteEpisodeRequest{Content: "The deploy window is Tuesday"})
	if err != nil {
		t.Fatal(err)
	}
	return &vaultsEnv{e: e, roEpisode: w.Episode.ID}
}

// vaultCall is one call of the conversation and the error code it must
// answer ("" for a success).
type vaultCall struct {
	name    string
	args    map[string]any
	wantErr string
}

// vaultCalls is the conversation: every kind of tool, a long document,
// errors, a's attempts on b's vault and on a vault a reads only.
func (v *vaultsEnv) vaultCalls() []vaultCall {
	return []vaultCall{
		{"list_vaults", nil, ""}, // 0
		{"write_doc", map[string]any{"vault": "notes", "path": "ts.md", "content": "# TS\n\nThe zeppelin lands at noon.\n"}, ""},
		{"query", map[string]any{"vault": "notes", "query": "zeppelin"}, ""},
		{"read_doc", map[string]any{"vault": "notes", "path": "long.md"}, ""},                                     // 3: offloaded
		{"result_search_in_text", map[string]any{"workspace_id": "${3.stored_result}", "query": needleQuery}, ""}, // 4
		{"write_episode", map[string]any{"vault": "events", "content": "Alice leads payments", "entities": []string{"Alice"}}, ""},
		{"supersede_episode", map[string]any{"vault": "events", "episode_id": "${5.episode.id}", "content": "Bob leads payments"}, ""},
		{"episode_history", map[string]any{"vault": "events", "episode_id": "${6.episode.id}"}, ""}, // 7
		{"read_doc", map[string]any{"vault": "notes", "path": "missing.md"}, "not_found"},           // 8
		{"read_doc", map[string]any{"vault": "secret", "path": "plan.md"}, "not_found"},             // 9: isolation
		{"query", map[string]any{"vault": "secret", "query": needleQuery}, "not_found"},             // 10: isolation
		{"query_episodes", map[string]any{"vault": "ro-events", "query": "deploy", "reinforce": true}, "forbidden"},
		{"get_episode", map[string]any{"vault": "ro-events", "episode_id": v.roEpisode}, ""}, // 12: not recalled
		{"delete_doc", map[string]any{"vault": "notes", "path": "ts.md"}, ""},                // 13
		{"list_docs", map[string]any{"vault": "notes"}, ""},                                  // 14
	}
}

// TestVaultMCPTypeScript drives the vault MCP server with the official
// TypeScript SDK client, as agent a: `ctxkit mcp` over stdio (the agent
// given by its token in an environment variable) and the streamable HTTP
// handler behind vaultauth.
func TestVaultMCPTypeScript(t *testing.T) {
	requireNode(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			v := vaultsFixture(t)
			calls := v.vaultCalls()
			var script []map[string]any
			for _, c := range calls {
				script = append(script, map[string]any{"name": c.name, "arguments": c.args})
			}
			config := map[string]any{"transport": transport, "calls": script}
			if transport == "stdio" {
				t.Setenv("CTXKIT_E2E_TOKEN", v.e.Tokens["a"])
				config["command"] = ctxkitBin
				config["args"] = []string{"mcp", "--store", "sqlite:" + filepath.Join(v.e.Home, "ctxkit.db"), "--token-env", "CTXKIT_E2E_TOKEN"}
				config["cwd"] = v.e.Root
			} else {
				srv := httptest.NewServer(vaultauth.New(v.e.Svc, nil).Middleware(vaultmcp.HTTPHandler(v.e.Svc, vaultmcp.Options{})))
				t.Cleanup(srv.Close)
				config["url"] = srv.URL + "/"
				config["token"] = v.e.Tokens["a"]
			}
			s := runVaultsScript(t, config, len(calls))
			checkVaultsSummary(t, s, calls)
			// The refused reinforce is in ro-events' audit log, written by
			// whichever process served the call.
			evs, err := v.e.Svc.Audit(t.Context(), vault.Owner(), "ro-events", 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(evs, func(e vault.AuditEvent) bool {
				return e.Agent == "a" && e.Action == "query-episodes" && e.Outcome == "refused" && e.Reason == "read-only grant"
			}) {
				t.Errorf("the refused reinforce is not audited: %+v", evs)
			}
		})
	}
}

func runVaultsScript(t *testing.T, config map[string]any, calls int) vaultsSummary {
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
	if len(s.Calls) != calls {
		t.Fatalf("vaults.mjs made %d calls of %d", len(s.Calls), calls)
	}
	return s
}

func checkVaultsSummary(t *testing.T, s vaultsSummary, calls []vaultCall) {
	t.Helper()
	for _, name := range []string{"list_vaults", "query", "write_doc", "read_doc", "delete_doc", "write_episode", "supersede_episode",
		"dispute_episodes", "list_entities", "result_search_in_text"} {
		if !slices.Contains(s.Tools, name) {
			t.Errorf("tools/list lacks %s: %v", name, s.Tools)
		}
	}
	if !strings.Contains(s.Instructions, "list_vaults") {
		t.Errorf("instructions: %q", s.Instructions)
	}
	messages := make([]string, len(s.Calls))
	for i, c := range s.Calls {
		// The TypeScript SDK throws when a structured result does not
		// validate against the tool's outputSchema.
		if c.Error != "" {
			t.Errorf("call %d %s: the TypeScript client refused it: %s", i, c.Name, c.Error)
		}
		want := calls[i].wantErr
		if c.IsError != (want != "") {
			t.Errorf("call %d %s: isError %v, want %v: %.500s", i, c.Name, c.IsError, want != "", c.Text)
			continue
		}
		if !c.IsError {
			continue
		}
		var body struct {
			Error vaultauth.Error `json:"error"`
		}
		if err := json.Unmarshal([]byte(c.Text), &body); err != nil || body.Error.Code != want || strings.Contains(c.Text, "quartz") {
			t.Errorf("call %d %s: error %s; want {\"error\": {\"code\": %q, ...}} (%v)", i, c.Name, c.Text, want, err)
		}
		messages[i] = body.Error.Message
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
	for _, i := range []int{9, 10} {
		if want := `no vault named "secret"`; messages[i] != want {
			t.Errorf("call %d %s on b's vault: %q, want %q", i, c[i].Name, messages[i], want)
		}
	}
	if e, _ := c[12].Structured["episode"].(map[string]any); e["recall_count"] != 0.0 || e["last_recalled_at"] != nil {
		t.Errorf("a's refused reinforce recalled the episode: %v", c[12].Structured)
	}
	if got := fmt.Sprint(c[13].Structured["deleted"]); got != "[ts.md]" {
		t.Errorf("delete_doc: %v", c[13].Structured)
	}
	if got := fmt.Sprint(c[14].Structured["documents"]); strings.Contains(got, "ts.md") || !strings.Contains(got, "long.md") {
		t.Errorf("list_docs after delete_doc: %s", got)
	}
}
