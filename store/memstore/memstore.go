// Package memstore keeps everything in memory: workspaces ([Store]), and as
// the backend of the "memory:" scheme ([OpenBackend]) the key-value store,
// the vault registry, and each vault's index and episodes (in-memory
// SQLite databases, dropped with the vault).
//
// It is the backend for tests and for ephemeral sessions that need nothing
// to outlive the process. It passes the storetest conformance suites, so
// code tested against it behaves the same on a persistent backend.
//
// # Limits
//
//   - Everything lives in the process's heap and is lost when it exits. A
//     workspace costs about its content's size. The first search of a list
//     or a text adds about twice the size of its searchable text: the stem
//     of each word and the text folded (lower case, no diacritics), which
//     searches match.
//   - [Options.MaxWorkspaces] bounds the number of workspaces, not their
//     size, and eviction is global: a session that stores many workspaces
//     evicts other sessions' least recently used ones. The offload engine
//     bounds sizes.
//   - Search scans: each term of a query is looked for in the stems or the
//     folded text of the whole workspace, so a search costs time
//     proportional to the content (tens of milliseconds for 100,000 items
//     or 50 MB); SearchText then tokenizes the pieces of the text that hold
//     a term, to locate the matches. A search restricted
//     to fields decodes and tokenizes every item, which is slower still.
//     Queries match and items rank as on every backend (internal/textsearch).
//   - Put checks that list items and the dict are valid JSON, which costs
//     about as much as reading them once.
//   - One lock guards the store. Reads share it, but a write waits for
//     running reads (a search over a large workspace) to finish.
//   - ScanItems reads the list in chunks and does not hold the lock while
//     the caller runs, so the caller may use the store inside the loop; a
//     scan that overlaps mutations of the same list may see items shift
//     between chunks.
//
// It does not implement [store.Piper]: its items are JSON text in memory,
// so running a pipeline natively would be what the engine does on a store
// without pushdown, query.Pipeline.Run over ScanItems with only the fields
// the pipeline reads decoded; a second copy of that path would gain
// nothing.
//
// Every method returns copies: callers may change what they get back, and
// what they passed in, without touching the stored workspace.
package memstore

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// errClosed is returned by every method once Close has been called.
var errClosed = errors.New("memstore: store is closed")

// Options configures a Store.
type Options struct {
	// MaxWorkspaces bounds how many workspaces the store keeps; when a Put
	// would exceed it, the least recently used workspace is evicted. Put,
	// Touch, reads of one workspace (Stat included) and item mutations
	// count as use; List and DeleteExpired do not. Zero or less means no
	// bound.
	MaxWorkspaces int
}

// Store is an in-memory [store.Store], safe for concurrent use.
type Store struct {
	max int

	// mu guards closed, entries and everything in them except the search
	// caches, which have their own lock.
	mu      sync.RWMutex
	closed  bool
	entries map[string]*entry

	// lruMu guards lru, so that reads holding mu for reading can still
	// record use. Lock order: mu, then lruMu.
	lruMu sync.Mutex
	lru   *list.List // of *entry, most recently used first
}

// Compile-time check that Store implements the contract.
var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New(opts Options) *Store {
	return &Store{
		max:     max(opts.MaxWorkspaces, 0),
		entries: map[string]*entry{},
		lru:     list.New(),
	}
}

// entry is one workspace. Its fields change only under Store.mu held for
// writing, except the caches, which readers build under cacheMu.
type entry struct {
	ws   store.Workspace // Meta is always nil here; see meta
	meta []byte          // ws.Meta as JSON, decoded afresh for each caller
	raw  []byte          // original bytes; nil when they are the serialised content or the list changed

	items     []json.RawMessage // ShapeList
	itemRunes int64             // runes in all items, for Chars after a mutation
	// tokensPerChar is the producer's estimate at Put, kept so that Tokens
	// follows Chars after a mutation without drifting.
	tokensPerChar float64
	value         json.RawMessage // ShapeDict
	text          textIndex       // ShapeText

	elem *list.Element // in Store.lru

	cacheMu  sync.Mutex
	docs     []textsearch.Doc // each item's searchable text, prepared; valid when haveDocs
	haveDocs bool
	joined   *textsearch.Docs // docs joined; nil until the first search after a change
	// chunks are the text in pieces and chunkDocs the pieces prepared for
	// matching; nil until the first search.
	chunks    []textsearch.Chunk
	chunkDocs *textsearch.Docs
}

