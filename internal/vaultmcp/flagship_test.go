package vaultmcp

import (
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/embed/bert/berttest"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// TestFlagshipExample is CtxVault's Quick Start flow through its MCP names:
// an agent writes "need to cut cloud costs by 15%" on Monday and, days
// later, asks for "financial constraints from last week", words the note
// never uses, and gets the note first.
//
// The model is the test's own (berttest.ConceptModel), installed where
// the default builtin model goes, so that the new vault takes the builtin
// embedder by default: words of one meaning (money, limits, time) share a
// direction by construction. This proves that the path from a written
// document through the builtin embedder, its stored vectors and the
// vault's pin to a meaning-based query works end to end; it does not and
// cannot prove the quality of the real all-MiniLM-L6-v2, whose weights a
// test here cannot load. The lexical query shows the note shares no word
// with the question; the other notes are there so that a model that knew
// nothing would rank the note first only by chance.
func TestFlagshipExample(t *testing.T) {
	e := vaulttest.New(t, vaulttest.Options{})
	if err := berttest.ConceptModel(filepath.Join(e.Svc.ModelsDir(), embed.DefaultBuiltinModel), berttest.QuickStartConcepts()); err != nil {
		t.Fatal(err)
	}
	if v := e.Vault(t, vault.CreateVaultRequest{Name: "agent-memory"}); v.EmbeddingModel != "builtin:"+embed.DefaultBuiltinModel {
		t.Fatalf("a new semantic vault with the builtin model installed has the embedder %q", v.EmbeddingModel)
	}
	c := connect(t, NewServer(e.Svc, Options{Caller: vault.Owner()}))
	if w := c.call(t, "warmup_status", nil); w["ready"] != true {
		t.Fatalf("warmup_status = %v", w)
	}
	for path, text := range map[string]string{
		"session_monday.md": "Discussed Q2 budget: need to cut cloud costs by 15%. Competitor pricing is 20% lower than ours.",
		"recipe.md":         "Lemon cake: bake it with sugar and a lemon.",
		"sports.md":         "The football team scored a goal in the match.",
		"weather.md":        "The forecast says rain, then sunny weather.",
	} {
		c.call(t, "write_doc", map[string]any{"vault_name": "agent-memory", "file_path": path, "content": text, "generated_by": "agent"})
	}
	const question = "financial constraints from last week"
	q := c.call(t, "query", map[string]any{"vault_name": "agent-memory", "query": question, "top_k": 3})
	res := q["results"].([]any)
	if q["mode"] != "hybrid" || len(res) == 0 {
		t.Fatalf("query = %v", q)
	}
	first := res[0].(map[string]any)
	if first["path"] != "session_monday.md" || first["vector_rank"] != 1.0 || first["lexical_rank"] != nil {
		t.Errorf("the first result is %v, want session_monday.md found by meaning alone (vector rank 1, no lexical rank)", first)
	}
	if lex := c.call(t, "query", map[string]any{"vault_name": "agent-memory", "query": question, "lexical": true}); len(lex["results"].([]any)) != 0 {
		t.Errorf("the question shares words with a note: %v", lex)
	}
}
