package vaultapi

import (
	"fmt"
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
)

// call calls a compatibility route as who (see send), with the
// X-CtxVault-Agent header when agent is not "". The /v1 schema check does
// not apply: these are the reference's shapes.
func (e *env) call(who, agent, method, path string, body any) resp {
	e.t.Helper()
	_, _, r := e.send(who, agent, method, path, body)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return r
}

// as calls a compatibility route as agent a program written for the
// reference would: its token and its name in the header.
func (e *env) as(who, method, path string, body any) resp {
	e.t.Helper()
	agent := who
	if who == owner {
		agent = ""
	}
	return e.call(who, agent, method, path, body)
}

// q builds a /ctxvault path with a query string.
func q(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return "/ctxvault" + path + "?" + v.Encode()
}

// list is a JSON array field of an answer.
func list(t *testing.T, m map[string]any, key string) []map[string]any {
	t.Helper()
	raw, ok := m[key].([]any)
	if !ok {
		t.Fatalf("%q is not a list: %v", key, m)
	}
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i] = x.(map[string]any)
	}
	return out
}

// strs is a JSON array of strings.
func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestCompatSemantic drives the semantic routes with the bodies of the
// reference's documentation, as agent a with its token and header.
func TestCompatSemantic(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("notes", vault.Semantic)
	e.vault("mem", vault.Episodic)
	const who = "a"

	write := map[string]any{"vault_name": "notes", "file_path": "architecture.md",
		"content": "# Architecture\n\nThe API authenticates with JWT tokens signed by the gateway.", "overwrite": false,
		"agent_metadata": map[string]any{"generated_by": "research-agent", "timestamp": "2026-03-01T10:00:00Z", "artifact_type": "note", "topic": "auth"}}
	r := e.want(e.as(who, "POST", "/ctxvault/docs/write", write), 200, "write").json(t)
	if fmt.Sprint(r) != "map[file_path:architecture.md]" {
		t.Errorf("write answered %v", r)
	}
	e.want(e.as(who, "POST", "/ctxvault/docs/write", write), 409, "write again")
	write["overwrite"] = true
	e.want(e.as(who, "POST", "/ctxvault/docs/write", write), 200, "overwrite")
	e.want(e.as(who, "POST", "/ctxvault/docs/write", map[string]any{"vault_name": "notes", "file_path": "../out.md", "content": "x", "overwrite": false}), 400, "outside")
	e.want(e.as(who, "POST", "/ctxvault/docs/write", map[string]any{"vault_name": "notes", "content": "x", "overwrite": false}), 422, "no file_path")

	// Files put in the folder by hand, one of them broken.
	v, err := e.svc.DescribeVault(t.Context(), vault.Owner(), "notes")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"plain.txt": "Deploys go through the blue-green pipeline.", "broken.docx": "not a zip"} {
		if err := os.WriteFile(filepath.Join(v.Path, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = e.want(e.as(who, "PUT", "/ctxvault/index", map[string]any{"vault_name": "notes"}), 200, "index").json(t)
	if got := fmt.Sprint(strs(r["indexed_files"])); got != "[architecture.md plain.txt]" {
		t.Errorf("indexed_files %s", got)
	}
	if sk := strs(r["skipped_files"]); len(sk) != 1 || !strings.HasPrefix(sk[0], "broken.docx (") {
		t.Errorf("skipped_files %v", sk)
	}
	if err := os.Remove(filepath.Join(v.Path, "broken.docx")); err != nil {
		t.Fatal(err)
	}
	r = e.want(e.as(who, "PUT", "/ctxvault/reindex", map[string]any{"vault_name": "notes", "file_path": "plain.txt"}), 200, "reindex").json(t)
	if got := fmt.Sprint(r["reindexed_files"], r["skipped_files"]); got != "[plain.txt] []" {
		t.Errorf("reindex: %s", got)
	}
	r = e.want(e.as(who, "PUT", "/ctxvault/reindex", map[string]any{"vault_name": "notes"}), 200, "reindex all").json(t)
	if got := fmt.Sprint(r["reindexed_files"]); got != "[architecture.md plain.txt]" {
		t.Errorf("reindex all: %s", got)
	}

	// The README's query, with top_k; n_results too.
	archID := vault.DocID("architecture.md")
	for _, body := range []map[string]any{
		{"vault_name": "notes", "query": "JWT tokens", "top_k": 3},
		{"vault_name": "notes", "query": "JWT tokens", "n_results": 3},
		{"vault_name": "notes", "query": "JWT tokens", "n_results": 3, "top_k": 3},
		{"vault_name": "notes", "query": "JWT tokens"},
		{"vault_name": "notes", "query": "JWT tokens", "filters": map[string]any{"topic": "auth"}},
		{"vault_name": "notes", "query": "JWT tokens", "filters": map[string]any{"generated_by": map[string]any{"$in": []any{"research-agent", "x"}}}},
	} {
		res := list(t, e.want(e.as(who, "POST", "/ctxvault/query", body), 200, "query").json(t), "results")
		if len(res) != 1 {
			t.Fatalf("%v: %d results", body, len(res))
		}
		m := res[0]
		want := map[string]any{"doc_id": archID, "chunk_id": chunkID(archID, 0), "chunk_index": 0.0, "source": "architecture.md",
			"generated_by": "research-agent", "artifact_type": "note", "topic": "auth"}
		for k, w := range want {
			if m[k] != w {
				t.Errorf("%v: %s = %v, want %v", body, k, m[k], w)
			}
		}
		if !strings.Contains(m["text"].(string), "JWT") || m["score"].(float64) <= 0 {
			t.Errorf("%v: %v", body, m)
		}
		if len(m) != 9 {
			t.Errorf("a ChunkMatch has 9 fields: %v", m)
		}
	}
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"vault_name": "notes", "query": "JWT tokens pipeline", "top_k": 1}, "[architecture.md]"},
		{map[string]any{"vault_name": "notes", "query": "JWT pipeline", "n_results": 5}, "[architecture.md plain.txt]"},
		{map[string]any{"vault_name": "notes", "query": "JWT pipeline", "filters": map[string]any{"$or": []any{
			map[string]any{"topic": "deploys"}, map[string]any{"source": "plain.txt"}}}}, "[plain.txt]"},
		{map[string]any{"vault_name": "notes", "query": "JWT pipeline", "filters": map[string]any{"$and": []any{
			map[string]any{"filetype": ".md"}, map[string]any{"doc_id": archID}}}}, "[architecture.md]"},
		{map[string]any{"vault_name": "notes", "query": "JWT pipeline", "filters": map[string]any{"source": map[string]any{"$nin": []any{"plain.txt"}}}}, "[architecture.md]"},
	} {
		var got []string
		for _, m := range list(t, e.want(e.as(who, "POST", "/ctxvault/query", tc.body), 200, "query").json(t), "results") {
			got = append(got, m["source"].(string))
		}
		slices.Sort(got)
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("%v: %s, want %s", tc.body, s, tc.want)
		}
	}
	for _, tc := range []struct {
		body   any
		status int
	}{
		{map[string]any{"vault_name": "notes", "query": "x", "n_results": 2, "top_k": 3}, 422},
		{map[string]any{"vault_name": "notes", "query": "x", "n_results": 0}, 422},
		{map[string]any{"vault_name": "notes", "query": "x", "top_k": 101}, 422},
		{map[string]any{"query": "x"}, 422},
		{`{"vault_name": "notes", "query": 3}`, 422},
		{map[string]any{"vault_name": "notes", "query": " "}, 400},
		{map[string]any{"vault_name": "notes", "query": "x", "filters": map[string]any{"n": map[string]any{"$gt": 1}}}, 400},
		{map[string]any{"vault_name": "notes", "query": "x", "filters": map[string]any{"$not": []any{}}}, 400},
		{map[string]any{"vault_name": "notes", "query": "x", "filters": map[string]any{"$or": "x"}}, 400},
		{map[string]any{"vault_name": "mem", "query": "x"}, 400},              // an episodic vault
		{map[string]any{"vault_name": "nope", "query": "x"}, 400},             // CtxVault's missing vault
		{map[string]any{"vault_name": "notes", "query": "zebra quasar"}, 404}, // CtxVault's "No results found."
		// A key a passage lacks matches no operator: nothing is left.
		{map[string]any{"vault_name": "notes", "query": "JWT pipeline", "filters": map[string]any{"topic": map[string]any{"$ne": "auth"}}}, 404},
	} {
		e.want(e.as(who, "POST", "/ctxvault/query", tc.body), tc.status, fmt.Sprint(tc.body))
	}
	// A field the route does not know is ignored, as FastAPI ignores it.
	e.want(e.as(who, "POST", "/ctxvault/query", map[string]any{"vault_name": "notes", "query": "JWT", "k": 3}), 200, "unknown field")

	// Documents.
	docs := e.want(e.as(who, "GET", q("/docs", "vault_name", "notes"), nil), 200, "docs").json(t)
	if docs["vault_name"] != "notes" {
		t.Errorf("docs: %v", docs)
	}
	var arch map[string]any
	for _, d := range list(t, docs, "documents") {
		if d["source"] == "architecture.md" {
			arch = d
		}
	}
	if fmt.Sprint(arch) != fmt.Sprintf("map[chunks_count:1 doc_id:%s filetype:.md source:architecture.md]", archID) {
		t.Errorf("docs: %v", docs)
	}
	c := e.want(e.as(who, "GET", q("/docs/"+archID+"/content", "vault_name", "notes"), nil), 200, "content").json(t)
	d := c["document"].(map[string]any)
	if c["vault_name"] != "notes" || d["doc_id"] != archID || !strings.Contains(d["content"].(string), "JWT tokens") ||
		d["reconstructed"] != false || d["warning"] != nil || len(d["reconstructed_text_hash"].(string)) != 64 || d["indexed_at"] == "" {
		t.Errorf("content: %v", c)
	}
	e.want(e.as(who, "GET", q("/docs/"+vault.DocID("nope.md")+"/content", "vault_name", "notes"), nil), 404, "no such doc")
	e.want(e.as(who, "GET", "/ctxvault/docs", nil), 422, "no vault_name")
	e.want(e.as(who, "GET", q("/docs", "vault_name", "notes", "colour", "red"), nil), 200, "unknown parameter")

	// Delete.
	r = e.want(e.as(who, "DELETE", q("/delete", "vault_name", "notes", "file_path", "plain.txt"), nil), 200, "delete").json(t)
	if got := fmt.Sprint(r["deleted_files"], r["skipped_files"]); got != "[plain.txt] []" {
		t.Errorf("delete: %s", got)
	}
	e.want(e.as(who, "DELETE", q("/delete", "vault_name", "notes", "file_path", "plain.txt"), nil), 404, "delete again")
	e.want(e.as(who, "DELETE", q("/delete", "vault_name", "notes"), nil), 400, "delete without file_path")
	if n := len(list(t, e.want(e.as(who, "GET", q("/docs", "vault_name", "notes"), nil), 200, "docs").json(t), "documents")); n != 1 {
		t.Errorf("%d documents after the delete", n)
	}

	// Vaults.
	vs := list(t, e.want(e.as(who, "GET", "/ctxvault/vaults", nil), 200, "vaults").json(t), "vaults")
	if len(vs) != 2 {
		t.Fatalf("vaults: %v", vs)
	}
	// An agent learns nothing of the owner's folders: vault_path is
	// empty for it, and the owner's only.
	for _, v := range vs {
		if len(v) != 6 || v["scope"] != "local" || v["vault_path"] != "" || v["restricted"] != false || fmt.Sprint(v["allowed_agents"]) != "[]" {
			t.Errorf("vault %v", v)
		}
	}
	for _, v := range list(t, e.want(e.as(owner, "GET", "/ctxvault/vaults", nil), 200, "vaults").json(t), "vaults") {
		if want := filepath.Join(e.v.Root, ".ctxkit", "vaults", v["name"].(string)); v["vault_path"] != want {
			t.Errorf("the owner sees vault_path %v, want %s", v["vault_path"], want)
		}
	}
	// Unknown routes and methods answer in JSON, once authenticated.
	e.want(e.as(who, "GET", "/ctxvault/nothing", nil), 404, "no such route")
	e.want(e.as(who, "GET", "/ctxvault/query", nil), 405, "GET /query")
	e.want(e.call("", "", "GET", "/ctxvault/nothing", nil), 401, "no such route without a token")
	// The body limit holds.
	big := newEnv(t, Options{MaxBodyBytes: 64})
	big.vault("notes", vault.Semantic)
	big.want(big.as(who, "POST", "/ctxvault/docs/write", map[string]any{"vault_name": "notes", "file_path": "x.md", "content": strings.Repeat("x", 100)}), 413, "too large")
}

