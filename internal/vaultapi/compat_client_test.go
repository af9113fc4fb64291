package vaultapi

// A client written the way CtxVault's users write theirs (its README, its
// examples, its tests): CtxVault's request fields, the X-CtxVault-Agent
// header, answers read by CtxVault's field names. It runs over a real
// HTTP server with the real service (SQLite in a temporary folder), in
// both auth modes: with a token (ctxkit's default; the one thing such a
// client must add) and with --ctxvault-auth header (nothing added).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/embed/bert/berttest"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// cvServer is a vault server with the /ctxvault routes in one auth mode,
// agents my-agent and other-agent, over a real listener.
type cvServer struct {
	t    *testing.T
	v    *vaulttest.Env
	url  string
	mode CtxVaultAuth
}

func newCVServer(t *testing.T, mode CtxVaultAuth) *cvServer {
	t.Helper()
	v := vaulttest.New(t, vaulttest.Options{})
	v.Agent(t, "my-agent")
	v.Agent(t, "other-agent")
	srv := httptest.NewServer(New(v.Svc, Options{Auth: vaultauth.New(v.Svc, nil), CtxVaultAuth: mode, Logger: slog.New(failOnError{t})}))
	t.Cleanup(srv.Close)
	return &cvServer{t: t, v: v, url: srv.URL + "/ctxvault", mode: mode}
}

// client is a CtxVault client that names agent in X-CtxVault-Agent (none
// for ""). In token mode it also sends that agent's token, or the owner's
// for no agent; in header mode nothing but what CtxVault's clients send.
func (s *cvServer) client(agent string) *cvClient {
	c := &cvClient{t: s.t, base: s.url, agent: agent}
	if s.mode == CtxVaultToken {
		c.token = s.v.Tokens[vault.OwnerName]
		if agent != "" {
			c.token = s.v.Tokens[agent]
		}
	}
	return c
}

// cvClient sends CtxVault's requests.
type cvClient struct {
	t            *testing.T
	base         string
	agent, token string
}

// cvAnswer is an answer: its status and JSON body.
type cvAnswer struct {
	status int
	body   []byte
}

// obj is the answer's JSON object.
func (a cvAnswer) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %s", a.status, a.body)
	}
	return m
}

