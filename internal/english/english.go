// Package english gets the small grammar of messages right: the plural
// after a count ("1 chunk", "2 chunks") and the article before a word ("a
// semantic vault", "an episodic vault").
package english

import (
	"strconv"
	"strings"
)

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and the word that fits it: Count(1, "chunk", "chunks") is
// "1 chunk", Count(0, ...) "0 chunks".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Plural(n, one, many)
}

// A is word after its indefinite article: "a semantic", "an episodic". It
// goes by the first letter, which is right for the words ctxkit uses
// (lower-case words, not abbreviations).
func A(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// Or joins words as a sentence lists alternatives: "a", "a or b", "a, b
// or c".
func Or(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
