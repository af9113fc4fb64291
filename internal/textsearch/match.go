package textsearch

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode/utf8"
)

// Matcher finds the terms of a Query in texts, reusing its memory from one
// text to the next. It is not safe for concurrent use.
type Matcher struct {
	q      *Query
	tz     Tokenizer
	stem   []byte
	folded []byte
}

// NewMatcher returns a Matcher of q's terms.
func NewMatcher(q *Query) *Matcher {
	return &Matcher{q: q}
}

// stemMatches reports whether the token with the folded form w matches a
// plain word of stem s: whether w's stem starts with s. The stemmer never
// changes a token's first byte, which makes the common mismatch cheap;
// stem holds w's stem once computed.
func (m *Matcher) stemMatches(w []byte, s string, stem *[]byte) bool {
	if len(w) == 0 || len(s) == 0 || w[0] != s[0] {
		return false
	}
	if *stem == nil {
		m.stem = append(m.stem[:0], w...)
		*stem = Stem(m.stem)
	}
	return len(*stem) >= len(s) && string((*stem)[:len(s)]) == s
}

// Count sets freq[i] to the number of times term i occurs in text, for
// each term in want, and to 0 for the others: the tokens a plain word
// matches, and the places a substring term matches, not overlapping.
func (m *Matcher) Count(text string, want *TermSet, freq []int) {
	clear(freq)
	m.plainMatches(text, want, func(_ *Token, i int) { freq[i]++ })
	if !m.wants(want, false) {
		return
	}
	m.folded = AppendFold(m.folded[:0], text)
	for i, term := range m.q.Terms {
		if !term.Plain && want.Has(i) {
			freq[i] = bytes.Count(m.folded, []byte(term.Text))
		}
	}
}

// plainMatches calls fn with each token of text and each plain word in
// want that matches it: whose stem starts with the word's stem.
func (m *Matcher) plainMatches(text string, want *TermSet, fn func(t *Token, term int)) {
	if !m.wants(want, true) {
		return
	}
	m.tz.Each(text, func(t *Token) bool {
		var stem []byte
		for i, term := range m.q.Terms {
			if term.Plain && want.Has(i) && m.stemMatches(t.Folded, term.Stem, &stem) {
				fn(t, i)
			}
		}
		return true
	})
}

// wants reports whether want holds a plain word (plain) or another term.
func (m *Matcher) wants(want *TermSet, plain bool) bool {
	for i, t := range m.q.Terms {
		if t.Plain == plain && want.Has(i) {
			return true
		}
	}
	return false
}

// Occurrence is one place where a term matches in a text.
type Occurrence struct {
	Term int // index in Query.Terms
	// Offset is the characters (runes) before it in the text, Runes its
	// length: the whole token for a plain word ("parser" for "parse").
	Offset, Runes int
}

// Locate appends to dst the occurrences of the terms in want in text, by
// offset (where several start at one place, plain words first, in the
// order of the query), and returns it. The occurrences are those Count
// counts.
func (m *Matcher) Locate(dst []Occurrence, text string, want *TermSet) []Occurrence {
	from := len(dst)
	m.plainMatches(text, want, func(t *Token, i int) {
		dst = append(dst, Occurrence{Term: i, Offset: t.RuneStart, Runes: t.Runes})
	})
	if !m.wants(want, false) {
		return dst
	}
	// Folding keeps every character where it was, so character offsets
	// in the folded text are offsets in text.
	folded := string(AppendFold(m.folded[:0], text))
	for i, term := range m.q.Terms {
		if term.Plain || !want.Has(i) {
			continue
		}
		n := utf8.RuneCountInString(term.Text)
		pos, runes := 0, 0
		for {
			k := strings.Index(folded[pos:], term.Text)
			if k < 0 {
				break
			}
			runes += utf8.RuneCountInString(folded[pos : pos+k])
			dst = append(dst, Occurrence{Term: i, Offset: runes, Runes: n})
			pos += k + len(term.Text)
			runes += n
		}
	}
	slices.SortStableFunc(dst[from:], func(a, b Occurrence) int { return cmp.Compare(a.Offset, b.Offset) })
	return dst
}

// Doc is a text prepared for counting the terms of queries in it many
// times over, without tokenizing it each time (see Docs).
type Doc struct {
	stems  string // " stem stem …": a space before the stem of each token
	folded string // Fold(text)
}

// NewDoc prepares text, with tz's memory.
func (tz *Tokenizer) NewDoc(text string) Doc {
	b := make([]byte, 0, len(text)+8)
	tz.Each(text, func(t *Token) bool {
		b = append(b, ' ')
		b = append(b, Stem(t.Folded)...)
		return true
	})
	return Doc{stems: string(b), folded: Fold(text)}
}

// Docs is a sequence of prepared texts, searched all at once: a few
// substring scans of their concatenation per term, instead of a pass over
// each text.
type Docs struct {
	stems, folded  string
	stemAt, foldAt []int // where each text starts, then the end
}

// NewDocs joins docs.
func NewDocs(docs []Doc) *Docs {
	var ns, nf int
	for _, d := range docs {
		ns += len(d.stems)
		nf += len(d.folded) + 1
	}
	var s, f strings.Builder
	s.Grow(ns)
	f.Grow(nf)
	d := &Docs{stemAt: make([]int, 0, len(docs)+1), foldAt: make([]int, 0, len(docs)+1)}
	for _, doc := range docs {
		d.stemAt = append(d.stemAt, s.Len())
		d.foldAt = append(d.foldAt, f.Len())
		s.WriteString(doc.stems)
		// No term holds white space, so none matches across two texts.
		f.WriteString(doc.folded)
		f.WriteByte('\n')
	}
	d.stemAt = append(d.stemAt, s.Len())
	d.foldAt = append(d.foldAt, f.Len())
	d.stems, d.folded = s.String(), f.String()
	return d
}

// Len is the number of texts.
func (d *Docs) Len() int { return len(d.stemAt) - 1 }

// Doc returns text i, sharing the memory of d: the texts of a Docs built
// from them can be dropped for these.
func (d *Docs) Doc(i int) Doc {
	return Doc{stems: d.stems[d.stemAt[i]:d.stemAt[i+1]], folded: d.folded[d.foldAt[i] : d.foldAt[i+1]-1]}
}

// checkEvery is how many matches Count finds between checks of its
// context.
const checkEvery = 4096

// Count calls fn(doc, term, n) for each text and term of q that occurs in
// it, n times as Matcher.Count counts (n > 0), by term, then text. It
// stops with ctx's error when ctx is done.
func (d *Docs) Count(ctx context.Context, q *Query, fn func(doc, term, n int)) error {
	found := 0
	for i, t := range q.Terms {
		all, at, pattern := d.folded, d.foldAt, t.Text
		if t.Plain {
			// A token matches when its stem starts with the term's: where
			// the stem follows a space. (Looking for the space too would
			// stop at every token.)
			all, at, pattern = d.stems, d.stemAt, t.Stem
		}
		doc, n := 0, 0
		for from := 0; ; {
			k := strings.Index(all[from:], pattern)
			if k < 0 {
				break
			}
			p := from + k
			if t.Plain && all[p-1] != ' ' {
				from = p + 1
				continue
			}
			// Matches come in order, so the text holding p only moves on.
			for at[doc+1] <= p {
				if n > 0 {
					fn(doc, i, n)
					n = 0
				}
				doc++
			}
			n++
			from = p + len(pattern)
			if found++; found%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		if n > 0 {
			fn(doc, i, n)
		}
	}
	return nil
}
