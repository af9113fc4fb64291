package textsearch

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// MatchAny returns the FTS5 query that finds, in a table tokenized
// "porter unicode61", the rows holding any word of text (Words): each word
// quoted, so that none is read as an operator or a column filter, and
// joined by OR. It returns "" when text has no word.
func MatchAny(text string) string {
	var b strings.Builder
	for i, w := range Words(text) {
		if i > 0 {
			b.WriteString(" OR ")
		}
		// A word holds no quote: it is a separator.
		b.WriteString(`"` + w + `"`)
	}
	return b.String()
}

// MaxTerms bounds the terms of a Query: a query is hostile input.
const MaxTerms = 256

// ErrTooManyTerms is returned by ParseQuery for a query of more than
// MaxTerms distinct terms.
var ErrTooManyTerms = errors.New("the query has too many terms")

// Term is one term of a Query.
type Term struct {
	// Text is the term as written, folded (Fold).
	Text string
	// Plain says the term is one word (PlainWord). A plain word matches the
	// tokens whose stem starts with Stem, its own stem: "parse" finds
	// "parser", "running" finds "runs", "ecole" finds "École". Any other
	// term (C++, e-mail, x@example.com) matches where the folded text holds
	// Text.
	Plain bool
	// Stem is the stem of a plain word.
	Stem string
}

// Is reports whether s, all of it, is one match of the term as Locate
// finds them: for a plain word, one word whose stem starts with the term's
// stem; for another term, the term itself, folded.
func (t *Term) Is(s string) bool {
	if !t.Plain {
		return Fold(s) == t.Text
	}
	if !PlainWord(s) {
		return false
	}
	return strings.HasPrefix(Tokenize(s)[0], t.Stem)
}

// Query is a search over offloaded content: terms separated by white
// space, each matching on its own.
type Query struct {
	Terms []Term
}

// ParseQuery splits text at white space into terms, without the quotes
// around them, and drops the repeated ones (two plain words are the same
// term when their stems are), keeping the order of first appearance.
// Invalid UTF-8 in a term becomes U+FFFD, so that a term matches whole
// characters only, never the middle of one.
func ParseQuery(text string) (*Query, error) {
	q := &Query{}
	seen := map[string]bool{}
	var tz Tokenizer
	for _, f := range strings.Fields(text) {
		f = strings.ToValidUTF8(strings.Trim(f, `"'`), "\uFFFD")
		if f == "" {
			continue
		}
		t := Term{Text: Fold(f), Plain: PlainWord(f)}
		key := "s" + t.Text
		if t.Plain {
			tz.Each(f, func(tok *Token) bool {
				t.Stem = string(Stem(tok.Folded))
				return false
			})
			key = "p" + t.Stem
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		q.Terms = append(q.Terms, t)
	}
	if len(q.Terms) > MaxTerms {
		return nil, fmt.Errorf("%w: %d, more than %d", ErrTooManyTerms, len(q.Terms), MaxTerms)
	}
	return q, nil
}

// TermSet is a set of a Query's terms, by their index in Query.Terms.
type TermSet [MaxTerms / 64]uint64

// Add puts term i in the set.
func (s *TermSet) Add(i int) { s[i/64] |= 1 << (i % 64) }

// Has reports whether term i is in the set.
func (s *TermSet) Has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

// Len is the number of terms in the set.
func (s *TermSet) Len() (n int) {
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// InnerTerms returns the index terms (stems, distinct, in order) that every
// text holding term holds, when term is not a plain word: those of term's
// tokens that have a separator on both sides within term ("exampl" for
// "x@example.com"). A token at either end of term may be part of a longer
// token of the text, whose stem cannot be known, and so may a token after
// a diacritic: in the text a token character may come before it.
func InnerTerms(term string) []string {
	var out []string
	var tz Tokenizer
	tz.Each(term, func(t *Token) bool {
		if t.End == len(term) {
			return false
		}
		if before, _ := utf8.DecodeLastRuneInString(term[:t.Start]); t.Start > 0 && classOf(before) == separator {
			if s := string(Stem(t.Folded)); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}
