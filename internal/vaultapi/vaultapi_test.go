package vaultapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// owner is the owner's name, as the tests name callers.
const owner = vault.OwnerName

// env is a vault service over the SQLite backend in temporary folders,
// with the owner's token, agents a and b (real tokens), and the API over
// it.
type env struct {
	t      *testing.T
	v      *vaulttest.Env
	svc    *vault.Service
	h      http.Handler
	tokens map[string]string // by caller: owner, a, b
	// callers are the agents as the service authenticated them.
	callers map[string]vault.Caller
	// mux finds the route (its pattern) of a request; doc is the served
	// OpenAPI document's description of each route, by pattern: every
	// answer of every test through do is checked against it.
	mux    *http.ServeMux
	doc    map[string]documented
	errors *jsonschema.Resolved
}

// documented is what the OpenAPI document says of a route: the schema of
// its JSON request body (nil: none) and of its answers by status (nil for
// an answer that is not JSON).
type documented struct {
	request   *jsonschema.Resolved
	responses map[string]*jsonschema.Resolved
}

// openAPIDoc is the part of the OpenAPI document the checks read.
type openAPIDoc struct {
	Paths map[string]map[string]struct {
		RequestBody *struct {
			Content map[string]struct{ Schema *jsonschema.Schema }
		} `json:"requestBody"`
		Responses map[string]struct {
			Content map[string]struct{ Schema *jsonschema.Schema }
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]*jsonschema.Schema `json:"schemas"`
	} `json:"components"`
}

// readDoc fetches the OpenAPI document from the API and compiles its
// schemas, by route pattern, as the mux names them.
func (e *env) readDoc() {
	e.t.Helper()
	r := e.want(e.do("", "GET", "/v1/openapi.json", nil), 200, "openapi.json")
	var doc openAPIDoc
	if err := json.Unmarshal(r.body, &doc); err != nil {
		e.t.Fatalf("the OpenAPI document does not parse: %v", err)
	}
	compile := func(what string, s *jsonschema.Schema) *jsonschema.Resolved {
		if s == nil {
			return nil
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			e.t.Fatalf("%s: the schema does not resolve: %v", what, err)
		}
		return rs
	}
	e.errors = compile("Error", doc.Components.Schemas["Error"])
	e.mux, e.doc = http.NewServeMux(), map[string]documented{}
	for _, rt := range (&api{}).routes() {
		key := rt.Method + " " + rt.Pattern
		e.mux.Handle(key, http.NotFoundHandler())
		op, ok := doc.Paths[openAPIPath(rt.Pattern)][strings.ToLower(rt.Method)]
		if !ok {
			e.t.Fatalf("%s is not in the document", key)
		}
		d := documented{responses: map[string]*jsonschema.Resolved{}}
		if op.RequestBody != nil {
			d.request = compile(key+" request", op.RequestBody.Content["application/json"].Schema)
		}
		for status, res := range op.Responses {
			s := res.Content["application/json"].Schema
			if s != nil && s.Ref == "#/components/schemas/Error" {
				d.responses[status] = e.errors
				continue
			}
			d.responses[status] = compile(key+" "+status, s)
		}
		e.doc[key] = d
	}
}

// checkSchema checks an answer of the API against the document: its
// status is one the route lists, and a JSON answer (and the JSON request
// of a success) fits the schema given for it.
func (e *env) checkSchema(req *http.Request, reqBody []byte, r resp) {
	e.t.Helper()
	if e.doc == nil || strings.HasSuffix(req.URL.Path, "/openapi.json") {
		return
	}
	validate := func(what string, rs *jsonschema.Resolved, data []byte) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			e.t.Errorf("%s %s: the %s is not JSON: %v", req.Method, req.URL.Path, what, err)
			return
		}
		if err := rs.Validate(v); err != nil {
			e.t.Errorf("%s %s: the %s does not fit the document: %v\n%s", req.Method, req.URL.Path, what, err, data)
		}
	}
	isJSON := r.header.Get("Content-Type") == "application/json"
	_, pattern := e.mux.Handler(req)
	d, routed := e.doc[pattern]
	if !routed { // no such route, or not with this method
		if r.status < 400 || !isJSON {
			e.t.Errorf("%s %s: %d answer from no documented route", req.Method, req.URL.Path, r.status)
			return
		}
		validate("error answer", e.errors, r.body)
		return
	}
	rs, listed := d.responses[strconv.Itoa(r.status)]
	switch {
	case !listed:
		e.t.Errorf("%s %s: answered %d, which the document does not list for %s: %s", req.Method, req.URL.Path, r.status, pattern, r.body)
	case isJSON && rs == nil:
		e.t.Errorf("%s %s: a JSON %d answer, documented as another type", req.Method, req.URL.Path, r.status)
	case isJSON:
		validate(fmt.Sprintf("%d answer", r.status), rs, r.body)
	}
	if r.status < 300 && d.request != nil && len(reqBody) > 0 {
		validate("request the route accepted", d.request, reqBody)
	}
}

// failOnError is a slog handler that fails the test on every error the
// API logs: a 500 is a bug.
type failOnError struct{ t *testing.T }

