// Pipelines in SQL.
//
// [Store.Pipe] runs a query pipeline (package store/query; the result_pipe
// tool's steps, parsed by offload/pipeline) over a list workspace: it is
// the store's [store.Piper] capability. It compiles the longest prefix of
// the steps that SQLite can run with exactly the Go evaluator's semantics
// into one query over the workspace's rows of items, reading fields with
// json_type, json_extract and ->, and hands what that query yields to
// [query.Pipeline.RunFrom] for the remaining steps, one row at a time.
// What runs in SQL:
//
//   - filter, with every operator but $regex: $eq and $ne on scalars, the
//     orderings $gt $gte $lt $lte (numbers only with numbers, strings only
//     with strings, by byte), $in and $nin on scalars, $exists,
//     $startswith, $contains (substrings, and array elements through
//     json_each), $and, $or and $not;
//   - sort, as ORDER BY with nulls and missing fields first, then numbers
//     and booleans (as 0 and 1), then strings, ties broken by the position
//     the items had, which is what makes the Go sort stable;
//   - limit, skip and slice, as LIMIT and OFFSET;
//   - count, as count(*);
//   - group_by with count, sum, mean, min, max, median and stddev, as GROUP
//     BY. SQL forms the groups, counts them and finds their first item; the
//     sums and the statistics are computed in Go, by the evaluator's own
//     [query.Aggregate], from each group's numbers, which SQL hands over
//     as their JSON text in item order, because Go adds float64 values one
//     by one in that order and SQLite's sum() compensates rounding errors:
//     the two differ in the last bits.
//
// Everything else streams in Go: search (its case folding is Unicode's),
// $regex (RE2), select, exclude, unique, flatten and sample (they reshape
// or pick items by Go's own rules), the values metric, and every step after
// the first one that cannot be pushed down. A group_by whose input was
// sorted also stays in Go: its groups and sums follow the sorted order.
//
// Go decodes numbers as float64 and big integers exactly, sorts arrays and
// objects by their JSON text, and reads invalid UTF-8 and lone surrogate
// escapes as U+FFFD; SQLite holds integers beyond int64 and literals of
// more than 19 significant digits only approximately, and keeps the bytes
// of such strings. The compiled SQL therefore checks, on every value whose
// exact form matters (a number near the bound it is compared with, a sort
// or group key, a string that is ordered), that SQLite holds what Go holds.
// When it does not, the query stops with an error of its own making, and
// the whole pipeline runs in Go instead: rare data costs time, never a
// wrong answer. The one difference left is objects that repeat a key: Go
// reads the last value and SQLite the first (RFC 8259 leaves such objects
// undefined); ctxkit's ingest keeps them as they are.
//
// Sort and group_by are pushed down only for lists of at most
// [query.MaxHeldItems] items, so that the step that would hold too many
// items in Go fails the same way.
//
// Pipelines that aggregate (group_by or count) after steps that read only
// known fields do not go to SQL at all, unless they read no field: they run
// in Go over items decoded only as far as those fields' top-level members
// (see [query.Pipeline.Projection] and projectedRows), which is faster
// than json_extract and gives Go's answer even on objects that repeat a key.

package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ctxkit/ctxkit/internal/sqlitedb"
	"github.com/ctxkit/ctxkit/store"
	qry "github.com/ctxkit/ctxkit/store/query"
)

// Bounds on the SQL a pipeline compiles to. A step that would go past them
// runs in Go.
const (
	maxPipeParams   = 10_000  // bound parameters of one query
	maxPipeSQL      = 1 << 20 // bytes of SQL text
	maxPipeOrder    = 64      // ORDER BY terms accumulated by successive sorts
	maxPathIndexes  = 3       // digit segments of one path, each doubling its SQL
	maxInlineValues = 64      // $in values bound one by one; more go in one JSON array
)

// fallbackMarker is the JSON path of the expression the SQL raises when it
// meets a value it cannot treat exactly as Go does; SQLite reports it as a
// bad path, and Pipe then runs the whole pipeline in Go.
const fallbackMarker = "ctxkit: exact only in Go"

// raiseSQL fails the query. It reads data so that SQLite cannot evaluate it
// once up front.
const raiseSQL = `json_extract(data, '` + fallbackMarker + `')`

// isFallback reports whether err is the compiled SQL asking for Go.
func isFallback(err error) bool {
	return err != nil && strings.Contains(err.Error(), fallbackMarker)
}

// Pipe runs the pipeline p over the list workspace id and returns what
// [query.Pipeline.Run] returns over the same items: a prefix of the steps
// runs in SQLite (see the top of pipe.go for which) and the rest in Go, over
// the rows that prefix yields, so that a filter or an aggregate never loads
// the whole list. The run reads one snapshot and holds one read connection
// until it returns. Errors in the steps are the *query.StepError that Run
// would return.
func (s *Store) Pipe(ctx context.Context, id string, p *qry.Pipeline) (any, error) {
	v, _, err := s.pipe(ctx, id, p)
	return v, err
}

var _ store.Piper = (*Store)(nil)

// pipeMode says how pipeWith runs a pipeline.
type pipeMode int

const (
	// pipeAuto projects when the pipeline allows it (see projectedRows)
	// and pushes a prefix down to SQL otherwise.
	pipeAuto pipeMode = iota
	// pipeSQL always pushes down, so that tests (Options.pipeMode) and
	// benchmarks can hold the SQL to Run's answers and time it.
	pipeSQL
)

// pipe is Pipe, also reporting how many steps ran in SQL (0 when the
// pipeline ran in Go).
func (s *Store) pipe(ctx context.Context, id string, p *qry.Pipeline) (any, int, error) {
	return s.pipeWith(ctx, id, p, s.pipeMode)
}

