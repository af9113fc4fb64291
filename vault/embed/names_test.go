package embed_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// TestResolve: specs are written canonically; sentence-transformers names,
// with or without their owner, in any case, after "builtin:" or not, are
// the builtin embedder's spec; a model of another architecture and a name
// that is neither are refused with what the builtin embedder runs.
func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"none", "none"},
		{"NONE", "none"},
		{"builtin", "builtin"},
		{"Builtin:minilm", "builtin:minilm"},
		{"ollama:nomic-embed-text", "ollama:nomic-embed-text"},
		{"ollama:library/x:latest", "ollama:library/x:latest"},
		{"openai:text-embedding-3-small", "openai:text-embedding-3-small"},
		{"all-MiniLM-L6-v2", "builtin:all-MiniLM-L6-v2"},
		{" all-minilm-l6-v2 ", "builtin:all-MiniLM-L6-v2"},
		{"sentence-transformers/all-MiniLM-L6-v2", "builtin:all-MiniLM-L6-v2"},
		{"builtin:sentence-transformers/all-MiniLM-L6-v2", "builtin:all-MiniLM-L6-v2"},
		{"all-MiniLM-L12-v2", "builtin:all-MiniLM-L12-v2"},
		{"paraphrase-MiniLM-L6-v2", "builtin:paraphrase-MiniLM-L6-v2"},
		{"BAAI/bge-small-en-v1.5", "builtin:bge-small-en-v1.5"},
		{"bge-small-en-v1.5", "builtin:bge-small-en-v1.5"},
		{"builtin:acme/tiny-bert", "builtin:tiny-bert"},
	} {
		got, err := embed.Resolve(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		says []string
	}{
		{"all-mpnet-base-v2", []string{"MPNet", "cannot run", "all-MiniLM-L6-v2", "ollama:MODEL"}},
		{"sentence-transformers/all-distilroberta-v1", []string{"RoBERTa"}},
		{"minilm", []string{"all-MiniLM-L6-v2, all-MiniLM-L12-v2", "ollama:MODEL"}},
		{"acme/unknown-model", []string{"not a model ctxkit knows", "ctxkit model pull acme/unknown-model", "builtin:unknown-model"}},
		{"", []string{"want none"}},
		{"none:x", []string{"none takes no model"}},
		{"builtin:", []string{"name the model"}},
		{"ollama:", []string{"name the model"}},
		{"cohere:x", []string{"want none"}},
		{"builtin:a/b/c", []string{"NAME or OWNER/NAME"}},
		{"openai:a b", []string{"white space"}},
	} {
		got, err := embed.Resolve(tc.in)
		if err == nil {
			t.Errorf("Resolve(%q) = %q, want an error", tc.in, got)
			continue
		}
		for _, w := range tc.says {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Resolve(%q): %q does not say %q", tc.in, err, w)
			}
		}
	}
}

// TestModelsTable: every known model resolves to its own name's spec or is
// refused for its architecture, and pulls by its own repo.
func TestModelsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range embed.Models {
		if seen[strings.ToLower(m.Name())] {
			t.Errorf("%s: two models of one name", m.Repo)
		}
		seen[strings.ToLower(m.Name())] = true
		spec, err := embed.Resolve(m.Repo)
		if m.Served() != (err == nil) || (err == nil && spec != "builtin:"+m.Name()) {
			t.Errorf("%s: Resolve = %q, %v", m.Repo, spec, err)
		}
		if got := embed.PullName(m.Name()); got != m.Repo && "sentence-transformers/"+got != m.Repo {
			t.Errorf("%s: PullName = %q", m.Repo, got)
		}
	}
	if embed.PullName("") != embed.DefaultBuiltinModel || embed.PullName("bge-small-en-v1.5") != "BAAI/bge-small-en-v1.5" || embed.PullName("mine") != "mine" {
		t.Error("PullName")
	}
}