func (f failOnError) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (f failOnError) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	f.t.Errorf("logged error: %s%s", r.Message, b.String())
	return nil
}
func (f failOnError) WithAttrs([]slog.Attr) slog.Handler { return f }
func (f failOnError) WithGroup(string) slog.Handler      { return f }

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	v := vaulttest.New(t, vaulttest.Options{})
	e := &env{t: t, v: v, svc: v.Svc, tokens: v.Tokens, callers: map[string]vault.Caller{owner: vault.Owner()}}
	for _, name := range []string{"a", "b"} {
		e.callers[name] = v.Agent(t, name)
	}
	opts.Auth = vaultauth.New(v.Svc, nil)
	if opts.Logger == nil {
		opts.Logger = slog.New(failOnError{t})
	}
	e.h = New(v.Svc, opts)
	e.readDoc()
	return e
}

// vault creates a vault as the owner, restricted to the agents given
// (name or name:ro for a read-only grant).
func (e *env) vault(name string, typ vault.Type, agents ...string) vault.VaultInfo {
	e.t.Helper()
	info := e.v.Vault(e.t, vault.CreateVaultRequest{Name: name, Type: typ})
	for _, a := range agents {
		n, ro := strings.CutSuffix(a, ":ro")
		e.v.Attach(e.t, name, n, ro)
	}
	return info
}

// resp is an answer.
type resp struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the answer's body.
func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v: %s", r.status, err, r.body)
	}
	return m
}

// code is the error code of an error answer ("" for others).
func (r resp) code() string {
	var m struct {
		Error vaultauth.Error `json:"error"`
	}
	_ = json.Unmarshal(r.body, &m)
	return m.Error.Code
}

