package textsearch

// PassageRunes is the span of a passage: the matches less than this many
// characters after a passage's first match belong to it.
const PassageRunes = 200

// Passage is a run of matches close together in a text.
type Passage struct {
	// Offset is the characters before the first match in the text, Runes
	// that match's length.
	Offset int64
	Runes  int
	// Terms are the terms matched in the passage, Matches the matches.
	Terms   TermSet
	Matches int
}

// Passages groups matches into passages, each starting at a match and
// holding the matches less than PassageRunes after it. The zero value is
// ready for use.
type Passages struct {
	cur  Passage
	open bool
}

// Add adds the match o, found at offset (in the whole text; matches come
// in order of offset), and returns the passage it closes, if any.
func (g *Passages) Add(o Occurrence, offset int64) (Passage, bool) {
	var done Passage
	closed := g.open && offset >= g.cur.Offset+PassageRunes
	if closed {
		done = g.cur
	}
	if closed || !g.open {
		g.cur, g.open = Passage{Offset: offset, Runes: o.Runes}, true
	}
	g.cur.Terms.Add(o.Term)
	g.cur.Matches++
	return done, closed
}

// Close returns the open passage, if any, and starts afresh.
func (g *Passages) Close() (Passage, bool) {
	p, ok := g.cur, g.open
	*g = Passages{}
	return p, ok
}
