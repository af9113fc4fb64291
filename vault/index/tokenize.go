package index

import (
	"sort"
	"unicode/utf8"
)

// This file reproduces the tokens of SQLite FTS5's tokenizer "porter
// unicode61" (remove_diacritics=1, the default categories), the one the
// sqliteindex indexes with, so that the in-memory Lexicon finds and scores
// exactly what FTS5 would.
//
// unicode61 cuts text into runs of token characters. A token starts at a
// token character and goes on over token characters and the 25 combining
// diacritics FTS5 knows (U+0300…U+0331, which are dropped). Each character
// is folded: lower case, and a Latin letter with one diacritic becomes its
// base letter (é → e, İ → i, ẞ → ß). Which characters are token characters
// and how each folds is SQLite's own table, not Go's unicode package (they
// differ: FTS5 counts unassigned code points as token characters, its case
// table is older); tokenize_tables.go holds it, as measured from SQLite by
// TestTokenTables -update, which also checks it. The porter tokenizer then
// stems each token (porter.go).
//
// Text must be valid UTF-8 for the tokens to equal FTS5's: SQLite and Go
// decode invalid bytes differently.

// tokenClass is what a character is to unicode61.
type tokenClass uint8

const (
	separator tokenClass = iota
	tokenChar            // starts or continues a token
	diacritic            // continues a token, and is dropped
)

// classOf returns r's class.
func classOf(r rune) tokenClass {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return tokenChar
		}
		return separator
	}
	// alnumRanges holds lo, hi pairs in order: find the first hi ≥ r.
	i := sort.Search(len(alnumRanges)/2, func(i int) bool { return alnumRanges[2*i+1] >= r })
	if i < len(alnumRanges)/2 && alnumRanges[2*i] <= r {
		return tokenChar
	}
	j := sort.Search(len(diacriticRunes), func(i int) bool { return diacriticRunes[i] >= r })
	if j < len(diacriticRunes) && diacriticRunes[j] == r {
		return diacritic
	}
	return separator
}

// fold returns the folded form of the token character r.
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	i := sort.Search(len(foldPairs)/2, func(i int) bool { return foldPairs[2*i] >= r })
	if i < len(foldPairs)/2 && foldPairs[2*i] == r {
		return foldPairs[2*i+1]
	}
	return r
}

// Tokenize returns the terms FTS5's "porter unicode61" tokenizer makes of
// text, in order.
func Tokenize(text string) []string {
	var out []string
	eachToken(text, nil, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

// eachToken calls fn with each term of text, in order. The bytes passed
// are valid only during the call; buf is scratch space, returned for
// reuse.
func eachToken(text string, buf []byte, fn func(tok []byte)) []byte {
	return eachWord(text, buf, func(w []byte) { fn(porterStem(w)) })
}

// eachWord is eachToken without the stemming: fn gets each folded token,
// and may stem it in place.
func eachWord(text string, buf []byte, fn func(w []byte)) []byte {
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if classOf(r) != tokenChar {
			i += size
			continue
		}
		buf = buf[:0]
		for i < len(text) {
			r, size = rune(text[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(text[i:])
			}
			c := classOf(r)
			if c == separator {
				break
			}
			if c == tokenChar {
				buf = utf8.AppendRune(buf, fold(r))
			}
			i += size
		}
		fn(buf)
	}
	return buf
}
