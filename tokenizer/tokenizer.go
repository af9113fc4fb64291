package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxFileSize is the largest tokenizer.json that Load and Parse accept.
const MaxFileSize = 64 << 20

// Tokenizer encodes text as a tokenizer.json describes. It is safe for
// concurrent use.
type Tokenizer struct {
	raw   *addedMatcher // added tokens matched on the raw text
	normd *addedMatcher // added tokens matched after normalization
	norm  normalizer
	pre   preTokenizer
	model model
	fast  *fastByteLevel // pre for byte-level BPE, without word lists; nil: pre
}

// Load reads and parses the tokenizer.json at path.
func Load(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: read %s: %w", path, err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	Model         json.RawMessage  `json:"model"`
	PostProcessor json.RawMessage  `json:"post_processor"`
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// Parse builds a Tokenizer from the bytes of a tokenizer.json. It refuses
// files over MaxFileSize and components it does not implement.
func Parse(data []byte) (*Tokenizer, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("tokenizer: file is %d bytes, over the %d limit", len(data), MaxFileSize)
	}
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if isNull(f.Model) {
		return nil, errors.New("tokenizer: no model")
	}
	t := &Tokenizer{}
	var err error
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, fmt.Errorf("tokenizer: model: %w", err)
	}
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("tokenizer: normalizer: %w", err)
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("tokenizer: pre_tokenizer: %w", err)
	}
	if _, ok := t.model.(*bpe); ok && t.pre != nil {
		t.fast = detectFastByteLevel(f.PreTokenizer)
	}
	var raw, normd []addedTokenJSON
	for _, a := range f.AddedTokens {
		if a.Content == "" {
			continue
		}
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer: added token %q has negative id %d", a.Content, a.ID)
		}
		if a.Normalized {
			normd = append(normd, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.raw = newAddedMatcher(raw)
	if t.norm != nil {
		// Rust normalizes the content of a normalized added token before
		// matching it in normalized text.
		for i := range normd {
			normd[i].Content = t.norm.normalize(normd[i].Content)
		}
	}
	t.normd = newAddedMatcher(normd)
	return t, nil
}

func isNull(m json.RawMessage) bool {
	s := strings.TrimSpace(string(m))
	return s == "" || s == "null"
}

// Encode returns the token ids of text, with no special tokens added.
func (t *Tokenizer) Encode(text string) []int {
	return t.EncodeN(text, -1)
}

// EncodeN returns the first n ids of Encode(text), or all of them if n
// is negative. It stops running the model once it has n ids, so a long
// text that is to be truncated costs less than its whole encoding.
func (t *Tokenizer) EncodeN(text string, n int) []int {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	full := func(ids []int) bool { return n >= 0 && len(ids) >= n }
	capacity := len(text)/4 + 1
	if n >= 0 {
		capacity = min(capacity, n+16)
	}
	ids := make([]int, 0, capacity)
	t.raw.split(text, func(s string, id int, first bool) {
		if full(ids) {
			return
		}
		if id >= 0 {
			ids = append(ids, id)
			return
		}
		if t.norm != nil {
			s = t.norm.normalize(s)
		}
		t.normd.split(s, func(s string, id int, first2 bool) {
			if full(ids) {
				return
			}
			if id >= 0 {
				ids = append(ids, id)
				return
			}
			if t.fast != nil {
				ids = t.fast.encode(t.model.(*bpe), s, ids)
				return
			}
			words := []string{s}
			if t.pre != nil {
				words = t.pre.split(words, first && first2)
			}
			for _, w := range words {
				if full(ids) {
					return
				}
				if w != "" {
					ids = t.model.encode(w, ids)
				}
			}
		})
	})
	if n >= 0 && len(ids) > n {
		ids = ids[:n]
	}
	return ids
}

// Count returns the number of tokens of text (len(Encode(text))); it
// satisfies guard/compact.Counter.
func (t *Tokenizer) Count(text string) int {
	return len(t.Encode(text))
}

// addedMatcher finds added tokens in text, leftmost-longest.
type addedMatcher struct {
	byFirst [256][]addedTokenJSON // by first byte, longest first
}

func newAddedMatcher(toks []addedTokenJSON) *addedMatcher {
	if len(toks) == 0 {
		return nil
	}
	m := &addedMatcher{}
	for _, a := range toks {
		if a.Content == "" { // normalized away
			continue
		}
		m.byFirst[a.Content[0]] = append(m.byFirst[a.Content[0]], a)
	}
	for _, l := range &m.byFirst {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].Content) > len(l[j].Content) })
	}
	return m
}

// split calls fn for each section of s in order: text between tokens with
// id -1, and each token matched with its id. first is true for a text
// section that starts at offset 0 of s.
func (m *addedMatcher) split(s string, fn func(sec string, id int, first bool)) {
	if m == nil {
		if s != "" {
			fn(s, -1, true)
		}
		return
	}
	start := 0 // start of the pending text
	for i := 0; i < len(s); {
		cands := m.byFirst[s[i]]
		matched := false
		for _, a := range cands {
			if !strings.HasPrefix(s[i:], a.Content) {
				continue
			}
			end := i + len(a.Content)
			if a.SingleWord && (isWordBefore(s, i) || isWordAfter(s, end)) {
				continue
			}
			b := i
			if a.LStrip {
				for b > start {
					r, n := utf8.DecodeLastRuneInString(s[start:b])
					if !unicode.IsSpace(r) {
						break
					}
					b -= n
				}
			}
			if a.RStrip {
				for end < len(s) {
					r, n := utf8.DecodeRuneInString(s[end:])
					if !unicode.IsSpace(r) {
						break
					}
					end += n
				}
			}
			if b > start {
				fn(s[start:b], -1, start == 0)
			}
			fn(a.Content, a.ID, false)
			start, i = end, end
			matched = true
			break
		}
		if !matched {
			i++
		}
	}
	if start < len(s) {
		fn(s[start:], -1, start == 0)
	}
}

// isWordRune is \w as Unicode regex engines define it: Alphabetic,
// marks, decimal digits, connector punctuation and the joiners.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.In(r, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc) ||
		r == 0x200C || r == 0x200D
}

func isWordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWordRune(r)
}

func isWordAfter(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isWordRune(r)
}

// typeOf reads the "type" field of a component.
func typeOf(m json.RawMessage) (string, error) {
	var h struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(m, &h); err != nil {
		return "", err
	}
	return h.Type, nil
}

// parseSequence parses a Sequence normalizer or pre-tokenizer m: each
// member of its list (the field named field) with parse, leaving out
// those that are null.
func parseSequence[T any](m json.RawMessage, field string, parse func(json.RawMessage) (T, error)) ([]T, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(m, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", "Sequence", err)
	}
	var members []json.RawMessage
	if raw, ok := v[field]; ok {
		if err := json.Unmarshal(raw, &members); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", "Sequence", field, err)
		}
	}
	var q []T
	for i, c := range members {
		x, err := parse(c)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", "Sequence", i, err)
		}
		if any(x) != nil {
			q = append(q, x)
		}
	}
	return q, nil
}
