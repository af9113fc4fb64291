package vaultmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// The fixture's vaults.
const (
	pubDocs     = "notes"
	pubEpisodes = "events"
	pubSkills   = "howto"
	bOnly       = "b-notes"   // restricted semantic, b only
	bEpisodes   = "b-events"  // restricted episodic, b only
	bSkills     = "b-howto"   // restricted skill, b only
	aReadOnly   = "shared-ro" // restricted semantic, a read-only, b read-write
	roEpisodes  = "ro-events" // restricted episodic, a read-only
	roSkills    = "ro-howto"  // restricted skill, a read-only
	aEpisodes   = "a-events"  // restricted episodic, a only
	needle      = "quartz heron"
	docText     = "# Deploys\n\nWe deploy on Tuesdays after the review.\n"
	bSecretText = "# Secret\n\nThe launch code is " + needle + ".\n"
)

// fixture is a vault service with agents a and b, each attached to
// restricted vaults of each type (a read-only to one of each type), and
// public vaults of each type.
type fixture struct {
	e       *vaulttest.Env
	callers map[string]vault.Caller // by agent name, and "" for the owner
	// roEpisode is the episode in roEpisodes.
	roEpisode string
}

// onEachBackend runs test on a fresh fixture over each backend, for the
// tests that matter most.
func onEachBackend(t *testing.T, test func(*testing.T, *fixture)) {
	for _, scheme := range []string{"sqlite", "memory", "postgres"} {
		t.Run(scheme, func(t *testing.T) { test(t, newFixture(t, scheme)) })
	}
}

func newFixture(t *testing.T, scheme string) *fixture {
	t.Helper()
	ctx := t.Context()
	e := vaulttest.New(t, vaulttest.Options{Scheme: scheme})
	f := &fixture{e: e, callers: map[string]vault.Caller{"": vault.Owner()}}
	for _, a := range []string{"a", "b"} {
		f.callers[a] = e.Agent(t, a)
	}
	for _, v := range []struct {
		name string
		typ  vault.Type
	}{{pubDocs, vault.Semantic}, {pubEpisodes, vault.Episodic}, {pubSkills, vault.Skill},
		{bOnly, vault.Semantic}, {bEpisodes, vault.Episodic}, {bSkills, vault.Skill},
		{aReadOnly, vault.Semantic}, {roEpisodes, vault.Episodic}, {roSkills, vault.Skill}, {aEpisodes, vault.Episodic}} {
		e.Vault(t, vault.CreateVaultRequest{Name: v.name, Type: v.typ})
	}
	for _, g := range []struct {
		vault, agent string
		ro           bool
	}{{bOnly, "b", false}, {bEpisodes, "b", false}, {bSkills, "b", false}, {aReadOnly, "a", true},
		{aReadOnly, "b", false}, {roEpisodes, "a", true}, {roSkills, "a", true}, {aEpisodes, "a", false}} {
		e.Attach(t, g.vault, g.agent, g.ro)
	}
	owner := vault.Owner()
	for _, d := range []struct{ vault, path, text string }{
		{pubDocs, "deploys.md", docText}, {bOnly, "secret.md", bSecretText}, {aReadOnly, "shared.md", docText}} {
		if _, err := e.Svc.WriteDoc(ctx, owner, d.vault, d.path, vault.WriteDocRequest{Content: d.text}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{pubSkills, bSkills, roSkills} {
		if _, err := e.Svc.WriteSkill(ctx, owner, name, "release", vault.WriteSkillRequest{Description: "How to cut a release",
			Instructions: "1. Tag.\n2. Push.\n"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Svc.WriteEpisode(ctx, owner, bEpisodes, vault.WriteEpisodeRequest{Content: "b's plan is " + needle}); err != nil {
		t.Fatal(err)
	}
	w, err := e.Svc.WriteEpisode(ctx, owner, roEpisodes, vault.WriteEpisodeRequest{Content: "The deploy window is Tuesday",
		Entities: []string{"deploys"}})
	if err != nil {
		t.Fatal(err)
	}
	f.roEpisode = w.Episode.ID
	return f
}

// client is an MCP client session that checks every structured result
// against the output schema its tool announced in tools/list, as a strict
// client (the TypeScript SDK's) does: the server's own validation happens
// before the result is serialized, against the schema it inferred.
type client struct {
	cs      *mcp.ClientSession
	schemas map[string]*jsonschema.Resolved // output schemas, by tool
	called  map[string]bool                 // tools called with success
}

func newClient(t *testing.T, cs *mcp.ClientSession) *client {
	t.Helper()
	c := &client{cs: cs, schemas: map[string]*jsonschema.Resolved{}, called: map[string]bool{}}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.OutputSchema == nil {
			continue
		}
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema %s: %v", tool.Name, b, err)
		}
		if c.schemas[tool.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("%s: output schema %s: %v", tool.Name, b, err)
		}
	}
	return c
}

// connect serves srv in memory and returns a client of it.
func connect(t *testing.T, srv *mcp.Server) *client {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return newClient(t, cs)
}

// session is a client of a server acting for agent ("" for the owner).
func (f *fixture) session(t *testing.T, agent string) *client {
	t.Helper()
	return connect(t, NewServer(f.e.Svc, Options{Caller: f.callers[agent]}))
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// call calls a tool that must succeed and returns its structured content,
// checked against the tool's output schema.
func (c *client) call(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", tool, args, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", tool, args, text(res))
	}
	s := c.schemas[tool]
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if s == nil && res.StructuredContent == nil {
		b = []byte(text(res)) // a tool of the offload adapter: JSON text
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil || out == nil {
		t.Fatalf("%s: the result %s is not an object: %v", tool, b, err)
	}
	if s != nil {
		var v any
		_ = json.Unmarshal(b, &v)
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: the structured content does not fit the announced output schema: %v\n%s", tool, err, b)
		}
	}
	c.called[tool] = true
	return out
}

// toolError is the JSON text of a failed tool call.
type toolError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Fix     string         `json:"fix"`
	Details map[string]any `json:"details"`
}

// String is the message and the fix, for substring checks.
func (e toolError) String() string { return e.Message + "; " + e.Fix }

// callErr calls a tool that must fail with a tool error (not a protocol
// error) whose text is {"error": {...}}, and returns the error.
func (c *client) callErr(t *testing.T, tool string, args map[string]any) toolError {
	t.Helper()
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v; want a tool error", tool, args, err)
	}
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded; want a tool error: %s", tool, args, text(res))
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: an error of %d contents, want 1 text", tool, len(res.Content))
	}
	dec := json.NewDecoder(strings.NewReader(text(res)))
	dec.DisallowUnknownFields()
	var body struct {
		Error *toolError `json:"error"`
	}
	if err := dec.Decode(&body); err != nil || body.Error == nil || dec.More() {
		t.Fatalf("%s: the error text is not {\"error\": {...}}: %v\n%s", tool, err, text(res))
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Errorf("%s: an error without a code or a message: %s", tool, text(res))
	}
	return *body.Error
}

