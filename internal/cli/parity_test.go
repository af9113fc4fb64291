package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/vaultapi"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/vault"
)

// The front-end parity test runs the same operations through the four
// front ends (the CLI, the REST API under /v1, the CtxVault-compatible
// API under /ctxvault, and the MCP server over streamable HTTP) as each of
// five callers (the owner, an attached agent, a read-only one, an
// unattached one and a revoked one), and asserts that every front end
// gives the same outcome, the same error class, and adds the same entries
// to the vault's audit log. The expected class follows from the caller and
// from whether the operation writes; it is asserted too.

// parityCallers are the callers of the matrix.
var parityCallers = []string{"owner", "attached", "readonly", "unattached", "revoked"}

// parityArgs are the values an operation's call is made with: a tag unique
// to the front end and the caller (for what it writes), and an episode it
// may act on, made for this call.
type parityArgs struct {
	tag, id, other string
}

// parityOp is one operation and how each front end calls it; a nil
// function means the front end does not offer it.
type parityOp struct {
	name  string
	write bool
	vault string // "" for an operation on no vault
	// episode asks for an open episode (id) to act on, and other for a
	// second one.
	episode, other bool
	cli            func(a parityArgs) []string
	rest, compat   func(a parityArgs) (method, path string, body any)
	mcp            func(a parityArgs) (tool string, args map[string]any)
}

func docID(path string) string {
	h := sha256.Sum256([]byte(path))
	return hex.EncodeToString(h[:])
}

func q(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return path + "?" + v.Encode()
}

