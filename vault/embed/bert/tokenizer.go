package bert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer is a BERT WordPiece tokenizer: the basic tokenizer (clean
// text, CJK characters split, optional lower-casing and accent stripping,
// white space and punctuation split) followed by greedy longest-match
// WordPiece with a continuation prefix.
type Tokenizer struct {
	vocab        map[string]int
	tokens       []string // id -> token, "" for holes
	Lowercase    bool     // lower-case the text
	StripAccents bool     // remove combining marks after NFD
	ChineseChars bool     // put spaces around CJK ideographs
	CleanText    bool     // drop control characters, map white space to ' '
	Prefix       string   // continuation prefix, "##"
	MaxWordChars int      // longer words become [UNK]; 100
	MaxLen       int      // truncation length including [CLS] and [SEP]; 0 means none

	UNK, CLS, SEP, PAD int // ids of the special tokens
}

// NewTokenizer returns a tokenizer for vocab (token -> id) with BERT's
// uncased defaults. The vocabulary must hold [UNK], [CLS], [SEP] and [PAD].
func NewTokenizer(vocab map[string]int) (*Tokenizer, error) {
	t := &Tokenizer{
		vocab: vocab, Lowercase: true, StripAccents: true, ChineseChars: true,
		CleanText: true, Prefix: "##", MaxWordChars: 100,
	}
	maxID := -1
	for tok, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("vocabulary: token %q has negative id %d", tok, id)
		}
		maxID = max(maxID, id)
	}
	if maxID >= 1<<24 {
		return nil, fmt.Errorf("vocabulary: id %d is too large", maxID)
	}
	t.tokens = make([]string, maxID+1)
	for tok, id := range vocab {
		t.tokens[id] = tok
	}
	for _, sp := range []struct {
		name string
		dst  *int
	}{{"[UNK]", &t.UNK}, {"[CLS]", &t.CLS}, {"[SEP]", &t.SEP}, {"[PAD]", &t.PAD}} {
		id, ok := vocab[sp.name]
		if !ok {
			return nil, fmt.Errorf("vocabulary: no %s token", sp.name)
		}
		*sp.dst = id
	}
	return t, nil
}

// ReadVocab reads a vocab.txt: one token a line, the id being the line
// number from 0. A token listed twice keeps its last id, as in Hugging
// Face's loaders.
func ReadVocab(data []byte) (map[string]int, error) {
	vocab := make(map[string]int)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for id := 0; sc.Scan(); id++ {
		vocab[strings.TrimRight(sc.Text(), "\r")] = id
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read vocab: %w", err)
	}
	return vocab, nil
}

// tokenizerJSON is the part of a Hugging Face tokenizer.json we read.
type tokenizerJSON struct {
	Truncation *struct {
		MaxLength int `json:"max_length"`
	} `json:"truncation"`
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          *bool  `json:"clean_text"`
		HandleChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          *bool  `json:"lowercase"`
	} `json:"normalizer"`
	Model struct {
		Type                    string         `json:"type"`
		UnkToken                string         `json:"unk_token"`
		ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int            `json:"max_input_chars_per_word"`
		Vocab                   map[string]int `json:"vocab"`
	} `json:"model"`
}

// ParseTokenizerJSON reads a Hugging Face tokenizer.json whose model is
// WordPiece and whose normalizer is BertNormalizer.
func ParseTokenizerJSON(data []byte) (*Tokenizer, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if tj.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("tokenizer.json: model type %q, want WordPiece", tj.Model.Type)
	}
	t, err := NewTokenizer(tj.Model.Vocab)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if tj.Model.UnkToken != "" {
		id, ok := tj.Model.Vocab[tj.Model.UnkToken]
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: unknown token %q is not in the vocabulary", tj.Model.UnkToken)
		}
		t.UNK = id
	}
	if p := tj.Model.ContinuingSubwordPrefix; p != nil {
		t.Prefix = *p
	}
	if tj.Model.MaxInputCharsPerWord > 0 {
		t.MaxWordChars = tj.Model.MaxInputCharsPerWord
	}
	if n := tj.Normalizer; n != nil {
		if n.Type != "" && n.Type != "BertNormalizer" {
			return nil, fmt.Errorf("tokenizer.json: normalizer %q, want BertNormalizer", n.Type)
		}
		if n.Lowercase != nil {
			t.Lowercase = *n.Lowercase
		}
		t.StripAccents = t.Lowercase // BertNormalizer: null follows lowercase
		if n.StripAccents != nil {
			t.StripAccents = *n.StripAccents
		}
		if n.HandleChineseChars != nil {
			t.ChineseChars = *n.HandleChineseChars
		}
		if n.CleanText != nil {
			t.CleanText = *n.CleanText
		}
	}
	if tj.Truncation != nil {
		t.MaxLen = tj.Truncation.MaxLength
	}
	return t, nil
}