// pipeWith is pipe in the given mode.
//
// A pipeline whose final value cannot hold whole items (it aggregates with
// group_by or count, reading items only through known fields) runs in Go
// over items of which only the top-level members it reads are decoded, by
// several goroutines. Measured on 100,000 items of 400 bytes, that beats the
// SQL, which spends its time in json_extract parsing each item again for
// every field, several times over. Projections that read no field at all
// (a bare count) stay in SQL, which then reads no JSON.
func (s *Store) pipeWith(ctx context.Context, id string, p *qry.Pipeline, mode pipeMode) (any, int, error) {
	if p == nil {
		return nil, 0, fmt.Errorf("pipe %q: nil pipeline", id)
	}
	// Steps that cannot run fail before any item is read, as in Run: an
	// empty run reports them, so that the SQL need not.
	if _, err := p.Run(ctx, nil); err != nil {
		return nil, 0, err
	}
	var (
		value  any
		pushed int
	)
	err := sqlitedb.Retry(ctx, func() error {
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		t := &txn{ctx: ctx, tx: tx, stmts: s.rst}
		ref, err := lookup(t, id, store.ShapeList)
		if err != nil {
			return err
		}
		if keys, ok := p.Projection(); ok && len(keys) > 0 && mode == pipeAuto {
			pushed = 0
			value, err = p.Run(ctx, projectedRows(t, ref, keys))
			return err
		}
		value, pushed, err = runPlan(t, ref, p)
		if isFallback(err) {
			pushed = 0
			value, err = p.Run(ctx, scanRows(t, ref))
		}
		return err
	})
	if err != nil {
		var se *qry.StepError
		if errors.As(err, &se) {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("pipe %q: %w", id, err)
	}
	return value, pushed, nil
}

// runPlan compiles the pushable prefix of p, runs it and the rest of p.
func runPlan(t *txn, ref *wsRef, p *qry.Pipeline) (any, int, error) {
	pl := compilePipe(p, ref)
	switch pl.kind {
	case planNone:
		v, err := p.Run(t.ctx, scanRows(t, ref))
		return v, 0, err
	case planCount:
		var n int64
		if err := t.tx.QueryRowContext(t.ctx, pl.sql, pl.args...).Scan(&n); err != nil {
			return nil, 0, fmt.Errorf("count in SQL: %w", err)
		}
		return map[string]any{"count": float64(n)}, pl.pushed, nil
	case planGroup:
		rows, err := runGroups(t, pl)
		if err != nil {
			return nil, 0, err
		}
		v, err := p.RunFrom(t.ctx, pl.pushed, func(yield func(any, error) bool) {
			for _, r := range rows {
				if !yield(r, nil) {
					return
				}
			}
		})
		return v, pl.pushed, err
	}
	v, err := p.RunFrom(t.ctx, pl.pushed, queryRows(t, pl.sql, pl.args))
	return v, pl.pushed, err
}

// scanRows yields every item of the list, decoded, in order.
func scanRows(t *txn, ref *wsRef) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		rows, err := t.query(qItemsAll, idBase(ref.key), idBase(ref.key+1))
		if err != nil {
			yield(nil, err)
			return
		}
		yieldRows(rows, yield)
	}
}

// projectBatch is how many rows SQLite reads into one value and a decoding
// goroutine takes at a time, at most: enough to make the query and the
// handing over cheap. On 100,000 items of 400 bytes, 1,024 took less CPU
// than 256 and 64. Lists of larger items take fewer, about projectBytes
// of them, so that a batch stays small in memory.
const (
	projectBatch = 1024
	projectBytes = 1 << 20
)

// rowBatch is consecutive rows of a list on their way through projectedRows.
type rowBatch struct {
	buf   []byte // the rows' JSON, one after another; never written
	ends  []int  // where each row ends in buf
	items []any  // the rows decoded, up to err
	err   error
	done  chan struct{} // closed when items and err are final
}

// projectedRows yields every item of the list in order, decoded by
// [query.DecodeKeys] to the members keys, which is what an item reduced
// to a pipeline's projection decodes to. One goroutine reads the rows and
// GOMAXPROCS goroutines decode batches of them; the batches are yielded in
// the order they were read. All of them stop and are waited for before the
// sequence returns, so the rows are closed before the transaction ends.
func projectedRows(t *txn, ref *wsRef, keys []string) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		var wg sync.WaitGroup
		defer wg.Wait()
		ctx, cancel := context.WithCancel(t.ctx)
		defer cancel()
		workers := runtime.GOMAXPROCS(0)
		jobs := make(chan *rowBatch, workers)
		order := make(chan *rowBatch, 2*workers)
		wg.Add(1 + workers)
		go func() {
			defer wg.Done()
			defer close(jobs)
			defer close(order)
			readBatches(ctx, t, ref, func(b *rowBatch) bool {
				select {
				case order <- b:
				case <-ctx.Done():
					return false
				}
				if b.err != nil {
					close(b.done)
					return false
				}
				select {
				case jobs <- b:
					return true
				case <-ctx.Done():
					return false
				}
			})
		}()
		for range workers {
			go func() {
				defer wg.Done()
				for b := range jobs {
					decodeBatch(b, keys)
				}
			}()
		}
		for b := range order {
			// Checked first, so that a cancelled run stops at the next batch
			// even when that batch is ready too.
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("read items: %w", err))
				return
			}
			select {
			case <-b.done:
			case <-ctx.Done():
				yield(nil, fmt.Errorf("read items: %w", ctx.Err()))
				return
			}
			for _, v := range b.items {
				if !yield(v, nil) {
					return
				}
			}
			if b.err != nil {
				yield(nil, b.err)
				return
			}
		}
		// The reader stops without a batch when the context ends between
		// two batches; the items yielded so far are then not all of them.
		if err := ctx.Err(); err != nil {
			yield(nil, fmt.Errorf("read items: %w", err))
		}
	}
}

