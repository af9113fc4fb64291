// Package store is the storage contract of ctxkit: a [Backend], opened by
// URL ([Schemes]), hands out everything ctxkit keeps — the offload
// workspaces ([Store]), a key-value store ([KV]), the vault registry
// ([Registry]) and, per vault, its document index and episode store — and
// every backend passes the suites of package storetest.
//
// A [Store] keeps workspaces: one stored result each, with its metadata
// ([Workspace]) and its content, which has one of three shapes. A list keeps
// one entry per item so that paging, search and item mutations never load the
// whole list; a dict keeps its object whole; text is addressed by character
// (rune) offsets so that a page of a 50 MB document is read without reading
// the rest.
//
// Backends live in their own packages (memstore, sqlitestore) and all pass
// the same conformance suite in storetest. A backend may also run query
// pipelines (package store/query) over its lists itself, the optional
// [Piper] capability; the suite then holds it to the Go evaluator's
// answers. Stores persist and retrieve; they
// do not decide policy. Expiry, sessions, id generation and size limits belong
// to the offload engine; a store only filters by what it is told.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"
)

// Shape is the structure of a workspace's content, which decides the tools
// that can explore it.
type Shape string

// The three shapes.
const (
	ShapeList Shape = "list" // a JSON array, NDJSON or a CSV/TSV table
	ShapeDict Shape = "dict" // a JSON object
	ShapeText Shape = "text" // anything else, including JSON scalars
)

// Sentinel errors every backend returns (wrapped) so callers can use errors.Is.
var (
	// ErrNotFound means nothing has the id or key: no workspace, vault,
	// agent or key-value entry. Every backend wraps it with what was
	// looked for.
	ErrNotFound = errors.New("not found")
	// ErrConflict means Put would replace a workspace that belongs to another
	// producer, type or session.
	ErrConflict = errors.New("workspace id conflict")
	// ErrOutOfRange means an item index is outside the list.
	ErrOutOfRange = errors.New("item index out of range")
	// ErrInvalidQuery means a search query is not one the backends run
	// (too many terms); the wrapped error says why.
	ErrInvalidQuery = errors.New("invalid search query")
	// ErrWrongShape means the operation does not apply to the workspace's shape.
	ErrWrongShape = errors.New("operation does not fit the workspace's shape")
)

// Workspace is the metadata of one stored result.
type Workspace struct {
	ID     string // "<type>_<12 hex>" or a deterministic key
	Type   string // logical data type, e.g. the producing tool's name
	Shape  Shape
	Format string // how the original was read: json, ndjson, csv, tsv or text
	// Items is the number of list items or dict keys; 0 for text.
	Items int
	// Chars is the content's size in characters (runes) as stored.
	Chars int64
	// Tokens approximates the content's size in model tokens.
	Tokens int
	// Schema is the JSON Schema inferred for list items or for the dict; nil for text.
	Schema json.RawMessage
	// Producer names what made the result (a tool) and Args its arguments.
	Producer string
	Args     json.RawMessage
	// Meta is free metadata set by the producer.
	Meta map[string]any
	// Session is the session that owns the workspace; empty means shared.
	Session    string
	CreatedAt  time.Time
	AccessedAt time.Time
	// TTL is the lifetime from CreatedAt; ExpiresAt is CreatedAt+TTL, zero
	// when the workspace never expires.
	TTL       time.Duration
	ExpiresAt time.Time
}

// Expired reports whether the workspace's lifetime has ended at now.
func (w *Workspace) Expired(now time.Time) bool {
	return !w.ExpiresAt.IsZero() && !now.Before(w.ExpiresAt)
}

// Content is what Put stores. Exactly one of Items, Value or Text is used,
// chosen by the workspace's shape. Raw holds the exact original bytes; nil
// means they are the serialised content itself.
type Content struct {
	Raw   []byte
	Items []json.RawMessage // ShapeList
	Value json.RawMessage   // ShapeDict
	Text  string            // ShapeText
}

// ListOptions filters List.
type ListOptions struct {
	// Sessions, when non-nil, keeps only workspaces whose Session is in it
	// ("" selects shared workspaces).
	Sessions []string
	// Type, when set, keeps only workspaces of that type.
	Type string
}

