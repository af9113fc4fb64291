package berttest_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/embed/bert"
	"github.com/ctxkit/ctxkit/vault/embed/bert/berttest"
)

// TestConceptModel: through the real forward pass, texts naming the same
// concepts in other words are close, texts of other concepts are not, and
// words the model does not know add nothing.
func TestConceptModel(t *testing.T) {
	dir := t.TempDir()
	if err := berttest.ConceptModel(dir, [][]string{{"money", "budget", "costs"}, {"limit", "cut"}, {"lemon", "cake"}}); err != nil {
		t.Fatal(err)
	}
	m, err := bert.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Embed(t.Context(), []string{"money limit", "cut the budget costs", "lemon cake", "Money, limit!", "unknown words"})
	if err != nil {
		t.Fatal(err)
	}
	same, other, cased := embed.Dot(v[0], v[1]), embed.Dot(v[0], v[2]), embed.Dot(v[0], v[3])
	if !(same > 0.8 && other < 0 && cased > 0.9999) {
		t.Errorf("cos(money limit, cut the budget costs) = %v, cos(money limit, lemon cake) = %v, cos(money limit, Money, limit!) = %v", same, other, cased)
	}
	if n := embed.Dot(v[4], v[4]); n != 0 {
		t.Errorf("unknown words embed with |v|² = %v, want the zero vector", n)
	}
	if err := berttest.ConceptModel(t.TempDir(), [][]string{{"a"}, {"a"}}); err == nil {
		t.Error("a word in two concepts was taken")
	}
}