// readBatches reads the rows of the list in order and hands them to send
// in batches, the last one holding the error that ended the reading, if any;
// it stops when send returns false.
//
// Each batch is one result row of qItemsBatch: SQLite concatenates the
// JSON of up to projectBatch consecutive items and lists their lengths, so
// that the driver steps once per batch instead of once per item, which is
// most of what reading a row costs (about 1.6 µs a row through rows.Next).
// Lengths rather than a separator delimit the items: an item's JSON is
// stored as given and may hold any byte a separator could be.
func readBatches(ctx context.Context, t *txn, ref *wsRef, send func(*rowBatch) bool) {
	fail := func(err error) {
		send(&rowBatch{err: err, done: make(chan struct{})})
	}
	st := t.stmts.In(t.ctx, t.tx, qItemsBatch)
	rows := projectBatch
	if ref.items > 0 && ref.itemChars > 0 {
		rows = int(min(max(projectBytes*int64(ref.items)/ref.itemChars, 1), projectBatch))
	}
	lo, hi := idBase(ref.key), idBase(ref.key+1)
	for lo < hi {
		var (
			n    int
			last int64
			lens string
			data string
		)
		err := st.QueryRowContext(ctx, lo, hi, rows).Scan(&n, &last, &lens, &data)
		if isTooBig(err) && rows > 1 {
			// Large items next to each other: one item alone always fits,
			// since SQLite holds it.
			rows /= 2
			continue
		}
		if err != nil {
			fail(fmt.Errorf("read items: %w", err))
			return
		}
		if n == 0 {
			return
		}
		// A view of data, which only decodeBatch reads: scanning into a
		// []byte would copy the batch once more.
		b := &rowBatch{buf: unsafe.Slice(unsafe.StringData(data), len(data)), ends: make([]int, 0, n), done: make(chan struct{})}
		end := 0
		for f := range strings.SplitSeq(lens, ",") {
			l, err := strconv.Atoi(f)
			if err != nil || l < 0 {
				fail(fmt.Errorf("read items: bad item length %q", f))
				return
			}
			end += l
			b.ends = append(b.ends, end)
		}
		if len(b.ends) != n || end != len(data) {
			fail(fmt.Errorf("read items: %d items of %d bytes in a batch of %d items and %d bytes", len(b.ends), end, n, len(data)))
			return
		}
		if !send(b) || n < rows {
			return
		}
		lo = last + 1
	}
}

// isTooBig reports whether err is SQLite refusing a string or blob longer
// than its limit.
func isTooBig(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_TOOBIG
}

// decodeBatch decodes the rows of b, stopping at the first that fails.
func decodeBatch(b *rowBatch, keys []string) {
	defer close(b.done)
	b.items = make([]any, 0, len(b.ends))
	start := 0
	for _, end := range b.ends {
		v, err := qry.DecodeKeys(b.buf[start:end], keys)
		if err != nil {
			b.err = err
			return
		}
		b.items = append(b.items, v)
		start = end
	}
}

// queryRows runs q, whose only column is an item's JSON, and yields the
// items decoded.
func queryRows(t *txn, q string, args []any) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		rows, err := t.tx.QueryContext(t.ctx, q, args...)
		if err != nil {
			yield(nil, err)
			return
		}
		yieldRows(rows, yield)
	}
}

func yieldRows(rows *sql.Rows, yield func(any, error) bool) {
	defer rows.Close()
	for rows.Next() {
		var data sql.RawBytes
		if err := rows.Scan(&data); err != nil {
			yield(nil, err)
			return
		}
		v, err := qry.Decode(data)
		if !yield(v, err) || err != nil {
			return
		}
	}
	if err := rows.Err(); err != nil {
		yield(nil, err)
	}
}

// planKind is what the compiled query returns.
type planKind int

const (
	planNone  planKind = iota // nothing pushed down
	planRows                  // items, to run the rest over
	planCount                 // one count, the pipeline's result
	planGroup                 // group_by rows (see runGroups)
)

// pipePlan is a pipeline prefix compiled to SQL.
type pipePlan struct {
	kind   planKind
	pushed int // steps the SQL runs
	sql    string
	args   []any
	group  *groupPlan
}

// compilePipe compiles the longest prefix of p that SQL runs exactly. The
// steps are known to be valid: Pipe ran them over no items first.
func compilePipe(p *qry.Pipeline, ref *wsRef) *pipePlan {
	b := &sqlBuilder{small: ref.items <= qry.MaxHeldItems}
	b.args = []any{idBase(ref.key), idBase(ref.key + 1)}
	b.rel = `(SELECT id, data, id AS pos FROM items WHERE id >= ?1 AND id < ?2)`
	b.lim = -1
	pl := &pipePlan{kind: planNone}
	for i, st := range p.Steps {
		saved := b.save()
		done, ok := b.step(i, st, pl)
		if ok && (b.size()+len(pl.sql) > maxPipeSQL || len(b.args) > maxPipeParams) {
			ok = false
		}
		if !ok {
			b.restore(saved)
			pl.group = nil
			break
		}
		pl.pushed = i + 1
		if done {
			return pl
		}
	}
	if pl.pushed == 0 {
		return &pipePlan{kind: planNone}
	}
	pl.kind = planRows
	pl.sql = `SELECT data FROM ` + b.rel + b.tail(true)
	pl.args = b.args
	return pl
}

// sqlBuilder accumulates the query. rel yields (id, data, pos), pos giving
// the order of its rows; on it apply where, then order (then pos), then the
// window off and lim.
type sqlBuilder struct {
	small  bool // the list is small enough for sort and group_by in SQL
	args   []any
	rel    string
	where  []string
	order  []string
	off    int64
	lim    int64 // -1: no limit
	sorted bool  // pos is not id order: a sort was applied
}

type builderState struct {
	rel      string
	where    []string
	order    []string
	off, lim int64
	sorted   bool
	nargs    int
}

func (b *sqlBuilder) save() builderState {
	return builderState{b.rel, slices.Clone(b.where), slices.Clone(b.order), b.off, b.lim, b.sorted, len(b.args)}
}

func (b *sqlBuilder) restore(s builderState) {
	b.rel, b.where, b.order, b.off, b.lim, b.sorted = s.rel, s.where, s.order, s.off, s.lim, s.sorted
	b.args = b.args[:s.nargs]
}

func (b *sqlBuilder) size() int {
	n := len(b.rel)
	for _, w := range b.where {
		n += len(w)
	}
	for _, o := range b.order {
		n += len(o)
	}
	return n
}

// arg binds v and returns its placeholder.
func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return "?" + strconv.Itoa(len(b.args))
}

func (b *sqlBuilder) windowed() bool { return b.off > 0 || b.lim >= 0 }