// allTools are the vault tools; every one declares an output schema.
var allTools = []string{"list_vaults", "query", "write_doc", "list_docs", "read_doc", "delete_doc", "list_skills", "read_skill",
	"write_skill", "write_episode", "query_episodes", "get_episode", "episode_history", "invalidate_episode",
	"supersede_episode", "revise_episode", "confirm_episode", "dispute_episodes", "list_entities", "warmup_status"}

// offloadTools are tools of the offload adapter that explore a stored
// document.
var offloadTools = []string{"result_search_in_text", "result_read_page"}

func TestToolsList(t *testing.T) {
	f := newFixture(t, "memory")
	c := f.session(t, "a")
	got := map[string]*mcp.Tool{}
	for tool, err := range c.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[tool.Name] = tool
	}
	// Every tool but the offload adapter's is a vault tool, which the
	// tests call.
	vaultTools := slices.DeleteFunc(slices.Sorted(maps.Keys(got)), func(name string) bool { return strings.HasPrefix(name, "result_") })
	if !slices.Equal(vaultTools, sorted(allTools)) {
		t.Errorf("tools/list has the vault tools %v, want %v", vaultTools, sorted(allTools))
	}
	for _, name := range append(slices.Clone(allTools), offloadTools...) {
		tool, ok := got[name]
		if !ok {
			t.Errorf("tools/list lacks %s", name)
			continue
		}
		if len(tool.Description) < 40 || tool.InputSchema == nil {
			t.Errorf("%s: description %q, input schema %v", name, tool.Description, tool.InputSchema)
		}
		if slices.Contains(allTools, name) && tool.OutputSchema == nil {
			t.Errorf("%s declares no output schema", name)
		}
	}
	// The inputs are the service's request fields, flattened next to
	// vault (and the document, skill or episode the tool acts on).
	for _, tc := range []struct {
		tool     string
		props    []string
		required []string
	}{
		{"query", []string{"vault", "query", "n_results", "lexical", "with_metadata"}, []string{"vault", "query"}},
		{"warmup_status", nil, nil},
		{"write_doc", []string{"vault", "path", "content", "overwrite", "metadata"}, []string{"vault", "path", "content"}},
		{"delete_doc", []string{"vault", "path"}, []string{"vault", "path"}},
		{"write_skill", []string{"vault", "name", "description", "instructions", "overwrite"}, []string{"vault", "name", "description", "instructions"}},
		{"query_episodes", []string{"vault", "query", "entities", "source", "valid_at", "known_at", "include_closed", "disputed",
			"min_confidence", "metadata_filters", "order_by", "limit", "half_life_days", "weights", "reinforce"}, []string{"vault"}},
		{"dispute_episodes", []string{"vault", "episode_id", "other", "note"}, []string{"vault", "episode_id", "other"}},
		{"supersede_episode", []string{"vault", "episode_id", "content", "entities", "source", "confidence", "salience",
			"occurred_at", "valid_from", "metadata"}, []string{"vault", "episode_id", "content"}},
		{"list_vaults", nil, nil},
	} {
		tool := got[tc.tool]
		if tool == nil {
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if props := slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(props, sorted(tc.props)) {
			t.Errorf("%s takes %v, want %v", tc.tool, props, sorted(tc.props))
		}
		if r := sorted(s.Required); !slices.Equal(r, sorted(tc.required)) {
			t.Errorf("%s requires %v, want %v", tc.tool, r, sorted(tc.required))
		}
	}
	if ins := c.cs.InitializeResult().Instructions; !strings.Contains(ins, "list_vaults") || !strings.Contains(ins, "result_") {
		t.Errorf("instructions: %q", ins)
	}
}

func names(out map[string]any, list, field string) []string {
	var ns []string
	items, _ := out[list].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			ns = append(ns, fmt.Sprint(m[field]))
		}
	}
	return ns
}

// sorted returns s sorted.
func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func ep(out map[string]any) map[string]any { return out["episode"].(map[string]any) }

func TestToolsHappyPath(t *testing.T) { onEachBackend(t, testHappyPath) }

