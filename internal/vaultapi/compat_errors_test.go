package vaultapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// cvError is an error answer of /ctxvault: FastAPI's detail and
// ctxkit's error beside it.
type cvError struct {
	Detail json.RawMessage `json:"detail"`
	Error  struct {
		Code, Message, Fix string
	} `json:"error"`
}

// cvSeed makes, on s, the public semantic vault notes (one document),
// the restricted semantic vault private (my-agent attached), the skill
// vault skills, and the episodic vault mem with one closed episode; it
// returns that episode's id.
func cvSeed(t *testing.T, s *cvServer) string {
	t.Helper()
	s.v.Vault(t, vault.CreateVaultRequest{Name: "notes"})
	s.v.Vault(t, vault.CreateVaultRequest{Name: "private", Restricted: true})
	s.v.Attach(t, "private", "my-agent", false)
	s.v.Vault(t, vault.CreateVaultRequest{Name: "skills", Type: vault.Skill})
	s.v.Vault(t, vault.CreateVaultRequest{Name: "mem", Type: vault.Episodic})
	c := s.client("my-agent")
	c.ok("POST", "/docs/write", nil, map[string]any{"vault_name": "notes", "file_path": "a.md", "content": "alpha beta", "overwrite": false})
	id := c.ok("POST", "/episodes/write", nil, map[string]any{"vault_name": "mem", "content": "gone"}).obj(t)["episode"].(map[string]any)["id"].(string)
	c.ok("POST", "/episodes/"+id+"/invalidate", nil, map[string]any{"vault_name": "mem"})
	return id
}