// send calls path (under /ctxvault) with body as JSON (a string is sent
// as is); params make the query string.
func (c *cvClient) send(method, path string, params url.Values, body any) cvAnswer {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	u := c.base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, u, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.agent != "" {
		req.Header.Set("X-CtxVault-Agent", c.agent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return cvAnswer{status: res.StatusCode, body: data}
}

// ok calls a route and wants 200.
func (c *cvClient) ok(method, path string, params url.Values, body any) cvAnswer {
	c.t.Helper()
	a := c.send(method, path, params, body)
	if a.status != http.StatusOK {
		c.t.Fatalf("%s %s %v: %d: %s", method, path, body, a.status, a.body)
	}
	return a
}

// vp is the vault_name query string of a GET or DELETE.
func vp(name string, kv ...string) url.Values {
	v := url.Values{"vault_name": {name}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// cvSchemas are CtxVault's response models as JSON types, transcribed
// from its schemas (testdata/ctxvault/schemas.json).
func cvSchemas(t *testing.T) map[string]map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "ctxvault", "schemas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for k, v := range raw {
		if strings.HasPrefix(k, "_") {
			continue
		}
		var m map[string]string
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[k] = m
	}
	return out
}

// jsonType is the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

// checkShape checks that m has every field of CtxVault's model with one
// of its types.
func checkShape(t *testing.T, schemas map[string]map[string]string, model string, m map[string]any) {
	t.Helper()
	fields, ok := schemas[model]
	if !ok {
		t.Fatalf("no model %s", model)
	}
	for f, types := range fields {
		v, ok := m[f]
		if !ok {
			t.Errorf("%s: no field %s: %v", model, f, m)
			continue
		}
		if !slices.Contains(strings.Split(types, "|"), jsonType(v)) {
			t.Errorf("%s.%s is a %s, CtxVault's is %s: %v", model, f, jsonType(v), types, v)
		}
	}
}

// modes runs f in both auth modes.
func modes(t *testing.T, f func(t *testing.T, s *cvServer)) {
	for _, mode := range []CtxVaultAuth{CtxVaultToken, CtxVaultHeader} {
		t.Run(mode.String(), func(t *testing.T) { f(t, newCVServer(t, mode)) })
	}
}

// TestCtxVaultQuickStart runs the README's Agent Integration script: create
// a vault, write what the agent learned, query it days later with top_k
// in other words than the note's, ground the model in the texts.
//
// The builtin model is the test's own (berttest.ConceptModel: words of one
// meaning share a direction by construction), installed where the default
// goes, so the new vault is semantic by default as CtxVault's are. It shows
// the path from /write to a meaning-based /query works, not the quality of
// the real all-MiniLM-L6-v2, which cannot be loaded here.
func TestCtxVaultQuickStart(t *testing.T) {
	sch := cvSchemas(t)
	modes(t, func(t *testing.T, s *cvServer) {
		if err := berttest.ConceptModel(filepath.Join(s.v.Svc.ModelsDir(), embed.DefaultBuiltinModel), berttest.QuickStartConcepts()); err != nil {
			t.Fatal(err)
		}
		c := s.client("")
		// 1. Create a vault.
		initAns := c.ok("POST", "/init", nil, map[string]any{"vault_name": "agent-memory"}).obj(t)
		checkShape(t, sch, "InitResponse", initAns)
		// 2. The agent writes what it learns (filename, no overwrite: as
		// the README posts it).
		w := c.ok("POST", "/write", nil, map[string]any{"vault_name": "agent-memory", "filename": "session_monday.md",
			"content": "Discussed Q2 budget: need to cut cloud costs by 15%. Competitor pricing is 20% lower than ours."}).obj(t)
		checkShape(t, sch, "WriteDocResponse", w)
		if w["file_path"] != "session_monday.md" {
			t.Errorf("write: %v", w)
		}
		// Other notes, so that a model that knew nothing would rank the
		// Monday note first only by chance.
		for path, text := range map[string]string{"recipe.md": "Lemon cake: bake it with sugar and a lemon.",
			"sports.md": "The football team scored a goal in the match."} {
			c.ok("POST", "/write", nil, map[string]any{"vault_name": "agent-memory", "filename": path, "content": text})
		}
		// 3. Days later, a query with top_k, in words the note never uses.
		res := c.ok("POST", "/query", nil, map[string]any{"vault_name": "agent-memory", "query": "financial constraints from last week", "top_k": 3}).obj(t)
		checkShape(t, sch, "QueryResponse", res)
		results := list(t, res, "results")
		if len(results) == 0 || len(results) > 3 {
			t.Fatalf("top_k 3: %d results", len(results))
		}
		if first := results[0]; first["source"] != "session_monday.md" {
			t.Errorf("the first result is %v, want the Monday note", first)
		}
		var texts []string
		for _, r := range results {
			checkShape(t, sch, "ChunkMatch", r)
			texts = append(texts, r["text"].(string))
		}
		// 4. The context the model is grounded in.
		if ctx := strings.Join(texts, "\n"); !strings.Contains(ctx, "15%") || !strings.Contains(ctx, "20% lower") {
			t.Errorf("context: %q", ctx)
		}
		// The vault is where the README says, and listed.
		vs := c.ok("GET", "/vaults", nil, nil).obj(t)
		checkShape(t, sch, "ListVaultsResponse", vs)
		found := false
		for _, v := range list(t, vs, "vaults") {
			checkShape(t, sch, "VaultInfo", v)
			found = found || v["name"] == "agent-memory" && v["type"] == "semantic" && v["restricted"] == false
		}
		if !found {
			t.Errorf("vaults: %v", vs)
		}
		// Creating it again is CtxVault's "already initialized" (400).
		again := c.send("POST", "/init", nil, map[string]any{"vault_name": "agent-memory"})
		if d := again.obj(t)["detail"]; again.status != 400 || !strings.Contains(fmt.Sprint(d), "already initialized") {
			t.Errorf("init again: %d %s", again.status, again.body)
		}
	})
}

// TestCtxVaultAPIReference calls every route of the README's API
// reference (and the episodic routes) with its documented fields, on a
// public vault and, with the header, on a restricted one.
func TestCtxVaultAPIReference(t *testing.T) {
	sch := cvSchemas(t)
	modes(t, func(t *testing.T, s *cvServer) {
		s.v.Vault(t, vault.CreateVaultRequest{Name: "my-vault", Restricted: true})
		s.v.Attach(t, "my-vault", "my-agent", false)
		s.v.Vault(t, vault.CreateVaultRequest{Name: "comms-skills", Type: vault.Skill})
		dir := filepath.Join(s.v.Root, ".ctxkit", "vaults", "my-vault")
		if err := os.WriteFile(filepath.Join(dir, "attention.md"), []byte("# Attention\n\nAttention mechanisms weigh every token against the others."), 0o644); err != nil {
			t.Fatal(err)
		}
		c := s.client("my-agent")

		// Shared endpoints: /index (an absolute path inside the vault too) and /vaults.
		idx := c.ok("PUT", "/index", nil, map[string]any{"vault_name": "my-vault"}).obj(t)
		checkShape(t, sch, "IndexResponse", idx)
		if fmt.Sprint(idx["indexed_files"]) != "[attention.md]" {
			t.Errorf("index: %v", idx)
		}
		c.ok("PUT", "/index", nil, map[string]any{"vault_name": "my-vault", "file_path": filepath.Join(dir, "attention.md")})
		vs := c.ok("GET", "/vaults", nil, nil).obj(t)
		for _, v := range list(t, vs, "vaults") {
			checkShape(t, sch, "VaultInfo", v)
		}

		// The README's authorized query, with top_k.
		q := c.ok("POST", "/query", nil, map[string]any{"vault_name": "my-vault", "query": "attention mechanisms", "top_k": 3}).obj(t)
		hits := list(t, q, "results")
		if len(hits) != 1 || hits[0]["source"] != "attention.md" || hits[0]["doc_id"] != vault.DocID("attention.md") {
			t.Fatalf("query: %v", q)
		}
		checkShape(t, sch, "ChunkMatch", hits[0])

		// Semantic vault endpoints.
		w := c.ok("POST", "/docs/write", nil, map[string]any{"vault_name": "my-vault", "file_path": filepath.Join(dir, "notes", "week.md"),
			"content": "Weekly notes: the release slipped a week.", "overwrite": false,
			"agent_metadata": map[string]any{"generated_by": "my-agent", "timestamp": "2026-03-15T10:30:00", "topic": "release"}}).obj(t)
		checkShape(t, sch, "WriteDocResponse", w)
		if w["file_path"] != filepath.Join(dir, "notes", "week.md") {
			t.Errorf("an absolute path is echoed as given: %v", w)
		}
		docs := c.ok("GET", "/docs", vp("my-vault"), nil).obj(t)
		checkShape(t, sch, "ListDocsResponse", docs)
		var sources []string
		for _, d := range list(t, docs, "documents") {
			checkShape(t, sch, "SemanticDocumentInfo", d)
			sources = append(sources, d["source"].(string))
		}
		slices.Sort(sources)
		if fmt.Sprint(sources) != "[attention.md notes/week.md]" {
			t.Errorf("docs: %v", sources)
		}
		content := c.ok("GET", "/docs/"+vault.DocID("notes/week.md")+"/content", vp("my-vault"), nil).obj(t)
		checkShape(t, sch, "DocContentResponse", content)
		checkShape(t, sch, "DocumentContent", content["document"].(map[string]any))
		q = c.ok("POST", "/query", nil, map[string]any{"vault_name": "my-vault", "query": "release slipped", "n_results": 5, "filters": map[string]any{"topic": "release"}}).obj(t)
		if hits := list(t, q, "results"); len(hits) != 1 || hits[0]["generated_by"] != "my-agent" || hits[0]["topic"] != "release" {
			t.Errorf("filtered query: %v", q)
		}
		re := c.ok("PUT", "/reindex", nil, map[string]any{"vault_name": "my-vault", "file_path": "notes"}).obj(t)
		checkShape(t, sch, "ReindexResponse", re)
		del := c.ok("DELETE", "/delete", vp("my-vault", "file_path", filepath.Join(dir, "notes", "week.md")), nil).obj(t)
		checkShape(t, sch, "DeleteResponse", del)
		if fmt.Sprint(del["deleted_files"]) != "[notes/week.md]" {
			t.Errorf("delete: %v", del)
		}

		// Skill vault endpoints, with the README's skill.
		sw := c.ok("POST", "/skills/write", nil, map[string]any{"vault_name": "comms-skills", "skill_name": "weekly-engineering-update",
			"description":  "How to write the weekly engineering status update for stakeholders",
			"instructions": "You are writing the weekly engineering update...\n\n## Hard rules\n- Never exceed 250 words."}).obj(t)
		checkShape(t, sch, "WriteSkillResponse", sw)
		sl := c.ok("GET", "/skills", vp("comms-skills"), nil).obj(t)
		checkShape(t, sch, "ListSkillsResponse", sl)
		for _, sk := range list(t, sl, "skills") {
			checkShape(t, sch, "SkillDocumentInfo", sk)
		}
		sk := c.ok("GET", "/skill", vp("comms-skills", "skill_name", "weekly-engineering-update"), nil).obj(t)
		checkShape(t, sch, "SkillResponse", sk)
		checkShape(t, sch, "SkillOutput", sk["skill"].(map[string]any))

		// Without an attached agent, the restricted vault is 403 (with
		// the token of another agent in token mode; anonymous or naming
		// another agent in header mode).
		for _, other := range []*cvClient{s.client("other-agent"), {t: t, base: s.url, agent: "stranger"}, {t: t, base: s.url}} {
			if s.mode == CtxVaultToken && other.token == "" {
				continue
			}
			a := other.send("POST", "/query", nil, map[string]any{"vault_name": "my-vault", "query": "attention", "top_k": 3})
			if a.status != 403 || !strings.Contains(fmt.Sprint(a.obj(t)["detail"]), "not authorized to access vault 'my-vault'") {
				t.Errorf("agent %q on a restricted vault: %d %s", other.agent, a.status, a.body)
			}
		}
	})
}

// TestCtxVaultEpisodicWalkthrough runs examples/06-episodic-memory: one
// account over six months, written, superseded, invalidated, and read
// back as it holds now, as it held in April, as the vault believed it
// before the June changes, and as a history.
func TestCtxVaultEpisodicWalkthrough(t *testing.T) {
	const (
		march = "2026-03-02T09:00:00+00:00"
		april = "2026-04-10T00:00:00+00:00"
		june  = "2026-06-15T09:00:00+00:00"
		vname = "account-memory"
	)
	sch := cvSchemas(t)
	modes(t, func(t *testing.T, s *cvServer) {
		s.v.Vault(t, vault.CreateVaultRequest{Name: vname, Type: vault.Episodic})
		c := s.client("")
		write := func(content string, entities []string, salience float64, validFrom string) map[string]any {
			t.Helper()
			r := c.ok("POST", "/episodes/write", nil, map[string]any{"vault_name": vname, "content": content, "entities": entities,
				"source": "account_assistant", "salience": salience, "valid_from": validFrom}).obj(t)
			checkShape(t, sch, "EpisodeResponse", r)
			ep := r["episode"].(map[string]any)
			checkShape(t, sch, "Episode", ep)
			if ep["valid_from"] != validFrom {
				t.Errorf("valid_from %v, given %s", ep["valid_from"], validFrom)
			}
			return ep
		}
		query := func(body map[string]any) []string {
			t.Helper()
			body["vault_name"] = vname
			r := c.ok("POST", "/episodes/query", nil, body).obj(t)
			checkShape(t, sch, "QueryEpisodesResponse", r)
			var got []string
			for _, m := range list(t, r, "results") {
				checkShape(t, sch, "EpisodeMatch", m)
				got = append(got, m["content"].(string))
			}
			slices.Sort(got)
			return got
		}

		// Session 1, March.
		ids := map[string]string{}
		var lastMarch map[string]any
		for _, f := range []struct {
			content  string
			entities []string
			salience float64
		}{
			{"Sarah Klein is the main contact for the Nordwind account", []string{"Nordwind", "Sarah Klein"}, 0.9},
			{"Nordwind is on the Starter plan", []string{"Nordwind"}, 0.7},
			{"Nordwind is evaluating a competitor for the Q3 renewal", []string{"Nordwind"}, 0.8},
			{"Nordwind onboarding is blocked on SSO configuration", []string{"Nordwind"}, 0.6},
		} {
			lastMarch = write(f.content, f.entities, f.salience, march)
			ids[f.content] = lastMarch["id"].(string)
		}

		// Session 2, June: two supersessions, an invalidation, a new fact.
		supersede := func(id, content string) map[string]any {
			t.Helper()
			r := c.ok("POST", "/episodes/"+id+"/supersede", nil, map[string]any{"vault_name": vname, "content": content,
				"source": "account_assistant", "valid_from": june}).obj(t)
			ep := r["episode"].(map[string]any)
			checkShape(t, sch, "Episode", ep)
			if ep["valid_from"] != june || ep["valid_to"] != nil {
				t.Errorf("successor %v", ep)
			}
			return ep
		}
		contact := supersede(ids["Sarah Klein is the main contact for the Nordwind account"], "Marco Rossi is the main contact for the Nordwind account")
		if fmt.Sprint(contact["entities"]) != "[Nordwind Sarah Klein]" || contact["salience"] != 0.9 {
			t.Errorf("a successor inherits entities and salience: %v", contact)
		}
		supersede(ids["Nordwind is on the Starter plan"], "Nordwind is on the Pro plan")
		inv := c.ok("POST", "/episodes/"+ids["Nordwind is evaluating a competitor for the Q3 renewal"]+"/invalidate", nil,
			map[string]any{"vault_name": vname, "valid_to": june, "reason": "renewed with us instead"}).obj(t)
		ie := inv["episode"].(map[string]any)
		checkShape(t, sch, "Episode", ie)
		if ie["valid_to"] != june || ie["invalidated_at"] == nil || ie["metadata"].(map[string]any)["invalidation_reason"] != "renewed with us instead" {
			t.Errorf("invalidated: %v", ie)
		}
		qbr := write("Nordwind asked for a quarterly business review in September", []string{"Nordwind"}, 0.75, june)
		if qbr["salience"] != 0.75 || qbr["confidence"] != 1.0 || qbr["source"] != "account_assistant" || qbr["valid_to"] != nil {
			t.Errorf("the README's inspected episode: %v", qbr)
		}

		// Session 3, September: what holds now, in April, and the history.
		now := query(map[string]any{"entities": []string{"Nordwind"}, "valid_at": nil, "order_by": "salience", "limit": 10})
		if want := "[Marco Rossi is the main contact for the Nordwind account Nordwind asked for a quarterly business review in September Nordwind is on the Pro plan Nordwind onboarding is blocked on SSO configuration]"; fmt.Sprint(now) != want {
			t.Errorf("now: %v", now)
		}
		then := query(map[string]any{"entities": []string{"Nordwind"}, "valid_at": april, "order_by": "salience", "limit": 10})
		if want := "[Nordwind is evaluating a competitor for the Q3 renewal Nordwind is on the Starter plan Nordwind onboarding is blocked on SSO configuration Sarah Klein is the main contact for the Nordwind account]"; fmt.Sprint(then) != want {
			t.Errorf("April 10: %v", then)
		}
		// What the vault believed once March was written, before June's
		// corrections were recorded.
		believed := query(map[string]any{"entities": []string{"Nordwind"}, "known_at": lastMarch["recorded_at"], "order_by": "recency"})
		if want := "[Nordwind is evaluating a competitor for the Q3 renewal Nordwind is on the Starter plan Nordwind onboarding is blocked on SSO configuration Sarah Klein is the main contact for the Nordwind account]"; fmt.Sprint(believed) != want {
			t.Errorf("known_at %v: %v", lastMarch["recorded_at"], believed)
		}
		h := c.ok("GET", "/episodes/"+contact["id"].(string)+"/history", vp(vname), nil).obj(t)
		checkShape(t, sch, "EpisodeHistoryResponse", h)
		var lines []string
		for _, v := range list(t, h, "chain") {
			checkShape(t, sch, "Episode", v)
			lines = append(lines, fmt.Sprintf("%s: %v to %v", v["content"], v["valid_from"], v["valid_to"]))
		}
		if want := []string{"Sarah Klein is the main contact for the Nordwind account: " + march + " to " + june,
			"Marco Rossi is the main contact for the Nordwind account: " + june + " to <nil>"}; !slices.Equal(lines, want) {
			t.Errorf("history:\n%s", strings.Join(lines, "\n"))
		}
		st := c.ok("GET", "/episodes", vp(vname), nil).obj(t)
		checkShape(t, sch, "EpisodeStatsResponse", st)
		// The README prints "6 episodes, open 4, closed 2", but its own
		// scenario makes seven (four, two successors, the review), three of
		// them closed, and CtxVault's count_episodes counts them so.
		if fmt.Sprint(st["total"], st["open"], st["closed"]) != "7 4 3" {
			t.Errorf("stats: %v", st)
		}
		g := c.ok("GET", "/episodes/"+qbr["id"].(string), vp(vname), nil).obj(t)
		checkShape(t, sch, "EpisodeResponse", g)
	})
}
