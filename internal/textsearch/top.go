package textsearch

import "slices"

// Scored is a document with its BM25 score.
type Scored struct {
	// Doc is the document's id or position; the lower ranks first among
	// equal scores.
	Doc   int64
	Score float64
}

// worse orders documents as FTS5's ORDER BY rank, rowid does, reversed:
// lower score, then higher Doc.
func (a Scored) worse(b Scored) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Doc > b.Doc
}

// Top keeps the best n of the documents offered to it, as FTS5's ORDER BY
// rank, rowid LIMIT n chooses them: higher score first, ties by lower Doc.
// Its zero value keeps none; make one with NewTop.
type Top struct {
	n int
	h []Scored // a heap with the worst on top
}

// NewTop returns a Top that keeps the best n.
func NewTop(n int) Top { return Top{n: n} }

// Offer considers a document of that score.
func (t *Top) Offer(doc int64, score float64) {
	c := Scored{doc, score}
	h := t.h
	if len(h) < t.n {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			up := (i - 1) / 2
			if !h[i].worse(h[up]) {
				break
			}
			h[i], h[up] = h[up], h[i]
			i = up
		}
		t.h = h
		return
	}
	if len(h) == 0 || !h[0].worse(c) {
		return
	}
	h[0] = c
	for i := 0; ; {
		l, r, w := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].worse(h[w]) {
			w = l
		}
		if r < len(h) && h[r].worse(h[w]) {
			w = r
		}
		if w == i {
			break
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// Sorted returns the documents kept, best first. The Top is not to be
// offered more after it.
func (t *Top) Sorted() []Scored {
	slices.SortFunc(t.h, func(a, b Scored) int {
		switch {
		case b.worse(a):
			return -1
		case a.worse(b):
			return 1
		}
		return 0
	})
	return t.h
}