// tail is the WHERE, ORDER BY and LIMIT of a query over rel; without
// ordered, only what decides which rows there are.
func (b *sqlBuilder) tail(ordered bool) string {
	var sb strings.Builder
	if len(b.where) > 0 {
		sb.WriteString(" WHERE ")
		sb.WriteString(strings.Join(b.where, " AND "))
	}
	if ordered {
		sb.WriteString(" ORDER BY ")
		for _, o := range b.order {
			sb.WriteString(o)
			sb.WriteString(", ")
		}
		sb.WriteString("pos")
	}
	if b.windowed() {
		fmt.Fprintf(&sb, " LIMIT %s OFFSET %s", b.arg(b.lim), b.arg(b.off))
	}
	return sb.String()
}

// materialize makes the current query the relation the next steps read,
// numbering its rows in their order when a sort made it differ from id
// order.
func (b *sqlBuilder) materialize() {
	pos := "pos"
	if len(b.order) > 0 {
		pos = "row_number() OVER (ORDER BY " + strings.Join(b.order, ", ") + ", pos)"
	}
	b.rel = "(SELECT id, data, " + pos + " AS pos FROM " + b.rel + b.tail(true) + ")"
	b.where, b.order, b.off, b.lim = nil, nil, 0, -1
}

// step compiles step i; done means the plan is complete (count, group_by).
func (b *sqlBuilder) step(i int, st qry.Step, pl *pipePlan) (done, ok bool) {
	switch s := derefStep(st).(type) {
	case qry.Filter:
		if b.windowed() {
			b.materialize()
		}
		c, ok := b.cond(s.Cond)
		if !ok {
			return false, false
		}
		b.where = append(b.where, c)
		return false, true
	case qry.Sort:
		if !b.small || len(b.order)+len(s.Keys) > maxPipeOrder {
			return false, false
		}
		if b.windowed() {
			b.materialize()
		}
		keys := make([]string, 0, len(s.Keys))
		for _, k := range s.Keys {
			f, ok := fieldOf(k.Path)
			if !ok {
				return false, false
			}
			dir := " ASC"
			if k.Desc {
				dir = " DESC"
			}
			keys = append(keys, f.sortKey()+dir)
		}
		// A later sort decides first; the earlier order breaks its ties.
		b.order = append(keys, b.order...)
		b.sorted = true
		return false, true
	case qry.Limit:
		b.window(0, int64(s.N))
		return false, true
	case qry.Skip:
		b.window(int64(s.N), -1)
		return false, true
	case qry.Slice:
		b.window(int64(s.Start), int64(s.End-s.Start))
		return false, true
	case qry.Count:
		pl.kind = planCount
		pl.sql = `SELECT count(*) FROM (SELECT 1 FROM ` + b.rel + b.tail(false) + `)`
		pl.args = b.args
		return true, true
	case qry.GroupBy:
		if !b.small || b.sorted || len(b.order) > 0 {
			return false, false
		}
		if b.windowed() {
			b.materialize()
		}
		g, ok := b.groupBy(i, s)
		if !ok {
			return false, false
		}
		pl.kind = planGroup
		pl.group = g
		pl.sql = g.sql
		pl.args = b.args
		return true, true
	}
	return false, false
}

// window applies a skip of skip items and then a limit of take (-1: none).
func (b *sqlBuilder) window(skip, take int64) {
	if skip > 0 {
		b.off += skip
		if b.lim >= 0 {
			b.lim = max(b.lim-skip, 0)
		}
	}
	if take >= 0 && (b.lim < 0 || take < b.lim) {
		b.lim = take
	}
}

// derefStep turns pointers to steps, which Run accepts, into the steps.
func derefStep(st qry.Step) qry.Step {
	switch t := st.(type) {
	case *qry.Filter:
		if t != nil {
			return *t
		}
	case *qry.Sort:
		if t != nil {
			return *t
		}
	case *qry.Limit:
		if t != nil {
			return *t
		}
	case *qry.Skip:
		if t != nil {
			return *t
		}
	case *qry.Slice:
		if t != nil {
			return *t
		}
	case *qry.Count:
		if t != nil {
			return *t
		}
	case *qry.GroupBy:
		if t != nil {
			return *t
		}
	}
	return st
}

// field is the SQL that reads one dot path of an item: its JSON type (NULL
// when missing), its SQL value and its JSON text.
type field struct {
	path string // a JSON path, or an expression choosing one
	typ  string
	val  string
	raw  string
}

func newField(col, path string) field {
	return field{
		path: path,
		typ:  "json_type(" + col + ", " + path + ")",
		val:  "json_extract(" + col + ", " + path + ")",
		raw:  "(" + col + " -> " + path + ")",
	}
}

// fieldOf compiles a pipeline dot path. Go's lookup splits it at dots and
// reads each segment as an object key or, on an array, as an index when it
// is all digits; SQL paths must say which, so a digit segment becomes a
// CASE on the type of what it reads. Paths that SQL cannot spell exactly
// are refused: with NUL, or with U+FFFD, which Go also produces from a key
// with invalid UTF-8 or a lone surrogate escape, where SQLite keeps bytes.
func fieldOf(path string) (field, bool) { return fieldOn("data", path) }

// fieldOn is fieldOf on the item JSON in column col.
func fieldOn(col, path string) (field, bool) {
	if path == "" || !utf8.ValidString(path) || strings.ContainsRune(path, utf8.RuneError) || strings.ContainsRune(path, 0) {
		return field{}, false
	}
	segs := strings.Split(path, ".")
	digits := 0
	for _, s := range segs {
		if _, ok := qry.ArrayIndex(s); ok {
			digits++
		}
	}
	if digits > maxPathIndexes {
		return field{}, false
	}
	return newField(col, pathChoice(col, "$", segs)), true
}

// pathChoice returns an SQL expression whose value is the JSON path of segs
// under prefix, a JSON path.
func pathChoice(col, prefix string, segs []string) string {
	for len(segs) > 0 {
		s := segs[0]
		if n, ok := qry.ArrayIndex(s); ok {
			arr := pathChoice(col, prefix+"["+strconv.Itoa(n)+"]", segs[1:])
			obj := pathChoice(col, prefix+"."+jsonLabel(s), segs[1:])
			return "(CASE json_type(" + col + ", " + sqlString(prefix) + ") WHEN 'array' THEN " + arr + " ELSE " + obj + " END)"
		}
		prefix += "." + jsonLabel(s)
		segs = segs[1:]
	}
	return sqlString(prefix)
}