func testHappyPath(t *testing.T, f *fixture) {
	c := f.session(t, "a")

	lv := c.call(t, "list_vaults", nil)
	if vs, want := sorted(names(lv, "vaults", "name")), sorted([]string{aEpisodes, pubEpisodes, pubSkills, pubDocs, aReadOnly, roEpisodes, roSkills}); !slices.Equal(vs, want) {
		t.Errorf("list_vaults = %v, want %v", vs, want)
	}
	for _, v := range lv["vaults"].([]any) {
		v := v.(map[string]any)
		wantAccess := "read-write"
		if v["name"] == aReadOnly || v["name"] == roEpisodes || v["name"] == roSkills {
			wantAccess = "read-only"
		}
		if v["access"] != wantAccess || v["tools"] != toolsFor[vault.Type(v["type"].(string))] || v["tools"] == "" {
			t.Errorf("list_vaults entry %v: want access %s and the tools of its type", v, wantAccess)
		}
		// An agent learns nothing of the owner's folders or of the
		// other agents.
		if v["path"] != nil || v["agents"] != nil {
			t.Errorf("list_vaults shows an agent the owner's fields: %v", v)
		}
	}

	q := c.call(t, "query", map[string]any{"vault": pubDocs, "query": "deploy Tuesdays"})
	if p := names(q, "results", "path"); len(p) == 0 || p[0] != "deploys.md" || q["vault"] != pubDocs || q["mode"] != "lexical" {
		t.Errorf("query = %v", q)
	}
	if loc := q["results"].([]any)[0].(map[string]any)["locator"]; !reflect.DeepEqual(loc, map[string]any{"unit": "line", "start": 3.0, "end": 3.0, "label": "line 3"}) {
		t.Errorf("query: the passage's locator %v, want line 3 of deploys.md", loc)
	}
	w := c.call(t, "write_doc", map[string]any{"vault": pubDocs, "path": "new/idea.md", "content": "# Idea\n\nUse a zeppelin.\n",
		"metadata": map[string]any{"topic": "transport"}})
	if w["path"] != "new/idea.md" || w["vault"] != pubDocs {
		t.Errorf("write_doc = %v", w)
	}
	if p := names(c.call(t, "query", map[string]any{"vault": pubDocs, "query": "zeppelin", "n_results": 3}), "results", "path"); !slices.Equal(p, []string{"new/idea.md"}) {
		t.Errorf("the written document is not found at once: %v", p)
	}
	docs := c.call(t, "list_docs", map[string]any{"vault": pubDocs})
	if p := names(docs, "documents", "path"); !slices.Equal(sorted(p), []string{"deploys.md", "new/idea.md"}) {
		t.Errorf("list_docs = %v", p)
	}
	for _, d := range docs["documents"].([]any) {
		d := d.(map[string]any)
		meta, _ := d["metadata"].(map[string]any)
		if d["path"] == "new/idea.md" && (meta["written_by"] != "a" || meta["topic"] != "transport") {
			t.Errorf("write_doc did not record written_by a and the metadata: %v", d)
		}
	}
	if rd := c.call(t, "read_doc", map[string]any{"vault": pubDocs, "path": "deploys.md"}); !strings.Contains(rd["text"].(string), "Tuesdays") || rd["path"] != "deploys.md" {
		t.Errorf("read_doc = %v", rd)
	}
	if del := c.call(t, "delete_doc", map[string]any{"vault": pubDocs, "path": "new"}); fmt.Sprint(del["deleted"]) != "[new/idea.md]" {
		t.Errorf("delete_doc of a folder = %v", del)
	}
	if p := names(c.call(t, "list_docs", map[string]any{"vault": pubDocs}), "documents", "path"); !slices.Equal(p, []string{"deploys.md"}) {
		t.Errorf("list_docs after delete_doc = %v", p)
	}
	if q := c.call(t, "query", map[string]any{"vault": pubDocs, "query": "zeppelin"}); len(q["results"].([]any)) != 0 {
		t.Errorf("a deleted document is still found: %v", q)
	}

	if s := names(c.call(t, "list_skills", map[string]any{"vault": pubSkills}), "skills", "name"); !slices.Equal(s, []string{"release"}) {
		t.Errorf("list_skills = %v", s)
	}
	if sk := c.call(t, "read_skill", map[string]any{"vault": pubSkills, "name": "release"}); !strings.Contains(fmt.Sprint(sk["skill"]), "Tag.") {
		t.Errorf("read_skill = %v", sk)
	}
	c.call(t, "write_skill", map[string]any{"vault": pubSkills, "name": "triage", "description": "Sort new issues",
		"instructions": "Label them."})
	if s := names(c.call(t, "list_skills", map[string]any{"vault": pubSkills}), "skills", "name"); !slices.Equal(s, []string{"release", "triage"}) {
		t.Errorf("list_skills after write_skill = %v", s)
	}

	// Episodes: write, hints, query, confirm, supersede, revise, dispute,
	// invalidate, history, entities, reinforce. Times left out are null,
	// which the output schemas allow.
	wr := c.call(t, "write_episode", map[string]any{"vault": pubEpisodes, "content": "Alice leads the payments team",
		"entities": []string{"Alice", "payments"}, "valid_from": "2026-01-01"})
	alice := ep(wr)["id"].(string)
	if e := ep(wr); e["source"] != "a" || e["valid_from"] != "2026-01-01T00:00:00.000000Z" || e["occurred_at"] != nil || e["valid_to"] != nil {
		t.Errorf("write_episode = %v", wr)
	}
	dry := c.call(t, "write_episode", map[string]any{"vault": pubEpisodes, "content": "Alice leads the payments team",
		"entities": []string{"alice"}, "dry_run": true})
	if dry["dry_run"] != true || !strings.Contains(fmt.Sprint(dry["hints"]), "confirm") || dry["advice"] == "" {
		t.Errorf("dry run of the same statement: %v", dry)
	}
	if cf := ep(c.call(t, "confirm_episode", map[string]any{"vault": pubEpisodes, "episode_id": alice})); cf["confirmed_count"] != 1.0 {
		t.Errorf("confirm_episode = %v", cf)
	}
	if got := ep(c.call(t, "get_episode", map[string]any{"vault": pubEpisodes, "episode_id": alice})); got["id"] != alice {
		t.Errorf("get_episode = %v", got)
	}
	qe := c.call(t, "query_episodes", map[string]any{"vault": pubEpisodes, "query": "payments"})
	if ids := names(qe, "results", "id"); !slices.Equal(ids, []string{alice}) || qe["order_by"] != "relevance" || qe["vault"] != pubEpisodes {
		t.Errorf("query_episodes = %v", qe)
	}
	sup := c.call(t, "supersede_episode", map[string]any{"vault": pubEpisodes, "episode_id": alice,
		"content": "Bob leads the payments team", "valid_from": "2026-06-01"})
	bob := ep(sup)["id"].(string)
	if sup["replaced"] != alice || fmt.Sprint(ep(sup)["entities"]) != "[Alice payments]" {
		t.Errorf("supersede_episode (entities inherited) = %v", sup)
	}
	rev := c.call(t, "revise_episode", map[string]any{"vault": pubEpisodes, "episode_id": bob,
		"content": "Bob leads the payments team", "entities": []string{"Bob", "payments"}})
	bob2 := ep(rev)["id"].(string)
	if ep(rev)["revises"] != bob || rev["replaced"] != bob {
		t.Errorf("revise_episode = %v", rev)
	}
	other := ep(c.call(t, "write_episode", map[string]any{"vault": pubEpisodes, "content": "Carol leads the payments team"}))["id"].(string)
	d := c.call(t, "dispute_episodes", map[string]any{"vault": pubEpisodes, "episode_id": bob2, "other": other, "note": "who?"})
	if ep(d)["id"] != bob2 || d["other"].(map[string]any)["id"] != other ||
		fmt.Sprint(ep(d)["disputed_with"]) != "["+other+"]" {
		t.Errorf("dispute_episodes = %v", d)
	}
	if inv := ep(c.call(t, "invalidate_episode", map[string]any{"vault": pubEpisodes, "episode_id": other, "reason": "wrong"})); inv["state"] != "invalidated" {
		t.Errorf("invalidate_episode = %v", inv)
	}
	h := c.call(t, "episode_history", map[string]any{"vault": pubEpisodes, "episode_id": bob2})
	if ids := names(h, "chain", "id"); !slices.Equal(ids, []string{alice, bob, bob2}) || h["episode_id"] != bob2 {
		t.Errorf("episode_history = %v", h)
	}
	ents := c.call(t, "list_entities", map[string]any{"vault": pubEpisodes})
	if e := names(ents, "entities", "entity"); !slices.Equal(e, []string{"Bob", "payments"}) {
		t.Errorf("list_entities = %v", ents)
	}
	if past := c.call(t, "query_episodes", map[string]any{"vault": pubEpisodes, "valid_at": "2026-03-01"}); !slices.Equal(names(past, "results", "id"), []string{alice}) {
		t.Errorf("query_episodes valid_at 2026-03-01 = %v", past)
	}
	// A read-write agent's reinforce records the recall, and the audit
	// log says so.
	c.call(t, "query_episodes", map[string]any{"vault": pubEpisodes, "query": "Bob", "reinforce": true})
	if got := ep(c.call(t, "get_episode", map[string]any{"vault": pubEpisodes, "episode_id": bob2})); got["recall_count"] != 1.0 || got["last_recalled_at"] == nil {
		t.Errorf("after reinforce: %v", got)
	}
	if !slices.ContainsFunc(f.audit(t, pubEpisodes), func(e vault.AuditEvent) bool {
		return e.Agent == "a" && e.Action == "query-episodes" && e.Outcome == "ok" && e.Detail == "reinforced=1"
	}) {
		t.Errorf("reinforce is not audited: %v", f.audit(t, pubEpisodes))
	}

	if w := c.call(t, "warmup_status", nil); w["ready"] != true || w["status"] != "ready" {
		t.Errorf("warmup_status = %v", w)
	}
	for _, tool := range allTools {
		if !c.called[tool] {
			t.Errorf("%s was not called: its output was not checked against its schema", tool)
		}
	}
}