func TestCompatSkills(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("skills", vault.Skill)
	const who = "b"
	body := map[string]any{"vault_name": "skills", "skill_name": "Deploy Service", "description": "How to deploy a service to production",
		"instructions": "1. Build the image.\n2. Roll it out."}
	r := e.want(e.as(who, "POST", "/ctxvault/skills/write", body), 200, "write skill").json(t)
	if fmt.Sprint(r) != "map[filename:deploy-service/SKILL.md]" {
		t.Errorf("write skill: %v", r)
	}
	// overwrite defaults to true, as in the reference; listings and reads
	// answer the name as it was written, as CtxVault does.
	body["description"] = "How to deploy"
	e.want(e.as(who, "POST", "/ctxvault/skills/write", body), 200, "write again")
	body["overwrite"] = false
	e.want(e.as(who, "POST", "/ctxvault/skills/write", body), 409, "no overwrite")
	e.want(e.as(who, "POST", "/ctxvault/skills/write", map[string]any{"vault_name": "skills", "skill_name": "x", "description": "d"}), 422, "no instructions")
	e.want(e.as(who, "POST", "/ctxvault/skills/write", map[string]any{"vault_name": "skills", "skill_name": "a/b", "description": "d", "instructions": "i"}), 400, "bad name")

	l := e.want(e.as(who, "GET", q("/skills", "vault_name", "skills"), nil), 200, "skills").json(t)
	sk := list(t, l, "skills")
	if l["vault_name"] != "skills" || len(sk) != 1 {
		t.Fatalf("skills: %v", l)
	}
	if s := sk[0]; len(s) != 6 || s["skill_name"] != "Deploy Service" || s["source"] != "deploy-service/SKILL.md" || s["filetype"] != ".md" ||
		s["size_bytes"].(float64) <= 0 || s["description"] != "How to deploy" || s["last_modified"] == "" {
		t.Errorf("skill info %v", s)
	}
	s := e.want(e.as(who, "GET", q("/skill", "vault_name", "skills", "skill_name", "Deploy-Service"), nil), 200, "skill").json(t)
	sd := s["skill"].(map[string]any)
	if len(s) != 1 || len(sd) != 5 || sd["name"] != "Deploy Service" || sd["instructions"] != "1. Build the image.\n2. Roll it out." ||
		sd["metadata"] != nil || sd["path"] != "deploy-service/SKILL.md" {
		t.Errorf("skill: %v", s)
	}
	e.want(e.as(who, "GET", q("/skill", "vault_name", "skills", "skill_name", "nope"), nil), 404, "no such skill")
	e.want(e.as(who, "GET", q("/skill", "vault_name", "skills"), nil), 422, "no skill_name")
	e.want(e.as(who, "GET", q("/docs", "vault_name", "skills"), nil), 400, "docs of a skill vault")
}

