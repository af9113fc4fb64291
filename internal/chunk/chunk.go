// Package chunk cuts an extracted document ([extract.Document]) into
// passages of about a fixed number of words for embedding and lexical
// indexing in a semantic vault.
//
// A document with headings is split at every heading first, and each chunk
// of a section starts with the section's heading path ("Guide > Install")
// and a blank line, so that a passage keeps the context of where it stands.
// A section (or a document without headings) longer than the limit is cut
// into pieces of at most Options.Words words, each repeating the last
// Options.Overlap words of the piece before it. A cut prefers, in order, a
// paragraph break (between blocks, or a blank line within one), a line
// break, the end of a sentence, and any space; it is never placed in the
// first half of a piece's new words, which bounds the number of chunks
// whatever the text looks like. This is textsplit's boundary order
// (textsplit.ChunkText), counted in words rather than characters, since
// embedding models and the 400-word target count words; chunk text is cut
// from the blocks as they stand, so line breaks and indentation are kept.
//
// The word limit applies to a chunk's body, after its heading path. A
// single word longer than the limit cannot be cut, so a chunk holds it
// whole. Each chunk carries where its body is in the original file
// ([Locator]): the pages, DOCX paragraphs or lines of its first and last
// words, from the positions of the document's blocks. The same document and
// options always give the same chunks.
package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/extract"
)

// Defaults for Options.
const (
	DefaultWords   = 400
	DefaultOverlap = 40
)

// Options sets the size of chunks. The zero value gives the defaults.
type Options struct {
	// Words is the most words in a chunk's body; 0 means DefaultWords.
	Words int
	// Overlap is how many words a chunk repeats from the one before it in
	// the same section: 0 means DefaultOverlap, a negative value none. It
	// is clamped to Words/2 so that every chunk adds words of its own.
	Overlap int
}

func (o Options) norm() (words, overlap int) {
	words, overlap = o.Words, o.Overlap
	if words <= 0 {
		words = DefaultWords
	}
	switch {
	case overlap == 0:
		overlap = DefaultOverlap
	case overlap < 0:
		overlap = 0
	}
	return words, min(overlap, words/2)
}

// Locator is where a chunk's body is in the original file: from its first
// word's position to its last word's, both 1-based and inclusive, in the
// document's unit (pages, paragraphs or lines); zero when the document has
// no positions. A chunk of a heading alone is located at the heading.
type Locator struct {
	Unit       extract.Unit
	Start, End int
}

// Chunk is one passage of a document.
type Chunk struct {
	// Text is the passage as indexed: the heading path and a blank line
	// when there is a path, then the body.
	Text string
	// HeadingPath is the headings the passage stands under, outermost
	// first, joined by " > "; empty before the first heading.
	HeadingPath string
	// Loc is where the body is in the original file.
	Loc Locator
	// Index is the chunk's position in the document, from 0.
	Index int
	// FirstBlock and LastBlock are the indices in the document's Blocks of
	// the first and last block the body takes words from; for a chunk of a
	// heading alone (a heading with no text under it and no subsection),
	// both are the heading's.
	FirstBlock, LastBlock int
	// Words is the number of words in the body.
	Words int
}

// Body returns the passage without its heading path.
func (c Chunk) Body() string {
	if c.HeadingPath == "" {
		return c.Text
	}
	if c.Text == c.HeadingPath {
		return "" // a heading alone
	}
	return strings.TrimPrefix(c.Text, c.HeadingPath+"\n\n")
}

// Split cuts doc into chunks; see the package documentation.
func Split(doc *extract.Document, opts Options) []Chunk {
	if doc == nil {
		return nil
	}
	words, overlap := opts.norm()
	s := splitter{words: words, overlap: overlap, unit: doc.Unit}
	var path []extract.Block // the enclosing headings, outermost first
	var pathIdx []int
	start := 0 // first block of the current section's body
	for i, b := range doc.Blocks {
		if b.Kind != extract.Heading {
			continue
		}
		s.section(doc.Blocks, start, i, path, pathIdx)
		for len(path) > 0 && path[len(path)-1].Level >= b.Level {
			path, pathIdx = path[:len(path)-1], pathIdx[:len(pathIdx)-1]
		}
		path, pathIdx = append(path, b), append(pathIdx, i)
		start = i + 1
	}
	s.section(doc.Blocks, start, len(doc.Blocks), path, pathIdx)
	return s.chunks
}

type splitter struct {
	words, overlap int
	unit           extract.Unit
	chunks         []Chunk
	text           strings.Builder // reused section text
	toks           []token         // reused section words
}

// token is a word of a section's text.
type token struct {
	start, end int      // byte offsets in the section text
	block      int32    // index of its block in the document
	line       int32    // line breaks before it in its block's text
	brk        boundary // the boundary before the word
}

// boundary is a kind of break between two words, from most to least
// preferred.
type boundary uint8