// jsonLabel quotes an object key for a SQLite JSON path. SQLite decodes
// \u escapes in a quoted label, so quotes, backslashes and control
// characters are written as escapes; everything else stays as it is.
func jsonLabel(key string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '"' || c == '\\' || c < 0x20 || c == 0x7f {
			fmt.Fprintf(&sb, `\u%04x`, c)
			continue
		}
		sb.WriteByte(c)
	}
	sb.WriteByte('"')
	return sb.String()
}

// sqlString quotes s as an SQL string literal. It is used only for JSON
// paths, which must be literals for SQLite to match an expression index on
// them; values are always bound.
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// The SQL of a field's value in the forms the steps need. Each check that
// SQLite holds the value as Go does raises the fallback when it fails.

// exactNum is true when the field, a number, is exactly Go's number: an
// integer within int64, or a real SQLite parses as Go does.
func (f field) exactNum() string {
	return "(CASE " + f.typ + " WHEN 'integer' THEN typeof(" + f.val + ") = 'integer' ELSE " + exactReal(f.raw) + " END)"
}

// exactReal is true when the number literal raw has at most 19 significant
// digits, which SQLite parses to the float64 nearest to it, as Go does;
// with more, it may be one unit in the last place off. Leading zeros are
// not counted; the count is made only for literals of 20 characters or
// more.
func exactReal(raw string) string {
	mantissa := "substr(" + raw + ", 1, coalesce(nullif(instr(lower(" + raw + "), 'e'), 0) - 1, length(" + raw + ")))"
	return "(length(" + raw + ") < 20 OR length(ltrim(replace(replace(" + mantissa + ", '-', ''), '.', ''), '0')) < 20)"
}

// finiteReal is true when a real is finite: Go keeps a literal beyond the
// float64 range exact (json.Number), SQLite makes it infinite.
func (f field) finiteReal() string {
	return "abs(" + f.val + ") <= 1.7976931348623157e308"
}

// textGuard is true when a string may differ between Go and SQLite: Go
// reads invalid UTF-8 and lone surrogates as U+FFFD (which GLOB sees too),
// and GLOB stops at NUL.
func textGuard(val string) string {
	return "(" + val + " GLOB '*\uFFFD*' OR instr(" + val + ", char(0)) > 0)"
}

// sortKey is the field as an ORDER BY term: NULL for null or missing, then
// numbers with booleans as 0 and 1, then strings, as Go ranks them. Arrays
// and objects, which Go orders by their JSON text, raise.
func (f field) sortKey() string {
	return "(CASE " + f.typ +
		" WHEN 'true' THEN 1 WHEN 'false' THEN 0" +
		" WHEN 'integer' THEN (CASE WHEN typeof(" + f.val + ") = 'integer' THEN " + f.val + " ELSE " + raiseSQL + " END)" +
		" WHEN 'real' THEN (CASE WHEN " + exactReal(f.raw) + " AND " + f.finiteReal() + " THEN " + f.val + " ELSE " + raiseSQL + " END)" +
		" WHEN 'text' THEN (CASE WHEN " + textGuard(f.val) + " THEN " + raiseSQL + " ELSE " + f.val + " END)" +
		" WHEN 'null' THEN NULL" +
		" WHEN 'array' THEN " + raiseSQL + " WHEN 'object' THEN " + raiseSQL + " END)"
}

// number is the field as a metric reads it: numbers and booleans (as 1 and
// 0), NULL otherwise. A negative zero raises, since SQLite's min and max do
// not say which of two equal values they return and Go keeps the first.
func (f field) number() string {
	negZero := "(CASE WHEN " + f.val + " = 0 AND substr(" + f.raw + ", 1, 1) = '-' THEN " + raiseSQL + " ELSE " + f.val + " END)"
	return "(CASE " + f.typ +
		" WHEN 'true' THEN 1 WHEN 'false' THEN 0" +
		" WHEN 'integer' THEN (CASE WHEN typeof(" + f.val + ") = 'integer' THEN " + negZero + " ELSE " + raiseSQL + " END)" +
		" WHEN 'real' THEN (CASE WHEN " + exactReal(f.raw) + " THEN " + negZero + " ELSE " + raiseSQL + " END) END)"
}

// numberText is the field's JSON text when it is a number, "1" and "0" for
// booleans, NULL otherwise: what Go parses for sum, mean, median and
// stddev.
func (f field) numberText() string {
	return "(CASE " + f.typ + " WHEN 'integer' THEN " + f.raw + " WHEN 'real' THEN " + f.raw +
		" WHEN 'true' THEN '1' WHEN 'false' THEN '0' END)"
}

// cond compiles a filter condition to an SQL expression that is 0 or 1,
// never NULL, so that NOT negates it as Go does.
func (b *sqlBuilder) cond(c qry.Cond) (string, bool) {
	switch t := c.(type) {
	case qry.And:
		return b.conds(t.Conds, " AND ", "1")
	case *qry.And:
		if t != nil {
			return b.conds(t.Conds, " AND ", "1")
		}
	case qry.Or:
		return b.conds(t.Conds, " OR ", "0")
	case *qry.Or:
		if t != nil {
			return b.conds(t.Conds, " OR ", "0")
		}
	case qry.Not:
		e, ok := b.cond(t.Cond)
		return "(NOT " + e + ")", ok
	case *qry.Not:
		if t != nil {
			e, ok := b.cond(t.Cond)
			return "(NOT " + e + ")", ok
		}
	case qry.FieldCond:
		return b.fieldCond(t)
	case *qry.FieldCond:
		if t != nil {
			return b.fieldCond(*t)
		}
	}
	return "", false
}

func (b *sqlBuilder) conds(cs []qry.Cond, join, empty string) (string, bool) {
	if len(cs) == 0 {
		return empty, true
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		e, ok := b.cond(c)
		if !ok {
			return "", false
		}
		parts[i] = e
	}
	return "(" + strings.Join(parts, join) + ")", true
}

