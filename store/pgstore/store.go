package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/parallel"
)

// Layout of the content.
const (
	// defaultChunkRunes is the size a text chunk aims for, as in
	// sqlitestore: a passage SearchText finds lies within one chunk, so
	// the same size gives the same passages.
	defaultChunkRunes = 16 << 10
	// rawPiece is the size of the pieces the original bytes are stored in.
	rawPiece = 1 << 20
	// scanPage is how many items ScanItems reads at a time.
	scanPage = 1000
)

// Store is a [store.Store] kept in a PostgreSQL database. It is safe for
// concurrent use, and any number of processes may use the same database.
type Store struct {
	db         *pgdb.DB
	chunkRunes int
}

var _ store.Store = (*Store)(nil)

// NewStore returns the workspaces of db, whose schema Migrate has brought
// up to date. It is cheap: it holds nothing but db.
func NewStore(db *pgdb.DB) *Store {
	return &Store{db: db, chunkRunes: defaultChunkRunes}
}

// Close releases nothing: the pool belongs to whoever opened db.
func (s *Store) Close() error { return nil }

// readOptions are those of every read: one snapshot for all its statements.
var readOptions = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// read runs fn in a read-only REPEATABLE READ transaction, so that a read
// of several statements (a search, a page and its lookup) sees one
// snapshot, and runs it again when it failed without changing anything
// (pgdb.Retryable).
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return retryRead(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.db.Pool, readOptions, fn)
	})
}

// retryRead runs attempt until it succeeds, a few times at most.
func retryRead(ctx context.Context, attempt func() error) error {
	delay := 5 * time.Millisecond
	for i := 0; ; i++ {
		err := attempt()
		if err == nil || i >= 3 || ctx.Err() != nil || !pgdb.Retryable(err, true) {
			return err
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		case <-t.C:
		}
		delay *= 2
	}
}

// wsColumns are the workspace columns scanWorkspace reads, in its order.
const wsColumns = `id, type, shape, format, items, chars, tokens, schema, producer, args, meta, session,
	created_at, accessed_at, ttl, expires_at`

func scanWorkspace(row pgx.Row) (*store.Workspace, error) {
	var (
		ws                         store.Workspace
		shape                      string
		schema, args, meta         []byte
		created, accessed, expires *int64
		ttl                        int64
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
	ws.TTL = time.Duration(ttl)
	return &ws, nil
}

// Times are stored as Unix microseconds, the precision every backend
// keeps; the zero time is NULL.
func toMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.UnixMicro(*n).UTC()
}

// nullBytes stores nil as NULL and anything else, even empty, as bytea.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return []byte(b)
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
}

const (
	qLookup       = `SELECT key, shape, items, chars, tokens, next_seq, item_chars FROM ws_workspaces WHERE id = $1`
	qLookupLocked = qLookup + ` FOR UPDATE`
)

// lookup finds workspace id and checks that it has one of shapes (any when
// none are given). A write locks its row (FOR UPDATE) with locked, so
// that writes to one workspace are serialised in every process, and reads
// the row as the last write committed it.
func lookup(ctx context.Context, tx pgx.Tx, id string, locked bool, shapes ...store.Shape) (*wsRef, error) {
	q := qLookup
	if locked {
		q = qLookupLocked
	}
	return scanRef(tx.QueryRow(ctx, q, id), id, shapes...)
}

