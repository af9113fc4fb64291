package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/parallel"
)

// wsColumns are the workspace columns scanWorkspace reads, in its order.
const wsColumns = `id, type, shape, format, items, chars, tokens, schema, producer, args, meta, session,
	created_at, accessed_at, ttl, expires_at`

type rowScanner interface{ Scan(dest ...any) error }

func scanWorkspace(row rowScanner) (*store.Workspace, error) {
	var (
		ws                              store.Workspace
		shape                           string
		schema, args, meta              []byte
		created, accessed, expires, ttl sql.NullInt64
	)
	if err := row.Scan(&ws.ID, &ws.Type, &shape, &ws.Format, &ws.Items, &ws.Chars, &ws.Tokens,
		&schema, &ws.Producer, &args, &meta, &ws.Session, &created, &accessed, &ttl, &expires); err != nil {
		return nil, err
	}
	ws.Shape = store.Shape(shape)
	ws.Schema = json.RawMessage(schema)
	ws.Args = json.RawMessage(args)
	if meta != nil {
		if err := json.Unmarshal(meta, &ws.Meta); err != nil {
			return nil, fmt.Errorf("decode meta of %q: %w", ws.ID, err)
		}
	}
	ws.CreatedAt = fromMicros(created)
	ws.AccessedAt = fromMicros(accessed)
	ws.ExpiresAt = fromMicros(expires)
	ws.TTL = time.Duration(ttl.Int64)
	return &ws, nil
}

// Times are stored as Unix microseconds, a precision every backend keeps,
// with a range far beyond any real expiry; the zero time is NULL.
func toMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

// wsRef is what content operations need to know about a workspace.
type wsRef struct {
	key       int64
	shape     store.Shape
	items     int
	chars     int64
	tokens    int
	nextSeq   int64
	itemChars int64
	indexed   bool
}

// idBase is the first item or chunk id of the workspace with key key.
func idBase(key int64) int64 { return key << 32 }