func TestCompatEpisodes(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("account-memory", vault.Episodic)
	const who = "a"
	ep := func(r resp) map[string]any {
		t.Helper()
		m := r.json(t)
		if m["vault_name"] != "account-memory" {
			t.Errorf("vault_name: %v", m)
		}
		return m["episode"].(map[string]any)
	}
	w := ep(e.want(e.as(who, "POST", "/ctxvault/episodes/write", map[string]any{"vault_name": "account-memory",
		"content": "Acme renewed their contract for 12 months", "entities": []string{"Acme", " acme "}, "source": "crm-agent",
		"confidence": 0.9, "salience": 0.8, "occurred_at": "2026-03-01", "metadata": map[string]any{"channel": "email"}}), 200, "write"))
	for _, k := range []string{"id", "content", "entities", "source", "confidence", "salience", "occurred_at", "valid_from",
		"valid_to", "recorded_at", "invalidated_at", "superseded_by", "recall_count", "last_recalled_at", "metadata"} {
		if _, ok := w[k]; !ok {
			t.Errorf("the episode has no %s: %v", k, w)
		}
	}
	if fmt.Sprintf("%v %v %v %v %v", w["entities"], w["source"], w["confidence"], w["valid_from"], w["valid_to"]) != "[Acme] crm-agent 0.9 2026-03-01T00:00:00+00:00 <nil>" {
		t.Errorf("episode %v", w)
	}
	first := w["id"].(string)
	second := ep(e.want(e.as(who, "POST", "/ctxvault/episodes/write", map[string]any{"vault_name": "account-memory",
		"content": "Acme asked for a discount", "entities": []string{"Acme"}}), 200, "write"))["id"].(string)
	e.want(e.as(who, "POST", "/ctxvault/episodes/write", map[string]any{"vault_name": "account-memory", "content": " "}), 400, "empty")
	e.want(e.as(who, "POST", "/ctxvault/episodes/write", map[string]any{"vault_name": "account-memory", "content": "x", "valid_from": "soon"}), 400, "bad time")
	e.want(e.as(who, "POST", "/ctxvault/episodes/write", map[string]any{"vault_name": "account-memory", "content": "x", "salience": 2}), 422, "salience")

	qr := e.want(e.as(who, "POST", "/ctxvault/episodes/query", map[string]any{"vault_name": "account-memory", "query": "contract renewed",
		"entities": []string{"acme"}, "limit": 5}), 200, "query").json(t)
	res := list(t, qr, "results")
	if qr["vault_name"] != "account-memory" || qr["query"] != "contract renewed" || qr["order_by"] != "relevance" || len(res) == 0 || res[0]["id"] != first {
		t.Errorf("query: %v", qr)
	}
	for _, k := range []string{"score", "similarity", "recency"} {
		if _, ok := res[0][k]; !ok {
			t.Errorf("a match has no %s: %v", k, res[0])
		}
	}
	qr = e.want(e.as(who, "POST", "/ctxvault/episodes/query", map[string]any{"vault_name": "account-memory", "order_by": "composite",
		"weights": map[string]any{"salience": 2}, "half_life_days": 7, "min_confidence": 0.5, "include_closed": true,
		"metadata_filters": map[string]any{"channel": "email"}, "reinforce": true}), 200, "query").json(t)
	if res := list(t, qr, "results"); qr["query"] != nil || qr["order_by"] != "composite" || len(res) != 1 || res[0]["id"] != first {
		t.Errorf("filtered query: %v", qr)
	}
	if qr := e.want(e.as(who, "POST", "/ctxvault/episodes/query", map[string]any{"vault_name": "account-memory", "known_at": "2020-01-01"}), 200, "past").json(t); qr["order_by"] != "recency" || len(list(t, qr, "results")) != 0 {
		t.Errorf("nothing was known in 2020: %v", qr)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"vault_name": "account-memory", "limit": 0}, 422},
		{map[string]any{"vault_name": "account-memory", "limit": 201}, 422},
		{map[string]any{"vault_name": "account-memory", "half_life_days": 0}, 422},
		{map[string]any{"vault_name": "account-memory", "order_by": "size"}, 422},
		{map[string]any{"vault_name": "account-memory", "order_by": "relevance"}, 400},
		{map[string]any{"vault_name": "account-memory", "valid_at": "yesterday"}, 400},
		// CtxVault reads weights with order_by composite only.
		{map[string]any{"vault_name": "account-memory", "weights": map[string]any{"salience": 2}}, 200},
	} {
		e.want(e.as(who, "POST", "/ctxvault/episodes/query", tc.body), tc.status, fmt.Sprint(tc.body))
	}

	g := ep(e.want(e.as(who, "GET", q("/episodes/"+first, "vault_name", "account-memory"), nil), 200, "get"))
	if g["id"] != first || g["recall_count"] != 1.0 {
		t.Errorf("get: %v", g)
	}
	e.want(e.as(who, "GET", q("/episodes/nope", "vault_name", "account-memory"), nil), 404, "no such episode")

	// The README's correction: renewed for 24 months from July 12.
	n := ep(e.want(e.as(who, "POST", "/ctxvault/episodes/"+first+"/supersede", map[string]any{"vault_name": "account-memory",
		"content": "Acme renewed for 24 months", "valid_from": "2026-07-12", "confidence": 1}), 200, "supersede"))
	if n["id"] == first || fmt.Sprint(n["entities"]) != "[Acme]" || n["salience"] != 0.8 || n["valid_from"] != "2026-07-12T00:00:00+00:00" {
		t.Errorf("successor %v", n)
	}
	e.want(e.as(who, "POST", "/ctxvault/episodes/"+first+"/supersede", map[string]any{"vault_name": "account-memory", "content": "again"}), 409, "supersede closed")
	h := e.want(e.as(who, "GET", q("/episodes/"+n["id"].(string)+"/history", "vault_name", "account-memory"), nil), 200, "history").json(t)
	chain := list(t, h, "chain")
	if h["vault_name"] != "account-memory" || h["episode_id"] != n["id"] || len(chain) != 2 || chain[0]["id"] != first || chain[1]["id"] != n["id"] ||
		chain[0]["superseded_by"] != n["id"] || chain[0]["valid_to"] != "2026-07-12T00:00:00+00:00" {
		t.Errorf("history: %v", h)
	}

	inv := ep(e.want(e.as(who, "POST", "/ctxvault/episodes/"+second+"/invalidate", map[string]any{"vault_name": "account-memory",
		"valid_to": "2030-01-01", "reason": "withdrawn"}), 200, "invalidate"))
	if inv["valid_to"] != "2030-01-01T00:00:00+00:00" || inv["invalidated_at"] == nil || inv["invalidation_reason"] != "withdrawn" ||
		inv["metadata"].(map[string]any)["invalidation_reason"] != "withdrawn" {
		t.Errorf("invalidated %v", inv)
	}
	e.want(e.as(who, "POST", "/ctxvault/episodes/"+second+"/invalidate", map[string]any{"vault_name": "account-memory"}), 409, "invalidate again")
	e.want(e.as(who, "POST", "/ctxvault/episodes/nope/invalidate", map[string]any{"vault_name": "account-memory"}), 404, "invalidate nothing")

	st := e.want(e.as(who, "GET", q("/episodes", "vault_name", "account-memory"), nil), 200, "stats").json(t)
	if fmt.Sprint(st) != "map[closed:2 open:1 total:3 vault_name:account-memory]" {
		t.Errorf("stats %v", st)
	}
	ents := e.want(e.as(who, "GET", q("/episodes/entities", "vault_name", "account-memory", "all", "true", "min_episodes", "2"), nil), 200, "entities").json(t)
	if fmt.Sprint(ents) != "map[entities:[map[entity:Acme episodes:3]] vault_name:account-memory]" {
		t.Errorf("entities %v", ents)
	}
	e.want(e.as(who, "GET", q("/episodes", "vault_name", "nope"), nil), 400, "stats of nothing")
	e.want(e.as(who, "PUT", "/ctxvault/index", map[string]any{"vault_name": "account-memory"}), 400, "index an episodic vault")
}

