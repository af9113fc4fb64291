package sqlitestore

import (
	"unicode"
	"unicode/utf8"
)

// Search splits text into tokens as SQLite's unicode61 tokenizer does (with
// remove_diacritics 0) and stems them with the Porter stemmer exactly as
// SQLite's porter tokenizer does. The index is built from these tokens (see
// index.go) and matches are located and counted with them, so the two
// always agree.
//
// Diacritics are kept, so that matching agrees with the substring matching
// of other backends: "école" matches "ÉCOLE" but "ecole" does not.

// porterMaxToken is the longest token, in bytes, that the porter stemmer
// stems; longer ones, and those shorter than 3 bytes, pass through.
const porterMaxToken = 64

// isTokenRune reports whether unicode61 counts r as part of a token: letters,
// numbers and private-use characters.
func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// isDiacritic reports whether r is one of the combining marks that unicode61
// keeps inside a token (but never starts one with).
func isDiacritic(r rune) bool {
	const mask0, mask1 = 0x08029FDF, 0x000361F8
	switch {
	case r < 768 || r > 817:
		return false
	case r < 768+32:
		return mask0&(1<<(r-768)) != 0
	default:
		return mask1&(1<<(r-768-32)) != 0
	}
}

// foldRune lowers r as the tokenizer folds case.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(r)
}

// token is one token of a text: its byte range in the text, its position
// in runes, and its folded form (valid until the next token).
type token struct {
	start, end int // byte offsets
	runeStart  int // rune offset of start
	runes      int // runes in the token
	folded     []byte
}

// asciiToken and asciiFold classify and fold ASCII bytes, the common case.
var asciiToken, asciiFold = func() (tok [utf8.RuneSelf]bool, fold [utf8.RuneSelf]byte) {
	for c := range utf8.RuneSelf {
		tok[c] = isTokenRune(rune(c))
		fold[c] = byte(foldRune(rune(c)))
	}
	return tok, fold
}()

// tokenize calls fn for each token of text as unicode61 splits it, stopping
// early when fn returns false.
func tokenize(text string, fn func(t *token) bool) {
	var t token
	buf := make([]byte, 0, 64)
	runePos, i, n := 0, 0, len(text)
	for i < n {
		if c := text[i]; c < utf8.RuneSelf {
			if !asciiToken[c] {
				i++
				runePos++
				continue
			}
		} else if r, size := utf8.DecodeRuneInString(text[i:]); !isTokenRune(r) {
			i += size
			runePos++
			continue
		}
		t.start, t.runeStart = i, runePos
		buf = buf[:0]
		for i < n {
			if c := text[i]; c < utf8.RuneSelf {
				if !asciiToken[c] {
					break
				}
				buf = append(buf, asciiFold[c])
				i++
				runePos++
				continue
			}
			r, size := utf8.DecodeRuneInString(text[i:])
			if !isTokenRune(r) && !isDiacritic(r) {
				break
			}
			buf = utf8.AppendRune(buf, foldRune(r))
			i += size
			runePos++
		}
		t.end, t.runes, t.folded = i, runePos-t.runeStart, buf
		if !fn(&t) {
			return
		}
	}
}

// queryStem returns the form a plain query term takes in the index: folded
// and stemmed, as FTS5 prepares the term of a prefix query.
func queryStem(term string) []byte {
	var folded []byte
	for _, r := range term {
		folded = utf8.AppendRune(folded, foldRune(r))
	}
	return porterStem(folded)
}

// stemMatches reports whether a token (already folded) matches a prefix query
// whose stemmed form is stem: whether the token's stem starts with it. The
// stemmer never changes a token's first byte, which makes the common
// mismatch cheap.
func stemMatches(folded, stem []byte, scratch []byte) bool {
	if len(stem) == 0 || len(folded) == 0 || folded[0] != stem[0] {
		return false
	}
	scratch = append(scratch[:0], folded...)
	st := porterStem(scratch)
	return len(st) >= len(stem) && string(st[:len(stem)]) == string(stem)
}