// audit returns a vault's audit log.
func (f *fixture) audit(t *testing.T, name string) []vault.AuditEvent {
	t.Helper()
	evs, err := f.e.Svc.Audit(t.Context(), vault.Owner(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestToolErrors(t *testing.T) {
	f := newFixture(t, "memory")
	c := f.session(t, "a")
	id := ep(c.call(t, "write_episode", map[string]any{"vault": pubEpisodes, "content": "x holds"}))["id"].(string)
	c.call(t, "invalidate_episode", map[string]any{"vault": pubEpisodes, "episode_id": id})
	open := ep(c.call(t, "write_episode", map[string]any{"vault": pubEpisodes, "content": "y holds"}))["id"].(string)
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		code  string
		field string // details.field, when the error names one
		want  string // in the message or the fix
	}{
		{"query", map[string]any{"vault": "nope", "query": "x"}, "not_found", "vault", `no vault named "nope"`},
		{"query", map[string]any{"vault": "note", "query": "x"}, "not_found", "vault", `did you mean "notes"?`},
		{"query", map[string]any{"vault": pubEpisodes, "query": "x"}, "invalid", "", "episodic vaults take the tools write_episode, query_episodes"},
		{"query", map[string]any{"vault": pubDocs, "query": "x", "n_results": 500}, "invalid", "n_results", "give 1 to 100"},
		{"query", map[string]any{"vault": pubDocs}, "invalid", "", `missing properties: ["query"]`},
		{"query", map[string]any{"vault": pubDocs}, "invalid", "", "call query again with every required field"},
		{"query", map[string]any{"vault": pubDocs, "query": 3}, "invalid", "", "call query again"},
		{"query", map[string]any{"vault": pubDocs, "query": " "}, "invalid", "query", "Query text cannot be empty"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": "deploys.md", "content": "x"}, "exists", "path", "set overwrite"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": "../x.md", "content": "x"}, "invalid", "path", "relative to the vault"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": "x.exe", "content": "x"}, "invalid", "path", "not a document type"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": ".git/x.md", "content": "x"}, "invalid", "path", "hidden"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": strings.Repeat("a/", 600) + "x.md", "content": "x"}, "invalid", "path", "longer than"},
		{"write_doc", map[string]any{"vault": aReadOnly, "path": "y.md", "content": "x"}, "forbidden", "", "read-only"},
		{"list_docs", map[string]any{"vault": pubSkills}, "invalid", "", "skill vaults take the tools list_skills, read_skill, write_skill"},
		{"read_doc", map[string]any{"vault": pubDocs, "path": "missing.md"}, "not_found", "path", "documents"},
		{"read_doc", map[string]any{"vault": pubDocs}, "invalid", "", "path"},
		{"delete_doc", map[string]any{"vault": pubDocs, "path": "missing.md"}, "not_found", "path", "missing.md"},
		{"read_skill", map[string]any{"vault": pubSkills, "name": "missing"}, "not_found", "name", "skills"},
		{"write_skill", map[string]any{"vault": pubSkills, "name": "a/b", "description": "d", "instructions": "i"}, "invalid", "name", "a/b"},
		{"write_skill", map[string]any{"vault": pubSkills, "name": "release", "description": "d", "instructions": "i"}, "exists", "name", "set overwrite"},
		{"write_episode", map[string]any{"vault": pubEpisodes, "content": "  "}, "invalid", "", "content"},
		{"write_episode", map[string]any{"vault": pubEpisodes, "content": "c", "valid_from": "yesterday"}, "invalid", "valid_from", "RFC 3339"},
		{"write_episode", map[string]any{"vault": pubEpisodes, "content": "c", "confidence": 2}, "invalid", "", "confidence"},
		{"query_episodes", map[string]any{"vault": pubEpisodes, "order_by": "relevance"}, "invalid", "", "needs query text"},
		{"query_episodes", map[string]any{"vault": pubEpisodes, "order_by": "best"}, "invalid", "", "best"},
		{"query_episodes", map[string]any{"vault": pubEpisodes, "weights": map[string]any{"recency": 2}}, "invalid", "", "composite"},
		{"query_episodes", map[string]any{"vault": pubEpisodes, "half_life_days": 0}, "invalid", "half_life_days", "more than 0"},
		{"get_episode", map[string]any{"vault": pubEpisodes, "episode_id": "0123"}, "not_found", "", "0123"},
		{"get_episode", map[string]any{"vault": pubEpisodes, "episode_id": ""}, "invalid", "episode_id", "episode_id is empty"},
		{"episode_history", map[string]any{"vault": pubEpisodes, "episode_id": "0123"}, "not_found", "", "0123"},
		{"invalidate_episode", map[string]any{"vault": pubEpisodes, "episode_id": id}, "conflict", "", "already closed"},
		{"supersede_episode", map[string]any{"vault": pubEpisodes, "episode_id": id, "content": "y"}, "conflict", "", "already closed"},
		{"revise_episode", map[string]any{"vault": pubEpisodes, "episode_id": open, "content": "y", "valid_from": "2026-01-01"}, "invalid", "valid_from", "supersede"},
		{"confirm_episode", map[string]any{"vault": pubEpisodes, "episode_id": id}, "conflict", "", "already closed"},
		{"dispute_episodes", map[string]any{"vault": pubEpisodes, "episode_id": open, "other": ""}, "invalid", "other", "other is empty"},
		{"dispute_episodes", map[string]any{"vault": pubEpisodes, "episode_id": open, "other_id": id}, "invalid", "", "other"},
		{"list_entities", map[string]any{"vault": pubDocs}, "invalid", "", "semantic vaults take the tools query, list_docs, read_doc, write_doc, delete_doc"},
		{"list_entities", map[string]any{"vault": pubEpisodes, "known_at": "soon"}, "invalid", "known_at", "is not a time"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			got := c.callErr(t, tc.tool, tc.args)
			field, _ := got.Details["field"].(string)
			if got.Code != tc.code || field != tc.field || !strings.Contains(got.String(), tc.want) {
				t.Errorf("%s(%v) error %+v; want code %s, field %q, and %q in the message or the fix", tc.tool, tc.args, got, tc.code, tc.field, tc.want)
			}
		})
	}
	// A typo of a restricted vault's name suggests nothing to an agent not
	// attached to it.
	if got := c.callErr(t, "query", map[string]any{"vault": "b-note", "query": "x"}); strings.Contains(got.String(), bOnly) || strings.Contains(got.String(), "did you mean") {
		t.Errorf("query on a typo of %s by a: %+v", bOnly, got)
	}
}