// TestCtxVaultErrors is the mapping of errors to CtxVault's statuses and
// shapes, in both auth modes: 422 with FastAPI's detail list for a request
// that does not fit the route's model, {"detail": "..."} otherwise, and
// ctxkit's error beside detail in every case.
func TestCtxVaultErrors(t *testing.T) {
	modes(t, func(t *testing.T, s *cvServer) {
		closed := cvSeed(t, s)
		outside := filepath.Join(filepath.Dir(s.v.Root), "elsewhere.md")
		type tc struct {
			name         string
			agent        string // X-CtxVault-Agent ("" none)
			method, path string
			params       url.Values
			body         any
			status       int
			// detail: for a 422, "type loc..." of the first item; else a
			// part of the message.
			detail string
		}
		cases := []tc{
			{"missing field", "", "POST", "/query", nil, map[string]any{"query": "x"}, 422, "missing body.vault_name"},
			{"wrong type", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": 3}, 422, "string_type body.query"},
			{"null for a str", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": nil}, 422, "string_type body.query"},
			{"n_results 0", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "x", "n_results": 0}, 422, "greater_than_equal body.n_results"},
			{"n_results 101", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "x", "n_results": 101}, 422, "less_than_equal body.n_results"},
			{"n_results 2.5", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "x", "n_results": 2.5}, 422, "int_from_float body.n_results"},
			{"n_results not a number", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "x", "n_results": "many"}, 422, "int_parsing body.n_results"},
			{"top_k 0", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "x", "top_k": 0}, 422, "greater_than_equal body.top_k"},
			{"filters not a dict", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "x", "filters": "topic"}, 422, "dict_type body.filters"},
			{"no body", "", "POST", "/query", nil, nil, 422, "missing body"},
			{"not JSON", "", "POST", "/query", nil, `{"vault_name": `, 422, "json_invalid body.15"},
			{"not an object", "", "POST", "/query", nil, `["notes"]`, 422, "model_attributes_type body"},
			{"overwrite required", "", "POST", "/docs/write", nil, map[string]any{"vault_name": "notes", "file_path": "b.md", "content": "x"}, 422, "missing body.overwrite"},
			{"agent_metadata without timestamp", "", "POST", "/docs/write", nil, map[string]any{"vault_name": "notes", "file_path": "b.md", "content": "x",
				"overwrite": false, "agent_metadata": map[string]any{"generated_by": "me"}}, 422, "missing body.agent_metadata.timestamp"},
			{"confidence 1.5", "", "POST", "/episodes/write", nil, map[string]any{"vault_name": "mem", "content": "x", "confidence": 1.5}, 422, "less_than_equal body.confidence"},
			{"entities not strings", "", "POST", "/episodes/write", nil, map[string]any{"vault_name": "mem", "content": "x", "entities": []any{"a", 2}}, 422, "string_type body.entities.1"},
			{"limit 0", "", "POST", "/episodes/query", nil, map[string]any{"vault_name": "mem", "limit": 0}, 422, "greater_than_equal body.limit"},
			{"limit 201", "", "POST", "/episodes/query", nil, map[string]any{"vault_name": "mem", "limit": 201}, 422, "less_than_equal body.limit"},
			{"half_life_days 0", "", "POST", "/episodes/query", nil, map[string]any{"vault_name": "mem", "half_life_days": 0}, 422, "greater_than body.half_life_days"},
			{"order_by unknown", "", "POST", "/episodes/query", nil, map[string]any{"vault_name": "mem", "order_by": "size"}, 422, "literal_error body.order_by"},
			{"weights not numbers", "", "POST", "/episodes/query", nil, map[string]any{"vault_name": "mem", "order_by": "composite", "weights": map[string]any{"recency": "high"}}, 422, "float_parsing body.weights.recency"},
			{"query parameter missing", "", "GET", "/docs", nil, nil, 422, "missing query.vault_name"},
			{"skill_name missing", "", "GET", "/skill", vp("skills"), nil, 422, "missing query.skill_name"},
			{"init without a name", "", "POST", "/init", nil, map[string]any{}, 422, "missing body.vault_name"},

			{"missing vault", "", "POST", "/query", nil, map[string]any{"vault_name": "nope", "query": "x"}, 400, `no vault named "nope"`},
			{"missing vault, GET", "", "GET", "/docs", vp("nope"), nil, 400, `no vault named "nope"`},
			{"query on a skill vault", "", "POST", "/query", nil, map[string]any{"vault_name": "skills", "query": "x"}, 400, "skill"},
			{"empty query", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": " "}, 400, "Query text cannot be empty"},
			{"path out of the vault", "", "POST", "/docs/write", nil, map[string]any{"vault_name": "notes", "file_path": "../x.md", "content": "x", "overwrite": false}, 400, "leaves the vault"},
			{"absolute path outside", "", "POST", "/docs/write", nil, map[string]any{"vault_name": "notes", "file_path": outside, "content": "x", "overwrite": false}, 400, "not inside the vault's folder"},
			{"delete without file_path", "", "DELETE", "/delete", vp("notes"), nil, 400, "does not empty a whole vault"},
			{"bad time", "", "POST", "/episodes/write", nil, map[string]any{"vault_name": "mem", "content": "x", "valid_from": "soon"}, 400, "is not a time"},

			{"restricted, another agent", "other-agent", "POST", "/query", nil, map[string]any{"vault_name": "private", "query": "x"}, 403, "Agent 'other-agent' is not authorized to access vault 'private'"},
			{"restricted, GET", "other-agent", "GET", "/docs", vp("private"), nil, 403, "not authorized to access vault 'private'"},

			{"no results", "", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "zebra"}, 404, "No results found."},
			{"no such episode", "", "GET", "/episodes/nope", vp("mem"), nil, 404, "nope"},
			{"no such document", "", "GET", "/docs/" + vault.DocID("none.md") + "/content", vp("notes"), nil, 404, ""},
			{"no such skill", "", "GET", "/skill", vp("skills", "skill_name", "none"), nil, 404, "none"},
			{"no such route", "", "GET", "/nothing", nil, nil, 404, "no such route"},

			{"file exists", "", "POST", "/docs/write", nil, map[string]any{"vault_name": "notes", "file_path": "a.md", "content": "x", "overwrite": false}, 409, "a.md"},
			{"closed episode", "", "POST", "/episodes/" + closed + "/invalidate", nil, map[string]any{"vault_name": "mem"}, 409, ""},
		}
		if s.mode == CtxVaultHeader {
			cases = append(cases,
				tc{"restricted, anonymous", "-", "POST", "/query", nil, map[string]any{"vault_name": "private", "query": "x"}, 403, "Agent 'None' is not authorized"},
				tc{"restricted, an agent that does not exist", "nobody", "POST", "/query", nil, map[string]any{"vault_name": "private", "query": "x"}, 403, "Agent 'nobody'"},
				tc{"not an agent name", "two words", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "alpha"}, 400, "X-CtxVault-Agent"},
				tc{"owner named by the header", "owner", "POST", "/init", nil, map[string]any{"vault_name": "x"}, 400, "reserved"},
				tc{"a folder chosen without a token", "-", "POST", "/init", nil, map[string]any{"vault_name": "x", "vault_path": outside}, 403, "default place"},
			)
		} else {
			cases = append(cases,
				tc{"no token", "-", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "alpha"}, 401, "missing bearer token"},
				tc{"a name without its token", "-my-agent", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "alpha"}, 401, "alone does not identify"},
				tc{"a token of another agent than the header's", "my-agent/other-agent", "POST", "/query", nil, map[string]any{"vault_name": "notes", "query": "alpha"}, 403, "names agent"},
				tc{"an agent creating a vault", "my-agent", "POST", "/init", nil, map[string]any{"vault_name": "x"}, 403, "owner only"},
			)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				cl := s.client(c.agent)
				switch {
				case c.agent == "-": // nobody: no header, no token
					cl = &cvClient{t: t, base: s.url}
				case strings.HasPrefix(c.agent, "-"): // the header alone
					cl = &cvClient{t: t, base: s.url, agent: c.agent[1:]}
				case strings.Contains(c.agent, "/"): // a token, and another name
					tok, name, _ := strings.Cut(c.agent, "/")
					cl = s.client(tok)
					cl.agent = name
				case s.mode == CtxVaultHeader && c.agent != "" && s.v.Tokens[c.agent] == "":
					cl = &cvClient{t: t, base: s.url, agent: c.agent}
				}
				cl.t = t
				a := cl.send(c.method, c.path, c.params, c.body)
				var e cvError
				if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code == "" || len(e.Detail) == 0 {
					t.Fatalf("%d: not detail and error: %s", a.status, a.body)
				}
				if a.status != c.status {
					t.Fatalf("status %d, want %d: %s", a.status, c.status, a.body)
				}
				if c.status == 422 {
					var items []fieldError
					if err := json.Unmarshal(e.Detail, &items); err != nil || len(items) == 0 {
						t.Fatalf("a 422's detail is not a list of errors: %s", e.Detail)
					}
					it := items[0]
					loc := make([]string, len(it.Loc))
					for i, l := range it.Loc {
						loc[i] = fmt.Sprint(l)
					}
					if got := it.Type + " " + strings.Join(loc, "."); got != c.detail || it.Msg == "" {
						t.Errorf("detail[0] %s %q, want %s", got, it.Msg, c.detail)
					}
					return
				}
				var detail string
				if err := json.Unmarshal(e.Detail, &detail); err != nil {
					t.Fatalf("detail is not a message: %s", e.Detail)
				}
				if !strings.Contains(detail, c.detail) {
					t.Errorf("detail %q does not say %q", detail, c.detail)
				}
			})
		}
	})
}

// TestCtxVault422Shape compares whole 422 answers with FastAPI's, as its
// documentation and pydantic's print them (testdata/ctxvault/422.json).
func TestCtxVault422Shape(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "ctxvault", "422.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden []struct {
		Route  string          `json:"route"`
		Body   json.RawMessage `json:"body"`
		Detail json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	s := newCVServer(t, CtxVaultHeader)
	for _, g := range golden {
		method, path, _ := strings.Cut(g.Route, " ")
		var body any = string(g.Body)
		if string(g.Body) == "null" {
			body = nil // no body at all
		}
		a := s.client("").send(method, path, nil, body)
		var got cvError
		if err := json.Unmarshal(a.body, &got); err != nil || a.status != 422 {
			t.Fatalf("%s %s: %d %s", g.Route, g.Body, a.status, a.body)
		}
		var want, have any
		_ = json.Unmarshal(g.Detail, &want)
		_ = json.Unmarshal(got.Detail, &have)
		if fmt.Sprint(have) != fmt.Sprint(want) {
			t.Errorf("%s %s:\n got %s\nwant %s", g.Route, g.Body, got.Detail, g.Detail)
		}
	}
}
