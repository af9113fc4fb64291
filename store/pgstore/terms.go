package pgstore

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/textsearch"
)

// The search index holds index terms computed in Go, as sqlitestore's
// does: for each item or text chunk, its distinct terms as SQLite FTS5's
// "porter unicode61" tokenizer makes them (textsearch: tokens folded,
// without diacritics, and stemmed). They are rows (workspace, term, item)
// of a B-tree, so that a plain query word, which matches the terms
// starting with its stem, is one range scan, and a workspace's terms are
// apart from every other's.

// termBuilder computes index terms, reusing its memory from one text to
// the next. It is not safe for concurrent use.
type termBuilder struct {
	tz   textsearch.Tokenizer
	seen map[string]struct{}
}

// terms returns the distinct index terms of text, in order of first
// appearance.
func (tb *termBuilder) terms(text string) [][]byte {
	if tb.seen == nil {
		tb.seen = map[string]struct{}{}
	}
	clear(tb.seen)
	var out [][]byte
	tb.tz.Each(text, func(t *textsearch.Token) bool {
		stem := textsearch.Stem(t.Folded)
		if _, ok := tb.seen[string(stem)]; !ok {
			term := string(stem)
			tb.seen[term] = struct{}{}
			out = append(out, []byte(term))
		}
		return true
	})
	return out
}

// itemTerms returns the index terms of an item's scalar values (the text
// store.SearchableText gives without fields).
func (tb *termBuilder) itemTerms(sc *jsonscan.Scalars, buf *[]byte, item []byte) ([][]byte, error) {
	var err error
	if *buf, err = sc.Append((*buf)[:0], item); err != nil {
		return nil, err
	}
	return tb.terms(string(*buf)), nil
}

// prefixEnd returns the least byte string greater than every string that
// starts with prefix, and false when there is none (prefix is all 0xff).
func prefixEnd(prefix []byte) ([]byte, bool) {
	end := []byte(string(prefix))
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1], true
		}
	}
	return nil, false
}

// posting is one row of a term table: a term and an item or chunk holding
// it.
type posting struct {
	term []byte
	row  int64
}

// sortedPostings returns the rows of terms, where terms[i] are those of
// row first+i, sorted by term and row: inserted in the order of the
// table's B-tree, they fill its pages from left to right instead of
// splitting pages all over it.
func sortedPostings(terms [][][]byte, first int64) []posting {
	n := 0
	for _, t := range terms {
		n += len(t)
	}
	out := make([]posting, 0, n)
	for i, t := range terms {
		for _, term := range t {
			out = append(out, posting{term, first + int64(i)})
		}
	}
	slices.SortFunc(out, func(a, b posting) int {
		if c := bytes.Compare(a.term, b.term); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	return out
}
