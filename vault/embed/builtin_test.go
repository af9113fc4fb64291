package embed_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// installTiny copies the tiny random model of the bert package's testdata
// into models/NAME.
func installTiny(t *testing.T, models, name string, files ...string) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("bert", "testdata", "tiny", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(models, name, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuiltinEmbedder(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string {
		if k == "CTXKIT_HOME" {
			return home
		}
		return ""
	}
	installTiny(t, filepath.Join(home, "models"), "tiny", "config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json")
	e, err := embed.New("builtin:tiny", embed.Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if e.Spec() != "builtin:tiny" {
		t.Errorf("Spec() = %q", e.Spec())
	}
	v, err := e.Embed(t.Context(), []string{"Cut cloud costs by 15%!", "Financial constraints"})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 2 || len(v[0]) != 32 {
		t.Fatalf("got %d vectors of %d", len(v), len(v[0]))
	}
	if n := embed.Dot(v[0], v[0]); math.Abs(float64(n)-1) > 1e-5 {
		t.Errorf("|v|² = %v, want 1", n)
	}
}

func TestBuiltinMissingFiles(t *testing.T) {
	models := t.TempDir()
	installTiny(t, models, "partial", "config.json")
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"builtin", []string{`"all-MiniLM-L6-v2" is not installed`, "config.json", "model.safetensors", "tokenizer.json (or vocab.txt)", filepath.Join(models, "all-MiniLM-L6-v2")}},
		{"builtin:partial", []string{"copy model.safetensors, 1_Pooling/config.json, tokenizer.json (or vocab.txt)", filepath.Join(models, "partial")}},
	} {
		_, err := embed.New(tc.spec, embed.Options{ModelsDir: models})
		if !errors.Is(err, embed.ErrUnavailable) {
			t.Fatalf("%s: err = %v, want ErrUnavailable", tc.spec, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.spec, err, w)
			}
		}
	}
	if _, err := embed.New("builtin:../x", embed.Options{ModelsDir: models}); err == nil || errors.Is(err, embed.ErrUnavailable) {
		t.Errorf("path in the model name: err = %v", err)
	}
}
