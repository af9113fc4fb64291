package bert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxkit/ctxkit/tokenizer"
)

// Tokenizer is a BERT tokenizer: package tokenizer's encoding of a
// tokenizer.json (normally BertNormalizer, BertPreTokenizer and WordPiece)
// or of a vocab.txt (the same pipeline, uncased), with [CLS] and [SEP]
// around the pieces and truncation.
type Tokenizer struct {
	tok    *tokenizer.Tokenizer
	tokens []string // id -> token, "" for holes
	MaxLen int      // truncation length including [CLS] and [SEP]; 0 means none

	UNK, CLS, SEP, PAD int // ids of the special tokens
}

// NewTokenizer returns a tokenizer for vocab (token -> id, as ReadVocab
// reads a vocab.txt) with BERT's uncased defaults: clean text, CJK
// characters split, lower-casing, accents stripped, white space and
// punctuation split, WordPiece with "##" and at most 100 characters a
// word. The vocabulary must hold [UNK], [CLS], [SEP] and [PAD].
func NewTokenizer(vocab map[string]int) (*Tokenizer, error) {
	tok, err := tokenizer.NewWordPiece(vocab, tokenizer.WordPieceOptions{Lowercase: true, StripAccents: true})
	if err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	t, err := newTokenizer(tok, vocab, "[UNK]")
	if err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	return t, nil
}

// newTokenizer wraps tok, whose WordPiece vocabulary is vocab, looking up
// the special tokens.
func newTokenizer(tok *tokenizer.Tokenizer, vocab map[string]int, unk string) (*Tokenizer, error) {
	t := &Tokenizer{tok: tok}
	maxID := -1
	for s, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("token %q has negative id %d", s, id)
		}
		maxID = max(maxID, id)
	}
	if maxID >= 1<<24 {
		return nil, fmt.Errorf("id %d is too large", maxID)
	}
	t.tokens = make([]string, maxID+1)
	for s, id := range vocab {
		t.tokens[id] = s
	}
	for _, sp := range []struct {
		name string
		dst  *int
	}{{unk, &t.UNK}, {"[CLS]", &t.CLS}, {"[SEP]", &t.SEP}, {"[PAD]", &t.PAD}} {
		id, ok := vocab[sp.name]
		if !ok {
			return nil, fmt.Errorf("no %s token", sp.name)
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

// ParseTokenizerJSON reads a Hugging Face tokenizer.json whose model is
// WordPiece; the text is encoded as the file says (package tokenizer
// refuses the components it does not implement). The vocabulary must hold
// the model's unk_token, [CLS], [SEP] and [PAD]; truncation.max_length,
// if any, becomes MaxLen.
func ParseTokenizerJSON(data []byte) (*Tokenizer, error) {
	var tj struct {
		Truncation *struct {
			MaxLength int `json:"max_length"`
		} `json:"truncation"`
		Model struct {
			Type     string         `json:"type"`
			UnkToken string         `json:"unk_token"`
			Vocab    map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if tj.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("tokenizer.json: model type %q, want WordPiece", tj.Model.Type)
	}
	tok, err := tokenizer.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	unk := tj.Model.UnkToken
	if unk == "" {
		unk = "[UNK]" // the default of package tokenizer and of the tokenizers library
	}
	t, err := newTokenizer(tok, tj.Model.Vocab, unk)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
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

// Encode returns [CLS] pieces [SEP], the pieces cut so that the whole is
// at most maxLen ids (maxLen <= 0 means t.MaxLen, and 0 there means no
// limit; [CLS] and [SEP] are always there).
func (t *Tokenizer) Encode(text string, maxLen int) []int {
	if maxLen <= 0 {
		maxLen = t.MaxLen
	}
	n := -1 // no limit
	if maxLen > 0 {
		n = max(0, maxLen-2)
	}
	pieces := t.tok.EncodeN(text, n)
	ids := make([]int, len(pieces)+2)
	ids[0] = t.CLS
	copy(ids[1:], pieces)
	ids[len(ids)-1] = t.SEP
	return ids
}