// Put implements [store.Store.Put]. It validates the content (list items and
// the dict must be valid JSON, the dict an object) and copies everything it
// keeps.
func (s *Store) Put(ctx context.Context, ws *store.Workspace, c *store.Content) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ws == nil || c == nil {
		return errors.New("put workspace: nil workspace or content")
	}
	e, err := newEntry(ws, c)
	if err != nil {
		return fmt.Errorf("put workspace %q: %w", ws.ID, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.lruMu.Lock()
	defer s.lruMu.Unlock()
	if old, ok := s.entries[ws.ID]; ok {
		if old.ws.Type != ws.Type || old.ws.Producer != ws.Producer || old.ws.Session != ws.Session {
			return fmt.Errorf("put workspace %q of type %q, producer %q, session %q over type %q, producer %q, session %q: %w",
				ws.ID, ws.Type, ws.Producer, ws.Session, old.ws.Type, old.ws.Producer, old.ws.Session, store.ErrConflict)
		}
		s.lru.Remove(old.elem)
	}
	e.elem = s.lru.PushFront(e)
	s.entries[ws.ID] = e
	for s.max > 0 && len(s.entries) > s.max {
		victim := s.lru.Back().Value.(*entry)
		s.lru.Remove(victim.elem)
		delete(s.entries, victim.ws.ID)
	}
	return nil
}

// newEntry copies ws and c into a new entry, checking the content fits the shape.
func newEntry(ws *store.Workspace, c *store.Content) (*entry, error) {
	if ws.ID == "" {
		return nil, errors.New("empty id")
	}
	e := &entry{ws: *ws}
	e.ws.Meta = nil
	e.ws.Args = cloneJSON(ws.Args)
	e.ws.Schema = cloneJSON(ws.Schema)
	// Drop monotonic clock readings, which only mean something in this process.
	e.ws.CreatedAt = ws.CreatedAt.Round(0)
	e.ws.AccessedAt = ws.AccessedAt.Round(0)
	e.ws.ExpiresAt = ws.ExpiresAt.Round(0)
	if len(ws.Args) > 0 && !json.Valid(ws.Args) {
		return nil, errors.New("args are not valid JSON")
	}
	if len(ws.Schema) > 0 && !json.Valid(ws.Schema) {
		return nil, errors.New("schema is not valid JSON")
	}
	if len(ws.Meta) > 0 {
		meta, err := json.Marshal(ws.Meta)
		if err != nil {
			return nil, fmt.Errorf("encode meta: %w", err)
		}
		e.meta = meta
	}
	if c.Raw != nil {
		e.raw = bytes.Clone(c.Raw)
	}
	e.tokensPerChar = 0.25 // a common rough estimate, for when the producer gave none
	if ws.Chars > 0 && ws.Tokens > 0 {
		e.tokensPerChar = float64(ws.Tokens) / float64(ws.Chars)
	}

	switch ws.Shape {
	case store.ShapeList:
		for i, it := range c.Items {
			if !jsonscan.Valid(it) {
				return nil, fmt.Errorf("item %d is not valid JSON", i)
			}
		}
		e.items = cloneItems(c.Items)
		for _, it := range e.items {
			e.itemRunes += int64(utf8.RuneCount(it))
		}
	case store.ShapeDict:
		if !isObject(c.Value) {
			return nil, errors.New("dict value is not a JSON object")
		}
		e.value = bytes.Clone(c.Value)
	case store.ShapeText:
		e.text = newTextIndex(c.Text)
	default:
		return nil, fmt.Errorf("unknown shape %q", ws.Shape)
	}
	return e, nil
}

// cloneItems copies items into one allocation, so that a list of many small
// items costs one block instead of one per item.
func cloneItems(items []json.RawMessage) []json.RawMessage {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	buf := make([]byte, 0, n)
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		start := len(buf)
		buf = append(buf, it...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

func cloneJSON(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// isObject reports whether b is valid JSON whose value is an object.
func isObject(b []byte) bool {
	b = jsonscan.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && jsonscan.Valid(b)
}

// lookup returns the workspace id, checking its shape unless shape is
// empty, and records the use. The caller holds s.mu.
func (s *Store) lookup(id string, shape store.Shape) (*entry, error) {
	if s.closed {
		return nil, errClosed
	}
	e, ok := s.entries[id]
	if !ok {
		return nil, fmt.Errorf("workspace %q: %w", id, store.ErrNotFound)
	}
	if shape != "" && e.ws.Shape != shape {
		return nil, fmt.Errorf("workspace %q is a %s, not a %s: %w", id, e.ws.Shape, shape, store.ErrWrongShape)
	}
	s.lruMu.Lock()
	s.lru.MoveToFront(e.elem)
	s.lruMu.Unlock()
	return e, nil
}

// workspace returns a copy of e's metadata that shares nothing with e. The
// caller holds s.mu; the copy may be finished (decodeMeta) after releasing it.
func (e *entry) workspace() *store.Workspace {
	ws := e.ws
	ws.Args = cloneJSON(e.ws.Args)
	ws.Schema = cloneJSON(e.ws.Schema)
	return &ws
}

// decodeMeta sets ws.Meta from its JSON form. meta never changes once an
// entry is made, so this needs no lock.
func decodeMeta(ws *store.Workspace, meta []byte) error {
	if meta == nil {
		return nil
	}
	if err := json.Unmarshal(meta, &ws.Meta); err != nil {
		return fmt.Errorf("decode meta of %q: %w", ws.ID, err)
	}
	return nil
}

// Stat implements [store.Store.Stat].
func (s *Store) Stat(ctx context.Context, id string) (*store.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	e, err := s.lookup(id, "")
	if err != nil {
		s.mu.RUnlock()
		return nil, fmt.Errorf("stat: %w", err)
	}
	ws, meta := e.workspace(), e.meta
	s.mu.RUnlock()
	if err := decodeMeta(ws, meta); err != nil {
		return nil, err
	}
	return ws, nil
}

// Touch implements [store.Store.Touch].
func (s *Store) Touch(ctx context.Context, id string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(id, "")
	if err != nil {
		return fmt.Errorf("touch: %w", err)
	}
	e.ws.AccessedAt = at.Round(0)
	return nil
}

// List implements [store.Store.List]. Workspaces created at the same instant
// are ordered by id. Listing does not count as use.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]*store.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type found struct {
		ws   *store.Workspace
		meta []byte
	}
	var out []found
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, errClosed
	}
	for _, e := range s.entries {
		if opts.Type != "" && e.ws.Type != opts.Type {
			continue
		}
		if opts.Sessions != nil && !slices.Contains(opts.Sessions, e.ws.Session) {
			continue
		}
		out = append(out, found{e.workspace(), e.meta})
	}
	s.mu.RUnlock()

	slices.SortFunc(out, func(a, b found) int {
		if c := b.ws.CreatedAt.Compare(a.ws.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ws.ID, b.ws.ID)
	})
	wss := make([]*store.Workspace, len(out))
	for i, f := range out {
		if err := decodeMeta(f.ws, f.meta); err != nil {
			return nil, err
		}
		wss[i] = f.ws
	}
	return wss, nil
}

// Delete implements [store.Store.Delete].
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(id, "")
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	s.remove(e)
	return nil
}