// porterStem stems a folded token in place with the Porter algorithm exactly
// as SQLite's porter tokenizer does, and returns the stem (a prefix of b,
// possibly extended by one byte, so b should have spare capacity).
func porterStem(b []byte) []byte {
	// Every rule needs the token to end in a lower-case ASCII letter, which
	// numbers and most non-Latin words do not.
	if len(b) > porterMaxToken || len(b) < 3 || b[len(b)-1] < 'a' || b[len(b)-1] > 'z' {
		return b
	}
	p := porter{b: b}
	p.step1a()
	if p.step1b() && !p.step1b2() {
		c := p.at(len(p.b) - 1)
		switch {
		case !isVowel(c, false) && c != 'l' && c != 's' && c != 'z' && c == p.at(len(p.b)-2):
			p.b = p.b[:len(p.b)-1]
		case mEq1(p.b) && oStar(p.b):
			p.b = append(p.b, 'e')
		}
	}
	if p.at(len(p.b)-1) == 'y' && hasVowel(p.b[:len(p.b)-1]) {
		p.b[len(p.b)-1] = 'i'
	}
	p.step2()
	p.step3()
	p.step4()
	if n := len(p.b); p.at(n-1) == 'e' {
		if mGt1(p.b[:n-1]) || mEq1(p.b[:n-1]) && !oStar(p.b[:n-1]) {
			p.b = p.b[:n-1]
		}
	}
	if n := len(p.b); n > 1 && p.b[n-1] == 'l' && p.b[n-2] == 'l' && mGt1(p.b[:n-1]) {
		p.b = p.b[:n-1]
	}
	return p.b
}

type porter struct{ b []byte }

// at returns the byte at i, or 0 outside the buffer (SQLite reads a byte
// before a one-byte stem there, and no rule can match it).
func (p *porter) at(i int) byte {
	if i < 0 || i >= len(p.b) {
		return 0
	}
	return p.b[i]
}

func (p *porter) hasSuffix(s string) bool {
	return len(p.b) > len(s) && string(p.b[len(p.b)-len(s):]) == s
}

// replace swaps suffix old (present) for repl when cond holds for the stem
// before it, and reports whether old was present.
func (p *porter) replace(old, repl string, cond func([]byte) bool) bool {
	if !p.hasSuffix(old) {
		return false
	}
	stem := p.b[:len(p.b)-len(old)]
	if cond == nil || cond(stem) {
		p.b = append(stem, repl...)
	}
	return true
}

func (p *porter) step1a() {
	n := len(p.b)
	if p.at(n-1) != 's' {
		return
	}
	switch {
	case p.at(n-2) == 'e':
		if n > 4 && p.b[n-4] == 's' && p.b[n-3] == 's' || n > 3 && p.b[n-3] == 'i' {
			p.b = p.b[:n-2]
		} else {
			p.b = p.b[:n-1]
		}
	case p.at(n-2) != 's':
		p.b = p.b[:n-1]
	}
}

// step1b removes -eed/-ed/-ing and reports whether -ed or -ing went.
func (p *porter) step1b() bool {
	switch p.at(len(p.b) - 2) {
	case 'e':
		if p.replace("eed", "ee", mGt0) {
			return false
		}
		if p.hasSuffix("ed") && hasVowel(p.b[:len(p.b)-2]) {
			p.b = p.b[:len(p.b)-2]
			return true
		}
	case 'n':
		if p.hasSuffix("ing") && hasVowel(p.b[:len(p.b)-3]) {
			p.b = p.b[:len(p.b)-3]
			return true
		}
	}
	return false
}

func (p *porter) step1b2() bool {
	switch p.at(len(p.b) - 2) {
	case 'a':
		return p.replace("at", "ate", nil)
	case 'b':
		return p.replace("bl", "ble", nil)
	case 'i':
		return p.replace("iz", "ize", nil)
	}
	return false
}

// rule is a suffix replacement guarded by a condition on the stem.
type rule struct {
	suffix, repl string
}

// ruleTable lists rules by a byte of their suffix.
type ruleTable [256][]rule

