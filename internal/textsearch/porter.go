package textsearch

import "strings"

// This file is the Porter stemmer (M. F. Porter, "An algorithm for suffix
// stripping", 1980, with the published revisions bli→ble and logi→log) as
// FTS5's porter tokenizer applies it to the tokens of unicode61: on the
// bytes of the UTF-8 token, where any byte other than an ASCII vowel is a
// consonant, and only to tokens of 3 to 64 bytes; shorter and longer ones
// pass unchanged. The tests check it token by token against SQLite.

// porterMin and porterMax bound the tokens FTS5 stems, in bytes.
const (
	porterMin = 3
	porterMax = 64
)

// suffixRule replaces a suffix when the rest of the word (the stem)
// satisfies the step's condition.
type suffixRule struct {
	suffix, repl string
}

// The rules of steps 2, 3 and 4, longest suffix first: only the longest
// suffix that ends the word is tried, and if its condition fails the step
// does nothing.
var (
	porterStep2 = newSuffixTable([]suffixRule{
		{"ational", "ate"}, {"fulness", "ful"}, {"iveness", "ive"}, {"ization", "ize"}, {"ousness", "ous"},
		{"biliti", "ble"}, {"tional", "tion"},
		{"alism", "al"}, {"aliti", "al"}, {"ation", "ate"}, {"entli", "ent"}, {"iviti", "ive"}, {"ousli", "ous"},
		{"alli", "al"}, {"anci", "ance"}, {"ator", "ate"}, {"enci", "ence"}, {"izer", "ize"}, {"logi", "log"},
		{"bli", "ble"}, {"eli", "e"},
	})
	porterStep3 = newSuffixTable([]suffixRule{
		{"alize", "al"}, {"ative", ""}, {"icate", "ic"}, {"iciti", "ic"},
		{"ical", "ic"}, {"ness", ""},
		{"ful", ""},
	})
	porterStep4 = newSuffixTable([]suffixRule{
		{"ement", ""},
		{"ance", ""}, {"ence", ""}, {"able", ""}, {"ible", ""}, {"ment", ""},
		{"ant", ""}, {"ent", ""}, {"ion", ""}, {"ism", ""}, {"ate", ""}, {"iti", ""}, {"ous", ""}, {"ive", ""}, {"ize", ""},
		{"al", ""}, {"er", ""}, {"ic", ""}, {"ou", ""},
	})
)

// suffixTable holds the rules of a step by the last two letters of their
// suffix, in the step's order: two suffixes that both end a word end in
// the same two letters, so only those rules need trying.
type suffixTable [26 * 26][]suffixRule

func newSuffixTable(rules []suffixRule) *suffixTable {
	var t suffixTable
	for _, r := range rules {
		k := len(r.suffix)
		i := int(r.suffix[k-2]-'a')*26 + int(r.suffix[k-1]-'a')
		t[i] = append(t[i], r)
	}
	return &t
}

// Stem stems the folded token w in place, as FTS5's porter tokenizer does,
// and returns the stem, which is written over w.
func Stem(w []byte) []byte {
	// Every rule needs the token to end in a lower-case ASCII letter, which
	// numbers and most non-Latin words do not.
	if len(w) < porterMin || len(w) > porterMax || w[len(w)-1] < 'a' || w[len(w)-1] > 'z' {
		return w
	}
	w = porterStep1ab(w)
	// Step 1c: y after a stem with a vowel becomes i.
	if n := len(w); w[n-1] == 'y' && hasVowel(w[:n-1]) {
		w[n-1] = 'i'
	}
	w = replaceSuffix(w, porterStep2, 0)
	w = replaceSuffix(w, porterStep3, 0)
	w = replaceSuffix(w, porterStep4, 1)
	// Step 5a: a final e goes when m > 1, or m = 1 and the stem is not cvc.
	if n := len(w); w[n-1] == 'e' {
		stem := w[:n-1]
		if m := measure(stem); m > 1 || (m == 1 && !endsCVC(stem)) {
			w = stem
		}
	}
	// Step 5b: ll becomes l when m > 1.
	if n := len(w); n > 1 && w[n-1] == 'l' && w[n-2] == 'l' && measure(w[:n-1]) > 1 {
		w = w[:n-1]
	}
	return w
}