// TestCompatAuth: the agent header is accepted only with that agent's
// token.
func TestCompatAuth(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("pub", vault.Semantic)
	for _, tc := range []struct {
		who, agent string
		status     int
		says       string
	}{
		{"", "a", 401, "ctxkit agent create a"},
		{"", "not a name!", 401, "ctxkit agent create NAME"},
		{"", "", 401, "Bearer"},
		{"ctxk_invalid", "a", 401, "invalid token"},
		{"a", "b", 403, `the bearer token is agent "a"'s`},
		{owner, "a", 403, "the owner's"},
		{"a", "a", 200, ""},
		{"a", "", 200, ""},
		{owner, "", 200, ""},
		{owner, owner, 200, ""},
	} {
		what := fmt.Sprintf("token %q, header %q", tc.who, tc.agent)
		r := e.want(e.call(tc.who, tc.agent, "GET", q("/docs", "vault_name", "pub"), nil), tc.status, what)
		if tc.status == 200 {
			continue
		}
		msg := r.errorText(t)
		if !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %q does not say %q", what, msg, tc.says)
		}
		if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", what)
		}
		if tc.agent != "" && tc.who == "" && !strings.Contains(msg, "Authorization: Bearer") {
			t.Errorf("%s: %q does not say where the token goes", what, msg)
		}
	}
	// A name alone guesses no token: it does not use up the address's
	// failures.
	for range 20 {
		e.want(e.call("", "a", "GET", "/ctxvault/vaults", nil), 401, "name only")
	}
	e.want(e.call("a", "a", "GET", "/ctxvault/vaults", nil), 200, "after names only")

	// Without an Authenticator the caller comes from the context.
	h := New(e.svc, Options{Logger: slog.New(failOnError{t})})
	for _, tc := range []struct {
		caller, agent string
		status        int
	}{{"", "a", 401}, {"", "", 401}, {"a", "b", 403}, {"a", "a", 200}, {"a", "", 200}} {
		req := httptest.NewRequest("GET", "/ctxvault/vaults", nil)
		if tc.caller != "" {
			req = req.WithContext(vaultauth.WithCaller(req.Context(), e.callers[tc.caller]))
		}
		if tc.agent != "" {
			req.Header.Set(compatAgentHeader, tc.agent)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("caller %q, header %q: %d, want %d: %s", tc.caller, tc.agent, rec.Code, tc.status, rec.Body)
		}
		if tc.caller == "" && tc.agent != "" && !strings.Contains(rec.Body.String(), "ctxkit agent create a") {
			t.Errorf("name only, no Authenticator: %s", rec.Body)
		}
	}
}

