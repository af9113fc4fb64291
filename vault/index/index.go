// Package index is the search index of a semantic vault: documents cut into
// chunks, searched lexically (BM25) by the backend, or in memory by a
// Lexicon that ranks exactly as the SQLite backend does, and by vector
// similarity in memory, and fused by reciprocal rank. The Index interface is what a
// backend provides — SQLite inside the vault folder (sqliteindex) now,
// PostgreSQL for teams later — and indextest is the conformance suite each
// one passes, so the vault logic above never depends on a backend.
package index

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors.
var (
	// ErrNotFound is returned for a document or chunk that is not indexed.
	ErrNotFound = errors.New("not in the index")
	// ErrSuperseded is returned by a Builder whose rebuild another one,
	// started later, has replaced.
	ErrSuperseded = errors.New("the rebuild was superseded by a later one")
)

// Doc is one indexed file of a vault.
type Doc struct {
	// Path is the file's path inside the vault, slash-separated.
	Path string
	// Hash is the content hash the file was indexed at, to skip unchanged
	// files.
	Hash string
	// Meta is metadata given when the document was written; it survives
	// reindexing.
	Meta map[string]string
	// Chunks is how many chunks the document has.
	Chunks int
	// Indexed is when the document was last indexed.
	Indexed time.Time
}

// Chunk is one searchable piece of a document.
type Chunk struct {
	// ID identifies the chunk in its index; it changes when the document
	// is indexed again.
	ID int64
	// Doc is the path of the chunk's document; Index its position there.
	Doc   string
	Index int
	// Heading is the heading path of the chunk ("H1 > H2").
	Heading string
	// Loc is where the chunk is in its document's file.
	Loc  Locator
	Text string
	// Vector is the chunk's embedding, nil in a lexical-only vault.
	Vector []float32
}

// Locator is where a chunk is in its document's file: the first and last
// page, paragraph or line its text is on, 1-based and inclusive. A format
// without positions (HTML) gives the zero Locator; a chunk indexed before
// ctxkit recorded locators has the Unit Unrecorded.
type Locator struct {
	Unit       Unit
	Start, End int
}

// Unit is what a Locator counts.
type Unit string

// The units of a Locator.
const (
	// Page: the pages of a PDF.
	Page Unit = "page"
	// Paragraph: a DOCX's paragraphs that have text, headings and table
	// cells included, numbered from 1 in document order.
	Paragraph Unit = "paragraph"
	// Line: the lines of a file read as text (plain text, Markdown, CSV,
	// JSON), as an editor numbers them.
	Line Unit = "line"
	// Unrecorded: the chunk was indexed by a version of ctxkit that kept
	// only the page of its first word, which is Start (0 when it had no
	// page); End is 0. Indexing the document again records its locator.
	Unrecorded Unit = "unrecorded"
)

// Hit is a chunk found by one signal, with that signal's score (higher is
// better) and rank (1 is best).
type Hit struct {
	Chunk
	Score float64
	Rank  int
}

// Index stores a vault's chunks and searches them lexically. It is safe for
// concurrent use, also by several processes when the backend allows.
type Index interface {
	// Put replaces everything indexed for doc.Path with doc and chunks, in
	// one step: a search sees the old chunks or the new ones, never a mix.
	Put(ctx context.Context, doc Doc, chunks []Chunk) error
	// Delete removes a document and its chunks; a missing one is no error.
	Delete(ctx context.Context, path string) error
	// Doc returns one document, or ErrNotFound.
	Doc(ctx context.Context, path string) (Doc, error)
	// Docs returns every document, by path.
	Docs(ctx context.Context) ([]Doc, error)
	// Chunks returns a document's chunks in order, with their vectors, or ErrNotFound.
	Chunks(ctx context.Context, path string) ([]Chunk, error)
	// Chunk returns one chunk, or ErrNotFound.
	Chunk(ctx context.Context, id int64) (Chunk, error)
	// ChunksByID returns the chunks with these ids, by id, in one read;
	// an id the index does not hold is left out.
	ChunksByID(ctx context.Context, ids []int64) (map[int64]Chunk, error)
	// Lexical returns up to n chunks matching the words of query, best
	// first by BM25. A query without words, or without matches, gives
	// none and no error.
	Lexical(ctx context.Context, query string, n int) ([]Hit, error)
	// EachVector calls fn with the id and vector of every chunk that has
	// one, for the in-memory vector search.
	EachVector(ctx context.Context, fn func(id int64, v []float32) error) error
	// Generation changes whenever the index does (a Put or Delete, by
	// any process), so that what was loaded from it (a Searcher's lexicon
	// and vectors) can tell it is stale.
	Generation(ctx context.Context) (int64, error)
	// EachText calls fn with the id, text and heading path of every
	// chunk, by ascending id, for the in-memory lexical search (Lexicon).
	EachText(ctx context.Context, fn func(id int64, text, heading string) error) error
	// Rebuild starts a new generation of the index, empty, for a whole
	// rebuild: the returned Builder fills it while every query keeps
	// reading the current one; Put and Delete on the index go to both;
	// Commit makes it current at once and drops the old one. A Rebuild
	// started later supersedes this one (its Builder then fails with
	// ErrSuperseded). Chunk ids are never reused, across generations too.
	Rebuild(ctx context.Context) (Builder, error)
	// Close releases the index.
	Close() error
}

// Builder fills the new generation of a Rebuild.
type Builder interface {
	// Put writes a document into the new generation only, unless a Put
	// or Delete on the index changed it since the rebuild began: that
	// change is newer than the builder's copy and stays.
	Put(ctx context.Context, doc Doc, chunks []Chunk) error
	// Commit makes the new generation the index's, in one step.
	Commit(ctx context.Context) error
	// Abort drops the new generation; the index stays as it was.
	Abort(ctx context.Context) error
}