// isolationCalls calls every tool that takes a vault on name.
func isolationCalls(name string) []struct {
	tool string
	args map[string]any
} {
	v := func(kv ...any) map[string]any {
		m := map[string]any{"vault": name}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	const id, id2 = "00000000000000000000000000000000", "00000000000000000000000000000001"
	return []struct {
		tool string
		args map[string]any
	}{
		{"query", v("query", needle)}, {"write_doc", v("path", "leak.md", "content", "x")}, {"list_docs", v()},
		{"read_doc", v("path", "secret.md")}, {"delete_doc", v("path", "secret.md")}, {"list_skills", v()},
		{"read_skill", v("name", "release")}, {"write_skill", v("name", "leak", "description", "d", "instructions", "i")},
		{"write_episode", v("content", "leak")}, {"write_episode", v("content", "leak", "dry_run", true)},
		{"query_episodes", v("query", needle)}, {"query_episodes", v("reinforce", true)},
		{"get_episode", v("episode_id", id)}, {"episode_history", v("episode_id", id)},
		{"invalidate_episode", v("episode_id", id)}, {"supersede_episode", v("episode_id", id, "content", "x")},
		{"revise_episode", v("episode_id", id, "content", "x")}, {"confirm_episode", v("episode_id", id)},
		{"dispute_episodes", v("episode_id", id, "other", id2)}, {"list_entities", v()},
	}
}

// checkIsolation checks that c (agent a) learns nothing of b's restricted
// vaults: list_vaults does not show them, and every tool naming one
// answers exactly what it answers for a vault that does not exist.
func checkIsolation(t *testing.T, f *fixture, c *client) {
	t.Helper()
	lv := c.call(t, "list_vaults", nil)
	for _, name := range []string{bOnly, bEpisodes, bSkills} {
		if slices.Contains(names(lv, "vaults", "name"), name) {
			t.Errorf("list_vaults shows %s to a: %v", name, lv)
		}
		// A missing name as near the vaults a sees as name is, so that
		// the suggestions of names a may see are the same.
		missing := "x" + name[1:]
		for _, call := range isolationCalls(name) {
			got := c.callErr(t, call.tool, call.args)
			call.args["vault"] = missing
			ref := c.callErr(t, call.tool, call.args)
			call.args["vault"] = name
			if got.Code != "not_found" {
				t.Errorf("%s on %s: code %q, want not_found", call.tool, name, got.Code)
			}
			if got.Message != strings.ReplaceAll(ref.Message, missing, name) || got.Fix != ref.Fix || fmt.Sprint(got.Details) != fmt.Sprint(ref.Details) {
				t.Errorf("%s on %s answers %+v; on a missing vault %+v", call.tool, name, got, ref)
			}
			if strings.Contains(got.String(), needle) {
				t.Errorf("%s on %s leaks: %s", call.tool, name, got)
			}
		}
		// The refusals are audited in the vault's log, as a's.
		if !slices.ContainsFunc(f.audit(t, name), func(e vault.AuditEvent) bool {
			return e.Agent == "a" && e.Outcome == "refused" && e.Reason == "not attached"
		}) {
			t.Errorf("%s's audit log has no refusal of a: %v", name, f.audit(t, name))
		}
	}
	// Nothing was written into b's vaults, and b still sees its own.
	if d, _ := f.e.Svc.Docs(t.Context(), f.callers["b"], bOnly); len(d) != 1 || d[0].Path != "secret.md" {
		t.Errorf("b's vault holds %v after a's attempts", d)
	}
	if q, _ := f.e.Svc.QueryEpisodes(t.Context(), f.callers["b"], bEpisodes, vault.QueryEpisodesRequest{IncludeClosed: true}); len(q.Results) != 1 || q.Results[0].RecallCount != 0 {
		t.Errorf("b's episodes after a's attempts: %+v", q)
	}
	if s, _ := f.e.Svc.Skills(t.Context(), f.callers["b"], bSkills); s == nil || len(s.Skills) != 1 {
		t.Errorf("b's skills after a's attempts: %+v", s)
	}
}

func TestIsolation(t *testing.T) {
	onEachBackend(t, func(t *testing.T, f *fixture) {
		checkIsolation(t, f, f.session(t, "a"))
		// b sees its own, and the owner sees everything, with its
		// folders (hosted vaults have none).
		if d := names(f.session(t, "b").call(t, "list_docs", map[string]any{"vault": bOnly}), "documents", "path"); !slices.Equal(d, []string{"secret.md"}) {
			t.Errorf("b's list_docs: %v", d)
		}
		lv := f.session(t, "").call(t, "list_vaults", nil)
		if vs := names(lv, "vaults", "name"); len(vs) != 10 {
			t.Errorf("the owner sees %v", vs)
		}
		paths := names(lv, "vaults", "path")
		switch {
		case f.e.Svc.Hosted() && slices.ContainsFunc(paths, func(p string) bool { return p != "<nil>" }):
			t.Errorf("hosted vaults have no folder, yet list_vaults names some: %v", lv)
		case !f.e.Svc.Hosted() && slices.Contains(paths, "<nil>"):
			t.Errorf("the owner does not see the vaults' folders: %v", lv)
		}
	})
}

// checkReadOnly checks that c (agent a, with read-only grants) reads the
// read-only vaults and cannot change them through any tool.
func checkReadOnly(t *testing.T, f *fixture, c *client) {
	t.Helper()
	ctx := t.Context()
	id := f.roEpisode
	before, err := f.e.Svc.Episode(ctx, vault.Owner(), roEpisodes, id)
	if err != nil {
		t.Fatal(err)
	}
	// Reads work, a dry run included (it writes nothing).
	c.call(t, "read_doc", map[string]any{"vault": aReadOnly, "path": "shared.md"})
	c.call(t, "read_skill", map[string]any{"vault": roSkills, "name": "release"})
	if q := c.call(t, "query_episodes", map[string]any{"vault": roEpisodes, "query": "deploy"}); !slices.Equal(names(q, "results", "id"), []string{id}) {
		t.Errorf("query_episodes on a read-only vault = %v", q)
	}
	c.call(t, "write_episode", map[string]any{"vault": roEpisodes, "content": "The deploy window is Tuesday", "dry_run": true})

	for _, call := range []struct {
		tool, vault, action string
		args                map[string]any
	}{
		{"write_doc", aReadOnly, "write-doc", map[string]any{"path": "w.md", "content": "x"}},
		{"write_doc", aReadOnly, "write-doc", map[string]any{"path": "shared.md", "content": "x", "overwrite": true}},
		{"delete_doc", aReadOnly, "delete-doc", map[string]any{"path": "shared.md"}},
		{"write_skill", roSkills, "write-skill", map[string]any{"name": "w", "description": "d", "instructions": "i"}},
		{"write_skill", roSkills, "write-skill", map[string]any{"name": "release", "description": "d", "instructions": "i", "overwrite": true}},
		{"write_episode", roEpisodes, "write-episode", map[string]any{"content": "x"}},
		{"query_episodes", roEpisodes, "query-episodes", map[string]any{"query": "deploy", "reinforce": true}},
		{"invalidate_episode", roEpisodes, "invalidate", map[string]any{"episode_id": id}},
		{"supersede_episode", roEpisodes, "supersede", map[string]any{"episode_id": id, "content": "x"}},
		{"revise_episode", roEpisodes, "revise", map[string]any{"episode_id": id, "content": "x"}},
		{"confirm_episode", roEpisodes, "confirm", map[string]any{"episode_id": id}},
		{"dispute_episodes", roEpisodes, "dispute", map[string]any{"episode_id": id, "other": id}},
	} {
		call.args["vault"] = call.vault
		if got := c.callErr(t, call.tool, call.args); got.Code != "forbidden" || !strings.Contains(got.Message, "read-only") {
			t.Errorf("%s(%v) through a read-only grant: %+v, want forbidden", call.tool, call.args, got)
		}
		if !slices.ContainsFunc(f.audit(t, call.vault), func(e vault.AuditEvent) bool {
			return e.Agent == "a" && e.Action == call.action && e.Outcome == "refused" && e.Reason == "read-only grant"
		}) {
			t.Errorf("%s through a read-only grant is not audited as refused: %v", call.tool, f.audit(t, call.vault))
		}
	}
	// Nothing changed: the episode was not recalled, confirmed or closed.
	after, err := f.e.Svc.Episode(ctx, vault.Owner(), roEpisodes, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.RecallCount != 0 || after.LastRecalledAt != nil || after.Version != before.Version || after.State != before.State ||
		after.ConfirmedCount != before.ConfirmedCount || len(after.DisputedWith) != 0 {
		t.Errorf("the episode changed through a read-only grant: %+v, was %+v", after, before)
	}
	if q, _ := f.e.Svc.QueryEpisodes(ctx, vault.Owner(), roEpisodes, vault.QueryEpisodesRequest{IncludeClosed: true}); len(q.Results) != 1 {
		t.Errorf("the read-only episodic vault holds %d statements", len(q.Results))
	}
	if d, _ := f.e.Svc.ReadDoc(ctx, vault.Owner(), aReadOnly, "shared.md"); d == nil || !strings.Contains(d.Text, "Tuesdays") {
		t.Errorf("the read-only document changed: %+v", d)
	}
	if d, _ := f.e.Svc.Docs(ctx, vault.Owner(), aReadOnly); len(d) != 1 {
		t.Errorf("the read-only semantic vault holds %v", d)
	}
	if s, _ := f.e.Svc.Skill(ctx, vault.Owner(), roSkills, "release"); s == nil || s.Description != "How to cut a release" {
		t.Errorf("the read-only skill changed: %+v", s)
	}
	if s, _ := f.e.Svc.Skills(ctx, vault.Owner(), roSkills); s == nil || len(s.Skills) != 1 {
		t.Errorf("the read-only skill vault holds %+v", s)
	}
}

// A read-only grant reads but never writes, through any tool; a refused
// reinforce leaves recall_count alone and is in the audit log.
func TestReadOnlyGrant(t *testing.T) {
	onEachBackend(t, func(t *testing.T, f *fixture) { checkReadOnly(t, f, f.session(t, "a")) })
}

// The results at the edges of their schemas fit them too: empty vaults,
// and episodes with every optional field set (times, metadata, a closed
// and a disputed state) or none, skills with a malformed sibling.
func TestOutputsAtTheEdges(t *testing.T) {
	f := newFixture(t, "memory")
	ctx := t.Context()
	for _, v := range []struct {
		name string
		typ  vault.Type
	}{{"empty-docs", vault.Semantic}, {"empty-skills", vault.Skill}, {"empty-events", vault.Episodic}} {
		f.e.Vault(t, vault.CreateVaultRequest{Name: v.name, Type: v.typ})
	}
	c := f.session(t, "")
	c.call(t, "list_docs", map[string]any{"vault": "empty-docs"})
	c.call(t, "query", map[string]any{"vault": "empty-docs", "query": "anything"})
	c.call(t, "list_skills", map[string]any{"vault": "empty-skills"})
	c.call(t, "query_episodes", map[string]any{"vault": "empty-events"})
	c.call(t, "list_entities", map[string]any{"vault": "empty-events"})

	// A skill file that does not parse is a problem of the report.
	info, err := f.e.Svc.DescribeVault(ctx, vault.Owner(), pubSkills)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(info.Path, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(info.Path, "broken", vault.SkillFile), []byte("no frontmatter"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sk := c.call(t, "list_skills", map[string]any{"vault": pubSkills}); len(sk["problems"].([]any)) != 1 {
		t.Errorf("list_skills with a broken skill: %v", sk)
	}

	full := ep(c.call(t, "write_episode", map[string]any{"vault": "empty-events", "content": "The office moved to Lyon",
		"entities": []string{"office"}, "source": "memo", "confidence": 0.8, "salience": 0.9, "occurred_at": "2026-02-01T09:00:00Z",
		"valid_from": "2026-02-01", "valid_to": "2099-12-31", "metadata": map[string]any{"n": 1, "tags": []string{"x"}, "nested": map[string]any{"k": nil}}}))
	for _, field := range []string{"occurred_at", "valid_to"} {
		if full[field] == nil {
			t.Errorf("write_episode with %s: %v", field, full)
		}
	}
	bare := ep(c.call(t, "write_episode", map[string]any{"vault": "empty-events", "content": "The office has a garden"}))
	c.call(t, "dispute_episodes", map[string]any{"vault": "empty-events", "episode_id": full["id"], "other": bare["id"]})
	c.call(t, "confirm_episode", map[string]any{"vault": "empty-events", "episode_id": bare["id"], "source": "visit"})
	c.call(t, "invalidate_episode", map[string]any{"vault": "empty-events", "episode_id": bare["id"], "reason": "paved"})
	c.call(t, "query_episodes", map[string]any{"vault": "empty-events", "include_closed": true, "order_by": "composite",
		"query": "office", "weights": map[string]any{"relevance": 1, "recency": 0, "salience": 2}, "half_life_days": 7})
	c.call(t, "query_episodes", map[string]any{"vault": "empty-events", "disputed": true, "known_at": "2020-01-01"})
	c.call(t, "episode_history", map[string]any{"vault": "empty-events", "episode_id": full["id"]})
	c.call(t, "episode_history", map[string]any{"vault": "empty-events", "episode_id": bare["id"]})
	c.call(t, "list_entities", map[string]any{"vault": "empty-events", "include_closed": true, "min_episodes": 1})
}

// A vault whose folder is the project root holds the project's
// .ctxkit/config.json (the registry of local vaults): no tool reaches it,
// or any other hidden file.
func TestHiddenFilesOfAProjectVault(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{Scheme: "sqlite"})
	e.Vault(t, vault.CreateVaultRequest{Name: "project", Path: e.Root})
	config := filepath.Join(e.Root, ".ctxkit", "config.json")
	orig, err := os.ReadFile(config)
	if err != nil {
		t.Fatalf("the project's registry: %v", err)
	}
	c := connect(t, NewServer(e.Svc, Options{Caller: vault.Owner()}))
	for _, path := range []string{".ctxkit/config.json", "./.ctxkit/config.json", "x/../.ctxkit/config.json", ".ctxkit/x.md",
		`.ctxkit\config.json`, ".ctxkit-vault/documents.json"} {
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"write_doc", map[string]any{"content": `{"vaults": []}`, "overwrite": true}},
			{"read_doc", map[string]any{}},
			{"delete_doc", map[string]any{}},
		} {
			call.args["vault"], call.args["path"] = "project", path
			if got := c.callErr(t, call.tool, call.args); got.Code != "invalid" || got.Details["field"] != "path" {
				t.Errorf("%s %s: %+v, want invalid path", call.tool, path, got)
			}
		}
	}
	c.callErr(t, "delete_doc", map[string]any{"vault": "project", "path": ".ctxkit"})
	if now, err := os.ReadFile(config); err != nil || string(now) != string(orig) {
		t.Errorf("the project's registry changed: %v\n%s\nwas\n%s", err, now, orig)
	}
	if vs, err := e.Svc.ListVaults(t.Context(), vault.Owner()); err != nil || len(vs) != 1 {
		t.Errorf("the vaults after the attempts: %v %v", vs, err)
	}
}

// An internal error (here a vault index that is not a database) is
// answered without its details, which go to the server's log; a document
// that does not parse is the caller's to know about, without the folder it
// lives in.
func TestInternalErrorsAreLogged(t *testing.T) {
	f := newFixture(t, "sqlite")
	fresh := f.e.Vault(t, vault.CreateVaultRequest{Name: "fresh"})
	if err := os.WriteFile(filepath.Join(fresh.Path, vault.DataDirName, "index.db"), bytes.Repeat([]byte("not a database "), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fresh.Path, "broken.docx"), []byte("PK not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	c := connect(t, NewServer(f.e.Svc, Options{Caller: f.callers["a"], Logger: slog.New(slog.NewTextHandler(&log, nil))}))
	got := c.callErr(t, "list_docs", map[string]any{"vault": "fresh"})
	if got.Code != "internal" || strings.Contains(got.String(), "database") {
		t.Errorf("list_docs of a broken index: %+v; want internal, without details", got)
	}
	if l := log.String(); !strings.Contains(l, "list_docs") || !strings.Contains(l, "not a database") || !strings.Contains(l, "caller=a") {
		t.Errorf("the server's log does not have the internal error: %q", l)
	}
	got = c.callErr(t, "read_doc", map[string]any{"vault": "fresh", "path": "broken.docx"})
	if got.Code != "invalid" || !strings.Contains(got.Message, "broken.docx") || strings.Contains(got.String(), fresh.Path) {
		t.Errorf("read_doc of a broken document: %+v; want invalid, naming the document, not its folder", got)
	}
}

// An entity list left out is inherited by the successor; an empty one
// clears them.
func TestSuccessorEntities(t *testing.T) {
	f := newFixture(t, "memory")
	c := f.session(t, "a")
	id := ep(c.call(t, "write_episode", map[string]any{"vault": aEpisodes, "content": "v1", "entities": []string{"X"}}))["id"]
	kept := ep(c.call(t, "revise_episode", map[string]any{"vault": aEpisodes, "episode_id": id, "content": "v2"}))
	if got := fmt.Sprint(kept["entities"]); got != "[X]" {
		t.Errorf("entities left out: %s, want [X]", got)
	}
	cleared := ep(c.call(t, "supersede_episode", map[string]any{"vault": aEpisodes, "episode_id": kept["id"], "content": "v3", "entities": []string{}}))
	if got := fmt.Sprint(cleared["entities"]); got != "[]" {
		t.Errorf("entities []: %s, want []", got)
	}
}

// longDocument is a document far over the offload threshold, with the
// needle deep inside.
func longDocument() string {
	var b strings.Builder
	b.WriteString("# Long\n\n")
	for i := range 600 {
		fmt.Fprintf(&b, "Paragraph %d talks about nothing in particular, at some length.\n\n", i)
		if i == 450 {
			b.WriteString("The " + needle + " nests here.\n\n")
		}
	}
	return b.String()
}

func TestLongDocumentIsOffloaded(t *testing.T) {
	f := newFixture(t, "memory")
	c := f.session(t, "a")
	doc := longDocument()
	c.call(t, "write_doc", map[string]any{"vault": pubDocs, "path": "long.md", "content": doc})
	rd := c.call(t, "read_doc", map[string]any{"vault": pubDocs, "path": "long.md"})
	ws, _ := rd["stored_result"].(string)
	if ws == "" || strings.Contains(fmt.Sprint(rd), needle) {
		t.Fatalf("read_doc of a %d-char document is not a notice: %.500v", len(doc), rd)
	}
	found := c.call(t, "result_search_in_text", map[string]any{"workspace_id": ws, "query": needle})
	if !strings.Contains(fmt.Sprint(found), needle) {
		t.Fatalf("result_search_in_text: %.1000v", found)
	}
}

// Servers acting for different callers over one store (`ctxkit mcp` on
// stdio for two agents, and the owner's) keep their stored results apart:
// none lists or reads another's, which may hold a document of a vault the
// other cannot see.
func TestStoredResultsAreTheCallers(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.e.Vault(t, vault.CreateVaultRequest{Name: "a-notes", Type: vault.Semantic})
	f.e.Attach(t, "a-notes", "a", false)
	if _, err := f.e.Svc.WriteDoc(t.Context(), vault.Owner(), "a-notes", "long.md", vault.WriteDocRequest{Content: longDocument()}); err != nil {
		t.Fatal(err)
	}
	engine := offload.New(f.e.Backend.Workspaces())
	session := func(agent string) *client {
		return connect(t, NewServer(f.e.Svc, Options{Caller: f.callers[agent], Engine: engine}))
	}
	ids := map[string]string{}
	for _, who := range []string{"a", ""} {
		c := session(who)
		ids[who], _ = c.call(t, "read_doc", map[string]any{"vault": "a-notes", "path": "long.md"})["stored_result"].(string)
		if ids[who] == "" {
			t.Fatalf("%q's read_doc was not offloaded", who)
		}
		// The caller explores its own, in a later session too.
		if found := session(who).call(t, "result_search_in_text", map[string]any{"workspace_id": ids[who], "query": needle}); !strings.Contains(fmt.Sprint(found), needle) {
			t.Errorf("%q cannot explore its own stored result: %v", who, found)
		}
	}
	for _, who := range []string{"a", "", "b"} {
		c := session(who)
		listed, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "result_list", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		for owner, id := range ids {
			if owner == who {
				continue
			}
			if strings.Contains(text(listed), id) {
				t.Errorf("result_list for %q shows %q's stored result %s: %s", who, owner, id, text(listed))
			}
			res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "result_search_in_text",
				Arguments: map[string]any{"workspace_id": id, "query": needle}})
			if err == nil && (!res.IsError || strings.Contains(text(res), needle)) {
				t.Errorf("%q explores %q's stored result: %.300s", who, owner, text(res))
			}
		}
	}
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

func httpServer(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(vaultauth.New(f.e.Svc, nil).Middleware(HTTPHandler(f.e.Svc, Options{})))
	t.Cleanup(srv.Close)
	return srv
}

func httpSession(t *testing.T, url, token string) *client {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return newClient(t, cs)
}

// Over streamable HTTP behind vaultauth, each session acts for the caller
// its token authenticates, with the same isolation and read-only rules.
func TestHTTP(t *testing.T) {
	f := newFixture(t, "sqlite")
	srv := httpServer(t, f)
	csa := httpSession(t, srv.URL, f.e.Tokens["a"])
	checkIsolation(t, f, csa)
	checkReadOnly(t, f, csa)
	csb := httpSession(t, srv.URL, f.e.Tokens["b"])
	if rd := csb.call(t, "read_doc", map[string]any{"vault": bOnly, "path": "secret.md"}); !strings.Contains(rd["text"].(string), needle) {
		t.Errorf("b reads its own vault: %v", rd)
	}
	if w := csb.call(t, "write_episode", map[string]any{"vault": pubEpisodes, "content": "b was here"}); ep(w)["source"] != "b" {
		t.Errorf("the HTTP session does not act for b: %v", w)
	}
	if vs := names(httpSession(t, srv.URL, f.e.Tokens[vault.OwnerName]).call(t, "list_vaults", nil), "vaults", "name"); len(vs) != 10 {
		t.Errorf("the owner over HTTP sees %v", vs)
	}
	// A stored result is the session's own: b cannot explore what a
	// read from a vault b cannot see.
	f.e.Vault(t, vault.CreateVaultRequest{Name: "a-notes", Type: vault.Semantic})
	f.e.Attach(t, "a-notes", "a", false)
	csa.call(t, "write_doc", map[string]any{"vault": "a-notes", "path": "long.md", "content": longDocument()})
	ws, _ := csa.call(t, "read_doc", map[string]any{"vault": "a-notes", "path": "long.md"})["stored_result"].(string)
	if found := csa.call(t, "result_search_in_text", map[string]any{"workspace_id": ws, "query": needle}); !strings.Contains(fmt.Sprint(found), needle) {
		t.Fatalf("a cannot explore its own stored result %q: %v", ws, found)
	}
	res, err := csb.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "result_search_in_text",
		Arguments: map[string]any{"workspace_id": ws, "query": needle}})
	if err == nil && (!res.IsError || strings.Contains(text(res), needle)) {
		t.Errorf("b explores a's stored result: %s", text(res))
	}
}