var parityOps = []parityOp{
	{name: "list vaults",
		cli:    func(parityArgs) []string { return []string{"vault", "list", "--json"} },
		rest:   func(parityArgs) (string, string, any) { return "GET", "/v1/vaults", nil },
		compat: func(parityArgs) (string, string, any) { return "GET", "/ctxvault/vaults", nil },
		mcp:    func(parityArgs) (string, map[string]any) { return "list_vaults", map[string]any{} }},
	{name: "query", vault: "sem",
		cli: func(parityArgs) []string { return []string{"vault", "query", "sem", "alpha", "--json"} },
		rest: func(parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/sem/query", map[string]any{"query": "alpha"}
		},
		compat: func(parityArgs) (string, string, any) {
			return "POST", "/ctxvault/query", map[string]any{"vault_name": "sem", "query": "alpha"}
		},
		mcp: func(parityArgs) (string, map[string]any) {
			return "query", map[string]any{"vault": "sem", "query": "alpha"}
		}},
	{name: "list documents", vault: "sem",
		cli:    func(parityArgs) []string { return []string{"vault", "docs", "sem", "--json"} },
		rest:   func(parityArgs) (string, string, any) { return "GET", "/v1/vaults/sem/documents", nil },
		compat: func(parityArgs) (string, string, any) { return "GET", q("/ctxvault/docs", "vault_name", "sem"), nil },
		mcp:    func(parityArgs) (string, map[string]any) { return "list_docs", map[string]any{"vault": "sem"} }},
	{name: "read a document", vault: "sem",
		cli:  func(parityArgs) []string { return []string{"vault", "read", "sem", "a.md"} },
		rest: func(parityArgs) (string, string, any) { return "GET", "/v1/vaults/sem/documents/a.md", nil },
		compat: func(parityArgs) (string, string, any) {
			return "GET", q("/ctxvault/docs/"+docID("a.md")+"/content", "vault_name", "sem"), nil
		},
		mcp: func(parityArgs) (string, map[string]any) {
			return "read_doc", map[string]any{"vault": "sem", "path": "a.md"}
		}},
	{name: "write a document", vault: "sem", write: true,
		cli: func(a parityArgs) []string {
			return []string{"vault", "write", "sem", "w/" + a.tag + ".md", "--content", "# W\n\nwritten"}
		},
		rest: func(a parityArgs) (string, string, any) {
			return "PUT", "/v1/vaults/sem/documents/w/" + a.tag + ".md", map[string]any{"content": "# W\n\nwritten"}
		},
		compat: func(a parityArgs) (string, string, any) {
			return "POST", "/ctxvault/docs/write", map[string]any{"vault_name": "sem", "file_path": "w/" + a.tag + ".md", "content": "# W\n\nwritten", "overwrite": false}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "write_doc", map[string]any{"vault": "sem", "path": "w/" + a.tag + ".md", "content": "# W\n\nwritten"}
		}},
	{name: "delete a document", vault: "sem", write: true,
		cli: func(a parityArgs) []string { return []string{"vault", "delete", "sem", "--path", "d/" + a.tag + ".md"} },
		rest: func(a parityArgs) (string, string, any) {
			return "DELETE", "/v1/vaults/sem/documents/d/" + a.tag + ".md", nil
		},
		compat: func(a parityArgs) (string, string, any) {
			return "DELETE", q("/ctxvault/delete", "vault_name", "sem", "file_path", "d/"+a.tag+".md"), nil
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "delete_doc", map[string]any{"vault": "sem", "path": "d/" + a.tag + ".md"}
		}},
	{name: "index", vault: "sem", write: true,
		cli:  func(parityArgs) []string { return []string{"vault", "index", "sem", "--json"} },
		rest: func(parityArgs) (string, string, any) { return "POST", "/v1/vaults/sem/index", map[string]any{} },
		compat: func(parityArgs) (string, string, any) {
			return "PUT", "/ctxvault/index", map[string]any{"vault_name": "sem"}
		}},
	{name: "list skills", vault: "skl",
		cli:    func(parityArgs) []string { return []string{"vault", "skills", "skl", "--json"} },
		rest:   func(parityArgs) (string, string, any) { return "GET", "/v1/vaults/skl/skills", nil },
		compat: func(parityArgs) (string, string, any) { return "GET", q("/ctxvault/skills", "vault_name", "skl"), nil },
		mcp:    func(parityArgs) (string, map[string]any) { return "list_skills", map[string]any{"vault": "skl"} }},
	{name: "read a skill", vault: "skl",
		cli:  func(parityArgs) []string { return []string{"vault", "skill", "skl", "release"} },
		rest: func(parityArgs) (string, string, any) { return "GET", "/v1/vaults/skl/skills/release", nil },
		compat: func(parityArgs) (string, string, any) {
			return "GET", q("/ctxvault/skill", "vault_name", "skl", "skill_name", "release"), nil
		},
		mcp: func(parityArgs) (string, map[string]any) {
			return "read_skill", map[string]any{"vault": "skl", "name": "release"}
		}},
	{name: "write a skill", vault: "skl", write: true,
		cli: func(a parityArgs) []string {
			return []string{"vault", "write-skill", "skl", "s-" + a.tag, "--description", "d", "--instructions", "do it"}
		},
		rest: func(a parityArgs) (string, string, any) {
			return "PUT", "/v1/vaults/skl/skills/s-" + a.tag, map[string]any{"description": "d", "instructions": "do it"}
		},
		compat: func(a parityArgs) (string, string, any) {
			return "POST", "/ctxvault/skills/write", map[string]any{"vault_name": "skl", "skill_name": "s-" + a.tag, "description": "d", "instructions": "do it"}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "write_skill", map[string]any{"vault": "skl", "name": "s-" + a.tag, "description": "d", "instructions": "do it"}
		}},
	{name: "write an episode", vault: "epi", write: true,
		cli: func(a parityArgs) []string { return []string{"vault", "write-episode", "epi", "fact " + a.tag} },
		rest: func(a parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes", map[string]any{"content": "fact " + a.tag}
		},
		compat: func(a parityArgs) (string, string, any) {
			return "POST", "/ctxvault/episodes/write", map[string]any{"vault_name": "epi", "content": "fact " + a.tag}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "write_episode", map[string]any{"vault": "epi", "content": "fact " + a.tag}
		}},
	{name: "query episodes", vault: "epi",
		cli: func(parityArgs) []string { return []string{"vault", "episodes", "epi", "--json"} },
		rest: func(parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes/query", map[string]any{}
		},
		compat: func(parityArgs) (string, string, any) {
			return "POST", "/ctxvault/episodes/query", map[string]any{"vault_name": "epi"}
		},
		mcp: func(parityArgs) (string, map[string]any) { return "query_episodes", map[string]any{"vault": "epi"} }},
	{name: "query episodes and reinforce", vault: "epi", write: true,
		cli: func(parityArgs) []string { return []string{"vault", "episodes", "epi", "--reinforce", "--json"} },
		rest: func(parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes/query", map[string]any{"reinforce": true}
		},
		compat: func(parityArgs) (string, string, any) {
			return "POST", "/ctxvault/episodes/query", map[string]any{"vault_name": "epi", "reinforce": true}
		},
		mcp: func(parityArgs) (string, map[string]any) {
			return "query_episodes", map[string]any{"vault": "epi", "reinforce": true}
		}},
	{name: "get an episode", vault: "epi", episode: true,
		cli:  func(a parityArgs) []string { return []string{"vault", "episode", "epi", a.id, "--json"} },
		rest: func(a parityArgs) (string, string, any) { return "GET", "/v1/vaults/epi/episodes/" + a.id, nil },
		compat: func(a parityArgs) (string, string, any) {
			return "GET", q("/ctxvault/episodes/"+a.id, "vault_name", "epi"), nil
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "get_episode", map[string]any{"vault": "epi", "episode_id": a.id}
		}},
	{name: "episode history", vault: "epi", episode: true,
		cli: func(a parityArgs) []string { return []string{"vault", "episode", "epi", a.id, "--history", "--json"} },
		rest: func(a parityArgs) (string, string, any) {
			return "GET", "/v1/vaults/epi/episodes/" + a.id + "/history", nil
		},
		compat: func(a parityArgs) (string, string, any) {
			return "GET", q("/ctxvault/episodes/"+a.id+"/history", "vault_name", "epi"), nil
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "episode_history", map[string]any{"vault": "epi", "episode_id": a.id}
		}},
	{name: "invalidate", vault: "epi", write: true, episode: true,
		cli: func(a parityArgs) []string { return []string{"vault", "invalidate", "epi", a.id, "--reason", "gone"} },
		rest: func(a parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes/" + a.id + "/invalidate", map[string]any{"reason": "gone"}
		},
		compat: func(a parityArgs) (string, string, any) {
			return "POST", "/ctxvault/episodes/" + a.id + "/invalidate", map[string]any{"vault_name": "epi", "reason": "gone"}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "invalidate_episode", map[string]any{"vault": "epi", "episode_id": a.id, "reason": "gone"}
		}},
	{name: "supersede", vault: "epi", write: true, episode: true,
		cli: func(a parityArgs) []string { return []string{"vault", "supersede", "epi", a.id, "newer"} },
		rest: func(a parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes/" + a.id + "/supersede", map[string]any{"content": "newer"}
		},
		compat: func(a parityArgs) (string, string, any) {
			return "POST", "/ctxvault/episodes/" + a.id + "/supersede", map[string]any{"vault_name": "epi", "content": "newer"}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "supersede_episode", map[string]any{"vault": "epi", "episode_id": a.id, "content": "newer"}
		}},
	{name: "revise", vault: "epi", write: true, episode: true,
		cli: func(a parityArgs) []string { return []string{"vault", "revise", "epi", a.id, "better"} },
		rest: func(a parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes/" + a.id + "/revise", map[string]any{"content": "better"}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "revise_episode", map[string]any{"vault": "epi", "episode_id": a.id, "content": "better"}
		}},
	{name: "confirm", vault: "epi", write: true, episode: true,
		cli: func(a parityArgs) []string { return []string{"vault", "confirm", "epi", a.id} },
		rest: func(a parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes/" + a.id + "/confirm", map[string]any{}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "confirm_episode", map[string]any{"vault": "epi", "episode_id": a.id}
		}},
	{name: "dispute", vault: "epi", write: true, episode: true, other: true,
		cli: func(a parityArgs) []string { return []string{"vault", "dispute", "epi", a.id, a.other} },
		rest: func(a parityArgs) (string, string, any) {
			return "POST", "/v1/vaults/epi/episodes/" + a.id + "/dispute", map[string]any{"other": a.other}
		},
		mcp: func(a parityArgs) (string, map[string]any) {
			return "dispute_episodes", map[string]any{"vault": "epi", "episode_id": a.id, "other": a.other}
		}},
	{name: "list entities", vault: "epi",
		cli:  func(parityArgs) []string { return []string{"vault", "episodes", "epi", "--entities", "--json"} },
		rest: func(parityArgs) (string, string, any) { return "GET", "/v1/vaults/epi/episodes/entities", nil },
		compat: func(parityArgs) (string, string, any) {
			return "GET", q("/ctxvault/episodes/entities", "vault_name", "epi"), nil
		},
		mcp: func(parityArgs) (string, map[string]any) { return "list_entities", map[string]any{"vault": "epi"} }},
	{name: "episode stats", vault: "epi",
		cli:  func(parityArgs) []string { return []string{"vault", "episodes", "epi", "--stats", "--json"} },
		rest: func(parityArgs) (string, string, any) { return "GET", "/v1/vaults/epi/episodes/stats", nil },
		compat: func(parityArgs) (string, string, any) {
			return "GET", q("/ctxvault/episodes", "vault_name", "epi"), nil
		}},
	{name: "export episodes", vault: "epi",
		cli:  func(parityArgs) []string { return []string{"vault", "export", "epi"} },
		rest: func(parityArgs) (string, string, any) { return "GET", "/v1/vaults/epi/episodes/export", nil }},
}