// errorText is an error answer's message and fix.
func (r resp) errorText(t *testing.T) string {
	t.Helper()
	var m struct {
		Error vaultauth.Error `json:"error"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil || m.Error.Message == "" {
		t.Fatalf("answer %d is not an error: %s", r.status, r.body)
	}
	return m.Error.Message + "; " + m.Error.Fix
}

// send calls the API as who (a caller's name, a raw token, or "" for no
// token), with the X-CtxVault-Agent header when agent is not ""; body is
// a string sent as is, or a value sent as JSON.
func (e *env) send(who, agent, method, path string, body any) (*http.Request, []byte, resp) {
	e.t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			e.t.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(data))
	req.RemoteAddr = "192.0.2.1:1234"
	if who != "" {
		tok, ok := e.tokens[who]
		if !ok {
			tok = who // a raw token
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if agent != "" {
		req.Header.Set(compatAgentHeader, agent)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return req, data, resp{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// do calls a /v1 route as who (see send), and checks the answer against
// the OpenAPI document.
func (e *env) do(who, method, path string, body any) resp {
	e.t.Helper()
	req, data, r := e.send(who, "", method, path, body)
	e.checkSchema(req, data, r)
	return r
}

// want checks an answer's status, and for errors that the body has the
// error shape.
func (e *env) want(r resp, status int, what string) resp {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
	if status >= 400 && r.code() == "" {
		e.t.Fatalf("%s: error answer without the error shape: %s", what, r.body)
	}
	return r
}

func TestVaultRoutes(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("pub", vault.Semantic)
	e.vault("secret-b", vault.Semantic, "b")
	e.vault("shared", vault.Episodic, "a:ro", "b")

	names := func(who string) []string {
		var out []string
		for _, v := range e.want(e.do(who, "GET", "/v1/vaults", nil), 200, "list").json(t)["vaults"].([]any) {
			out = append(out, v.(map[string]any)["name"].(string))
		}
		return out
	}
	for who, want := range map[string]string{owner: "[pub secret-b shared]", "a": "[pub shared]", "b": "[pub secret-b shared]"} {
		if got := fmt.Sprint(names(who)); got != want {
			t.Errorf("%s lists %s, want %s", who, got, want)
		}
	}
	v := e.want(e.do("a", "GET", "/v1/vaults/shared", nil), 200, "describe").json(t)
	if v["access"] != "read-only" || v["agents"] != nil || v["path"] != nil {
		t.Errorf("a sees shared as %v", v)
	}
	v = e.want(e.do(owner, "GET", "/v1/vaults/shared", nil), 200, "describe").json(t)
	if v["access"] != "read-write" || len(v["agents"].([]any)) != 2 || v["path"] != filepath.Join(e.v.Root, ".ctxkit", "vaults", "shared") {
		t.Errorf("the owner sees shared as %v", v)
	}

	for _, tc := range []struct {
		who, method, path string
		body              any
		status            int
		code              string
	}{
		{owner, "POST", "/v1/vaults", map[string]any{"name": "new", "type": "skill"}, 201, ""},
		{owner, "POST", "/v1/vaults", map[string]any{"name": "new"}, 409, "exists"},
		{owner, "POST", "/v1/vaults", map[string]any{"name": "bad name"}, 400, "invalid"},
		{owner, "POST", "/v1/vaults", map[string]any{"name": "x", "type": "graph"}, 400, "invalid"},
		{owner, "POST", "/v1/vaults", map[string]any{}, 400, "invalid"},
		{owner, "POST", "/v1/vaults", `{"name": "x", "colour": "red"}`, 400, "invalid"},
		{owner, "POST", "/v1/vaults", `{"name": 3}`, 400, "invalid"},
		{owner, "POST", "/v1/vaults", `{"name": "x"} {}`, 400, "invalid"},
		{owner, "POST", "/v1/vaults", `{"name": "x"`, 400, "invalid"},
		{"a", "POST", "/v1/vaults", map[string]any{"name": "mine"}, 403, "forbidden"},
		{owner, "GET", "/v1/vaults/nope", nil, 404, "not_found"},
		{"a", "GET", "/v1/vaults/secret-b", nil, 404, "not_found"},
		{owner, "POST", "/v1/vaults/pub/agents/a", map[string]any{"read_only": true}, 200, ""},
		{owner, "POST", "/v1/vaults/pub/agents/owner", nil, 400, "invalid"},
		{owner, "DELETE", "/v1/vaults/pub/agents/b", nil, 404, "not_found"},
		{owner, "DELETE", "/v1/vaults/pub/agents/a", nil, 200, ""},
		{owner, "POST", "/v1/vaults/nope/publish", nil, 404, "not_found"},
		{"a", "POST", "/v1/vaults/shared/agents/a", map[string]any{}, 403, "forbidden"},
		{"a", "DELETE", "/v1/vaults/shared/agents/b", nil, 403, "forbidden"},
		{"a", "POST", "/v1/vaults/shared/publish", nil, 403, "forbidden"},
		{"b", "POST", "/v1/vaults/shared/publish", nil, 403, "forbidden"},
		{"a", "POST", "/v1/vaults/secret-b/publish", nil, 404, "not_found"},
		{"a", "POST", "/v1/vaults/secret-b/agents/a", nil, 404, "not_found"},
		{owner, "POST", "/v1/vaults/secret-b/publish", nil, 200, ""},
		{"a", "GET", "/v1/vaults/secret-b", nil, 200, ""},
		{owner, "GET", "/v1/vaults?x=1", nil, 400, "invalid"},
		{owner, "GET", "/v1/nothing", nil, 404, "not_found"},
		{owner, "PATCH", "/v1/vaults", nil, 405, "method_not_allowed"},
	} {
		what := tc.who + " " + tc.method + " " + tc.path
		r := e.want(e.do(tc.who, tc.method, tc.path, tc.body), tc.status, what)
		if tc.code != "" && r.code() != tc.code {
			t.Errorf("%s: code %q, want %q", what, r.code(), tc.code)
		}
	}
	// An invisible vault and a missing one answer alike.
	e.want(e.do("b", "GET", "/v1/vaults/new", nil), 200, "public")
	e.want(e.do(owner, "POST", "/v1/vaults/new/agents/a", nil), 200, "attach")
	hidden := e.want(e.do("b", "GET", "/v1/vaults/new", nil), 404, "restricted").json(t)
	missing := e.want(e.do("b", "GET", "/v1/vaults/wen", nil), 404, "missing").json(t)
	if h, m := fmt.Sprint(hidden), strings.ReplaceAll(fmt.Sprint(missing), "wen", "new"); h != m {
		t.Errorf("an invisible vault is told apart from a missing one:\n%s\n%s", h, m)
	}
	r := e.do(owner, "POST", "/v1/vaults", `{"name": "x", "colour": "red"}`)
	if d := r.json(t)["error"].(map[string]any); d["details"].(map[string]any)["field"] != "colour" || !strings.Contains(d["message"].(string), "colour") {
		t.Errorf("an unknown field is not named: %s", r.body)
	}
	if r := e.do(owner, "PATCH", "/v1/vaults", nil); !strings.Contains(r.header.Get("Allow"), "GET") {
		t.Errorf("405 without Allow: %v", r.header)
	}
}

// TestAuditRoute: a vault's audit log is the owner's to read; it holds
// the writes and the refusals, refusals of the same kind coalesced. An
// agent that sees the vault is refused (403), one that does not gets the
// answer of a missing vault (404).
func TestAuditRoute(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("docs", vault.Semantic, "a:ro")
	e.vault("pub", vault.Semantic)
	e.want(e.do(owner, "PUT", "/v1/vaults/docs/documents/plan.md", map[string]any{"content": "# Plan"}), 200, "write")
	for range 3 {
		e.want(e.do("a", "PUT", "/v1/vaults/docs/documents/mine.md", map[string]any{"content": "x"}), 403, "write through a read-only grant")
	}
	e.want(e.do("b", "GET", "/v1/vaults/docs/documents/plan.md", nil), 404, "read an invisible vault")
	e.want(e.do("a", "GET", "/v1/vaults/docs/documents/plan.md", nil), 200, "a read")

	type event struct{ Agent, Action, Path, Outcome, Reason string }
	events := func(query string) []event {
		t.Helper()
		var out struct{ Events []event }
		if err := json.Unmarshal(e.want(e.do(owner, "GET", "/v1/vaults/docs/audit"+query, nil), 200, "audit"+query).body, &out); err != nil {
			t.Fatal(err)
		}
		return out.Events
	}
	want := []event{
		{owner, "create", "", "ok", ""},
		{owner, "attach", "", "ok", ""},
		{owner, "write-doc", "plan.md", "ok", ""},
		{"a", "write-doc", "mine.md", "refused", "read-only grant"}, // three attempts, one line: the first's path
		{"b", "read-doc", "plan.md", "refused", "not attached"},
	}
	if got := events(""); !slices.Equal(got, want) {
		t.Errorf("audit:\n got %v\nwant %v", got, want)
	}
	if got := events("?n=2"); !slices.Equal(got, want[3:]) {
		t.Errorf("the last two events: %v", got)
	}
	if got := events("?n=0"); !slices.Equal(got, want) {
		t.Errorf("every event: %v", got)
	}
	for _, tc := range []struct {
		who, path string
		status    int
	}{
		{"a", "/v1/vaults/docs/audit", 403},
		{"a", "/v1/vaults/pub/audit", 403},
		{"b", "/v1/vaults/docs/audit", 404},
		{owner, "/v1/vaults/nope/audit", 404},
		{owner, "/v1/vaults/docs/audit?n=-1", 400},
		{owner, "/v1/vaults/docs/audit?n=some", 400},
		{owner, "/v1/vaults/docs/audit?last=3", 400},
		{"", "/v1/vaults/docs/audit", 401},
	} {
		r := e.want(e.do(tc.who, "GET", tc.path, nil), tc.status, tc.who+" "+tc.path)
		if tc.status == 403 && r.code() != string(vault.ClassForbidden) || tc.status == 404 && r.code() != string(vault.ClassNotFound) {
			t.Errorf("%s %s: %s", tc.who, tc.path, r.body)
		}
	}
	// b cannot tell the vault from a missing one.
	hidden := e.do("b", "GET", "/v1/vaults/docs/audit", nil).json(t)
	missing := e.do("b", "GET", "/v1/vaults/dosc/audit", nil).json(t)
	if h, m := fmt.Sprint(hidden), strings.ReplaceAll(fmt.Sprint(missing), "dosc", "docs"); h != m {
		t.Errorf("an invisible vault's audit is told apart from a missing one's:\n%s\n%s", h, m)
	}
	// The agents' attempts are in the log, as refusals.
	last := events("?n=2")
	if want := []event{{"a", "audit", "", "refused", "owner only"}, {"b", "audit", "", "refused", "not attached"}}; !slices.Equal(last, want) {
		t.Errorf("the refused audit reads: %v, want %v", last, want)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("pub", vault.Semantic)
	if err := e.svc.RevokeAgent(t.Context(), vault.Owner(), "b"); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"", "ctxk_invalid", e.tokens[owner] + "x", "b"} {
		r := e.want(e.do(who, "GET", "/v1/vaults/pub", nil), 401, "token "+who)
		if r.code() != string(vault.ClassUnauthenticated) {
			t.Errorf("%q: %s", who, r.body)
		}
	}
	// Unknown routes are not revealed to the unauthenticated either.
	e.want(e.do("", "GET", "/v1/nothing", nil), 401, "unknown route without a token")
	r := e.want(e.do("", "GET", "/v1/openapi.json", nil), 200, "the OpenAPI document is public")
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("openapi.json: %s", r.header.Get("Content-Type"))
	}
	// Without an Authenticator the handler takes the caller from the
	// context, and refuses a request without one.
	h := New(e.svc, Options{Logger: slog.New(failOnError{t})})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/vaults", nil))
	if rec.Code != 401 {
		t.Errorf("no caller in the context: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/vaults", nil)
	h.ServeHTTP(rec, req.WithContext(vaultauth.WithCaller(req.Context(), e.callers["a"])))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"pub"`) {
		t.Errorf("caller in the context: %d %s", rec.Code, rec.Body)
	}
}

func TestDocumentRoutes(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("docs", vault.Semantic, "a")
	e.vault("epi", vault.Episodic)
	put := func(path string, body any) resp { return e.do("a", "PUT", "/v1/vaults/docs/documents/"+path, body) }
	r := e.want(put("notes/cats.md", map[string]any{"content": "# Cats\n\nCats purr when content.", "metadata": map[string]string{"topic": "pets"}}), 200, "write")
	if m := r.json(t); m["path"] != "notes/cats.md" || m["vault"] != "docs" {
		t.Errorf("write answered %s", r.body)
	}
	e.want(put("notes/cats.md", map[string]any{"content": "again"}), 409, "write over")
	e.want(put("notes/cats.md", map[string]any{"content": "# Cats\n\nCats purr loudly.", "overwrite": true, "metadata": map[string]string{"topic": "pets"}}), 200, "overwrite")
	e.want(put("dogs.txt", map[string]any{"content": "Dogs bark at the mail carrier."}), 200, "write")
	e.want(put("tool.exe", map[string]any{"content": "x"}), 400, "unsupported type")
	e.want(put(".ctxkit-vault/x.md", map[string]any{"content": "x"}), 400, "into the data folder")
	e.want(put("x.md", map[string]any{"content": "x", "owerwrite": true}), 400, "misspelt field")
	e.want(e.do("a", "PUT", "/v1/vaults/docs/documents/", map[string]any{"content": "x"}), 400, "no path")
	e.want(e.do("a", "PUT", "/v1/vaults/epi/documents/x.md", map[string]any{"content": "x"}), 400, "episodic vault")

	list := e.want(e.do("a", "GET", "/v1/vaults/docs/documents", nil), 200, "list").json(t)["documents"].([]any)
	if len(list) != 2 {
		t.Fatalf("documents: %v", list)
	}
	cats := list[1].(map[string]any)
	if cats["path"] != "notes/cats.md" || cats["metadata"].(map[string]any)["topic"] != "pets" || cats["metadata"].(map[string]any)["written_by"] != "a" {
		t.Errorf("document: %v", cats)
	}
	d := e.want(e.do("a", "GET", "/v1/vaults/docs/documents/notes/cats.md", nil), 200, "read").json(t)
	if d["title"] != "Cats" || !strings.Contains(d["text"].(string), "purr loudly") {
		t.Errorf("read: %v", d)
	}
	e.want(e.do("a", "GET", "/v1/vaults/docs/documents/notes/none.md", nil), 404, "read missing")

	q := e.want(e.do("a", "POST", "/v1/vaults/docs/query", map[string]any{"query": "purr", "n_results": 3}), 200, "query").json(t)
	if res := q["results"].([]any); len(res) != 1 || res[0].(map[string]any)["path"] != "notes/cats.md" {
		t.Errorf("query: %v", q)
	} else if loc := res[0].(map[string]any)["locator"]; !reflect.DeepEqual(loc, map[string]any{"unit": "line", "start": 3.0, "end": 3.0, "label": "line 3"}) {
		t.Errorf("query: the passage's locator %v, want line 3 of the file", loc)
	}
	q = e.want(e.do("a", "POST", "/v1/vaults/docs/query", map[string]any{"query": "zebra"}), 200, "query without match").json(t)
	if res, ok := q["results"].([]any); !ok || len(res) != 0 {
		t.Errorf("no match must be an empty list: %v", q)
	}
	e.want(e.do("a", "POST", "/v1/vaults/docs/query", map[string]any{"query": " "}), 400, "empty query")
	e.want(e.do("a", "POST", "/v1/vaults/docs/query", map[string]any{"query": "x", "n_results": -1}), 400, "negative n_results")
	e.want(e.do("a", "POST", "/v1/vaults/docs/query", map[string]any{"query": "x", "top_k": 1}), 400, "unknown field")
	e.want(e.do("a", "POST", "/v1/vaults/epi/query", map[string]any{"query": "x"}), 400, "query an episodic vault")

	rep := e.want(e.do("a", "POST", "/v1/vaults/docs/index", nil), 200, "index").json(t)
	if rep["unchanged"] != 2.0 || rep["embedder"] != "none" {
		t.Errorf("index: %v", rep)
	}
	rep = e.want(e.do("a", "POST", "/v1/vaults/docs/index", map[string]any{"path": "notes", "force": true}), 200, "index a folder").json(t)
	if rep["indexed"] != 1.0 {
		t.Errorf("index notes: %v", rep)
	}
	e.want(e.do("a", "POST", "/v1/vaults/docs/index", map[string]any{"path": "../x"}), 400, "index outside")
	rep = e.want(e.do("a", "POST", "/v1/vaults/docs/reindex", map[string]any{}), 200, "reindex").json(t)
	if rep["indexed"] != 2.0 {
		t.Errorf("reindex: %v", rep)
	}
	rep = e.want(e.do("a", "POST", "/v1/vaults/docs/reindex", map[string]any{"path": "dogs.txt"}), 200, "reindex a file").json(t)
	if rep["indexed"] != 1.0 {
		t.Errorf("reindex dogs.txt: %v", rep)
	}

	del := e.want(e.do("a", "DELETE", "/v1/vaults/docs/documents/notes", nil), 200, "delete a folder").json(t)
	if fmt.Sprint(del["deleted"]) != "[notes/cats.md]" {
		t.Errorf("delete: %v", del)
	}
	e.want(e.do("a", "DELETE", "/v1/vaults/docs/documents/notes/cats.md", nil), 404, "delete again")
	e.want(e.do("a", "DELETE", "/v1/vaults/docs/documents/", nil), 400, "delete the vault")
	q = e.want(e.do("a", "POST", "/v1/vaults/docs/query", map[string]any{"query": "purr"}), 200, "query after delete").json(t)
	if len(q["results"].([]any)) != 0 {
		t.Errorf("a deleted document is still found: %v", q)
	}
}

func TestSkillRoutes(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("skills", vault.Skill)
	e.vault("docs", vault.Semantic)
	empty := e.want(e.do("a", "GET", "/v1/vaults/skills/skills", nil), 200, "list empty").json(t)
	if s, ok := empty["skills"].([]any); !ok || len(s) != 0 {
		t.Errorf("no skills must be an empty list: %v", empty)
	}
	body := map[string]any{"description": "Brew tea. Use when asked for tea.", "instructions": "Boil water; steep 3 minutes."}
	s := e.want(e.do("a", "PUT", "/v1/vaults/skills/skills/brew-tea", body), 200, "write").json(t)
	if s["name"] != "brew-tea" || s["path"] != "brew-tea/SKILL.md" {
		t.Errorf("write: %v", s)
	}
	e.want(e.do("a", "PUT", "/v1/vaults/skills/skills/brew-tea", body), 409, "write again")
	body["overwrite"] = true
	e.want(e.do("a", "PUT", "/v1/vaults/skills/skills/brew-tea", body), 200, "overwrite")
	e.want(e.do("a", "PUT", "/v1/vaults/skills/skills/!!!", body), 400, "a name without a letter or digit")
	e.want(e.do("a", "PUT", "/v1/vaults/skills/skills/x", map[string]any{"instructions": "x"}), 400, "no description")
	e.want(e.do("a", "PUT", "/v1/vaults/docs/skills/x", body), 400, "semantic vault")
	list := e.want(e.do("a", "GET", "/v1/vaults/skills/skills", nil), 200, "list").json(t)
	if sk := list["skills"].([]any); len(sk) != 1 || sk[0].(map[string]any)["name"] != "brew-tea" {
		t.Errorf("list: %v", list)
	}
	one := e.want(e.do("a", "GET", "/v1/vaults/skills/skills/brew-tea", nil), 200, "read").json(t)
	if one["instructions"] != "Boil water; steep 3 minutes." {
		t.Errorf("read: %v", one)
	}
	e.want(e.do("a", "GET", "/v1/vaults/skills/skills/coffee", nil), 404, "read missing")
	e.want(e.do("a", "GET", "/v1/vaults/docs/skills", nil), 400, "list a semantic vault")
}

func TestEpisodeRoutes(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("mem", vault.Episodic, "a")
	e.vault("copy", vault.Episodic)
	e.vault("copy2", vault.Episodic)
	e.vault("docs", vault.Semantic)
	base := "/v1/vaults/mem/episodes"
	w := e.want(e.do("a", "POST", base, map[string]any{"content": "Alice works at Acme", "entities": []string{"Alice", "Acme"},
		"valid_from": "2025-01-01", "source": "hr", "metadata": map[string]any{"k": 1}}), 201, "write").json(t)
	ep := w["episode"].(map[string]any)
	id := ep["id"].(string)
	if ep["valid_from"] != "2025-01-01T00:00:00.000000Z" || fmt.Sprint(ep["entities"]) != "[Acme Alice]" || len(w["hints"].([]any)) != 0 {
		t.Errorf("write: %v", w)
	}
	dry := e.want(e.do("a", "POST", base+"?dry_run=true", map[string]any{"content": "Alice works at Acme Corp", "entities": []string{"Alice"}}), 200, "dry run").json(t)
	if dry["dry_run"] != true || len(dry["hints"].([]any)) == 0 {
		t.Errorf("dry run: %v", dry)
	}
	e.want(e.do("a", "POST", base+"?dry_run", map[string]any{"content": "Alice works at Acme Corp"}), 200, "dry run, flag alone")
	e.want(e.do("a", "POST", base+"?dry_run=maybe", map[string]any{"content": "x"}), 400, "bad dry_run")
	e.want(e.do("a", "POST", base+"?force=1", map[string]any{"content": "x"}), 400, "unknown parameter")
	e.want(e.do("a", "POST", base, map[string]any{"content": ""}), 400, "empty content")
	e.want(e.do("a", "POST", base, map[string]any{"content": "x", "valid_from": "yesterday"}), 400, "bad time")
	e.want(e.do("a", "POST", base, map[string]any{"content": "x", "salience": 2}), 400, "salience out of range")
	e.want(e.do("a", "POST", "/v1/vaults/docs/episodes", map[string]any{"content": "x"}), 400, "semantic vault")

	q := e.want(e.do("a", "POST", base+"/query", map[string]any{"query": "Acme"}), 200, "query").json(t)
	if res := q["results"].([]any); len(res) != 1 || res[0].(map[string]any)["id"] != id {
		t.Errorf("query: %v", q)
	}
	q = e.want(e.do("a", "POST", base+"/query", map[string]any{"valid_at": "2024-06-01"}), 200, "query before").json(t)
	if res, ok := q["results"].([]any); !ok || len(res) != 0 {
		t.Errorf("no match must be an empty list: %v", q)
	}
	q = e.want(e.do("a", "POST", base+"/query", map[string]any{"metadata_filters": map[string]any{"k": 1}, "reinforce": true}), 200, "query by metadata").json(t)
	if res := q["results"].([]any); len(res) != 1 || res[0].(map[string]any)["id"] != id {
		t.Errorf("query by metadata: %v", q)
	}
	if got := e.want(e.do("a", "GET", base+"/"+id, nil), 200, "get").json(t); got["recall_count"] != 1.0 {
		t.Errorf("the reinforcing query recorded no recall: %v", got)
	}
	q = e.want(e.do("a", "POST", base+"/query", map[string]any{"metadata_filters": map[string]any{"k": 2}}), 200, "query by metadata").json(t)
	if len(q["results"].([]any)) != 0 {
		t.Errorf("query by other metadata: %v", q)
	}
	e.want(e.do("a", "POST", base+"/query", map[string]any{"weights": map[string]any{"recency": 2}}), 400, "weights without composite")
	e.want(e.do("a", "POST", base+"/query", map[string]any{"order_by": "composite", "weights": map[string]any{"recency": 2}}), 200, "composite")
	e.want(e.do("a", "POST", base+"/query", map[string]any{"half_life_days": 0}), 400, "half-life 0")
	e.want(e.do("a", "POST", base+"/query", map[string]any{"limit": 1000}), 400, "limit too large")
	e.want(e.do("a", "POST", base+"/query", map[string]any{"order_by": "random"}), 400, "bad order")

	got := e.want(e.do("a", "GET", base+"/"+id, nil), 200, "get").json(t)
	if got["content"] != "Alice works at Acme" || got["state"] != "open" {
		t.Errorf("get: %v", got)
	}
	e.want(e.do("a", "GET", base+"/0000000000000000000000000000dead", nil), 404, "get missing")

	c := e.want(e.do("a", "POST", base+"/"+id+"/confirm", map[string]any{"source": "email"}), 200, "confirm").json(t)
	if c["confirmed_count"] != 1.0 {
		t.Errorf("confirm: %v", c)
	}
	sup := e.want(e.do("a", "POST", base+"/"+id+"/supersede", map[string]any{"content": "Alice works at Globex", "valid_from": "2025-06-01"}), 200, "supersede").json(t)
	newID := sup["id"].(string)
	if sup["supersedes"] != id || fmt.Sprint(sup["entities"]) != "[Acme Alice]" {
		t.Errorf("supersede: %v", sup)
	}
	e.want(e.do("a", "POST", base+"/"+id+"/supersede", map[string]any{"content": "again"}), 409, "supersede a closed episode")
	e.want(e.do("a", "POST", base+"/"+id+"/revise", map[string]any{"content": "x", "valid_from": "2025-01-01"}), 400, "revise takes no valid_from")
	rev := e.want(e.do("a", "POST", base+"/"+newID+"/revise", map[string]any{"content": "Alice is employed by Globex", "entities": []string{}}), 200, "revise").json(t)
	revID := rev["id"].(string)
	if rev["revises"] != newID || len(rev["entities"].([]any)) != 0 {
		t.Errorf("revise: %v", rev)
	}
	h := e.want(e.do("a", "GET", base+"/"+revID+"/history", nil), 200, "history").json(t)
	if chain := h["chain"].([]any); len(chain) != 3 || chain[0].(map[string]any)["id"] != id {
		t.Errorf("history: %v", h)
	}
	e.want(e.do("a", "GET", base+"/nope/history", nil), 404, "history of nothing")

	other := e.want(e.do("a", "POST", base, map[string]any{"content": "Alice works at Initech", "entities": []string{"Alice"}}), 201, "write").json(t)["episode"].(map[string]any)["id"].(string)
	dis := e.want(e.do("a", "POST", base+"/"+revID+"/dispute", map[string]any{"other": other, "note": "both cannot be"}), 200, "dispute").json(t)
	if dis["episode"].(map[string]any)["id"] != revID || fmt.Sprint(dis["other"].(map[string]any)["disputed_with"]) != "["+revID+"]" {
		t.Errorf("dispute: %v", dis)
	}
	e.want(e.do("a", "POST", base+"/"+revID+"/dispute", map[string]any{}), 400, "dispute nothing")
	inv := e.want(e.do("a", "POST", base+"/"+other+"/invalidate", map[string]any{"reason": "left"}), 200, "invalidate").json(t)
	if inv["state"] != "invalidated" || inv["invalidation_reason"] != "left" {
		t.Errorf("invalidate: %v", inv)
	}
	e.want(e.do("a", "POST", base+"/"+other+"/invalidate", nil), 409, "invalidate again")
	e.want(e.do("a", "POST", base+"/"+other+"/confirm", nil), 409, "confirm a closed episode")

	ents := e.want(e.do("a", "GET", base+"/entities?include_closed=true", nil), 200, "entities").json(t)
	// With include_closed, closed statements count; the revised one (no longer held)
	// and its revision (entities cleared) do not.
	if fmt.Sprint(ents["entities"]) != "[map[entity:Alice episodes:2] map[entity:Acme episodes:1]]" {
		t.Errorf("entities: %v", ents)
	}
	ents = e.want(e.do("a", "GET", base+"/entities?min_episodes=9", nil), 200, "entities").json(t)
	if l, ok := ents["entities"].([]any); !ok || len(l) != 0 {
		t.Errorf("no entities must be an empty list: %v", ents)
	}
	e.want(e.do("a", "GET", base+"/entities?min_episodes=many", nil), 400, "bad number")
	e.want(e.do("a", "GET", base+"/entities?known_at=soon", nil), 400, "bad time")
	st := e.want(e.do("a", "GET", base+"/stats", nil), 200, "stats").json(t)
	// The revised statement is no longer held: three statements, one open.
	if st["total"] != 3.0 || st["open"] != 1.0 {
		t.Errorf("stats: %v", st)
	}
	st = e.want(e.do("a", "GET", base+"/stats?known_at=2000-01-01", nil), 200, "stats then").json(t)
	if st["total"] != 0.0 {
		t.Errorf("stats in 2000: %v", st)
	}

	exp := e.want(e.do("a", "GET", base+"/export", nil), 200, "export")
	if exp.header.Get("Content-Type") != "application/x-ndjson" || bytes.Count(exp.body, []byte(`"type":"statement"`)) != 4 {
		t.Errorf("export: %s %s", exp.header, exp.body)
	}
	imp := e.want(e.do(owner, "POST", "/v1/vaults/copy/episodes/import", string(exp.body)), 200, "import").json(t)
	if imp["imported"] != 4.0 {
		t.Errorf("import: %v", imp)
	}
	e.want(e.do(owner, "POST", "/v1/vaults/copy/episodes/import", string(exp.body)), 409, "import again")
	e.want(e.do(owner, "POST", "/v1/vaults/copy/episodes/import", "{not json\n"), 400, "import garbage")
	if again := e.do(owner, "GET", "/v1/vaults/copy/episodes/export", nil); !bytes.Equal(again.body, exp.body) {
		t.Errorf("the export of the import differs:\n%s\n%s", again.body, exp.body)
	}
	none := e.want(e.do(owner, "GET", "/v1/vaults/copy2/episodes/export", nil), 200, "export an empty vault")
	if none.header.Get("Content-Type") != "application/x-ndjson" || len(none.body) != 0 {
		t.Errorf("empty export: %s %q", none.header, none.body)
	}
	empty := e.want(e.do(owner, "GET", "/v1/vaults/docs/episodes/export", nil), 400, "export a semantic vault")
	if empty.header.Get("Content-Type") != "application/json" {
		t.Errorf("export error: %s", empty.header)
	}
}

func TestTooLarge(t *testing.T) {
	e := newEnv(t, Options{MaxBodyBytes: 1024})
	e.vault("docs", vault.Semantic)
	e.vault("mem", vault.Episodic)
	big := strings.Repeat("x", 2048)
	for _, tc := range []struct{ path, method, body string }{
		{"/v1/vaults/docs/documents/big.md", "PUT", `{"content": "` + big + `"}`},
		{"/v1/vaults/mem/episodes", "POST", `{"content": "` + big + `"}`},
		{"/v1/vaults/mem/episodes/import", "POST", `{"type":"statement","id":"x","content":"` + big + `"}` + "\n"},
	} {
		r := e.want(e.do(owner, tc.method, tc.path, tc.body), 413, tc.path)
		if r.code() != "too_large" {
			t.Errorf("%s: %s", tc.path, r.body)
		}
	}
	e.want(e.do(owner, "PUT", "/v1/vaults/docs/documents/small.md", `{"content": "small"}`), 200, "under the limit")
}

// TestConcurrent writes documents and episodes and queries them from
// parallel clients: every call succeeds (run with -race).
func TestConcurrent(t *testing.T) {
	e := newEnv(t, Options{})
	e.vault("docs", vault.Semantic, "a", "b")
	e.vault("mem", vault.Episodic, "a", "b")
	const clients, calls = 6, 4
	var wg sync.WaitGroup
	errs := make(chan string, clients*calls*4)
	for c := range clients {
		who := []string{"a", "b"}[c%2]
		wg.Go(func() {
			for i := range calls {
				check := func(r resp, want int, what string) {
					if r.status != want {
						errs <- fmt.Sprintf("client %d call %d %s: %d %s", c, i, what, r.status, r.body)
					}
				}
				check(e.do(who, "PUT", fmt.Sprintf("/v1/vaults/docs/documents/c%d/d%d.md", c, i),
					map[string]any{"content": fmt.Sprintf("# Note %d\n\nclient %d wrote about otters", i, c)}), 200, "write")
				check(e.do(who, "POST", "/v1/vaults/docs/query", map[string]any{"query": "otters"}), 200, "query")
				check(e.do(who, "POST", "/v1/vaults/mem/episodes", map[string]any{"content": fmt.Sprintf("client %d saw otter %d", c, i), "entities": []string{"otter"}}), 201, "write episode")
				check(e.do(who, "POST", "/v1/vaults/mem/episodes/query", map[string]any{"query": "otter"}), 200, "query episodes")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	docs := e.want(e.do(owner, "GET", "/v1/vaults/docs/documents", nil), 200, "list").json(t)["documents"].([]any)
	st := e.want(e.do(owner, "GET", "/v1/vaults/mem/episodes/stats", nil), 200, "stats").json(t)
	if len(docs) != clients*calls || st["total"] != float64(clients*calls) {
		t.Errorf("%d documents, %v episodes; want %d of each", len(docs), st["total"], clients*calls)
	}
}

// TestInternalError: a failure that is no fault of the caller's (here a
// config file that does not parse) is a 500 without its details, and
// logged.
func TestInternalError(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	e := newEnv(t, Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))})
	if err := os.WriteFile(filepath.Join(e.v.Home, "config.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.want(e.do(owner, "GET", "/v1/vaults", nil), 500, "broken config")
	if r.code() != "internal" || strings.Contains(string(r.body), "config.json") {
		t.Errorf("500 answer: %s", r.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "config.json") {
		t.Errorf("the error is not logged: %q", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