func (b *sqlBuilder) fieldCond(fc qry.FieldCond) (string, bool) {
	f, ok := fieldOf(fc.Path)
	if !ok {
		return "", false
	}
	op := fc.Op
	if op == "" {
		op = qry.OpEq
	}
	switch op {
	case qry.OpEq:
		return b.eq(f, fc.Value)
	case qry.OpNe:
		e, ok := b.eq(f, fc.Value)
		return "(NOT " + e + ")", ok
	case qry.OpGt, qry.OpGte, qry.OpLt, qry.OpLte:
		sqlOp := map[qry.Op]string{qry.OpGt: ">", qry.OpGte: ">=", qry.OpLt: "<", qry.OpLte: "<="}[op]
		if w, isStr := fc.Value.(string); isStr {
			if !plainString(w) {
				return "", false
			}
			return "(CASE WHEN " + f.typ + " = 'text' THEN (CASE WHEN " + textGuard(f.val) + " THEN " + raiseSQL +
				" ELSE " + f.val + " " + sqlOp + " " + b.arg(w) + " END) ELSE 0 END)", true
		}
		return b.numCmp(f, sqlOp, fc.Value)
	case qry.OpIn:
		return b.in(f, fc.Value)
	case qry.OpNin:
		e, ok := b.in(f, fc.Value)
		return "(NOT " + e + ")", ok
	case qry.OpExists:
		want, isBool := fc.Value.(bool)
		if !isBool {
			return "", false
		}
		if want {
			return "(coalesce(" + f.typ + ", 'null') <> 'null')", true
		}
		return "(coalesce(" + f.typ + ", 'null') = 'null')", true
	case qry.OpStartsWith:
		w, isStr := fc.Value.(string)
		if !isStr || !plainString(w) {
			return "", false
		}
		return b.startsWith(f, w), true
	case qry.OpContains:
		return b.contains(f, fc.Value)
	}
	return "", false
}

// plainString reports whether SQL compares w with a stored string as Go
// does: w is valid UTF-8 without U+FFFD, the one character Go may read
// where SQLite keeps other bytes.
func plainString(w string) bool {
	return utf8.ValidString(w) && !strings.ContainsRune(w, utf8.RuneError)
}

// sqlNumber returns the value to bind for a number want, which SQLite then
// compares exactly, and its float64 value; ok is false for what SQLite
// cannot hold exactly.
func sqlNumber(v any) (bind any, f float64, ok bool) {
	switch t := v.(type) {
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, 0, false
		}
		return t, t, true
	case float32:
		return sqlNumber(float64(t))
	case int:
		return int64(t), float64(t), true
	case int64:
		return t, float64(t), true
	case int32:
		return int64(t), float64(t), true
	case uint32:
		return int64(t), float64(t), true
	case uint:
		if uint64(t) <= math.MaxInt64 {
			return int64(t), float64(t), true
		}
	case uint64:
		if t <= math.MaxInt64 {
			return int64(t), float64(t), true
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i, float64(i), true
		}
	}
	return nil, 0, false
}

// eq is Go's equality with a scalar want.
func (b *sqlBuilder) eq(f field, want any) (string, bool) {
	switch w := want.(type) {
	case nil:
		return "(coalesce(" + f.typ + ", 'null') = 'null')", true
	case bool:
		if w {
			return "(" + f.typ + " IS 'true')", true
		}
		return "(" + f.typ + " IS 'false')", true
	case string:
		if !plainString(w) {
			return "", false
		}
		return "(CASE WHEN " + f.typ + " = 'text' THEN " + f.val + " = " + b.arg(w) + " ELSE 0 END)", true
	}
	return b.numCmp(f, "=", want)
}

// numCmp compares a number field with a number want. SQLite compares
// integers and reals exactly, so the result is Go's whenever the field
// holds Go's value; when it may not (an integer beyond int64, a long
// literal), a value far enough from want compares the same either way, and
// one close to it raises.
func (b *sqlBuilder) numCmp(f field, sqlOp string, want any) (string, bool) {
	bind, wf, ok := sqlNumber(want)
	if !ok {
		return "", false
	}
	w, wfa := b.arg(bind), b.arg(wf)
	far := "abs(" + f.val + " - " + wfa + ") > max(abs(" + f.val + "), abs(" + wfa + ")) * 1e-14 + 1e-300"
	cmp := f.val + " " + sqlOp + " " + w
	return "(CASE " + f.typ +
		" WHEN 'integer' THEN (CASE WHEN typeof(" + f.val + ") = 'integer' OR " + far + " THEN " + cmp + " ELSE " + raiseSQL + " END)" +
		" WHEN 'real' THEN (CASE WHEN " + far + " OR " + exactReal(f.raw) + " THEN " + cmp + " ELSE " + raiseSQL + " END)" +
		" ELSE 0 END)", true
}

// in is $in: the field equals one of the scalar values of want.
func (b *sqlBuilder) in(f field, want any) (string, bool) {
	list, isList := want.([]any)
	if !isList {
		return "", false
	}
	var (
		strs, nums            []any
		null, isTrue, isFalse bool
	)
	for _, x := range list {
		switch t := x.(type) {
		case nil:
			null = true
		case bool:
			isTrue = isTrue || t
			isFalse = isFalse || !t
		case string:
			if !plainString(t) {
				return "", false
			}
			strs = append(strs, t)
		default:
			bind, _, ok := sqlNumber(x)
			if !ok {
				return "", false
			}
			nums = append(nums, bind)
		}
	}
	var parts []string
	if null {
		parts = append(parts, "(coalesce("+f.typ+", 'null') = 'null')")
	}
	if isTrue {
		parts = append(parts, "("+f.typ+" IS 'true')")
	}
	if isFalse {
		parts = append(parts, "("+f.typ+" IS 'false')")
	}
	if len(strs) > 0 {
		parts = append(parts, "(CASE WHEN "+f.typ+" = 'text' THEN "+f.val+" IN ("+b.valueList(strs)+") ELSE 0 END)")
	}
	if len(nums) > 0 {
		parts = append(parts, "(CASE WHEN "+f.typ+" IN ('integer', 'real') THEN (CASE WHEN "+f.exactNum()+
			" THEN "+f.val+" IN ("+b.valueList(nums)+") ELSE "+raiseSQL+" END) ELSE 0 END)")
	}
	if len(parts) == 0 {
		return "0", true
	}
	return "(" + strings.Join(parts, " OR ") + ")", true
}