// parityEnv is the data directory, the project, the vaults and the agents
// the matrix runs on, and a server over them.
type parityEnv struct {
	home, project string
	svc           *vault.Service
	tokens        map[string]string
	srv           *httptest.Server
	mcp           map[string]*mcp.ClientSession
	mu            sync.Mutex
	now           time.Time
	addrs         int
}

// client returns an HTTP client whose connections come from a loopback
// address of their own, adding token to every request: failed
// authentications are limited per address, and the revoked caller of the
// matrix fails on purpose many times.
func (p *parityEnv) client(token string) *http.Client {
	p.mu.Lock()
	p.addrs++
	n := p.addrs
	p.mu.Unlock()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 1, byte(n/250), byte(n%250+1))}}
	return &http.Client{Transport: bearer{token: token, base: &http.Transport{DialContext: d.DialContext}}}
}

// clock is the server's: each call is a minute and more after the last,
// so that its audit log coalesces no refusal of the matrix (the CLI's
// service lives for one command, and coalesces nothing either).
func (p *parityEnv) clock() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now
}

func (p *parityEnv) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now = p.now.Add(2 * time.Minute)
}

func newParityEnv(t *testing.T) *parityEnv {
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	p := &parityEnv{home: filepath.Join(root, "home"), project: filepath.Join(root, "project"), tokens: map[string]string{},
		mcp: map[string]*mcp.ClientSession{}, now: time.Now()}
	for _, d := range []string{p.home, p.project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", root)
	t.Setenv("CTXKIT_HOME", p.home)
	t.Setenv(StoreEnvVar, "")
	t.Chdir(p.project)
	ctx := t.Context()
	b, err := schemes.Open(ctx, "sqlite:"+filepath.Join(p.home, "ctxkit.db"), store.Options{Home: p.home, Root: p.project, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if p.svc, err = vault.New(b, vault.Options{Home: p.home, Root: p.project, KeepSearchers: true, Now: p.clock}); err != nil {
		t.Fatal(err)
	}
	owner := vault.Owner()
	if p.tokens["owner"], err = p.svc.OwnerToken(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, a := range parityCallers[1:] {
		if p.tokens[a], err = p.svc.CreateAgent(ctx, owner, a); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PARITY_TOKEN_"+strings.ToUpper(a), p.tokens[a])
	}
	for _, v := range []vault.CreateVaultRequest{{Name: "sem", Restricted: true}, {Name: "skl", Type: vault.Skill, Restricted: true},
		{Name: "epi", Type: vault.Episodic, Restricted: true}, {Name: "open"}} {
		if _, err := p.svc.CreateVault(ctx, owner, v); err != nil {
			t.Fatal(err)
		}
		if v.Name == "open" {
			continue
		}
		for _, g := range []struct {
			agent string
			ro    bool
		}{{"attached", false}, {"readonly", true}, {"revoked", false}} {
			if _, err := p.svc.Attach(ctx, owner, v.Name, g.agent, g.ro); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.svc.RevokeAgent(ctx, owner, "revoked"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.WriteDoc(ctx, owner, "sem", "a.md", vault.WriteDocRequest{Content: "# A\n\nalpha beta\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.WriteSkill(ctx, owner, "skl", "release", vault.WriteSkillRequest{Description: "Cut a release", Instructions: "Tag."}); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	p.srv = httptest.NewServer(serveHandler(p.svc, offload.New(memstore.New(memstore.Options{})), false, vaultapi.CtxVaultToken, logger))
	t.Cleanup(p.srv.Close)
	return p
}

// parityResult is what a front end's call came to: "ok" or the error's
// class.
type parityResult struct {
	class string
	body  string
}

// viaCLI runs the command in process, as the caller: an agent through its
// token in an environment variable (--token-env), as a program an agent
// runs would.
func (p *parityEnv) viaCLI(t *testing.T, caller string, args []string) parityResult {
	if caller != "owner" {
		args = append(args, "--token-env", "PARITY_TOKEN_"+strings.ToUpper(caller))
	}
	var out, errOut bytes.Buffer
	root := newRoot(IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.ExecuteContext(t.Context()); err != nil {
		return parityResult{class: string(vault.Describe(err).Class), body: err.Error()}
	}
	return parityResult{class: "ok", body: out.String()}
}

// viaHTTP calls a REST or compatibility route with the caller's token.
func (p *parityEnv) viaHTTP(t *testing.T, caller, method, path string, body any) parityResult {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, p.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := p.client(p.tokens[caller]).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode < 300 {
		return parityResult{class: "ok", body: string(b)}
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("%s %s: %d, not the error shape: %s", method, path, res.StatusCode, b)
	}
	return parityResult{class: e.Error.Code, body: string(b)}
}

// bearer adds a token to every request sent through base (nil:
// http.DefaultTransport).
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.base == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	return b.base.RoundTrip(r)
}

// viaMCP calls a tool in the caller's MCP session (made on first use).
func (p *parityEnv) viaMCP(t *testing.T, caller, tool string, args map[string]any) parityResult {
	cs, ok := p.mcp[caller]
	if !ok {
		c := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "1"}, nil)
		var err error
		cs, err = c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: p.srv.URL + "/mcp",
			HTTPClient: p.client(p.tokens[caller])}, nil)
		if err != nil {
			if strings.Contains(err.Error(), "Unauthorized") || strings.Contains(err.Error(), "401") {
				return parityResult{class: string(vault.ClassUnauthenticated), body: err.Error()}
			}
			t.Fatalf("connect as %s: %v", caller, err)
		}
		t.Cleanup(func() { cs.Close() })
		p.mcp[caller] = cs
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s as %s: %v", tool, caller, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if !res.IsError {
		return parityResult{class: "ok", body: text}
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &e); err != nil || e.Error.Code == "" {
		t.Fatalf("%s as %s: an error that is not the error shape: %s", tool, caller, text)
	}
	return parityResult{class: e.Error.Code, body: text}
}

// expectedClass is what an operation must come to for a caller.
func expectedClass(caller string, op parityOp) string {
	switch {
	case caller == "revoked":
		return string(vault.ClassUnauthenticated)
	case caller == "unattached" && op.vault != "":
		return string(vault.ClassNotFound)
	case caller == "readonly" && op.write:
		return string(vault.ClassForbidden)
	}
	return "ok"
}

// auditSince returns the entries of a vault's audit log after the first
// n, without their times, paths and details (which name the front end's
// own document or episode).
func (p *parityEnv) auditSince(t *testing.T, name string, n int) ([]string, int) {
	evs, err := p.svc.Audit(t.Context(), vault.Owner(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs[min(n, len(evs)):] {
		out = append(out, strings.Join([]string{e.Agent, e.Action, e.Outcome, e.Reason}, "|"))
	}
	return out, len(evs)
}

// visibleVaults reads the names of a vault list answer, whatever its
// front end's shape.
func visibleVaults(t *testing.T, body string) string {
	var list []struct {
		Name string `json:"name"`
	}
	var wrapped struct {
		Vaults []struct {
			Name string `json:"name"`
		} `json:"vaults"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		if err := json.Unmarshal([]byte(body), &wrapped); err != nil {
			t.Fatalf("a vault list that does not parse: %s", body)
		}
		for _, v := range wrapped.Vaults {
			list = append(list, struct {
				Name string `json:"name"`
			}{v.Name})
		}
	}
	var names []string
	for _, v := range list {
		names = append(names, v.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// TestFrontEndParity is the matrix.
func TestFrontEndParity(t *testing.T) {
	p := newParityEnv(t)
	ctx := t.Context()
	type call struct {
		fe  string
		run func(a parityArgs) parityResult
	}
	for _, op := range parityOps {
		for _, caller := range parityCallers {
			var calls []call
			if op.cli != nil {
				calls = append(calls, call{"cli", func(a parityArgs) parityResult { return p.viaCLI(t, caller, op.cli(a)) }})
			}
			if op.rest != nil {
				calls = append(calls, call{"rest", func(a parityArgs) parityResult {
					m, path, body := op.rest(a)
					return p.viaHTTP(t, caller, m, path, body)
				}})
			}
			if op.compat != nil {
				calls = append(calls, call{"compat", func(a parityArgs) parityResult {
					m, path, body := op.compat(a)
					return p.viaHTTP(t, caller, m, path, body)
				}})
			}
			if op.mcp != nil {
				calls = append(calls, call{"mcp", func(a parityArgs) parityResult {
					tool, args := op.mcp(a)
					return p.viaMCP(t, caller, tool, args)
				}})
			}
			want := expectedClass(caller, op)
			var firstAudit []string
			var firstVaults string
			for i, c := range calls {
				a := parityArgs{tag: c.fe + "-" + caller}
				if op.name == "delete a document" {
					if _, err := p.svc.WriteDoc(ctx, vault.Owner(), "sem", "d/"+a.tag+".md", vault.WriteDocRequest{Content: "# D\n\ndoomed\n"}); err != nil {
						t.Fatal(err)
					}
				}
				for _, need := range []struct {
					want bool
					to   *string
				}{{op.episode, &a.id}, {op.other, &a.other}} {
					if need.want {
						// Valid long since: the CLI's clock is not the server's.
						w, err := p.svc.WriteEpisode(ctx, vault.Owner(), "epi", vault.WriteEpisodeRequest{Content: "subject of " + a.tag, ValidFrom: "2020-01-01"})
						if err != nil {
							t.Fatal(err)
						}
						*need.to = w.Episode.ID
					}
				}
				p.tick()
				auditName := op.vault
				if auditName == "" {
					auditName = "sem"
				}
				_, n := p.auditSince(t, auditName, 0)
				got := c.run(a)
				audit, _ := p.auditSince(t, auditName, n)
				want := want
				if c.fe == "compat" && caller == "unattached" && want == string(vault.ClassNotFound) {
					want = string(vault.ClassForbidden) // CtxVault's 403 for a restricted vault
				}
				if got.class != want {
					t.Errorf("%s as %s through %s: %s, want %s\n%.300s", op.name, caller, c.fe, got.class, want, got.body)
				}
				if op.name == "list vaults" && got.class == "ok" {
					names := visibleVaults(t, got.body)
					if i == 0 {
						firstVaults = names
					} else if names != firstVaults {
						t.Errorf("list vaults as %s: %s lists %s, %s lists %s", caller, c.fe, names, calls[0].fe, firstVaults)
					}
				}
				if i == 0 {
					firstAudit = audit
				} else if !slices.Equal(audit, firstAudit) {
					t.Errorf("%s as %s: %s audited %v, %s audited %v", op.name, caller, c.fe, audit, calls[0].fe, firstAudit)
				}
			}
		}
	}
	for _, cs := range p.mcp {
		if err := cs.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("close an MCP session: %v", err)
		}
	}
}
