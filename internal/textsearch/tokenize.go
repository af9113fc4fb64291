package textsearch

import "unicode/utf8"

// This file reproduces the tokens of SQLite FTS5's tokenizer "porter
// unicode61" (remove_diacritics=1, the default categories).
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
// decode invalid bytes differently. Go's decoding is used here: each
// invalid byte is one character, U+FFFD, a separator.

// class is what a character is to unicode61.
type class uint8

const (
	separator class = iota
	tokenChar       // starts or continues a token
	diacritic       // continues a token, and is dropped
)

// tableRunes is the end of the code points whose class and fold are looked
// up in a flat table (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic);
// above it the range tables are searched. Every diacritic is below it.
const tableRunes = 0x800

// lowClass and lowFold are the class and folded form of every code point
// below tableRunes, built from the range tables once.
var lowClass, lowFold = func() (c [tableRunes]class, f [tableRunes]uint16) {
	for r := range rune(tableRunes) {
		c[r] = searchClass(r)
		f[r] = uint16(searchFold(r))
	}
	return c, f
}()

// classOf returns r's class.
func classOf(r rune) class {
	if uint32(r) < tableRunes {
		return lowClass[r]
	}
	return searchClass(r)
}

// fold returns the folded form of the token character r.
func fold(r rune) rune {
	if uint32(r) < tableRunes {
		return rune(lowFold[r])
	}
	return searchFold(r)
}

// searchClass is classOf by search in the range tables.
func searchClass(r rune) class {
	// alnumRanges holds lo, hi pairs in order: find the first hi ≥ r.
	lo, hi := 0, len(alnumRanges)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if alnumRanges[2*m+1] < r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(alnumRanges)/2 && alnumRanges[2*lo] <= r {
		return tokenChar
	}
	for _, d := range diacriticRunes {
		if d == r {
			return diacritic
		}
	}
	return separator
}

// searchFold is fold by search in foldPairs.
func searchFold(r rune) rune {
	lo, hi := 0, len(foldPairs)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if foldPairs[2*m] < r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(foldPairs)/2 && foldPairs[2*lo] == r {
		return foldPairs[2*lo+1]
	}
	return r
}

// asciiToken and asciiFold are the class and fold of ASCII bytes, the
// common case: only letters and digits are token characters.
var asciiToken, asciiFold = func() (tok [utf8.RuneSelf]bool, f [utf8.RuneSelf]byte) {
	for c := range utf8.RuneSelf {
		tok[c] = classOf(rune(c)) == tokenChar
		f[c] = byte(fold(rune(c)))
	}
	return tok, f
}()

// Token is one token of a text.
type Token struct {
	// Start and End are the byte offsets of the token in the text: the
	// characters the tokenizer took into it, diacritics included.
	Start, End int
	// RuneStart is Start in characters (runes; an invalid byte counts as
	// one), Runes the characters from Start to End.
	RuneStart, Runes int
	// Folded is the token folded and without its diacritics, not stemmed.
	// It is valid until the next token; it may be changed, and it has
	// room to grow by a byte (as Stem may).
	Folded []byte
}

// Tokenizer cuts texts into tokens, reusing its memory from one text to
// the next. The zero value is ready for use; it is not safe for
// concurrent use.
type Tokenizer struct {
	tok Token
	buf []byte
}

// Each calls fn with each token of text, in order, until fn returns false.
// The token is valid only during the call.
func (tz *Tokenizer) Each(text string, fn func(t *Token) bool) {
	t, buf := &tz.tok, tz.buf
	if buf == nil {
		buf = make([]byte, 0, 64)
	}
	runes, i, n := 0, 0, len(text)
	for i < n {
		if c := text[i]; c < utf8.RuneSelf {
			if !asciiToken[c] {
				i++
				runes++
				continue
			}
		} else if r, size := utf8.DecodeRuneInString(text[i:]); classOf(r) != tokenChar {
			i += size
			runes++
			continue
		}
		t.Start, t.RuneStart = i, runes
		buf = buf[:0]
	token:
		for i < n {
			if c := text[i]; c < utf8.RuneSelf {
				if !asciiToken[c] {
					break
				}
				buf = append(buf, asciiFold[c])
				i++
				runes++
				continue
			}
			r, size := utf8.DecodeRuneInString(text[i:])
			switch classOf(r) {
			case separator:
				break token
			case tokenChar:
				buf = utf8.AppendRune(buf, fold(r))
			}
			i += size
			runes++
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // room for Stem
		}
		t.End, t.Runes, t.Folded = i, runes-t.RuneStart, buf
		tz.buf = buf
		if !fn(t) {
			return
		}
	}
}

// Tokenize returns the terms FTS5's "porter unicode61" tokenizer makes of
// text, in order: each token folded and stemmed.
func Tokenize(text string) []string {
	var out []string
	var tz Tokenizer
	tz.Each(text, func(t *Token) bool {
		out = append(out, string(Stem(t.Folded)))
		return true
	})
	return out
}

// Words returns the words of text: the pieces of it that the tokenizer
// makes one token each, as they are written (not folded), in order.
func Words(text string) []string {
	var out []string
	var tz Tokenizer
	tz.Each(text, func(t *Token) bool {
		out = append(out, text[t.Start:t.End])
		return true
	})
	return out
}

// PlainWord reports whether term is one word: the tokenizer makes exactly
// one token of it, spanning all of it.
func PlainWord(term string) bool {
	if term == "" {
		return false
	}
	r, size := utf8.DecodeRuneInString(term)
	if classOf(r) != tokenChar {
		return false
	}
	for _, r := range term[size:] {
		if classOf(r) == separator {
			return false
		}
	}
	return true
}

// Fold returns s with every token character folded as the tokenizer folds
// it (lower case, without diacritic) and every other character, invalid
// bytes included, as it is: one character for one, so that character
// offsets into the result are offsets into s.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || asciiFold[c] != c {
			return string(AppendFold(make([]byte, 0, len(s)), s))
		}
	}
	return s
}

// AppendFold appends Fold(s) to dst.
func AppendFold(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, asciiFold[c])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if size > 1 && classOf(r) == tokenChar {
			dst = utf8.AppendRune(dst, fold(r))
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}