const (
	paragraph boundary = iota
	line
	sentence
	space
)

// section chunks the paragraphs blocks[from:to] under path. A heading with
// no body gives a chunk of its own only when no later section carries it
// in its path, so that its words are always in some chunk.
func (s *splitter) section(blocks []extract.Block, from, to int, path []extract.Block, pathIdx []int) {
	names := make([]string, len(path))
	for i, h := range path {
		names[i] = h.Text
	}
	headingPath := strings.Join(names, " > ")
	s.tokenize(blocks, from, to)
	if len(s.toks) == 0 {
		if len(path) == 0 {
			return
		}
		last := path[len(path)-1]
		if to < len(blocks) && blocks[to].Level > last.Level {
			return // its subsection carries it
		}
		h := pathIdx[len(pathIdx)-1]
		loc := s.locator(last.Pos, last.Pos)
		s.add(Chunk{Text: headingPath, HeadingPath: headingPath, Loc: loc, FirstBlock: h, LastBlock: h})
		return
	}
	text := s.text.String()
	lo := 0
	for {
		newFrom := lo // the first word that is not overlap
		if lo > 0 {
			newFrom = lo + s.overlap
		}
		end := len(s.toks)
		if end-lo > s.words {
			end = s.cut(lo, newFrom)
		}
		first, last := s.toks[lo], s.toks[end-1]
		body := text[first.start:last.end]
		loc := s.locator(s.pos(blocks, first), s.pos(blocks, last))
		c := Chunk{HeadingPath: headingPath, Loc: loc, FirstBlock: int(first.block), LastBlock: int(last.block), Words: end - lo, Text: body}
		if headingPath != "" {
			c.Text = headingPath + "\n\n" + body
		}
		s.add(c)
		if end == len(s.toks) {
			return
		}
		lo = end - s.overlap
	}
}

// cut returns where the chunk starting at word lo ends (exclusive): the
// last boundary of the most preferred kind before a word in
// [newFrom+half of the new words, lo+words].
func (s *splitter) cut(lo, newFrom int) int {
	hi := lo + s.words
	earliest := newFrom + (hi-newFrom+1)/2
	earliest = max(earliest, lo+s.overlap+1) // so that the next chunk starts after lo
	for b := paragraph; b < space; b++ {
		for p := hi; p >= earliest; p-- {
			if s.toks[p].brk <= b {
				return p
			}
		}
	}
	return hi
}

// pos returns the position of a word in the original file.
func (s *splitter) pos(blocks []extract.Block, t token) int {
	p := blocks[t.block].Pos
	if s.unit == extract.Lines {
		p += int(t.line)
	}
	return p
}

// locator returns the locator of a body from start to end, none when the
// document has no positions.
func (s *splitter) locator(start, end int) Locator {
	if s.unit == "" || start <= 0 {
		return Locator{}
	}
	return Locator{Unit: s.unit, Start: start, End: end}
}

func (s *splitter) add(c Chunk) {
	c.Index = len(s.chunks)
	s.chunks = append(s.chunks, c)
}

// tokenize fills s.text with the paragraphs blocks[from:to] separated by
// blank lines, and s.toks with its words: runs of characters other than
// white space.
func (s *splitter) tokenize(blocks []extract.Block, from, to int) {
	s.text.Reset()
	s.toks = s.toks[:0]
	for i := from; i < to; i++ {
		t := blocks[i].Text
		base := s.text.Len()
		if base > 0 {
			s.text.WriteString("\n\n")
			base += 2
		}
		s.text.WriteString(t)
		newlines := 2      // in the white space before the next word; a block starts a paragraph
		breaks := int32(0) // line breaks so far in the block
		for j := 0; j < len(t); {
			r, n := utf8.DecodeRuneInString(t[j:])
			if unicode.IsSpace(r) {
				if r == '\n' {
					newlines++
					breaks++
				}
				j += n
				continue
			}
			k := j + n
			for k < len(t) {
				r, n := utf8.DecodeRuneInString(t[k:])
				if unicode.IsSpace(r) {
					break
				}
				k += n
			}
			brk := space
			switch {
			case newlines >= 2:
				brk = paragraph
			case newlines == 1:
				brk = line
			case len(s.toks) > 0 && endsSentence(s.text.String()[s.toks[len(s.toks)-1].start:s.toks[len(s.toks)-1].end]):
				brk = sentence
			}
			s.toks = append(s.toks, token{start: base + j, end: base + k, brk: brk, block: int32(i), line: breaks})
			newlines = 0
			j = k
		}
	}
}

// endsSentence reports whether a word ends a sentence: it ends in '.', '!'
// or '?', optionally followed by closing quotes or brackets.
func endsSentence(w string) bool {
	w = strings.TrimRight(w, `"')]}”’»`)
	return strings.HasSuffix(w, ".") || strings.HasSuffix(w, "!") || strings.HasSuffix(w, "?")
}