// compatType is the vault type a compatibility route works on ("" for
// none named).
func compatType(id string) vault.Type {
	switch {
	case strings.Contains(id, "Episode"), id == "compatEntities":
		return vault.Episodic
	case strings.Contains(id, "Skill"):
		return vault.Skill
	case id == "compatVaults", id == "compatInit":
		return ""
	}
	return vault.Semantic
}

// compatWrites says whether a compatibility route changes the vault.
func compatWrites(id string) bool {
	switch id {
	case "compatIndex", "compatReindex", "compatDelete", "compatWriteDoc", "compatWrite", "compatWriteSkill",
		"compatWriteEpisode", "compatInvalidateEpisode", "compatSupersedeEpisode":
		return true
	}
	return false
}

// compatMatrix holds, for each type, vaults restricted to a, to b, and
// one where a has a read-only grant and b a full one, each seeded by the
// owner through the compatibility routes.
type compatMatrix struct {
	*env
	episode map[string]string
}

func (m *compatMatrix) fresh(name string) string {
	r := m.want(m.as(owner, "POST", "/ctxvault/episodes/write", map[string]any{"vault_name": name, "content": "the secret of " + name, "entities": []string{"secret"}}), 200, "seed")
	return r.json(m.t)["episode"].(map[string]any)["id"].(string)
}