// The rules of steps 2 to 4, keyed by the suffix's second-to-last letter and
// tried in order; the first suffix present decides, whether or not its
// condition holds.
var (
	step2Rules = ruleTable{
		'a': {{"ational", "ate"}, {"tional", "tion"}},
		'c': {{"enci", "ence"}, {"anci", "ance"}},
		'e': {{"izer", "ize"}},
		'g': {{"logi", "log"}},
		'l': {{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}},
		'o': {{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}},
		's': {{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}},
		't': {{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}},
	}
	step3Rules = ruleTable{
		'a': {{"ical", "ic"}},
		's': {{"ness", ""}},
		't': {{"icate", "ic"}, {"iciti", "ic"}},
		'u': {{"ful", ""}},
		'v': {{"ative", ""}},
		'z': {{"alize", "al"}},
	}
	step4Rules = ruleTable{
		'a': {{"al", ""}},
		'c': {{"ance", ""}, {"ence", ""}},
		'e': {{"er", ""}},
		'i': {{"ic", ""}},
		'l': {{"able", ""}, {"ible", ""}},
		'n': {{"ant", ""}, {"ement", ""}, {"ment", ""}, {"ent", ""}},
		'o': {{"ion", ""}, {"ou", ""}},
		's': {{"ism", ""}},
		't': {{"ate", ""}, {"iti", ""}},
		'u': {{"ous", ""}},
		'v': {{"ive", ""}},
		'z': {{"ize", ""}},
	}
)

func (p *porter) apply(rules *ruleTable, cond func([]byte) bool) {
	for _, r := range rules[p.at(len(p.b)-2)] {
		c := cond
		if r.suffix == "ion" {
			c = mGt1SorT
		}
		if p.replace(r.suffix, r.repl, c) {
			return
		}
	}
}

func (p *porter) step2() { p.apply(&step2Rules, mGt0) }
func (p *porter) step3() { p.apply(&step3Rules, mGt0) }
func (p *porter) step4() { p.apply(&step4Rules, mGt1) }

func isVowel(c byte, yIsVowel bool) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || yIsVowel && c == 'y'
}

// gobbleVC skips one [C]VC sequence and returns the index after its final
// consonant, or 0 when there is none. prevCons says whether the byte before
// stem was a consonant (which makes a leading y a vowel).
func gobbleVC(stem []byte, prevCons bool) int {
	cons := prevCons
	i := 0
	for ; i < len(stem); i++ {
		cons = !isVowel(stem[i], cons)
		if !cons {
			break
		}
	}
	for i++; i < len(stem); i++ {
		cons = !isVowel(stem[i], cons)
		if cons {
			return i + 1
		}
	}
	return 0
}

func mGt0(stem []byte) bool { return gobbleVC(stem, false) != 0 }

func mGt1(stem []byte) bool {
	n := gobbleVC(stem, false)
	return n != 0 && gobbleVC(stem[n:], true) != 0
}

func mEq1(stem []byte) bool {
	n := gobbleVC(stem, false)
	return n != 0 && gobbleVC(stem[n:], true) == 0
}

func mGt1SorT(stem []byte) bool {
	return len(stem) > 0 && (stem[len(stem)-1] == 's' || stem[len(stem)-1] == 't') && mGt1(stem)
}

// oStar reports whether stem ends consonant-vowel-consonant, the last not
// w, x or y.
func oStar(stem []byte) bool {
	n := len(stem)
	if n == 0 {
		return false
	}
	if c := stem[n-1]; c == 'w' || c == 'x' || c == 'y' {
		return false
	}
	mask, cons := 0, false
	for _, c := range stem {
		cons = !isVowel(c, cons)
		mask <<= 1
		if cons {
			mask |= 1
		}
		mask &= 7
	}
	return mask == 5
}

// hasVowel reports whether stem contains a vowel (y after the first letter
// counting as one).
func hasVowel(stem []byte) bool {
	for i, c := range stem {
		if isVowel(c, i > 0) {
			return true
		}
	}
	return false
}