// valueList binds vs (strings, or int64 and float64 values) for IN: one by
// one when they are few, else as one JSON array read by json_each, which
// parses the numbers Go writes back exactly.
func (b *sqlBuilder) valueList(vs []any) string {
	if len(vs) <= maxInlineValues {
		ps := make([]string, len(vs))
		for i, v := range vs {
			ps[i] = b.arg(v)
		}
		return strings.Join(ps, ", ")
	}
	arr := make([]byte, 0, 16*len(vs))
	arr = append(arr, '[')
	for i, v := range vs {
		if i > 0 {
			arr = append(arr, ',')
		}
		switch t := v.(type) {
		case string:
			q, _ := json.Marshal(t) // valid UTF-8, so it cannot fail
			arr = append(arr, q...)
		case int64:
			arr = strconv.AppendInt(arr, t, 10)
		case float64:
			arr = strconv.AppendFloat(arr, t, 'g', -1, 64)
		}
	}
	arr = append(arr, ']')
	return "SELECT value FROM json_each(" + b.arg(string(arr)) + ")"
}

// numberish reports whether s could occur in the JSON text Go gives a
// number: digits, sign, point and exponent.
func numberish(s string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("0123456789+-.eE", rune(s[i])) {
			return false
		}
	}
	return true
}

// startsWith is $startswith: strings by their bytes, numbers by the text
// Go writes for them. That is the literal for an integer; for other
// numbers Go's formatting is not SQLite's, so a prefix that could match
// one raises.
func (b *sqlBuilder) startsWith(f field, w string) string {
	n := b.arg(int64(len(w)))
	wb := "CAST(" + b.arg(w) + " AS BLOB)"
	// substr of an empty blob is NULL, not an empty blob: coalesce, so that
	// "" starts with "" and the condition is never NULL (NOT would keep it
	// NULL and drop the item).
	text := "coalesce(substr(CAST(" + f.val + " AS BLOB), 1, " + n + "), X'') = " + wb
	intCase, realCase := "0", "0"
	switch {
	case w == "":
		intCase, realCase = "1", "1"
	case numberish(w):
		intCase = "substr(CAST(" + f.raw + " AS BLOB), 1, " + n + ") = " + wb
		realCase = raiseSQL
	}
	return "(CASE " + f.typ + " WHEN 'text' THEN " + text + " WHEN 'integer' THEN " + intCase +
		" WHEN 'real' THEN " + realCase + " ELSE 0 END)"
}

// contains is $contains: an array has an element equal to want, or a
// string (or a number's text) holds want's text.
func (b *sqlBuilder) contains(f field, want any) (string, bool) {
	var (
		elem   string // an element of json_each equals want
		text   string
		isText bool
	)
	switch w := want.(type) {
	case bool:
		elem = "e.type = 'true'"
		if !w {
			elem = "e.type = 'false'"
		}
	case string:
		if !plainString(w) {
			return "", false
		}
		elem = "e.type = 'text' AND e.value = " + b.arg(w)
		text, isText = w, true
	default:
		bind, _, ok := sqlNumber(want)
		if !ok {
			return "", false
		}
		wa := b.arg(bind)
		elem = "(CASE e.type WHEN 'integer' THEN (CASE WHEN typeof(e.value) = 'integer' THEN e.value = " + wa + " ELSE " + raiseSQL + " END)" +
			" WHEN 'real' THEN (CASE WHEN " + exactReal("(data -> e.fullkey)") + " THEN e.value = " + wa + " ELSE " + raiseSQL + " END) ELSE 0 END)"
		text, isText = string(numberText(want)), true
	}
	arr := "EXISTS (SELECT 1 FROM json_each(data, " + f.path + ") AS e WHERE " + elem + ")"
	strCase, intCase, realCase := "0", "0", "0"
	if isText {
		tb := "CAST(" + b.arg(text) + " AS BLOB)"
		strCase = "instr(CAST(" + f.val + " AS BLOB), " + tb + ") > 0"
		switch {
		case text == "":
			intCase, realCase = "1", "1"
		case numberish(text):
			intCase = "instr(CAST(" + f.raw + " AS BLOB), " + tb + ") > 0"
			realCase = raiseSQL
		}
	}
	return "(CASE " + f.typ + " WHEN 'array' THEN " + arr + " WHEN 'text' THEN " + strCase +
		" WHEN 'integer' THEN " + intCase + " WHEN 'real' THEN " + realCase + " ELSE 0 END)", true
}

