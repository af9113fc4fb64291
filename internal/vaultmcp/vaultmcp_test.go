package vaultmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// fixture is a registry with agents a and b, each attached to a restricted
// vault of each type (a read-only grant for a on b-ro), and public vaults.
type fixture struct {
	r      *vault.Registry
	tokens map[string]string // agent → token, and vault.Owner
}

// The fixture's vaults.
const (
	pubDocs     = "notes"
	pubEpisodes = "events"
	pubSkills   = "howto"
	bOnly       = "b-notes"   // restricted semantic, b only
	bEpisodes   = "b-events"  // restricted episodic, b only
	bSkills     = "b-howto"   // restricted skill, b only
	aReadOnly   = "shared-ro" // restricted semantic, a read-only, b read-write
	aEpisodes   = "a-events"  // restricted episodic, a only
	needle      = "quartz heron"
	docText     = "# Deploys\n\nWe deploy on Tuesdays after the review.\n"
	bSecretText = "# Secret\n\nThe launch code is " + needle + ".\n"
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	r, err := vault.Open(vault.Options{DataDir: t.TempDir(), Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{r: r, tokens: map[string]string{}}
	for _, a := range []string{"a", "b"} {
		tok, err := r.CreateAgent(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		f.tokens[a] = tok
	}
	if f.tokens[vault.Owner], err = r.OwnerToken(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name string
		typ  vault.Type
	}{{pubDocs, vault.Semantic}, {pubEpisodes, vault.Episodic}, {pubSkills, vault.Skill},
		{bOnly, vault.Semantic}, {bEpisodes, vault.Episodic}, {bSkills, vault.Skill},
		{aReadOnly, vault.Semantic}, {aEpisodes, vault.Episodic}} {
		if _, err := r.Init(ctx, vault.InitOptions{Name: v.name, Type: v.typ}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []struct {
		vault, agent string
		ro           bool
	}{{bOnly, "b", false}, {bEpisodes, "b", false}, {bSkills, "b", false}, {aReadOnly, "a", true},
		{aReadOnly, "b", false}, {aEpisodes, "a", false}} {
		if _, err := r.Attach(ctx, g.vault, g.agent, g.ro); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []struct{ vault, path, text string }{
		{pubDocs, "deploys.md", docText}, {bOnly, "secret.md", bSecretText}, {aReadOnly, "shared.md", docText}} {
		v, err := r.Get(ctx, d.vault)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Write(ctx, vault.WriteOptions{Agent: vault.Owner, Path: d.path, Content: []byte(d.text)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{pubSkills, bSkills} {
		v, _ := r.Get(ctx, name)
		if _, err := v.WriteSkill(ctx, vault.WriteSkillOptions{Agent: vault.Owner, Name: "release", Description: "How to cut a release",
			Instructions: "1. Tag.\n2. Push.\n"}); err != nil {
			t.Fatal(err)
		}
	}
	v, _ := r.Get(ctx, bEpisodes)
	m, err := v.OpenEpisodes(ctx, vault.Owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Write(ctx, episodicWrite("b's plan is "+needle)); err != nil {
		t.Fatal(err)
	}
	return f
}

// connect serves srv in memory and returns a client session.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
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
	return cs
}

func (f *fixture) session(t *testing.T, agent string) *mcp.ClientSession {
	t.Helper()
	return connect(t, NewServer(f.r, Options{Agent: agent}))
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

// call calls a tool that must succeed and returns its structured content.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", tool, args, text(res))
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, b, err)
	}
	return out
}

// callErr calls a tool that must fail with a tool error and returns its text.
func callErr(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v; want a tool error", tool, err)
	}
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded; want a tool error: %s", tool, args, text(res))
	}
	return text(res)
}

var allTools = []string{"list_vaults", "query", "write_doc", "list_docs", "read_doc", "list_skills", "read_skill",
	"write_skill", "write_episode", "query_episodes", "get_episode", "episode_history", "invalidate_episode",
	"supersede_episode", "revise_episode", "confirm_episode", "dispute_episodes", "list_entities"}

func TestToolsList(t *testing.T) {
	f := newFixture(t)
	cs := f.session(t, "a")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	for _, name := range append(slices.Clone(allTools), "result_search_in_text", "result_read_page") {
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
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "list_vaults") || !strings.Contains(ins, "result_") {
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

func TestToolsHappyPath(t *testing.T) {
	f := newFixture(t)
	cs := f.session(t, "a")

	vs := names(call(t, cs, "list_vaults", nil), "vaults", "name")
	want := []string{aEpisodes, pubEpisodes, pubSkills, pubDocs, aReadOnly}
	slices.Sort(vs)
	slices.Sort(want)
	if !slices.Equal(vs, want) {
		t.Errorf("list_vaults = %v, want %v", vs, want)
	}

	q := call(t, cs, "query", map[string]any{"vault": pubDocs, "query": "deploy Tuesdays"})
	if p := names(q, "results", "path"); len(p) == 0 || p[0] != "deploys.md" {
		t.Errorf("query found %v", q)
	}
	call(t, cs, "write_doc", map[string]any{"vault": pubDocs, "path": "new/idea.md", "content": "# Idea\n\nUse a zeppelin.\n"})
	if p := names(call(t, cs, "query", map[string]any{"vault": pubDocs, "query": "zeppelin"}), "results", "path"); !slices.Equal(p, []string{"new/idea.md"}) {
		t.Errorf("the written document is not found at once: %v", p)
	}
	docs := call(t, cs, "list_docs", map[string]any{"vault": pubDocs})
	if p := names(docs, "documents", "path"); !slices.Contains(p, "new/idea.md") || !slices.Contains(p, "deploys.md") {
		t.Errorf("list_docs = %v", p)
	}
	if d := docs["documents"].([]any); !strings.Contains(fmt.Sprint(d), "generated_by:a") {
		t.Errorf("write_doc did not record generated_by: %v", d)
	}
	if rd := call(t, cs, "read_doc", map[string]any{"vault": pubDocs, "path": "deploys.md"}); !strings.Contains(rd["text"].(string), "Tuesdays") || rd["path"] != "deploys.md" {
		t.Errorf("read_doc = %v", rd)
	}

	if s := names(call(t, cs, "list_skills", map[string]any{"vault": pubSkills}), "skills", "name"); !slices.Equal(s, []string{"release"}) {
		t.Errorf("list_skills = %v", s)
	}
	if sk := call(t, cs, "read_skill", map[string]any{"vault": pubSkills, "name": "release"}); !strings.Contains(fmt.Sprint(sk["skill"]), "Tag.") {
		t.Errorf("read_skill = %v", sk)
	}
	call(t, cs, "write_skill", map[string]any{"vault": pubSkills, "name": "triage", "description": "Sort new issues",
		"instructions": "Label them."})
	if s := names(call(t, cs, "list_skills", map[string]any{"vault": pubSkills}), "skills", "name"); !slices.Equal(s, []string{"release", "triage"}) {
		t.Errorf("list_skills after write_skill = %v", s)
	}

	// Episodes: write, hints, query, confirm, supersede, revise, dispute,
	// invalidate, history, entities.
	ep := func(out map[string]any) map[string]any { return out["episode"].(map[string]any) }
	w := call(t, cs, "write_episode", map[string]any{"vault": pubEpisodes, "content": "Alice leads the payments team",
		"entities": []string{"Alice", "payments"}, "valid_from": "2026-01-01"})
	alice := ep(w)["id"].(string)
	if ep(w)["source"] != "a" || ep(w)["valid_from"] != "2026-01-01T00:00:00.000000Z" {
		t.Errorf("write_episode = %v", w)
	}
	dry := call(t, cs, "write_episode", map[string]any{"vault": pubEpisodes, "content": "Alice leads the payments team",
		"entities": []string{"alice"}, "dry_run": true})
	if dry["dry_run"] != true || !strings.Contains(fmt.Sprint(dry["hints"]), "confirm") || dry["advice"] == "" {
		t.Errorf("dry run of the same statement: %v", dry)
	}
	if c := ep(call(t, cs, "confirm_episode", map[string]any{"vault": pubEpisodes, "episode_id": alice})); c["confirmed_count"] != 1.0 {
		t.Errorf("confirm_episode = %v", c)
	}
	if got := ep(call(t, cs, "get_episode", map[string]any{"vault": pubEpisodes, "episode_id": alice})); got["id"] != alice {
		t.Errorf("get_episode = %v", got)
	}
	qe := call(t, cs, "query_episodes", map[string]any{"vault": pubEpisodes, "query": "payments"})
	if ids := names(qe, "results", "id"); !slices.Equal(ids, []string{alice}) || qe["order_by"] != "relevance" {
		t.Errorf("query_episodes = %v", qe)
	}
	sup := call(t, cs, "supersede_episode", map[string]any{"vault": pubEpisodes, "episode_id": alice,
		"content": "Bob leads the payments team", "valid_from": "2026-06-01"})
	bob := ep(sup)["id"].(string)
	if sup["replaced"] != alice || !slices.Equal(anyStrings(ep(sup)["entities"]), []string{"Alice", "payments"}) {
		t.Errorf("supersede_episode (entities inherited) = %v", sup)
	}
	rev := call(t, cs, "revise_episode", map[string]any{"vault": pubEpisodes, "episode_id": bob,
		"content": "Bob leads the payments team", "entities": []string{"Bob", "payments"}})
	bob2 := ep(rev)["id"].(string)
	if ep(rev)["revises"] != bob {
		t.Errorf("revise_episode = %v", rev)
	}
	other := ep(call(t, cs, "write_episode", map[string]any{"vault": pubEpisodes, "content": "Carol leads the payments team"}))["id"].(string)
	d := call(t, cs, "dispute_episodes", map[string]any{"vault": pubEpisodes, "episode_id": bob2, "other_id": other, "note": "who?"})
	if es := d["episodes"].([]any); len(es) != 2 || !strings.Contains(fmt.Sprint(es[0]), other) {
		t.Errorf("dispute_episodes = %v", d)
	}
	if inv := ep(call(t, cs, "invalidate_episode", map[string]any{"vault": pubEpisodes, "episode_id": other, "reason": "wrong"})); inv["state"] != "invalidated" {
		t.Errorf("invalidate_episode = %v", inv)
	}
	h := call(t, cs, "episode_history", map[string]any{"vault": pubEpisodes, "episode_id": bob2})
	if ids := names(h, "chain", "id"); !slices.Equal(ids, []string{alice, bob, bob2}) {
		t.Errorf("episode_history = %v", ids)
	}
	ents := call(t, cs, "list_entities", map[string]any{"vault": pubEpisodes})
	if e := names(ents, "entities", "entity"); !slices.Equal(e, []string{"Bob", "payments"}) {
		t.Errorf("list_entities = %v", ents)
	}
	if past := call(t, cs, "query_episodes", map[string]any{"vault": pubEpisodes, "valid_at": "2026-03-01"}); !slices.Equal(names(past, "results", "id"), []string{alice}) {
		t.Errorf("query_episodes valid_at 2026-03-01 = %v", past)
	}
}

func anyStrings(v any) []string {
	var s []string
	for _, x := range v.([]any) {
		s = append(s, x.(string))
	}
	return s
}

func TestToolErrors(t *testing.T) {
	f := newFixture(t)
	cs := f.session(t, "a")
	id := call(t, cs, "write_episode", map[string]any{"vault": pubEpisodes, "content": "x holds"})["episode"].(map[string]any)["id"].(string)
	call(t, cs, "invalidate_episode", map[string]any{"vault": pubEpisodes, "episode_id": id})
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"query", map[string]any{"vault": "nope", "query": "x"}, `no vault named "nope"; list_vaults`},
		{"query", map[string]any{"vault": pubEpisodes, "query": "x"}, "use write_episode, query_episodes"},
		{"query", map[string]any{"vault": pubDocs, "query": "x", "n_results": 500}, "give 1 to 50"},
		{"query", map[string]any{"vault": pubDocs}, `missing properties: ["query"]); call query again with every required field`},
		{"query", map[string]any{"vault": pubDocs, "query": 3}, "call query again"},
		{"query", map[string]any{"vault": pubDocs, "query": " "}, "query is empty"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": "deploys.md", "content": "x"}, "set overwrite to true"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": "../x.md", "content": "x"}, "relative to the vault"},
		{"write_doc", map[string]any{"vault": pubDocs, "path": "x.exe", "content": "x"}, "fix the arguments"},
		{"write_doc", map[string]any{"vault": aReadOnly, "path": "y.md", "content": "x"}, "read-only for you"},
		{"list_docs", map[string]any{"vault": pubSkills}, "list_skills, read_skill, write_skill"},
		{"read_doc", map[string]any{"vault": pubDocs, "path": "missing.md"}, "list_docs shows"},
		{"read_skill", map[string]any{"vault": pubSkills, "name": "missing"}, "list_skills shows"},
		{"write_skill", map[string]any{"vault": pubSkills, "name": "Bad Name", "description": "d", "instructions": "i"}, "call write_skill again"},
		{"write_skill", map[string]any{"vault": pubSkills, "name": "release", "description": "d", "instructions": "i"}, "set overwrite to true"},
		{"write_episode", map[string]any{"vault": pubEpisodes, "content": "  "}, "call write_episode again"},
		{"write_episode", map[string]any{"vault": pubEpisodes, "content": "c", "valid_from": "yesterday"}, "RFC 3339"},
		{"write_episode", map[string]any{"vault": pubEpisodes, "content": "c", "confidence": 2}, "write_episode again"},
		{"query_episodes", map[string]any{"vault": pubEpisodes, "order_by": "relevance"}, "needs a query"},
		{"query_episodes", map[string]any{"vault": pubEpisodes, "order_by": "best"}, "not one of"},
		{"query_episodes", map[string]any{"vault": pubEpisodes, "weights": map[string]any{"recency": 2}}, "composite only"},
		{"get_episode", map[string]any{"vault": pubEpisodes, "episode_id": "0123"}, "query_episodes (with include_closed"},
		{"get_episode", map[string]any{"vault": pubEpisodes, "episode_id": ""}, "episode_id is empty"},
		{"episode_history", map[string]any{"vault": pubEpisodes, "episode_id": "0123"}, "shows the ids"},
		{"invalidate_episode", map[string]any{"vault": pubEpisodes, "episode_id": id}, "episode_history shows"},
		{"supersede_episode", map[string]any{"vault": pubEpisodes, "episode_id": id, "content": "y"}, "no longer open"},
		{"revise_episode", map[string]any{"vault": pubEpisodes, "episode_id": id, "content": "y", "valid_from": "2026-01-01"}, "use supersede_episode"},
		{"confirm_episode", map[string]any{"vault": pubEpisodes, "episode_id": id}, "no longer open"},
		{"dispute_episodes", map[string]any{"vault": pubEpisodes, "episode_id": id, "other_id": ""}, "other_id is empty"},
		{"list_entities", map[string]any{"vault": pubDocs}, "works on episodic vaults"},
		{"list_entities", map[string]any{"vault": pubEpisodes, "known_at": "soon"}, "is not a time"},
		{"read_doc", map[string]any{"vault": pubDocs}, "path"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			if got := callErr(t, cs, tc.tool, tc.args); !strings.Contains(got, tc.want) {
				t.Errorf("%s(%v) error %q; want it to contain %q", tc.tool, tc.args, got, tc.want)
			}
		})
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
	return []struct {
		tool string
		args map[string]any
	}{
		{"query", v("query", needle)}, {"write_doc", v("path", "leak.md", "content", "x")}, {"list_docs", v()},
		{"read_doc", v("path", "secret.md")}, {"list_skills", v()}, {"read_skill", v("name", "release")},
		{"write_skill", v("name", "leak", "description", "d", "instructions", "i")},
		{"write_episode", v("content", "leak")}, {"query_episodes", v("query", needle)},
		{"get_episode", v("episode_id", "00000000000000000000000000000000")},
		{"episode_history", v("episode_id", "00000000000000000000000000000000")},
		{"invalidate_episode", v("episode_id", "00000000000000000000000000000000")},
		{"supersede_episode", v("episode_id", "00000000000000000000000000000000", "content", "x")},
		{"revise_episode", v("episode_id", "00000000000000000000000000000000", "content", "x")},
		{"confirm_episode", v("episode_id", "00000000000000000000000000000000")},
		{"dispute_episodes", v("episode_id", "00000000000000000000000000000000", "other_id", "00000000000000000000000000000001")},
		{"list_entities", v()},
	}
}

// checkIsolation checks that cs (agent a) learns nothing of b's vaults.
func checkIsolation(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_vaults"})
	if err != nil || res.IsError {
		t.Fatalf("list_vaults: %v %s", err, text(res))
	}
	for _, name := range []string{bOnly, bEpisodes, bSkills} {
		if strings.Contains(text(res), name) {
			t.Errorf("list_vaults shows %s to a: %s", name, text(res))
		}
		for _, c := range isolationCalls(name) {
			got := callErr(t, cs, c.tool, c.args)
			if want := fmt.Sprintf("no vault named %q; list_vaults shows the ones you can use", name); got != want {
				t.Errorf("%s on %s: %q, want %q", c.tool, name, got, want)
			}
			if strings.Contains(got, needle) {
				t.Errorf("%s on %s leaks: %s", c.tool, name, got)
			}
		}
	}
	// A read-only grant reads but does not write.
	call(t, cs, "read_doc", map[string]any{"vault": aReadOnly, "path": "shared.md"})
	for _, c := range []string{"write_doc"} {
		if got := callErr(t, cs, c, map[string]any{"vault": aReadOnly, "path": "w.md", "content": "x"}); !strings.Contains(got, "read-only") {
			t.Errorf("%s through a read-only grant: %q", c, got)
		}
	}
}

// An entity list left out is inherited by the successor; an empty one
// clears them.
func TestSuccessorEntities(t *testing.T) {
	f := newFixture(t)
	cs := f.session(t, "a")
	ep := func(out map[string]any) map[string]any { return out["episode"].(map[string]any) }
	id := ep(call(t, cs, "write_episode", map[string]any{"vault": aEpisodes, "content": "v1", "entities": []string{"X"}}))["id"]
	kept := ep(call(t, cs, "revise_episode", map[string]any{"vault": aEpisodes, "episode_id": id, "content": "v2"}))
	if got := fmt.Sprint(kept["entities"]); got != "[X]" {
		t.Errorf("entities left out: %s, want [X]", got)
	}
	cleared := ep(call(t, cs, "supersede_episode", map[string]any{"vault": aEpisodes, "episode_id": kept["id"], "content": "v3", "entities": []string{}}))
	if got := fmt.Sprint(cleared["entities"]); got != "[]" {
		t.Errorf("entities []: %s, want []", got)
	}
}

func TestIsolation(t *testing.T) {
	f := newFixture(t)
	checkIsolation(t, f.session(t, "a"))
	// Nothing was written into b's vaults, and b still sees its own.
	csb := f.session(t, "b")
	if d := names(call(t, csb, "list_docs", map[string]any{"vault": bOnly}), "documents", "path"); !slices.Equal(d, []string{"secret.md"}) {
		t.Errorf("b's vault holds %v after a's attempts", d)
	}
	if q := call(t, csb, "query_episodes", map[string]any{"vault": bEpisodes, "include_closed": true}); len(q["results"].([]any)) != 1 {
		t.Errorf("b's episodes after a's attempts: %v", q)
	}
	if s := names(call(t, csb, "list_skills", map[string]any{"vault": bSkills}), "skills", "name"); !slices.Equal(s, []string{"release"}) {
		t.Errorf("b's skills after a's attempts: %v", s)
	}
	// The owner sees everything.
	if vs := names(call(t, f.session(t, ""), "list_vaults", nil), "vaults", "name"); len(vs) != 8 {
		t.Errorf("the owner sees %v", vs)
	}
}

func TestLongDocumentIsOffloaded(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	b.WriteString("# Long\n\n")
	for i := range 600 {
		fmt.Fprintf(&b, "Paragraph %d talks about nothing in particular, at some length.\n\n", i)
		if i == 450 {
			b.WriteString("The " + needle + " nests here.\n\n")
		}
	}
	cs := f.session(t, "a")
	call(t, cs, "write_doc", map[string]any{"vault": pubDocs, "path": "long.md", "content": b.String()})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_doc", Arguments: map[string]any{"vault": pubDocs, "path": "long.md"}})
	if err != nil || res.IsError {
		t.Fatalf("read_doc: %v %s", err, text(res))
	}
	got := text(res)
	if len(got) > 4000 || strings.Contains(got, needle) {
		t.Fatalf("read_doc of a %d-char document returned %d chars, not a notice:\n%.500s", b.Len(), len(got), got)
	}
	var n struct {
		StoredResult string `json:"stored_result"`
	}
	if err := json.Unmarshal([]byte(got), &n); err != nil || n.StoredResult == "" {
		t.Fatalf("not a notice: %v\n%s", err, got)
	}
	found, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "result_search_in_text",
		Arguments: map[string]any{"workspace_id": n.StoredResult, "query": needle}})
	if err != nil || found.IsError || !strings.Contains(text(found), needle) {
		t.Fatalf("result_search_in_text: %v %.1000s", err, text(found))
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
	srv := httptest.NewServer(vaultauth.New(f.r).Middleware(HTTPHandler(f.r, Options{})))
	t.Cleanup(srv.Close)
	return srv
}

func httpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestHTTP(t *testing.T) {
	f := newFixture(t)
	srv := httpServer(t, f)
	csa := httpSession(t, srv.URL, f.tokens["a"])
	checkIsolation(t, csa)
	csb := httpSession(t, srv.URL, f.tokens["b"])
	if rd := call(t, csb, "read_doc", map[string]any{"vault": bOnly, "path": "secret.md"}); !strings.Contains(rd["text"].(string), needle) {
		t.Errorf("b reads its own vault: %v", rd)
	}
	w := call(t, csb, "write_episode", map[string]any{"vault": pubEpisodes, "content": "b was here"})
	if w["episode"].(map[string]any)["source"] != "b" {
		t.Errorf("the HTTP session does not act for b: %v", w)
	}
	if vs := names(call(t, httpSession(t, srv.URL, f.tokens[vault.Owner]), "list_vaults", nil), "vaults", "name"); len(vs) != 8 {
		t.Errorf("the owner over HTTP sees %v", vs)
	}
}

func TestHTTPRefusals(t *testing.T) {
	f := newFixture(t)
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
	if res := post("", "", initialize); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %s", res.Status)
	}
	if res := post("ctxk_wrong", "", initialize); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %s", res.Status)
	}
	res := post(f.tokens["a"], "", initialize)
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize as a: %s, session %q", res.Status, session)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_vaults","arguments":{}}}`
	if res := post(f.tokens["b"], session, list); res.StatusCode != http.StatusForbidden {
		t.Errorf("b using a's session: %s, want 403", res.Status)
	}
	if res := post(f.tokens[vault.Owner], session, list); res.StatusCode != http.StatusForbidden {
		t.Errorf("the owner using a's session: %s, want 403", res.Status)
	}
}

// Tools answer at once: a server is usable right after it is built, with
// nothing loaded beforehand (no embedder is opened for a lexical vault).
func TestAnswersAtOnce(t *testing.T) {
	f := newFixture(t)
	cs := f.session(t, "a")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_vaults"}); err != nil {
		t.Fatal(err)
	}
}

func episodicWrite(content string) episodic.Write { return episodic.Write{Content: content} }