func TestHTTPRefusals(t *testing.T) {
	f := newFixture(t, "memory")
	srv := httpServer(t, f)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(token, session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = res.Body.Close() })
		return res
	}
	for _, token := range []string{"", "ctxk_wrong"} {
		res := post(token, "", initialize)
		var body struct {
			Error vaultauth.Error `json:"error"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); res.StatusCode != http.StatusUnauthorized || err != nil || body.Error.Code != "unauthenticated" {
			t.Errorf("token %q: %s, %+v (%v); want 401 unauthenticated", token, res.Status, body, err)
		}
	}
	res := post(f.e.Tokens["a"], "", initialize)
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize as a: %s, session %q", res.Status, session)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_vaults","arguments":{}}}`
	if res := post(f.e.Tokens["b"], session, list); res.StatusCode != http.StatusForbidden {
		t.Errorf("b using a's session: %s, want 403", res.Status)
	}
	if res := post(f.e.Tokens[vault.OwnerName], session, list); res.StatusCode != http.StatusForbidden {
		t.Errorf("the owner using a's session: %s, want 403", res.Status)
	}
}

// Tools answer at once: a server is usable right after it is built, with
// nothing loaded beforehand (no embedder is opened for a lexical vault).
func TestAnswersAtOnce(t *testing.T) {
	f := newFixture(t, "memory")
	c := f.session(t, "a")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_vaults"}); err != nil {
		t.Fatal(err)
	}
}

