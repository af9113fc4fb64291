package llmemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/ctxkit/ctxkit/internal/tinymodel"
	"github.com/ctxkit/ctxkit/tokenizer"
)

// TinyBPE returns the vocabulary of the tiny model a real Ollama runs in
// ctxkit's end-to-end tests (package tinymodel) as a BPE: it counts every
// text as that Ollama does. It is read once; the result is immutable and
// shared.
func TinyBPE() *BPE {
	b, err := tinyBPE()
	if err != nil {
		panic("llmemu: the tiny model's tokenizer.json: " + err.Error()) // a build defect, caught by the tests
	}
	return b
}

var tinyBPE = sync.OnceValues(func() (*BPE, error) { return NewBPE(tinymodel.TokenizerJSON()) })

// Counter splits text into tokens as a model's tokenizer does. An Ollama
// emulator counts rendered prompts, cuts over-long ones and measures
// replies with one (OllamaOptions.Counter).
type Counter interface {
	// Count returns the number of tokens of text, no BOS added.
	Count(text string) int
	// Split returns the tokens of text, each as the bytes of text it
	// stands for, in order: joined they give text back. A token of a
	// byte-level vocabulary may hold part of a UTF-8 character.
	Split(text string) []string
}

// RuleCounter is the emulators' own token rule (see Tokenize) as a
// Counter. It is deliberately simple, and it is the same rule the guard's
// default estimate applies, so a test of the guard must not rely on it to
// check the guard's counting; use a BPE counter for that.
type RuleCounter struct{}

// Count returns CountTokens(text).
func (RuleCounter) Count(text string) int { return CountTokens(text) }

// Split returns Tokenize(text).
func (RuleCounter) Split(text string) []string { return Tokenize(text) }

// BPE counts with a byte-level BPE vocabulary read from a Hugging Face
// tokenizer.json, through ctxkit's tokenizer package (the ids are the
// reference implementation's), and maps the ids back to the bytes they
// stand for to split text. It is safe for concurrent use.
type BPE struct {
	tok    *tokenizer.Tokenizer
	pieces map[int]string // id → the bytes the token stands for
}

// NewBPE reads a byte-level BPE tokenizer.json (GPT-2, Llama 3 and Qwen
// style: every vocabulary entry written with the GPT-2 byte-to-character
// table). Other vocabularies are refused.
func NewBPE(tokenizerJSON []byte) (*BPE, error) {
	tok, err := tokenizer.Parse(tokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("llmemu: tokenizer.json: %w", err)
	}
	var file struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Model struct {
			Type  string         `json:"type"`
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tokenizerJSON, &file); err != nil {
		return nil, fmt.Errorf("llmemu: tokenizer.json: %w", err)
	}
	if file.Model.Type != "" && file.Model.Type != "BPE" {
		return nil, fmt.Errorf("llmemu: tokenizer.json: model %q is not BPE", file.Model.Type)
	}
	if len(file.Model.Vocab) == 0 {
		return nil, errors.New("llmemu: tokenizer.json: empty vocabulary")
	}
	dec := byteDecoder()
	pieces := make(map[int]string, len(file.Model.Vocab)+len(file.AddedTokens))
	for s, id := range file.Model.Vocab {
		b := make([]byte, 0, len(s))
		for _, r := range s {
			c, ok := dec[r]
			if !ok {
				return nil, fmt.Errorf("llmemu: tokenizer.json: vocabulary entry %q is not byte-level", s)
			}
			b = append(b, c)
		}
		pieces[id] = string(b)
	}
	for _, a := range file.AddedTokens {
		pieces[a.ID] = a.Content
	}
	return &BPE{tok: tok, pieces: pieces}, nil
}

// Count returns the number of tokens of text.
func (b *BPE) Count(text string) int { return b.tok.Count(text) }

// Split returns the tokens of text as the bytes each stands for.
func (b *BPE) Split(text string) []string {
	ids := b.tok.Encode(text)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = b.pieces[id]
	}
	return out
}

// Encode returns the token ids of text.
func (b *BPE) Encode(text string) []int { return b.tok.Encode(text) }

// byteDecoder is the inverse of GPT-2's byte-to-character table: the
// printable Latin-1 bytes stand for themselves, and the other bytes, in
// order, for the characters from U+0100 up.
func byteDecoder() map[rune]byte {
	dec := make(map[rune]byte, 256)
	next := rune(256)
	for c := 0; c < 256; c++ {
		switch {
		case c >= '!' && c <= '~', c >= 0xA1 && c <= 0xAC, c >= 0xAE && c <= 0xFF:
			dec[rune(c)] = byte(c)
		default:
			dec[next] = byte(c)
			next++
		}
	}
	return dec
}

// tokenIDs returns the ids of the tokens toks of text by c: the
// vocabulary's when c has one (BPE), otherwise a hash of each token
// (TokenID).
func tokenIDs(c Counter, text string, toks []string) []int {
	if e, ok := c.(interface{ Encode(string) []int }); ok {
		return e.Encode(text)
	}
	ids := make([]int, len(toks))
	for i, t := range toks {
		ids[i] = TokenID(t)
	}
	return ids
}
