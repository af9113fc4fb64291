package vaultapi

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// TestEmbedderNotAvailable: over /v1, a vault whose embedder is not
// installed answers 503 with what to do for a query, a write and an index
// run, never a lexical search in its place; a query that asks for lexical
// search gets one, marked as such.
func TestEmbedderNotAvailable(t *testing.T) {
	e := newEnv(t, Options{})
	e.v.Vault(t, vault.CreateVaultRequest{Name: "docs", EmbeddingModel: "all-MiniLM-L12-v2"})
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/vaults/docs/query", map[string]any{"query": "cloud costs"}},
		{"PUT", "/v1/vaults/docs/documents/a.md", map[string]any{"content": "# A\n\ncloud costs\n"}},
		{"POST", "/v1/vaults/docs/index", nil},
	} {
		r := e.want(e.do(owner, c.method, c.path, c.body), 503, c.method+" "+c.path)
		if txt := r.errorText(t); r.code() != string(vault.ClassUnavailable) || !strings.Contains(txt, "builtin:all-MiniLM-L12-v2") ||
			!strings.Contains(txt, "ctxkit model pull all-MiniLM-L12-v2") {
			t.Errorf("%s %s: %s", c.method, c.path, r.body)
		}
	}
	q := e.want(e.do(owner, "POST", "/v1/vaults/docs/query", map[string]any{"query": "cloud costs", "lexical": true}), 200, "lexical query").json(t)
	if q["mode"] != "lexical" || !strings.Contains(q["warning"].(string), "not available") {
		t.Errorf("lexical query: %v", q)
	}
}