// lookup finds workspace id and checks that it has one of shapes (any when
// none are given).
func lookup(t *txn, id string, shapes ...store.Shape) (*wsRef, error) {
	var ref wsRef
	var shape string
	err := t.queryRow(qLookup, id).Scan(&ref.key, &shape, &ref.items, &ref.chars, &ref.tokens, &ref.nextSeq,
		&ref.itemChars, &ref.indexed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("workspace %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("look up workspace %q: %w", id, err)
	}
	ref.shape = store.Shape(shape)
	if len(shapes) > 0 && !contains(shapes, ref.shape) {
		return nil, fmt.Errorf("workspace %q is a %s: %w", id, ref.shape, store.ErrWrongShape)
	}
	return &ref, nil
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// prepared is a Put's content, validated, measured and turned into index
// terms before the write transaction starts, on every core, so that the
// write lock is held as briefly as possible.
type prepared struct {
	items     [][]byte           // list
	itemChars int64              // list: characters of all items
	count     int                // list items or dict keys
	value     []byte             // dict
	chunks    []textsearch.Chunk // text
	terms     []string           // index terms of each item or chunk; nil to index after Put
	meta      []byte
}

func prepare(ws *store.Workspace, c *store.Content, chunkRunes, indexInline int) (*prepared, error) {
	if ws == nil || c == nil {
		return nil, errors.New("nil workspace or content")
	}
	if ws.ID == "" {
		return nil, errors.New("empty workspace id")
	}
	p := &prepared{}
	if ws.Meta != nil {
		b, err := json.Marshal(ws.Meta)
		if err != nil {
			return nil, fmt.Errorf("encode meta: %w", err)
		}
		p.meta = b
	}
	switch ws.Shape {
	case store.ShapeList:
		size := 0
		for _, it := range c.Items {
			size += len(it)
		}
		items, err := prepareItems(c.Items, size <= indexInline)
		if err != nil {
			return nil, err
		}
		p.items, p.itemChars, p.terms, p.count = items.data, items.chars, items.terms, len(items.data)
	case store.ShapeDict:
		keys, ok := jsonscan.ObjectSpans(c.Value)
		if !ok {
			return nil, errors.New("dict value is not a JSON object")
		}
		p.value = c.Value
		p.count = len(keys) // distinct keys: a repeated key has one value
	case store.ShapeText:
		p.chunks = textsearch.Split(c.Text, chunkRunes)
		if len(c.Text) <= indexInline {
			p.terms = chunkTerms(p.chunks)
		}
	default:
		return nil, fmt.Errorf("unknown shape %q", ws.Shape)
	}
	return p, nil
}

// preparedItems are list items ready to insert.
type preparedItems struct {
	data  [][]byte
	terms []string
	chars int64
}

// prepareItems checks that every item is valid JSON and, with terms,
// computes its index terms, in parallel since a large list is tens of
// megabytes.
func prepareItems(items []json.RawMessage, terms bool) (*preparedItems, error) {
	p := &preparedItems{data: make([][]byte, len(items))}
	if terms {
		p.terms = make([]string, len(items))
	}
	chars := make([]int64, len(items))
	errs := make([]error, len(items))
	type state struct {
		tb      termBuilder
		scalars []byte
		terms   []byte
		sc      jsonscan.Scalars
	}
	parallel.For(len(items), func() *state { return &state{} }, func(i int, st *state) {
		var err error
		if terms {
			st.scalars, err = st.sc.Append(st.scalars[:0], items[i])
		} else {
			err = jsonscan.Validate(items[i])
		}
		if err != nil {
			errs[i] = err
			return
		}
		if terms {
			st.terms = st.tb.indexTerms(st.terms[:0], string(st.scalars))
			p.terms[i] = string(st.terms)
		}
		p.data[i] = items[i]
		chars[i] = int64(utf8.RuneCount(items[i]))
	})
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		p.chars += chars[i]
	}
	return p, nil
}

// Put creates the workspace or replaces the one with the same id, in one
// transaction: readers see either the old workspace or the new one whole.
func (s *Store) Put(ctx context.Context, ws *store.Workspace, c *store.Content) error {
	p, err := prepare(ws, c, s.chunkRunes, s.indexInline)
	if err != nil {
		return fmt.Errorf("put %q: %w", idOf(ws), err)
	}
	err = s.write(ctx, func(t *txn) error {
		var (
			oldKey                    int64
			oldShape, typ, prod, sess string
			oldIndexed                bool
		)
		err := t.queryRow(qOwner, ws.ID).Scan(&oldKey, &oldShape, &typ, &prod, &sess, &oldIndexed)
		switch {
		case err == nil:
			if typ != ws.Type || prod != ws.Producer || sess != ws.Session {
				return fmt.Errorf("existing workspace has type %q, producer %q, session %q: %w", typ, prod, sess, store.ErrConflict)
			}
			if err := deleteWorkspace(t, oldKey, store.Shape(oldShape), oldIndexed); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}

		var key int64
		err = t.queryRow(qInsertWorkspace,
			ws.ID, ws.Type, string(ws.Shape), ws.Format, p.count, ws.Chars, ws.Tokens, nullBytes(ws.Schema),
			ws.Producer, nullBytes(ws.Args), nullBytes(p.meta), ws.Session,
			toMicros(ws.CreatedAt), toMicros(ws.AccessedAt), int64(ws.TTL), toMicros(ws.ExpiresAt),
			len(p.items), p.itemChars, !p.deferred(ws.Shape)).Scan(&key)
		if err != nil {
			return err
		}
		if c.Raw != nil || p.value != nil {
			var value any
			if p.value != nil {
				value = textArg(p.value)
			}
			if _, err := t.exec(qInsertBlobs, key, nullBytes(c.Raw), value); err != nil {
				return err
			}
		}
		switch ws.Shape {
		case store.ShapeList:
			return s.insertItems(t, key, 0, 0, p.items, p.terms)
		case store.ShapeText:
			return s.insertChunks(t, key, p.chunks, p.terms)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put %q: %w", ws.ID, err)
	}
	if p.deferred(ws.Shape) && s.indexer != nil {
		s.indexer.enqueue(ws.ID)
	}
	return nil
}

// deferred reports whether the content is indexed after Put returns.
func (p *prepared) deferred(shape store.Shape) bool {
	return p.terms == nil && (shape == store.ShapeList && len(p.items) > 0 || shape == store.ShapeText && len(p.chunks) > 0)
}

func idOf(ws *store.Workspace) string {
	if ws == nil {
		return ""
	}
	return ws.ID
}

// nullBytes stores nil as NULL and anything else, even empty, as a blob.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// deleteWorkspace removes a workspace's row, content and index entries.
func deleteWorkspace(t *txn, key int64, shape store.Shape, indexed bool) error {
	lo, hi := idBase(key), idBase(key+1)
	var err error
	switch shape {
	case store.ShapeList:
		if indexed {
			_, err = t.exec(qDeleteItemsFTS, lo, hi)
		}
		if err == nil {
			_, err = t.exec(qDeleteItemRange, lo, hi)
		}
	case store.ShapeText:
		if indexed {
			_, err = t.exec(qDeleteChunksFTS, lo, hi)
		}
		if err == nil {
			_, err = t.exec(qDeleteChunks, lo, hi)
		}
	}
	if err == nil {
		if _, err = t.exec(qDeleteBlobs, key); err == nil {
			_, err = t.exec(qDeleteWorkspace, key)
		}
	}
	if err != nil {
		return fmt.Errorf("delete workspace content: %w", err)
	}
	return nil
}

// Stat returns the workspace's metadata.
func (s *Store) Stat(ctx context.Context, id string) (*store.Workspace, error) {
	var ws *store.Workspace
	err := s.read(ctx, func(t *txn) error {
		var err error
		ws, err = scanWorkspace(t.queryRow(qStat, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stat %q: %w", id, err)
	}
	return ws, nil
}

// Touch records an access at the given time.
func (s *Store) Touch(ctx context.Context, id string, at time.Time) error {
	err := s.write(ctx, func(t *txn) error {
		res, err := t.exec(qTouch, toMicros(at), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("touch %q: %w", id, err)
	}
	return nil
}

// List returns the workspaces matching opts, most recently created first.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]*store.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if opts.Sessions != nil && len(opts.Sessions) == 0 {
		return nil, nil
	}
	q := `SELECT ` + wsColumns + ` FROM workspaces WHERE 1`
	var args []any
	if opts.Type != "" {
		q += ` AND type = ?`
		args = append(args, opts.Type)
	}
	if opts.Sessions != nil {
		sessions, err := json.Marshal(opts.Sessions)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		q += ` AND session IN (SELECT value FROM json_each(?))`
		args = append(args, string(sessions))
	}
	q += ` ORDER BY created_at DESC, key DESC`
	var out []*store.Workspace
	err := s.read(ctx, func(t *txn) error {
		out = out[:0]
		rows, err := t.query(q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			ws, err := scanWorkspace(rows)
			if err != nil {
				return err
			}
			out = append(out, ws)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	return out, nil
}

// Delete removes a workspace and its content.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := s.write(ctx, func(t *txn) error {
		ref, err := lookup(t, id)
		if err != nil {
			return err
		}
		return deleteWorkspace(t, ref.key, ref.shape, ref.indexed)
	})
	if err != nil {
		return fmt.Errorf("delete %q: %w", id, err)
	}
	return nil
}

// DeleteExpired removes every workspace expired at now and returns the ids
// removed. Each workspace goes in its own transaction so that a sweep of
// many large workspaces never holds the write lock for long; one replaced
// with a fresh expiry since it was found expired is kept.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) ([]string, error) {
	type expired struct {
		key int64
		id  string
	}
	var found []expired
	cutoff := now.UnixMicro()
	err := s.read(ctx, func(t *txn) error {
		found = found[:0]
		rows, err := t.query(qExpired, cutoff)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e expired
			if err := rows.Scan(&e.key, &e.id); err != nil {
				return err
			}
			found = append(found, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("delete expired: %w", err)
	}
	var gone []string
	for _, e := range found {
		deleted := false
		err := s.write(ctx, func(t *txn) error {
			deleted = false
			var shape string
			var indexed bool
			err := t.queryRow(qStillExpired, e.key, cutoff).Scan(&shape, &indexed)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // gone or replaced since
			}
			if err != nil {
				return err
			}
			deleted = true
			return deleteWorkspace(t, e.key, store.Shape(shape), indexed)
		})
		if err != nil {
			return gone, fmt.Errorf("delete expired %q: %w", e.id, err)
		}
		if deleted {
			gone = append(gone, e.id)
		}
	}
	return gone, nil
}

// Raw returns the original bytes; for a list without them or mutated since,
// the list serialised as a JSON array; for a dict without them, its object;
// for a text without them, the text.
func (s *Store) Raw(ctx context.Context, id string) ([]byte, error) {
	var out []byte
	err := s.read(ctx, func(t *txn) error {
		ref, err := lookup(t, id)
		if err != nil {
			return err
		}
		var raw []byte
		var value sql.NullString
		err = t.queryRow(qBlobs, ref.key).Scan(&raw, &value)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if raw != nil {
			out = raw
			return nil
		}
		switch ref.shape {
		case store.ShapeDict:
			out = []byte(value.String)
			return nil
		case store.ShapeText:
			out, err = readText(t, ref)
			return err
		default:
			out, err = serialiseList(t, ref)
			return err
		}
	})
	if err != nil {
		return nil, fmt.Errorf("raw %q: %w", id, err)
	}
	return out, nil
}

// serialiseList writes a list's items as a JSON array.
func serialiseList(t *txn, ref *wsRef) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(ref.itemChars) + ref.items + 2)
	buf.WriteByte('[')
	rows, err := t.query(qItemsAll, idBase(ref.key), idBase(ref.key+1))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var data sql.RawBytes
		if err := rows.Scan(&data); err != nil {
			return nil, err
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(data)
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// Value returns a dict workspace's object.
func (s *Store) Value(ctx context.Context, id string) (json.RawMessage, error) {
	var out json.RawMessage
	err := s.read(ctx, func(t *txn) error {
		ref, err := lookup(t, id, store.ShapeDict)
		if err != nil {
			return err
		}
		var value string
		if err := t.queryRow(qValue, ref.key).Scan(&value); err != nil {
			return err
		}
		out = json.RawMessage(value)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("value %q: %w", id, err)
	}
	return out, nil
}