// porterStep1ab removes plurals (step 1a) and -ed or -ing (step 1b).
func porterStep1ab(w []byte) []byte {
	n := len(w)
	// Step 1a: sses → ss, ies → i, ss → ss, s → "".
	if w[n-1] == 's' {
		switch {
		case n > 4 && hasSuffix(w, "sses"), n > 3 && hasSuffix(w, "ies"):
			w = w[:n-2]
		case w[n-2] != 's':
			w = w[:n-1]
		}
	}
	// Step 1b.
	var stem []byte
	switch {
	case endsWith(w, "eed"):
		if s := w[:len(w)-3]; measure(s) > 0 {
			w = w[:len(w)-1]
		}
		return w
	case endsWith(w, "ed") && hasVowel(w[:len(w)-2]):
		stem = w[:len(w)-2]
	case endsWith(w, "ing") && hasVowel(w[:len(w)-3]):
		stem = w[:len(w)-3]
	default:
		return w
	}
	n = len(stem)
	switch {
	case endsWith(stem, "at"), endsWith(stem, "bl"), endsWith(stem, "iz"):
		return append(stem, 'e')
	case n > 1 && stem[n-1] == stem[n-2] && !strings.ContainsRune("aeioulsz", rune(stem[n-1])):
		// A double consonant other than ll, ss or zz is undoubled; here
		// FTS5 counts yy as a double consonant, whatever precedes it.
		return stem[:n-1]
	case measure(stem) == 1 && endsCVC(stem):
		return append(stem, 'e')
	}
	return stem
}

// replaceSuffix applies the first rule whose suffix ends w (with at least
// one byte before it), if the measure of the stem is above minMeasure;
// later rules are not tried. The suffix "ion" (step 4) also needs an s or t
// before it.
func replaceSuffix(w []byte, rules *suffixTable, minMeasure int) []byte {
	n := len(w)
	if n < 3 {
		return w
	}
	a, b := w[n-2]-'a', w[n-1]-'a'
	if a >= 26 || b >= 26 {
		return w
	}
	for _, r := range rules[int(a)*26+int(b)] {
		if !endsWith(w, r.suffix) {
			continue
		}
		stem := w[:n-len(r.suffix)]
		if r.suffix == "ion" && stem[len(stem)-1] != 's' && stem[len(stem)-1] != 't' {
			return w
		}
		if measure(stem) <= minMeasure {
			return w
		}
		return append(stem, r.repl...)
	}
	return w
}

// endsWith reports whether w ends with suffix and has something before it.
func endsWith(w []byte, suffix string) bool {
	return len(w) > len(suffix) && hasSuffix(w, suffix)
}

func hasSuffix(w []byte, suffix string) bool {
	return len(w) >= len(suffix) && string(w[len(w)-len(suffix):]) == suffix
}

// isConsonant reports whether w[i] is a consonant: not a, e, i, o or u,
// and not a y that follows a consonant. Bytes of non-ASCII letters are
// consonants.
func isConsonant(w []byte, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isConsonant(w, i-1)
	}
	return true
}

// measure is Porter's m: the number of vowel-consonant sequences in w,
// read as [C](VC){m}[V].
func measure(w []byte) int {
	m, i := 0, 0
	for i < len(w) && isConsonant(w, i) {
		i++
	}
	for i < len(w) {
		for i < len(w) && !isConsonant(w, i) {
			i++
		}
		if i == len(w) {
			break
		}
		for i < len(w) && isConsonant(w, i) {
			i++
		}
		m++
	}
	return m
}

// hasVowel reports whether w contains a vowel.
func hasVowel(w []byte) bool {
	for i := range w {
		if !isConsonant(w, i) {
			return true
		}
	}
	return false
}

// endsCVC is Porter's *o: w ends consonant, vowel, consonant, the last
// not w, x or y.
func endsCVC(w []byte) bool {
	n := len(w)
	if n < 3 || !isConsonant(w, n-3) || isConsonant(w, n-2) || !isConsonant(w, n-1) {
		return false
	}
	c := w[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}
