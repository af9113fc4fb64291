package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// precompiled is SentencePiece's compiled normalization rules (the
// Precompiled normalizer of T5, XLM-R, ALBERT and other converted
// SentencePiece models): a double-array trie (darts-clone) of byte strings
// whose values index NUL-terminated replacements. Like SentencePiece and
// the tokenizers library, it replaces the longest prefix the trie knows at
// each position and copies a character it does not know.
type precompiled struct {
	units      []uint32
	normalized string
}

func newPrecompiled(b64 string) (*precompiled, error) {
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("precompiled_charsmap: %w", err)
	}
	if len(blob) < 4 {
		return nil, errors.New("precompiled_charsmap: too short")
	}
	size := int(binary.LittleEndian.Uint32(blob))
	if size%4 != 0 || size == 0 || size > len(blob)-4 {
		return nil, fmt.Errorf("precompiled_charsmap: trie of %d bytes in a %d-byte map", size, len(blob))
	}
	p := &precompiled{units: make([]uint32, size/4), normalized: string(blob[4+size:])}
	for i := range p.units {
		p.units[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	if !utf8.ValidString(p.normalized) {
		return nil, errors.New("precompiled_charsmap: replacements are not UTF-8")
	}
	return p, nil
}

// longestPrefix returns the length of the longest prefix of key in the
// trie and its replacement, or 0.
func (p *precompiled) longestPrefix(key string) (int, string) {
	unit := func(i uint32) (uint32, bool) {
		if int(i) >= len(p.units) {
			return 0, false
		}
		return p.units[i], true
	}
	offset := func(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
	u, _ := unit(0)
	pos := offset(u)
	length, value := 0, -1
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == 0 {
			break
		}
		pos ^= uint32(c)
		u, ok := unit(pos)
		if !ok || u&((1<<31)|0xFF) != uint32(c) {
			break
		}
		pos ^= offset(u)
		if (u>>8)&1 == 1 {
			leaf, ok := unit(pos)
			if !ok {
				break
			}
			length, value = i+1, int(leaf&((1<<31)-1))
		}
	}
	if value < 0 || value > len(p.normalized) {
		return 0, ""
	}
	rep := p.normalized[value:]
	if j := strings.IndexByte(rep, 0); j >= 0 {
		rep = rep[:j]
	}
	return length, rep
}

func (p *precompiled) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		if n, rep := p.longestPrefix(s); n > 0 {
			b.WriteString(rep)
			s = s[n:]
			continue
		}
		_, n := utf8.DecodeRuneInString(s)
		b.WriteString(s[:n])
		s = s[n:]
	}
	return b.String()
}