// scanRef reads the result of qLookup.
func scanRef(row pgx.Row, id string, shapes ...store.Shape) (*wsRef, error) {
	var ref wsRef
	var shape string
	err := row.Scan(&ref.key, &shape, &ref.items, &ref.chars, &ref.tokens, &ref.nextSeq, &ref.itemChars)
	if errors.Is(err, pgx.ErrNoRows) {
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

// lookupWith looks workspace id up and runs q, whose $1 is id (it finds
// the key as (SELECT key FROM ws_workspaces WHERE id = $1)), in one round
// trip, and calls fn with q's rows when the workspace has one of shapes.
// It is for reads, whose statements share a snapshot.
func lookupWith(ctx context.Context, tx pgx.Tx, id string, shapes []store.Shape, q string, args []any, fn func(ref *wsRef, rows pgx.Rows) error) error {
	var (
		ref  *wsRef
		lerr error
	)
	b := &pgx.Batch{}
	b.Queue(qLookup, id).QueryRow(func(row pgx.Row) error {
		ref, lerr = scanRef(row, id, shapes...)
		return nil
	})
	b.Queue(q, append([]any{id}, args...)...).Query(func(rows pgx.Rows) error {
		if lerr != nil {
			return nil
		}
		return fn(ref, rows)
	})
	err := tx.SendBatch(ctx, b).Close()
	if lerr != nil {
		return lerr
	}
	return err
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
// terms before the write transaction starts, on every core.
type prepared struct {
	items  *preparedItems     // list
	count  int                // list items or dict keys
	value  []byte             // dict
	chunks []textsearch.Chunk // text
	terms  [][][]byte         // text: index terms of each chunk
	meta   []byte
}

func prepare(ws *store.Workspace, c *store.Content, chunkRunes int) (*prepared, error) {
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
		items, err := prepareItems(c.Items)
		if err != nil {
			return nil, err
		}
		p.items, p.count = items, len(items.data)
	case store.ShapeDict:
		keys, ok := jsonscan.ObjectSpans(c.Value)
		if !ok {
			return nil, errors.New("dict value is not a JSON object")
		}
		p.value = c.Value
		p.count = len(keys) // distinct keys: a repeated key has one value
	case store.ShapeText:
		p.chunks = textsearch.Split(c.Text, chunkRunes)
		p.terms = make([][][]byte, len(p.chunks))
		parallel.For(len(p.chunks), func() *termBuilder { return &termBuilder{} }, func(i int, tb *termBuilder) {
			p.terms[i] = tb.terms(p.chunks[i].Text)
		})
	default:
		return nil, fmt.Errorf("unknown shape %q", ws.Shape)
	}
	return p, nil
}

// preparedItems are list items ready to insert: valid JSON, with their
// index terms.
type preparedItems struct {
	data  [][]byte
	terms [][][]byte
	chars int64
}

// prepareItems checks that every item is valid JSON and computes its index
// terms, in parallel since a large list is tens of megabytes.
func prepareItems(items []json.RawMessage) (*preparedItems, error) {
	p := &preparedItems{data: make([][]byte, len(items)), terms: make([][][]byte, len(items))}
	chars := make([]int64, len(items))
	errs := make([]error, len(items))
	type state struct {
		tb  termBuilder
		buf []byte
		sc  jsonscan.Scalars
	}
	parallel.For(len(items), func() *state { return &state{} }, func(i int, st *state) {
		terms, err := st.tb.itemTerms(&st.sc, &st.buf, items[i])
		if err != nil {
			errs[i] = err
			return
		}
		p.terms[i] = terms
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

const (
	qPutLock = `SELECT pg_advisory_xact_lock(hashtextextended('ctxkit workspace ' || current_schema() || ' ' || $1, 0))`
	qOwner   = `SELECT key, type, producer, session FROM ws_workspaces WHERE id = $1 FOR UPDATE`
	qInsert  = `INSERT INTO ws_workspaces (id, type, shape, format, items, chars, tokens, schema,
		producer, args, meta, session, created_at, accessed_at, ttl, expires_at, next_seq, item_chars)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		ON CONFLICT (id) DO NOTHING RETURNING key`
)

// Put creates the workspace or replaces the one with the same id, in one
// transaction: readers see either the old workspace or the new one whole.
// Puts of one id queue on an advisory lock of the id; replacing locks the
// old row too, as every write does, and deletes it with its content. The new workspace gets a new key (never reused), so that its
// rows never meet the old ones' in the indexes.
//
// The content is indexed for search in the same transaction: a list's
// items and index terms, or a text's chunks and theirs, are sent with
// COPY, the terms sorted in index order. That makes Put of a list cost
// several times what storing its items alone does (sqlitestore defers
// indexing large content), but a search never has to index.
func (s *Store) Put(ctx context.Context, ws *store.Workspace, c *store.Content) error {
	p, err := prepare(ws, c, s.chunkRunes)
	if err != nil {
		return fmt.Errorf("put %q: %w", idOf(ws), err)
	}
	var nextSeq, itemChars int64
	switch {
	case p.items != nil:
		nextSeq, itemChars = int64(len(p.items.data)), p.items.chars
	case ws.Shape == store.ShapeText:
		nextSeq = int64(len(p.chunks))
	}
	args := []any{ws.ID, ws.Type, string(ws.Shape), ws.Format, p.count, ws.Chars, ws.Tokens, nullBytes(ws.Schema),
		ws.Producer, nullBytes(ws.Args), nullBytes(p.meta), ws.Session,
		toMicros(ws.CreatedAt), toMicros(ws.AccessedAt), int64(ws.TTL), toMicros(ws.ExpiresAt), nextSeq, itemChars}
	err = s.db.Write(ctx, func(tx pgx.Tx) error {
		key, err := claim(ctx, tx, ws, args)
		if err != nil {
			return err
		}
		if c.Raw != nil {
			if err := insertRaw(ctx, tx, key, c.Raw); err != nil {
				return err
			}
		}
		switch ws.Shape {
		case store.ShapeList:
			return insertItems(ctx, tx, key, 0, 0, p.items)
		case store.ShapeDict:
			if _, err := tx.Exec(ctx, `INSERT INTO ws_values (ws, value) VALUES ($1, $2)`, key, []byte(p.value)); err != nil {
				return fmt.Errorf("insert value: %w", err)
			}
		case store.ShapeText:
			return insertChunks(ctx, tx, key, p.chunks, p.terms)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put %q: %w", ws.ID, err)
	}
	return nil
}

// claim deletes the workspace ws.ID, locked, if there is one, checking
// that it may be replaced, and inserts the new row with args; it returns
// the new key.
func claim(ctx context.Context, tx pgx.Tx, ws *store.Workspace, args []any) (int64, error) {
	for range 5 {
		var (
			key             int64
			typ, prod, sess string
		)
		// The advisory lock serialises the Puts of one id, so that one
		// never finds the row it waited for replaced by another; the row
		// lock, taken in the next statement (which sees what the lock's
		// previous holder committed), serialises Put with every other
		// write.
		b := &pgx.Batch{}
		b.Queue(qPutLock, ws.ID)
		owner := b.Queue(qOwner, ws.ID)
		owner.QueryRow(func(row pgx.Row) error {
			err := row.Scan(&key, &typ, &prod, &sess)
			if errors.Is(err, pgx.ErrNoRows) {
				key = 0
				return nil
			}
			return err
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return 0, fmt.Errorf("look up workspace: %w", err)
		}
		if key != 0 {
			if typ != ws.Type || prod != ws.Producer || sess != ws.Session {
				return 0, fmt.Errorf("existing workspace has type %q, producer %q, session %q: %w", typ, prod, sess, store.ErrConflict)
			}
			if err := deleteWorkspace(ctx, tx, key); err != nil {
				return 0, err
			}
		}
		err := tx.QueryRow(ctx, qInsert, args...).Scan(&key)
		if err == nil {
			return key, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("insert workspace: %w", err)
		}
		// Created since the lookup by a writer that took no advisory lock.
	}
	return 0, errors.New("workspace keeps being created by others")
}

// insertRaw stores the original bytes in pieces; empty bytes are one
// empty piece, so that they differ from none.
func insertRaw(ctx context.Context, tx pgx.Tx, key int64, raw []byte) error {
	n := 0
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"ws_raw"}, []string{"ws", "n", "data"},
		pgx.CopyFromFunc(func() ([]any, error) {
			start := n * rawPiece
			if start >= len(raw) && !(n == 0 && len(raw) == 0) {
				return nil, nil
			}
			end := min(start+rawPiece, len(raw))
			n++
			return []any{key, n - 1, raw[start:end]}, nil
		}))
	if err != nil {
		return fmt.Errorf("insert original bytes: %w", err)
	}
	return nil
}

func idOf(ws *store.Workspace) string {
	if ws == nil {
		return ""
	}
	return ws.ID
}

// deleteContent removes a workspace's content and index terms.
func deleteContent(ctx context.Context, tx pgx.Tx, key int64) error {
	b := &pgx.Batch{}
	for _, table := range []string{"ws_raw", "ws_values", "ws_items", "ws_item_terms", "ws_chunks", "ws_chunk_terms"} {
		b.Queue(`DELETE FROM `+table+` WHERE ws = $1`, key)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("delete workspace content: %w", err)
	}
	return nil
}

// Stat returns the workspace's metadata.
func (s *Store) Stat(ctx context.Context, id string) (*store.Workspace, error) {
	var ws *store.Workspace
	err := s.read(ctx, func(tx pgx.Tx) error {
		var err error
		ws, err = scanWorkspace(tx.QueryRow(ctx, `SELECT `+wsColumns+` FROM ws_workspaces WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
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
	err := s.db.Write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE ws_workspaces SET accessed_at = $1 WHERE id = $2`, toMicros(at), id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("touch %q: %w", id, err)
	}
	return nil
}

// List returns the workspaces matching opts, most recently created first
// (the zero time last), and among equal times the last put first.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]*store.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if opts.Sessions != nil && len(opts.Sessions) == 0 {
		return nil, nil
	}
	q := `SELECT ` + wsColumns + ` FROM ws_workspaces WHERE true`
	var args []any
	if opts.Type != "" {
		args = append(args, opts.Type)
		q += fmt.Sprintf(` AND type = $%d`, len(args))
	}
	if opts.Sessions != nil {
		args = append(args, opts.Sessions)
		q += fmt.Sprintf(` AND session = ANY($%d)`, len(args))
	}
	q += ` ORDER BY created_at DESC NULLS LAST, key DESC`
	var out []*store.Workspace
	err := s.read(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, q, args...)
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
	err := s.db.Write(ctx, func(tx pgx.Tx) error {
		ref, err := lookup(ctx, tx, id, true)
		if err != nil {
			return err
		}
		return deleteWorkspace(ctx, tx, ref.key)
	})
	if err != nil {
		return fmt.Errorf("delete %q: %w", id, err)
	}
	return nil
}

// deleteWorkspace removes a workspace's row and content.
func deleteWorkspace(ctx context.Context, tx pgx.Tx, key int64) error {
	if err := deleteContent(ctx, tx, key); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM ws_workspaces WHERE key = $1`, key); err != nil {
		return fmt.Errorf("delete workspace: %w", err)
	}
	return nil
}

// DeleteExpired removes every workspace expired at now and returns the ids
// removed. Each workspace goes in its own transaction, so that a sweep of
// many large workspaces never holds many locks for long; one replaced with
// a fresh expiry since it was found expired is kept, and one another
// process deleted first is not counted.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) ([]string, error) {
	type expired struct {
		key int64
		id  string
	}
	var found []expired
	cutoff := now.UnixMicro()
	err := s.read(ctx, func(tx pgx.Tx) error {
		found = found[:0]
		rows, err := tx.Query(ctx, `SELECT key, id FROM ws_workspaces WHERE expires_at <= $1 ORDER BY expires_at`, cutoff)
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
		err := s.db.Write(ctx, func(tx pgx.Tx) error {
			deleted = false
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM ws_workspaces WHERE key = $1 AND expires_at <= $2 FOR UPDATE`, e.key, cutoff).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // gone or replaced since
			}
			if err != nil {
				return err
			}
			deleted = true
			return deleteWorkspace(ctx, tx, e.key)
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
	err := s.read(ctx, func(tx pgx.Tx) error {
		out = nil
		ref, err := lookup(ctx, tx, id, false)
		if err != nil {
			return err
		}
		found := false
		if out, found, err = concat(ctx, tx, `SELECT data FROM ws_raw WHERE ws = $1 ORDER BY n`, ref.key, 0); err != nil || found {
			return err
		}
		switch ref.shape {
		case store.ShapeDict:
			return tx.QueryRow(ctx, `SELECT value FROM ws_values WHERE ws = $1`, ref.key).Scan(&out)
		case store.ShapeText:
			out, _, err = concat(ctx, tx, `SELECT text FROM ws_chunks WHERE ws = $1 ORDER BY n`, ref.key, int(ref.chars))
			return err
		default:
			out, err = serialiseList(ctx, tx, ref)
			return err
		}
	})
	if err != nil {
		return nil, fmt.Errorf("raw %q: %w", id, err)
	}
	return out, nil
}

// concat returns the bytes of every row of q (one bytea column) one after
// the other, and whether there was any row.
func concat(ctx context.Context, tx pgx.Tx, q string, key int64, size int) ([]byte, bool, error) {
	rows, err := tx.Query(ctx, q, key)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	out := make([]byte, 0, size)
	found := false
	var b []byte
	for rows.Next() {
		if err := rows.Scan(&b); err != nil {
			return nil, false, err
		}
		found = true
		out = append(out, b...)
	}
	return out, found, rows.Err()
}

// serialiseList writes a list's items as a JSON array.
func serialiseList(ctx context.Context, tx pgx.Tx, ref *wsRef) ([]byte, error) {
	out := make([]byte, 0, int(ref.itemChars)+ref.items+2)
	out = append(out, '[')
	rows, err := tx.Query(ctx, `SELECT data FROM ws_items WHERE ws = $1 ORDER BY seq`, ref.key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var b []byte
	for n := 0; rows.Next(); n++ {
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return append(out, ']'), nil
}

// Value returns a dict workspace's object.
func (s *Store) Value(ctx context.Context, id string) (json.RawMessage, error) {
	var out []byte
	err := s.read(ctx, func(tx pgx.Tx) error {
		ref, err := lookup(ctx, tx, id, false, store.ShapeDict)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT value FROM ws_values WHERE ws = $1`, ref.key).Scan(&out)
	})
	if err != nil {
		return nil, fmt.Errorf("value %q: %w", id, err)
	}
	return out, nil
}