// numberText is the JSON text Go's pipeline gives a number want, as
// encoding/json writes a float64: 2024, 0.5, 1e+21, 1e-7.
func numberText(v any) []byte {
	if n, ok := v.(json.Number); ok {
		return []byte(n)
	}
	_, f, _ := sqlNumber(v)
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// groupPlan is a group_by step compiled to SQL; runGroups turns its rows
// into the step's output.
type groupPlan struct {
	step  qry.GroupBy
	index int
	sql   string
	// metrics says where each metric of the step comes from.
	metrics []metricSource
	lists   int // number-list columns
	aggs    int // SQL min/max columns
}

// metricSource is where a metric's value comes from: the group's size, an
// SQL min or max (column col among them), or number list col.
type metricSource struct {
	kind int // srcCount, srcSQL or srcList
	col  int
}

const (
	srcCount = iota
	srcSQL
	srcList
)

// groupBy compiles a group_by. The inner query groups, the outer one reads
// each group's key from its first item, in order of first appearance.
func (b *sqlBuilder) groupBy(i int, g qry.GroupBy) (*groupPlan, bool) {
	key, ok := fieldOf(g.Path)
	if !ok {
		return nil, false
	}
	gp := &groupPlan{step: g, index: i, metrics: make([]metricSource, len(g.Metrics))}
	// Groups are equal values as Go's group_by sees them: kb keeps booleans
	// apart from numbers, kv (the sort key) puts null with missing and
	// numbers by value, and raises for what SQL cannot tell apart.
	listCol := map[string]int{}
	for _, m := range g.Metrics {
		switch m.Func {
		case qry.MetricSum, qry.MetricMean, qry.MetricMedian, qry.MetricStddev:
			if _, ok := listCol[m.Path]; !ok {
				listCol[m.Path] = len(listCol)
			}
		}
	}
	var listPaths = make([]string, len(listCol))
	for p, c := range listCol {
		listPaths[c] = p
	}
	var aggs []string
	// The rows' keys and metric inputs are computed in a subquery that
	// SQLite does not flatten (it has a LIMIT), so that GROUP BY sorts
	// those values rather than whole items, which it would parse again.
	cols := []string{"pos", "(" + key.typ + " IS 'true' OR " + key.typ + " IS 'false') AS kb", key.sortKey() + " AS kv"}
	for j, m := range g.Metrics {
		switch m.Func {
		case qry.MetricCount:
			gp.metrics[j] = metricSource{kind: srcCount}
		case qry.MetricMin, qry.MetricMax:
			if c, ok := listCol[m.Path]; ok {
				gp.metrics[j] = metricSource{kind: srcList, col: c}
				continue
			}
			f, ok := fieldOf(m.Path)
			if !ok {
				return nil, false
			}
			fn := "min"
			if m.Func == qry.MetricMax {
				fn = "max"
			}
			gp.metrics[j] = metricSource{kind: srcSQL, col: len(aggs)}
			aggs = append(aggs, fn+"(a"+strconv.Itoa(len(aggs))+")")
			cols = append(cols, f.number()+" AS a"+strconv.Itoa(len(aggs)-1))
		case qry.MetricSum, qry.MetricMean, qry.MetricMedian, qry.MetricStddev:
			gp.metrics[j] = metricSource{kind: srcList, col: listCol[m.Path]}
		default:
			return nil, false // values: its distinct values are Go's to judge
		}
	}
	var lists []string
	for _, p := range listPaths {
		f, ok := fieldOf(p)
		if !ok {
			return nil, false
		}
		lists = append(lists, "group_concat(l"+strconv.Itoa(len(lists))+", ',' ORDER BY pos)")
		cols = append(cols, f.numberText()+" AS l"+strconv.Itoa(len(lists)-1))
	}
	gp.lists, gp.aggs = len(lists), len(aggs)
	inner := "SELECT min(pos) AS first, count(*) AS n"
	for k, a := range lists {
		inner += fmt.Sprintf(", %s AS l%d", a, k)
	}
	for k, a := range aggs {
		inner += fmt.Sprintf(", %s AS a%d", a, k)
	}
	rows := "SELECT " + strings.Join(cols, ", ") + " FROM " + b.rel + b.tail(false)
	if !b.windowed() {
		rows += " LIMIT -1"
	}
	inner += " FROM (" + rows + ") GROUP BY kb, kv"
	outer := "SELECT g.n"
	for k := range lists {
		outer += fmt.Sprintf(", g.l%d", k)
	}
	for k := range aggs {
		outer += fmt.Sprintf(", g.a%d", k)
	}
	first, _ := fieldOn("i.data", g.Path)
	outer += ", " + first.raw + " FROM (" + inner + ") AS g JOIN items AS i ON i.id = g.first ORDER BY g.first"
	gp.sql = outer
	return gp, true
}

// parseNumbers appends to dst the numbers of a group's number list, the
// JSON texts of its numbers joined by commas in item order, as float64
// values the way the pipeline decodes them: a number beyond float64's range
// is an infinity.
func parseNumbers(dst []float64, text sql.NullString) ([]float64, error) {
	if !text.Valid {
		return dst, nil
	}
	for s := range strings.SplitSeq(text.String, ",") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("read number %q of a group: %w", s, err)
		}
		dst = append(dst, f)
	}
	return dst, nil
}

// runGroups runs a group plan and returns the group_by step's output rows.
// When the groups would hold more than the pipeline allows, it asks for the
// run in Go, which reports that the way Run does.
func runGroups(t *txn, pl *pipePlan) ([]any, error) {
	gp := pl.group
	rows, err := t.tx.QueryContext(t.ctx, pl.sql, pl.args...)
	if err != nil {
		return nil, fmt.Errorf("group in SQL: %w", err)
	}
	defer rows.Close()
	var (
		out  []any
		held int
	)
	lists := make([]sql.NullString, gp.lists)
	nums := make([][]float64, gp.lists)
	aggs := make([]any, gp.aggs)
	var n int64
	var key sql.NullString
	dest := []any{&n}
	for k := range lists {
		dest = append(dest, &lists[k])
	}
	for k := range aggs {
		dest = append(dest, &aggs[k])
	}
	dest = append(dest, &key)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read group %d: %w", len(out), err)
		}
		var kv any
		if key.Valid {
			if kv, err = qry.Decode([]byte(key.String)); err != nil {
				return nil, fmt.Errorf("decode the key of group %d: %w", len(out), err)
			}
		}
		for k, l := range lists {
			if nums[k], err = parseNumbers(nums[k][:0], l); err != nil {
				return nil, err
			}
		}
		row := make(map[string]any, len(gp.step.Metrics)+1)
		row[gp.step.Path] = kv
		held++
		for j, m := range gp.step.Metrics {
			src := gp.metrics[j]
			switch src.kind {
			case srcCount:
				row[m.Name] = float64(n)
			case srcSQL:
				row[m.Name] = sqlFloat(aggs[src.col])
			case srcList:
				// The evaluator's own aggregate, fed the same numbers in the
				// same order, gives the same bits.
				a := qry.NewAggregate(m)
				for _, f := range nums[src.col] {
					held += a.Add(f)
				}
				row[m.Name] = a.Result()
			}
		}
		if held > qry.MaxHeldItems {
			return nil, errors.New("group_by holds too many values: " + fallbackMarker)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("group in SQL: %w", err)
	}
	return out, nil
}

// sqlFloat is an SQL min or max as the pipeline reports it.
func sqlFloat(v any) any {
	switch t := v.(type) {
	case int64:
		return float64(t)
	case float64:
		return t
	}
	return nil
}