// Query is a search over a list's items.
type Query struct {
	// Text holds the terms, separated by white space; each matches on its
	// own and items matching more distinct terms rank higher. A word
	// matches the words that start with its stem, whatever their case and
	// diacritics ("parse" finds "Parser", "ecole" finds "École"); another
	// term (C++, e-mail) matches where the text holds it, case and
	// diacritics aside. Every backend reads a query so (internal/textsearch).
	Text string
	// Fields restricts matching to these dot paths; empty means every
	// string-valued field at any depth.
	Fields []string
	// Limit bounds the hits returned; 0 means 10.
	Limit int
}

// Hit is one item found by SearchItems.
type Hit struct {
	Index int             // position in the list
	Score float64         // higher is better; comparable only within one search
	Terms int             // distinct query terms the item matched
	Item  json.RawMessage // the item itself
}

// TextQuery is a search over a text workspace.
type TextQuery struct {
	Text  string // terms, each matching on its own, as in Query.Text
	Limit int    // 0 means 10
}

// TextHit is a place in a text where a search matched.
type TextHit struct {
	Offset int64   // character offset of the first matched term in the passage
	Length int     // characters of that matched term
	Score  float64 // higher is better
	Terms  int     // distinct terms matched near Offset
}

// Store persists workspaces. Implementations are safe for concurrent use.
// Every method that takes an id returns an error wrapping ErrNotFound when it
// does not exist; methods for one shape return ErrWrongShape for another.
type Store interface {
	// Put creates the workspace or replaces the one with the same ID, atomically.
	// Replacing one whose Type, Producer or Session differs fails with ErrConflict.
	Put(ctx context.Context, ws *Workspace, c *Content) error
	// Stat returns the workspace's metadata.
	Stat(ctx context.Context, id string) (*Workspace, error)
	// Touch records an access at the given time.
	Touch(ctx context.Context, id string, at time.Time) error
	// List returns the workspaces matching opts, most recently created first.
	List(ctx context.Context, opts ListOptions) ([]*Workspace, error)
	// Delete removes a workspace and its content.
	Delete(ctx context.Context, id string) error
	// DeleteExpired removes every workspace expired at now and returns the ids removed.
	DeleteExpired(ctx context.Context, now time.Time) ([]string, error)
	// Raw returns the original bytes; after a mutation of a list, the list
	// serialised as a JSON array.
	Raw(ctx context.Context, id string) ([]byte, error)

	// Items returns up to limit items from offset (fewer at the end, none past it).
	Items(ctx context.Context, id string, offset, limit int) ([]json.RawMessage, error)
	// ScanItems yields every item in order without holding the list in memory.
	ScanItems(ctx context.Context, id string) iter.Seq2[json.RawMessage, error]
	// SearchItems ranks items by distinct terms matched, then by relevance,
	// then by index; total counts every item that matched any term.
	SearchItems(ctx context.Context, id string, q Query) (hits []Hit, total int, err error)
	// AppendItems adds items at the end.
	AppendItems(ctx context.Context, id string, items []json.RawMessage) error
	// UpdateItem replaces the item at index.
	UpdateItem(ctx context.Context, id string, index int, item json.RawMessage) error
	// PatchItem merges patch, an RFC 7386 merge patch that must be exactly
	// one JSON object, into the object at index. The item keeps its members
	// in their order and its keys and values as written (escapes, digits),
	// only whitespace between tokens removed; keys the patch adds come
	// after them, as the patch writes them. A patch that is not one object
	// (such as {"c":3}}) or an item that is not an object is an error.
	PatchItem(ctx context.Context, id string, index int, patch json.RawMessage) error
	// DeleteItems removes the items at the given indexes; later items move up.
	DeleteItems(ctx context.Context, id string, indexes []int) error

	// Value returns a dict workspace's object.
	Value(ctx context.Context, id string) (json.RawMessage, error)

	// TextSlice returns up to n characters of a text workspace from offset.
	TextSlice(ctx context.Context, id string, offset, n int64) (string, error)
	// SearchText finds passages of a text workspace, best first.
	SearchText(ctx context.Context, id string, q TextQuery) ([]TextHit, error)

	// Close releases the store's resources.
	Close() error
}