// request builds a valid call of rt on vault name by who.
func (m *compatMatrix) request(rt route, name, who string) (string, any) {
	vq := func(p string, kv ...string) string { return q(p, append([]string{"vault_name", name}, kv...)...) }
	id := m.episode[name]
	if compatWrites(rt.ID) && compatType(rt.ID) == vault.Episodic {
		id = m.fresh(name)
	}
	switch rt.ID {
	case "compatIndex", "compatReindex":
		return rt.Pattern, map[string]any{"vault_name": name}
	case "compatDelete":
		m.want(m.as(owner, "POST", "/ctxvault/docs/write", map[string]any{"vault_name": name, "file_path": "doomed.md", "content": "x", "overwrite": true}), 200, "seed")
		return vq("/delete", "file_path", "doomed.md"), nil
	case "compatQuery":
		return rt.Pattern, map[string]any{"vault_name": name, "query": "secret"}
	case "compatDocs":
		return vq("/docs"), nil
	case "compatDocContent":
		return vq("/docs/" + vault.DocID("doc.md") + "/content"), nil
	case "compatWriteDoc":
		return rt.Pattern, map[string]any{"vault_name": name, "file_path": "by-" + who + ".md", "content": "written by " + who, "overwrite": true}
	case "compatWrite":
		return rt.Pattern, map[string]any{"vault_name": name, "filename": "quick-" + who + ".md", "content": "written by " + who, "overwrite": true}
	case "compatWriteSkill":
		return rt.Pattern, map[string]any{"vault_name": name, "skill_name": "brew-tea", "description": "by " + who, "instructions": "x"}
	case "compatSkills":
		return vq("/skills"), nil
	case "compatSkill":
		return vq("/skill", "skill_name", "brew-tea"), nil
	case "compatWriteEpisode":
		return rt.Pattern, map[string]any{"vault_name": name, "content": "written by " + who}
	case "compatQueryEpisodes":
		return rt.Pattern, map[string]any{"vault_name": name, "query": "secret"}
	case "compatEpisodeStats":
		return vq("/episodes"), nil
	case "compatEntities":
		return vq("/episodes/entities"), nil
	case "compatGetEpisode":
		return vq("/episodes/" + id), nil
	case "compatEpisodeHistory":
		return vq("/episodes/" + id + "/history"), nil
	case "compatInvalidateEpisode":
		return "/ctxvault/episodes/" + id + "/invalidate", map[string]any{"vault_name": name}
	case "compatSupersedeEpisode":
		return "/ctxvault/episodes/" + id + "/supersede", map[string]any{"vault_name": name, "content": "changed by " + who}
	}
	m.t.Fatalf("no request for route %s", rt.ID)
	return "", nil
}

