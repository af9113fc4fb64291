package vaultmcp

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// ctxvaultTools are the tools of CtxVault's MCP server (mcp/server.py at
// 742e462d, and v0.8.2's confirm_episode, dispute_episodes and
// list_entities): an agent prompt written for CtxVault names them.
var ctxvaultTools = []string{"warmup_status", "query", "write_doc", "list_vaults", "list_docs", "write_skill", "list_skills",
	"read_skill", "write_episode", "query_episodes", "invalidate_episode", "supersede_episode", "episode_history",
	"confirm_episode", "dispute_episodes", "list_entities"}

// TestCtxVaultNames calls every CtxVault tool by its name with CtxVault's
// argument names, as its MCP server's signatures give them, through a
// real MCP client: the same calls a CtxVault client makes work unchanged.
func TestCtxVaultNames(t *testing.T) {
	f := newFixture(t, "sqlite")
	c := f.session(t, "a")
	listed := map[string]bool{}
	for tool, err := range c.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[tool.Name] = true
	}
	for _, name := range ctxvaultTools {
		if !listed[name] {
			t.Errorf("tools/list lacks CtxVault's %s", name)
		}
	}

	if w := c.call(t, "warmup_status", nil); w["ready"] != true || w["status"] != "ready" || w["message"] == "" {
		t.Errorf("warmup_status = %v", w)
	}
	if vs := c.call(t, "list_vaults", nil); !slices.Contains(names(vs, "vaults", "name"), pubDocs) {
		t.Errorf("list_vaults = %v", vs)
	}

	// Documents: vault_name, file_path, generated_by, top_k.
	w := c.call(t, "write_doc", map[string]any{"vault_name": pubDocs, "file_path": "notes/costs.md",
		"content": "# Costs\n\nWe cut cloud costs by 15% this quarter.\n", "generated_by": "claude", "overwrite": false})
	if w["path"] != "notes/costs.md" {
		t.Errorf("write_doc = %v", w)
	}
	q := c.call(t, "query", map[string]any{"vault_name": pubDocs, "query": "cloud costs", "top_k": 1})
	if p := names(q, "results", "path"); !slices.Equal(p, []string{"notes/costs.md"}) || q["vault"] != pubDocs {
		t.Errorf("query with top_k 1 = %v", q)
	}
	docs, err := f.e.Svc.Docs(t.Context(), vault.Owner(), pubDocs)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(docs, func(d vault.DocInfo) bool { return d.Path == "notes/costs.md" }); i < 0 || docs[i].Metadata["generated_by"] != "claude" {
		t.Errorf("generated_by is not kept with the document: %+v", docs)
	}
	if l := c.call(t, "list_docs", map[string]any{"vault_name": pubDocs}); !slices.Contains(names(l, "documents", "path"), "notes/costs.md") {
		t.Errorf("list_docs = %v", l)
	}
	if r := c.call(t, "read_doc", map[string]any{"vault_name": pubDocs, "file_path": "notes/costs.md"}); !strings.Contains(r["text"].(string), "15%") {
		t.Errorf("read_doc = %v", r)
	}

	// Skills: vault_name, skill_name.
	c.call(t, "write_skill", map[string]any{"vault_name": pubSkills, "skill_name": "deploy", "description": "How to deploy",
		"instructions": "1. Build.\n2. Ship.\n", "overwrite": false})
	if l := c.call(t, "list_skills", map[string]any{"vault_name": pubSkills}); !slices.Contains(names(l, "skills", "name"), "deploy") {
		t.Errorf("list_skills = %v", l)
	}
	if r := c.call(t, "read_skill", map[string]any{"vault_name": pubSkills, "skill_name": "deploy"}); r["skill"].(map[string]any)["name"] != "deploy" {
		t.Errorf("read_skill = %v", r)
	}

	// Episodes: CtxVault's signatures, argument for argument.
	ep := func(m map[string]any) map[string]any { return m["episode"].(map[string]any) }
	first := ep(c.call(t, "write_episode", map[string]any{"vault_name": pubEpisodes, "content": "Alice leads payments",
		"entities": []string{"Alice"}, "source": "standup", "salience": 0.8, "confidence": 0.9,
		"occurred_at": "2026-03-01T09:00:00Z", "valid_from": "2026-03-01T09:00:00Z"}))["id"].(string)
	qe := c.call(t, "query_episodes", map[string]any{"vault_name": pubEpisodes, "query": "payments", "entities": []string{"Alice"},
		"valid_at": "2026-04-01T00:00:00Z", "known_at": nil, "include_closed": false, "order_by": "relevance", "limit": 5})
	if ids := names(qe, "results", "id"); !slices.Equal(ids, []string{first}) {
		t.Errorf("query_episodes = %v", qe)
	}
	next := ep(c.call(t, "supersede_episode", map[string]any{"vault_name": pubEpisodes, "episode_id": first,
		"content": "Bob leads payments", "entities": []string{"Bob"}, "source": "standup", "salience": 0.7}))["id"].(string)
	c.call(t, "confirm_episode", map[string]any{"vault_name": pubEpisodes, "episode_id": next})
	other := ep(c.call(t, "write_episode", map[string]any{"vault_name": pubEpisodes, "content": "Carol leads payments"}))["id"].(string)
	c.call(t, "dispute_episodes", map[string]any{"vault_name": pubEpisodes, "episode_id": next, "other": other})
	if inv := ep(c.call(t, "invalidate_episode", map[string]any{"vault_name": pubEpisodes, "episode_id": other,
		"valid_to": nil, "reason": "wrong"})); inv["state"] != "invalidated" {
		t.Errorf("invalidate_episode = %v", inv)
	}
	if h := c.call(t, "episode_history", map[string]any{"vault_name": pubEpisodes, "episode_id": next}); !slices.Equal(names(h, "chain", "id"), []string{first, next}) {
		t.Errorf("episode_history = %v", h)
	}
	if ents := c.call(t, "list_entities", map[string]any{"vault_name": pubEpisodes}); !slices.Contains(names(ents, "entities", "entity"), "Bob") {
		t.Errorf("list_entities = %v", ents)
	}

	// Both names of one argument: the same value is one argument, two
	// values are refused, naming both.
	c.call(t, "list_docs", map[string]any{"vault": pubDocs, "vault_name": pubDocs})
	if e := c.callErr(t, "list_docs", map[string]any{"vault": pubDocs, "vault_name": bOnly}); e.Code != "invalid" ||
		!strings.Contains(e.Message, "vault and vault_name") || e.Details["field"] != "vault" {
		t.Errorf("two vaults: %+v", e)
	}
	if e := c.callErr(t, "write_doc", map[string]any{"vault_name": pubDocs, "file_path": "x.md", "content": "x",
		"generated_by": 3}); e.Code != "invalid" || e.Details["field"] != "generated_by" {
		t.Errorf("generated_by of another type: %+v", e)
	}
	// An alias does not open what the caller cannot see.
	if e := c.callErr(t, "query", map[string]any{"vault_name": bOnly, "query": "launch"}); e.Code != "not_found" || strings.Contains(e.String(), needle) {
		t.Errorf("b's vault through vault_name: %+v", e)
	}
}

