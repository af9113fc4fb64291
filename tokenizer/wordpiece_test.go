package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNewWordPieceConformance checks that NewWordPiece on the vocabulary
// of the BERT tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece
// "##") gives the reference's ids for every golden text of that file.
func TestNewWordPieceConformance(t *testing.T) {
	g, _ := loadGolden(t, "bert")
	data, err := os.ReadFile(filepath.Join(repoRoot, g.Tokenizer))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	tok, err := NewWordPiece(f.Model.Vocab, WordPieceOptions{Lowercase: true, StripAccents: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, c := range g.Cases {
		if c.Text == nil {
			continue
		}
		if got := tok.Encode(*c.Text); !slices.Equal(got, c.IDs) {
			t.Errorf("case %d %q:\n got %v\nwant %v", i, *c.Text, head(got), head(c.IDs))
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d golden texts", n)
	}
}

func TestNewWordPiece(t *testing.T) {
	vocab := map[string]int{"[UNK]": 0, "<unk>": 1, "un": 2, "##aff": 3, "##able": 4, "Éa": 5, "ea": 6, "@@aff": 7, "a": 8, "##a": 9, "中": 10}
	tests := []struct {
		name string
		opts WordPieceOptions
		in   string
		want []int
	}{
		{"uncased", WordPieceOptions{Lowercase: true, StripAccents: true}, "UNAFFABLE Éa", []int{2, 3, 4, 6}},
		{"cased keeps accents", WordPieceOptions{}, "Éa ÉA", []int{5, 0}},
		{"lowercase only keeps accents", WordPieceOptions{Lowercase: true}, "Éa", []int{0}},
		{"punctuation and CJK split", WordPieceOptions{Lowercase: true}, "a,中a", []int{8, 0, 10, 8}},
		{"control characters dropped", WordPieceOptions{Lowercase: true}, "un\x00aff\u200bable", []int{2, 3, 4}},
		{"default max 100 characters", WordPieceOptions{}, strings.Repeat("a", 100), append([]int{8}, slices.Repeat([]int{9}, 99)...)},
		{"over 100 characters", WordPieceOptions{}, strings.Repeat("a", 101), []int{0}},
		{"max word chars", WordPieceOptions{MaxWordChars: 3}, "aaa aaaa", []int{8, 9, 9, 0}},
		{"unk token", WordPieceOptions{UnkToken: "<unk>"}, "x", []int{1}},
		{"prefix", WordPieceOptions{Prefix: "@@"}, "unaff unable", []int{2, 7, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := NewWordPiece(vocab, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestNewWordPieceErrors(t *testing.T) {
	tests := []struct {
		name  string
		vocab map[string]int
		opts  WordPieceOptions
	}{
		{"no [UNK]", map[string]int{"a": 0}, WordPieceOptions{}},
		{"unk token absent", map[string]int{"[UNK]": 0}, WordPieceOptions{UnkToken: "<unk>"}},
		{"negative id", map[string]int{"[UNK]": 0, "a": -1}, WordPieceOptions{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewWordPiece(tc.vocab, tc.opts); err == nil {
				t.Error("no error")
			}
		})
	}
}