// TestCompatIsolation: through every compatibility route, an agent
// cannot read, query or change the other agent's restricted vault (403,
// as CtxVault answers), cannot write through a read-only grant (403), and
// does not see the vault in the list.
func TestCompatIsolation(t *testing.T) {
	m := &compatMatrix{env: newEnv(t, Options{}), episode: map[string]string{}}
	for _, typ := range []vault.Type{vault.Semantic, vault.Skill, vault.Episodic} {
		for prefix, agents := range map[string][]string{"a": {"a"}, "b": {"b"}, "ro": {"a:ro", "b"}} {
			name := prefix + "-" + string(typ)
			m.vault(name, typ, agents...)
			switch typ {
			case vault.Semantic:
				m.want(m.as(owner, "POST", "/ctxvault/docs/write", map[string]any{"vault_name": name, "file_path": "doc.md", "content": "# Secret\n\nthe secret of " + name, "overwrite": false}), 200, "seed")
			case vault.Skill:
				m.want(m.as(owner, "POST", "/ctxvault/skills/write", map[string]any{"vault_name": name, "skill_name": "brew-tea", "description": "secret of " + name, "instructions": "steep"}), 200, "seed")
			case vault.Episodic:
				m.episode[name] = m.fresh(name)
			}
		}
	}
	routes := (&api{}).compatRoutes()
	if len(routes) != 21 {
		t.Errorf("%d compatibility routes, the reference has 21 (19, and the /init and /write of its Quick Start)", len(routes))
	}
	for _, rt := range routes {
		typ := compatType(rt.ID)
		if typ == "" {
			continue
		}
		for _, who := range []string{"a", "b"} {
			other := map[string]string{"a": "b", "b": "a"}[who]
			try := func(name string, want int) {
				path, body := m.request(rt, name, who)
				r := m.as(who, rt.Method, path, body)
				if r.status != want {
					t.Errorf("%s %s %s (%s): %d, want %d: %s", who, rt.Method, path, rt.ID, r.status, want, r.body)
				}
				if r.status >= 400 && strings.Contains(string(r.body), "secret of") {
					t.Errorf("%s %s %s: the error leaks content: %s", who, rt.Method, path, r.body)
				}
			}
			try(other+"-"+string(typ), http.StatusForbidden) // CtxVault's 403 for a restricted vault
			try(who+"-"+string(typ), http.StatusOK)
			if who == "a" && compatWrites(rt.ID) {
				try("ro-"+string(typ), http.StatusForbidden)
			} else {
				try("ro-"+string(typ), http.StatusOK)
			}
		}
	}
	// Reinforcing is a write.
	m.want(m.as("a", "POST", "/ctxvault/episodes/query", map[string]any{"vault_name": "ro-episodic", "reinforce": true}), 403, "reinforce read-only")
	m.want(m.as("a", "POST", "/ctxvault/episodes/query", map[string]any{"vault_name": "b-episodic", "reinforce": true}), 403, "reinforce unattached")

	for _, who := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[who]
		for _, v := range list(t, m.want(m.as(who, "GET", "/ctxvault/vaults", nil), 200, "vaults").json(t), "vaults") {
			name := v["name"].(string)
			if strings.HasPrefix(name, other+"-") {
				t.Errorf("%s lists %s", who, name)
			}
			if got := fmt.Sprint(v["allowed_agents"]); got != "["+who+"]" {
				t.Errorf("%s sees the agents of %s as %s", who, name, got)
			}
			if v["vault_path"] != "" {
				t.Errorf("%s sees the folder of %s: %v", who, name, v["vault_path"])
			}
		}
		// The other's vaults hold no trace of who.
		for _, d := range m.want(m.do(owner, "GET", "/v1/vaults/"+other+"-semantic/documents", nil), 200, "docs").json(t)["documents"].([]any) {
			if by := d.(map[string]any)["metadata"].(map[string]any)["written_by"]; by == who {
				t.Errorf("%s-semantic has a document by %v", other, by)
			}
		}
		if s := m.want(m.do(owner, "GET", "/v1/vaults/"+other+"-skill/skills/brew-tea", nil), 200, "skill").json(t); s["description"] == "by "+who {
			t.Errorf("%s-skill changed by %s: %v", other, who, s)
		}
		all := m.want(m.do(owner, "POST", "/v1/vaults/"+other+"-episodic/episodes/query", map[string]any{"include_closed": true, "limit": 200}), 200, "episodes").json(t)
		for _, ep := range list(t, all, "results") {
			if strings.HasSuffix(ep["content"].(string), "by "+who) || ep["id"] == m.episode[other+"-episodic"] && ep["state"] != "open" {
				t.Errorf("%s-episodic changed by %s: %v", other, who, ep)
			}
		}
	}
	// The owner sees every grant.
	for _, v := range list(t, m.want(m.as(owner, "GET", "/ctxvault/vaults", nil), 200, "vaults").json(t), "vaults") {
		if strings.HasPrefix(v["name"].(string), "ro-") && fmt.Sprint(v["allowed_agents"]) != "[a b]" {
			t.Errorf("the owner sees %v", v)
		}
	}
	m.want(m.do(owner, "GET", "/v1/vaults/ro-semantic/documents/by-a.md", nil), 404, "a's write through a read-only grant")
}