// A global vault in its default folder, $CTXKIT_HOME/vaults/NAME, is
// created and used through the tools like any other (the service once
// refused the folder, and every document in it, as inside ctxkit's data
// directory).
func TestGlobalVaultInItsDefaultFolder(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{Scheme: "sqlite"})
	info, err := e.Svc.CreateVault(t.Context(), vault.Owner(), vault.CreateVaultRequest{Name: "g", Scope: vault.Global})
	if err != nil {
		t.Fatalf("create a global vault in its default folder: %v", err)
	}
	if want := filepath.Join(e.Home, "vaults", "g"); info.Path != want {
		t.Errorf("the global vault's folder is %s, want %s", info.Path, want)
	}
	c := connect(t, NewServer(e.Svc, Options{Caller: vault.Owner()}))
	c.call(t, "write_doc", map[string]any{"vault": "g", "path": "a.md", "content": docText})
	if rd := c.call(t, "read_doc", map[string]any{"vault": "g", "path": "a.md"}); !strings.Contains(fmt.Sprint(rd["text"]), "Tuesdays") {
		t.Errorf("read_doc = %v", rd)
	}
	if p := names(c.call(t, "query", map[string]any{"vault": "g", "query": "Tuesdays"}), "results", "path"); !slices.Equal(p, []string{"a.md"}) {
		t.Errorf("query = %v", p)
	}
}

// TestRecheckRefusesARevokedAgent: a long-lived stdio server asks Recheck
// before every tool call, so an agent revoked while it runs is refused at
// once (it kept acting as long as the process lived).
func TestRecheckRefusesARevokedAgent(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{})
	ctx := t.Context()
	a := e.Agent(t, "a")
	e.Vault(t, vault.CreateVaultRequest{Name: "notes"})
	recheck := func(ctx context.Context) error {
		_, err := e.Svc.Authenticate(ctx, e.Tokens["a"])
		return err
	}
	c := connect(t, NewServer(e.Svc, Options{Caller: a, Recheck: recheck}))
	c.call(t, "list_vaults", map[string]any{})
	if err := e.Svc.RevokeAgent(ctx, vault.Owner(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := c.callErr(t, "list_vaults", map[string]any{}); got.Code != string(vault.ClassUnauthenticated) {
		t.Errorf("after the revocation: %+v", got)
	}
}
