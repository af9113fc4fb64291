package bert

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func tinyTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := LoadTokenizer(filepath.Join("testdata", "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (t *Tokenizer) pieces(text string, maxLen int) []string {
	var out []string
	for _, id := range t.Encode(text, maxLen) {
		out = append(out, t.Token(id))
	}
	return out
}

// TestTokenizerGolden checks the BERT rules against testdata/tokenizer.golden,
// written by the independent Python tokenizer of bench/bert_reference.py.
func TestTokenizerGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "tokenizer.golden"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok := tinyTokenizer(t)
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		in, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad golden line %q", line)
		}
		var text string
		if err := json.Unmarshal([]byte(in), &text); err != nil {
			t.Fatalf("golden input %s: %v", in, err)
		}
		if got := strings.Join(tok.pieces(text, 0), " "); got != want {
			t.Errorf("Encode(%q)\n got %s\nwant %s", text, got, want)
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d golden cases", n)
	}
}

func TestTokenizerRules(t *testing.T) {
	tok := tinyTokenizer(t)
	tests := []struct {
		name, text string
		maxLen     int
		want       string
	}{
		{"truncation keeps CLS and SEP", "the quick brown fox", 4, "[CLS] the quick [SEP]"},
		{"truncation inside a word", "jumping", 3, "[CLS] jump [SEP]"},
		{"shortest truncation", "the quick", 2, "[CLS] [SEP]"},
		{"no truncation needed", "the dog", 8, "[CLS] the dog [SEP]"},
		{"accents stripped", "CAFÉ", 0, "[CLS] cafe [SEP]"},
		{"cjk split", "中文", 0, "[CLS] 中 文 [SEP]"},
		{"word of 100 chars", strings.Repeat("a", 100), 0, "[CLS] a" + strings.Repeat(" ##a", 99) + " [SEP]"},
		{"word of 101 chars", strings.Repeat("a", 101), 0, "[CLS] [UNK] [SEP]"},
		{"partial match is unk", "dog%x", 0, "[CLS] dog % x [SEP]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(tok.pieces(tt.text, tt.maxLen), " "); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTokenizerJSONMatchesVocabTxt(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tiny", "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := ReadVocab(data)
	if err != nil {
		t.Fatal(err)
	}
	fromTxt, err := NewTokenizer(vocab)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON := tinyTokenizer(t)
	for _, s := range []string{"The quick brown fox jumps over the lazy dog.", "Café naïve — un-affable?", "中文 and 日本語 text"} {
		if a, b := fromTxt.Encode(s, 0), fromJSON.Encode(s, 0); !slices.Equal(a, b) {
			t.Errorf("%q: vocab.txt %v, tokenizer.json %v", s, a, b)
		}
	}
}

func TestTokenizerJSONOptions(t *testing.T) {
	tests := []struct {
		name, json string
		wantErr    bool
		check      func(*Tokenizer) bool
	}{
		{"cased", `{"normalizer":{"type":"BertNormalizer","lowercase":false},"model":{"type":"WordPiece","vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"[PAD]":3,"Ab":4,"Éb":5}}}`, false,
			func(tk *Tokenizer) bool { // neither lower-cased nor accents stripped
				return slices.Equal(tk.Encode("Ab", 0), []int{1, 4, 2}) && slices.Equal(tk.Encode("Éb", 0), []int{1, 5, 2})
			}},
		{"truncation", `{"truncation":{"max_length":128},"model":{"type":"WordPiece","max_input_chars_per_word":5,"vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"[PAD]":3,"a":4,"##a":5}}}`, false,
			func(tk *Tokenizer) bool { // MaxLen 128, at most 5 characters a word
				return tk.MaxLen == 128 && slices.Equal(tk.Encode("aaaaa", 0), []int{1, 4, 5, 5, 5, 5, 2}) && slices.Equal(tk.Encode("aaaaaa", 0), []int{1, 0, 2})
			}},
		{"not wordpiece", `{"model":{"type":"BPE","vocab":{}}}`, true, nil},
		{"no special tokens", `{"model":{"type":"WordPiece","vocab":{"a":0}}}`, true, nil},
		{"negative id", `{"model":{"type":"WordPiece","vocab":{"[UNK]":-1,"[CLS]":1,"[SEP]":2,"[PAD]":3}}}`, true, nil},
		{"bad json", `{`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, err := ParseTokenizerJSON([]byte(tt.json))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !tt.check(tk) {
				t.Errorf("unexpected tokenizer %+v", tk)
			}
		})
	}
}

// FuzzEncode checks that any text gives [CLS] ... [SEP] within the
// length limit, without panicking.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "The quick brown fox.", "Café naïve — un-affable?", "中文 and 日本語", "a\x00b\xffc", strings.Repeat("x", 101)} {
		f.Add(s, 8)
	}
	tok := tinyTokenizer(f)
	f.Fuzz(func(t *testing.T, text string, maxLen int) {
		maxLen = 2 + (maxLen&0xff)%64
		ids := tok.Encode(text, maxLen)
		if len(ids) < 2 || len(ids) > maxLen || ids[0] != tok.CLS || ids[len(ids)-1] != tok.SEP {
			t.Fatalf("Encode(%q, %d) = %v", text, maxLen, ids)
		}
		for _, id := range ids {
			if tok.Token(id) == "" {
				t.Fatalf("Encode(%q): id %d not in the vocabulary", text, id)
			}
		}
	})
}

// BenchmarkEncode measures Encode on the tiny vocabulary: a sentence, and
// a 16 KB mixed text (ASCII, accents, CJK) cut at 256 ids or not cut.
func BenchmarkEncode(b *testing.B) {
	tok := tinyTokenizer(b)
	sentence := "The quick brown fox jumps over the lazy dog."
	var long strings.Builder
	for long.Len() < 16<<10 {
		long.WriteString("Cut cloud costs by 15%! Café naïve — un-affable? 中文 and 日本語 text. HeLLo WoRLD, financial constraints.\n")
	}
	for _, bc := range []struct {
		name   string
		text   string
		maxLen int
	}{
		{"sentence", sentence, 0},
		{"16KB_max256", long.String(), 256},
		{"16KB_nolimit", long.String(), 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			for b.Loop() {
				tok.Encode(bc.text, bc.maxLen)
			}
		})
	}
}