// TestWarmupStatusSaysWhatIsMissing: warmup_status answers ready only when
// every vault's embedder can run, and names the vault, its embedder and
// the command that installs it otherwise; the query it would refuse says
// the same as a tool error.
func TestWarmupStatusSaysWhatIsMissing(t *testing.T) {
	f := newFixture(t, "memory")
	f.e.Vault(t, vault.CreateVaultRequest{Name: "pinned", EmbeddingModel: "all-MiniLM-L12-v2"})
	c := f.session(t, "")
	w := c.call(t, "warmup_status", nil)
	if w["ready"] != false || w["status"] != "unavailable" || !strings.Contains(w["message"].(string), "pinned (builtin:all-MiniLM-L12-v2") ||
		!strings.Contains(w["message"].(string), "ctxkit model pull all-MiniLM-L12-v2") {
		t.Errorf("warmup_status = %v", w)
	}
	byVault := map[string]map[string]any{}
	for _, e := range w["embedders"].([]any) {
		m := e.(map[string]any)
		byVault[m["vault"].(string)] = m
	}
	if byVault["pinned"]["available"] != false || byVault[pubDocs]["available"] != true || byVault[pubDocs]["embedding_model"] != "none" {
		t.Errorf("embedders = %v", byVault)
	}
	if _, ok := byVault[pubSkills]; ok {
		t.Errorf("a skill vault has no embedder: %v", slices.Sorted(maps.Keys(byVault)))
	}
	e := c.callErr(t, "query", map[string]any{"vault_name": "pinned", "query": "anything"})
	if e.Code != "unavailable" || !strings.Contains(e.Fix, "ctxkit model pull all-MiniLM-L12-v2") || !strings.Contains(e.Fix, "lexical") {
		t.Errorf("query on a vault whose embedder is missing: %+v", e)
	}
	q := c.call(t, "query", map[string]any{"vault_name": "pinned", "query": "anything", "lexical": true})
	if q["mode"] != "lexical" || !strings.Contains(q["warning"].(string), "not available") {
		t.Errorf("lexical query, asked for: %v", q)
	}
}

// FuzzRenameArgs: any arguments either are refused with a vault error or
// come out as JSON with none of CtxVault's names and no null left, every
// other argument kept as it was.
func FuzzRenameArgs(f *testing.F) {
	for _, s := range []string{`{"vault_name":"a","file_path":"b.md","generated_by":"c"}`, `{"vault":"a","vault_name":"a"}`,
		`{"vault":"a","vault_name":"b"}`, `{"metadata":{"generated_by":"x"},"generated_by":"y"}`, `{"top_k":null}`, `[1]`, `nul`, `{}`} {
		f.Add("write_doc", s)
		f.Add("query", s)
	}
	f.Fuzz(func(t *testing.T, tool, in string) {
		out, err := renameArgs(tool, json.RawMessage(in))
		if err != nil {
			if _, ok := err.(*vault.Error); !ok {
				t.Fatalf("%s %s: %v is not a vault error", tool, in, err)
			}
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &before) != nil {
			if string(out) != in {
				t.Fatalf("arguments that are not an object were changed: %s -> %s", in, out)
			}
			return
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%s -> %s: %v", in, out, err)
		}
		aliases := maps.Clone(argAliases["*"])
		maps.Copy(aliases, argAliases[tool])
		for k, v := range after {
			if _, ok := aliases[k]; ok || string(v) == "null" || (tool == "write_doc" && k == "generated_by") {
				t.Fatalf("%s -> %s: %s left", in, out, k)
			}
			if old, ok := before[k]; ok && k != "metadata" && !sameJSON(old, v) {
				t.Fatalf("%s -> %s: %s changed", in, out, k)
			}
		}
	})
}