// LoadTokenizer reads dir/tokenizer.json, or else dir/vocab.txt with the
// uncased defaults.
func LoadTokenizer(dir string) (*Tokenizer, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err == nil {
		return ParseTokenizerJSON(data)
	}
	if !os.IsNotExist(err) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	data, err = os.ReadFile(filepath.Join(dir, "vocab.txt"))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: neither tokenizer.json nor vocab.txt: %w", err)
	}
	vocab, err := ReadVocab(data)
	if err != nil {
		return nil, err
	}
	return NewTokenizer(vocab)
}

// Token returns the text of id, or "" if id is not in the vocabulary.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Words runs the basic tokenizer: the words and punctuation marks that
// WordPiece then splits.
func (t *Tokenizer) Words(text string) []string {
	var b strings.Builder
	for _, r := range text {
		switch {
		case t.CleanText && (r == 0 || r == utf8RuneError || isControl(r)):
			continue
		case t.CleanText && isWhitespace(r):
			b.WriteByte(' ')
		case t.ChineseChars && isCJK(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	if t.Lowercase {
		s = strings.ToLower(s)
	}
	if t.StripAccents {
		s = stripAccents(s)
	}
	var words []string
	start := -1
	for i, r := range s {
		switch {
		case isWhitespace(r):
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
		case isPunct(r):
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
			words = append(words, string(r))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		words = append(words, s[start:])
	}
	return words
}

// utf8RuneError is U+FFFD, which clean_text drops.
const utf8RuneError = '\uFFFD'

// WordPiece splits one word into ids by greedy longest match; a word with
// an unmatched rest, or longer than MaxWordChars, is a single [UNK].
func (t *Tokenizer) WordPiece(word string, dst []int) []int {
	runes := []rune(word)
	if len(runes) > t.MaxWordChars {
		return append(dst, t.UNK)
	}
	n0 := len(dst)
	for start := 0; start < len(runes); {
		end := len(runes)
		found := -1
		for ; end > start; end-- {
			piece := string(runes[start:end])
			if start > 0 {
				piece = t.Prefix + piece
			}
			if id, ok := t.vocab[piece]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return append(dst[:n0], t.UNK)
		}
		dst = append(dst, found)
		start = end
	}
	return dst
}

// Encode returns [CLS] pieces [SEP], the pieces cut so that the whole is
// at most maxLen ids (maxLen <= 0 means t.MaxLen, and 0 there means no
// limit).
func (t *Tokenizer) Encode(text string, maxLen int) []int {
	if maxLen <= 0 {
		maxLen = t.MaxLen
	}
	ids := []int{t.CLS}
	for _, w := range t.Words(text) {
		ids = t.WordPiece(w, ids)
		if maxLen > 0 && len(ids) >= maxLen-1 {
			ids = ids[:max(1, maxLen-1)]
			break
		}
	}
	return append(ids, t.SEP)
}

// stripAccents decomposes s (NFD) and drops the non-spacing marks.
func stripAccents(s string) string {
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isWhitespace is BERT's white space: space, tab, newline, carriage
// return and the Zs category.
func isWhitespace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// isControl is BERT's control character: any C category except tab,
// newline and carriage return (which are white space).
func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isPunct is BERT's punctuation: all non-alphanumeric ASCII printable
// characters, and the Unicode P categories.
func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK reports the CJK Unified Ideographs blocks that BERT splits into
// single characters.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