// remove drops e from the store. The caller holds s.mu for writing.
func (s *Store) remove(e *entry) {
	s.lruMu.Lock()
	s.lru.Remove(e.elem)
	s.lruMu.Unlock()
	delete(s.entries, e.ws.ID)
}

// DeleteExpired implements [store.Store.DeleteExpired]. The ids come back
// sorted.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	var ids []string
	for id, e := range s.entries {
		if e.ws.Expired(now) {
			ids = append(ids, id)
			s.remove(e)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Raw implements [store.Store.Raw].
func (s *Store) Raw(ctx context.Context, id string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, "")
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	switch {
	case e.raw != nil:
		return bytes.Clone(e.raw), nil
	case e.ws.Shape == store.ShapeList:
		return appendArray(nil, e.items), nil
	case e.ws.Shape == store.ShapeDict:
		return bytes.Clone(e.value), nil
	default:
		return []byte(e.text.s), nil
	}
}

// appendArray appends items to b as a JSON array.
func appendArray(b []byte, items []json.RawMessage) []byte {
	n := 2 + max(len(items)-1, 0)
	for _, it := range items {
		n += len(it)
	}
	b = slices.Grow(b, n)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// Close implements [store.Store.Close]: it drops every workspace, after
// which every method fails.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.entries = nil
	s.lruMu.Lock()
	s.lru.Init()
	s.lruMu.Unlock()
	return nil
}

// Len returns the number of workspaces stored.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.entries)
}
