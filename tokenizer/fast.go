package tokenizer

import (
	"encoding/json"
	"unicode/utf8"
)

// fastByteLevel is the pre-tokenizer of byte-level BPE models (GPT-2's
// ByteLevel with its regex, or Llama 3's and Qwen 2's Split followed by
// ByteLevel) run without building word lists: each word the scanner finds
// is mapped into a reused buffer and looked up in the word cache, so a
// known word costs no allocation. It gives the same words as the general
// path (TestFastPath, FuzzEncode).
type fastByteLevel struct {
	sc scanner
	// sectionPrefix: ByteLevel's add_prefix_space on the whole section
	// before its regex; wordPrefix: on each word the Split made.
	sectionPrefix, wordPrefix bool
}

// detectFastByteLevel recognizes the pre-tokenizers fastByteLevel covers.
func detectFastByteLevel(raw json.RawMessage) *fastByteLevel {
	type byteLevel struct {
		Type           string `json:"type"`
		AddPrefixSpace *bool  `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"`
	}
	orTrue := func(b *bool) bool { return b == nil || *b }
	var bl byteLevel
	if err := json.Unmarshal(raw, &bl); err == nil && bl.Type == "ByteLevel" && orTrue(bl.UseRegex) {
		return &fastByteLevel{sc: scanner{}, sectionPrefix: orTrue(bl.AddPrefixSpace)}
	}
	var seq struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(raw, &seq); err != nil || seq.Type != "Sequence" || len(seq.PreTokenizers) != 2 {
		return nil
	}
	var split struct {
		Type     string      `json:"type"`
		Pattern  patternJSON `json:"pattern"`
		Behavior string      `json:"behavior"`
		Invert   bool        `json:"invert"`
	}
	if err := json.Unmarshal(seq.PreTokenizers[0], &split); err != nil || split.Type != "Split" ||
		split.Pattern.Regex == nil || split.Behavior != "Isolated" || split.Invert {
		return nil
	}
	var sc scanner
	switch *split.Pattern.Regex {
	case patGPT2:
		sc = scanner{}
	case patLlama3:
		sc = scanner{llama: true, maxDigits: 3}
	case patQwen2:
		sc = scanner{llama: true, maxDigits: 1}
	default:
		return nil
	}
	if err := json.Unmarshal(seq.PreTokenizers[1], &bl); err != nil || bl.Type != "ByteLevel" || orTrue(bl.UseRegex) {
		return nil
	}
	return &fastByteLevel{sc: sc, wordPrefix: orTrue(bl.AddPrefixSpace)}
}

// encode appends the ids of section s.
func (f *fastByteLevel) encode(b *bpe, s string, dst []int) []int {
	if s == "" {
		return dst
	}
	if f.sectionPrefix && s[0] != ' ' {
		s = " " + s
	}
	var buf []byte
	for i := 0; i < len(s); {
		e := f.sc.next(s, i)
		buf = buf[:0]
		if f.wordPrefix && s[i] != ' ' {
			buf = utf8.AppendRune(buf, byteToRune[' '])
		}
		for k := i; k < e; k++ {
			buf = utf8.AppendRune(buf, byteToRune[s[k]])
		}
		dst = b.encodeBytes(buf, dst)
		i = e
	}
	return dst
}

// encodeBytes is encode for a word in a reused buffer: the cache and
// vocabulary lookups do not copy it.
func (b *bpe) encodeBytes(w []byte, dst []int) []int {
	if len(w) <= cacheMaxLen {
		b.cache.mu.RLock()
		ids, ok := b.cache.m[string(w)]
		b.cache.mu.RUnlock()
		if ok {
			return append(dst, ids...)
		}
	}
	return b.encode(string(w), dst)
}
