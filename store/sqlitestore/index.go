package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"modernc.org/sqlite"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/parallel"
)

// The full-text indexes hold index terms computed in Go, not raw text: for
// each item or chunk, its distinct terms as FTS5's "porter unicode61"
// tokenizer makes them (textsearch: tokens folded, without diacritics, and
// stemmed), joined by spaces. The FTS5 tables themselves only split that on
// spaces. Doing the linguistic work in Go means it runs on every core (for
// Put, before the write lock is taken), and that Go code locating matches
// afterwards agrees with the index by construction. The tables keep no
// positions (detail=none): search needs to know which rows hold a term, and
// computes frequencies and BM25 itself.

// termBuilder computes index terms, reusing its memory from one text to
// the next. It is not safe for concurrent use.
type termBuilder struct {
	tz textsearch.Tokenizer
	dd dedup
}

// indexTerms appends to dst the distinct index terms of text, separated by
// spaces.
func (tb *termBuilder) indexTerms(dst []byte, text string) []byte {
	tb.dd.reset()
	tb.tz.Each(text, func(t *textsearch.Token) bool {
		mark := len(dst)
		start := mark
		if len(tb.dd.spans) > 0 {
			dst = append(dst, ' ')
			start++
		}
		dst = append(dst, textsearch.Stem(t.Folded)...)
		if tb.dd.add(dst, start, len(dst)) {
			dst = dst[:mark]
		}
		return true
	})
	return dst
}

// dedup is a set of byte strings held in one buffer, reused from one text
// to the next without allocating.
type dedup struct {
	slots []int32 // 1 + index into spans; 0 is empty
	spans []span
}

type span struct {
	start, end int32
	hash       uint32
}

func (d *dedup) reset() {
	clear(d.slots)
	d.spans = d.spans[:0]
}

// add records buf[start:end] and reports whether it was already there.
func (d *dedup) add(buf []byte, start, end int) bool {
	if 2*(len(d.spans)+1) > len(d.slots) {
		d.grow()
	}
	key := buf[start:end]
	h := fnv32(key)
	mask := uint32(len(d.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		slot := d.slots[i]
		if slot == 0 {
			d.spans = append(d.spans, span{int32(start), int32(end), h})
			d.slots[i] = int32(len(d.spans))
			return false
		}
		if sp := d.spans[slot-1]; sp.hash == h && string(buf[sp.start:sp.end]) == string(key) {
			return true
		}
	}
}

func (d *dedup) grow() {
	d.slots = make([]int32, max(64, 2*len(d.slots)))
	mask := uint32(len(d.slots) - 1)
	for n, sp := range d.spans {
		i := sp.hash & mask
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = int32(n + 1)
	}
}

func fnv32(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// itemIndexTerms returns the index terms of an item's scalar values.
func itemIndexTerms(item []byte) string {
	scalars, err := jsonscan.AppendScalars(make([]byte, 0, len(item)), item)
	if err != nil {
		return ""
	}
	var tb termBuilder
	return string(tb.indexTerms(make([]byte, 0, len(scalars)), string(scalars)))
}

// termPrefix is prepended to every index term of the workspace with key
// key. Index terms are thus distinct per workspace, and a query reads only
// its own workspace's entries: FTS5 evaluates a prefix query by merging the
// entries of every term with that prefix in the whole index, whatever the
// rowid range asked for, so without it a search of a ten-item workspace
// would read the entries of every large workspace beside it. The ascii
// tokenizer keeps the prefix and the term together as one token.
func termPrefix(key int64) string { return "k" + strconv.FormatInt(key, 10) + "q" }

// stager hands index terms computed in Go to the SQL function
// ctxkit_staged(i), so that one INSERT … SELECT statement can feed a whole
// list to the index. FTS5 flushes its in-memory index at every statement
// of a transaction that writes to it, so a statement per row would write
// thousands of tiny segments. Only the writer connection calls it, inside
// a write transaction, which holds the texts for that statement's duration.
type stager struct {
	mu     sync.Mutex
	texts  []string // space-separated terms, by position
	prefix string   // termPrefix of the workspace
}

func (st *stager) set(prefix string, texts []string) {
	st.mu.Lock()
	st.texts, st.prefix = texts, prefix
	st.mu.Unlock()
}

func (st *stager) fn(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	i, ok := args[0].(int64)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !ok || i < 0 || i >= int64(len(st.texts)) {
		return "", nil
	}
	return prefixTerms(st.prefix, st.texts[i]), nil
}

// prefixTerms puts prefix before each of the space-separated terms.
func prefixTerms(prefix, terms string) string {
	if terms == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(terms) + (strings.Count(terms, " ")+1)*len(prefix))
	for t := range strings.SplitSeq(terms, " ") {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(prefix)
		b.WriteString(t)
	}
	return b.String()
}

// termBytes is the size of index terms, which is about what they add to
// the index.
func termBytes(terms []string) int64 {
	var n int64
	for _, t := range terms {
		n += int64(len(t))
	}
	return n
}

// defaultIndexInline is the size up to which content is indexed inside
// Put's transaction. Larger content is indexed after Put returns, by a
// background goroutine or by the first search that needs it, whichever
// comes first: indexing takes several times as long as storing (FTS5
// in the pure-Go SQLite is the slow part), and an offloaded result is
// often paged through or filtered without ever being searched.
const defaultIndexInline = 4 << 20

// chunkTerms computes the index terms of text chunks in parallel.
func chunkTerms(chunks []textsearch.Chunk) []string {
	terms := make([]string, len(chunks))
	parallel.For(len(chunks), func() *termBuilder { return &termBuilder{} }, func(i int, tb *termBuilder) {
		terms[i] = string(tb.indexTerms(nil, chunks[i].Text))
	})
	return terms
}

// errNotIndexed is returned inside a search transaction when the workspace
// is not in the index yet.
var errNotIndexed = errors.New("workspace not indexed yet")

// ensureIndexed puts workspace id's content in the full-text index if it is
// not there yet. Any process may do this for any workspace, from a search
// or in the background: whichever takes the write lock first indexes it,
// and the others then find it indexed.
func (s *Store) ensureIndexed(ctx context.Context, id string) error {
	return s.write(ctx, func(t *txn) error {
		ref, err := lookup(t, id, store.ShapeList, store.ShapeText)
		if err != nil || ref.indexed {
			return err
		}
		return s.index(t, ref)
	})
}

// indexBatch is how many items or chunks go to an indexing worker at once.
const indexBatch = 256

// index reads a workspace's items or chunks and writes their index terms,
// then marks it indexed. Workers on every core compute the terms while the
// rows are read; the index is written by one statement at the end. It runs
// under the write lock, so the content cannot change meanwhile.
func (s *Store) index(t *txn, ref *wsRef) error {
	lo, hi := idBase(ref.key), idBase(ref.key+1)
	terms := make([]string, ref.nextSeq) // by sequence number; deleted items leave gaps
	type job struct {
		seqs  []int64
		texts []string
	}
	jobs := make(chan job, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var tb termBuilder
			var buf []byte
			for j := range jobs {
				for k, text := range j.texts {
					buf = tb.indexTerms(buf[:0], text)
					terms[j.seqs[k]] = string(buf)
				}
			}
		})
	}
	err := func() error {
		defer close(jobs)
		q := qItemsData
		if ref.shape == store.ShapeText {
			q = qChunksText
		}
		rows, err := t.query(q, lo, hi)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			batch   job
			scalars []byte
			sc      jsonscan.Scalars
		)
		for rows.Next() {
			var id int64
			var data sql.RawBytes
			if err := rows.Scan(&id, &data); err != nil {
				return err
			}
			seq := id - lo
			if seq < 0 || seq >= ref.nextSeq {
				return fmt.Errorf("row %d outside the workspace's %d sequence numbers", seq, ref.nextSeq)
			}
			text := string(data)
			if ref.shape == store.ShapeList {
				if scalars, err = sc.Append(scalars[:0], data); err != nil {
					return fmt.Errorf("item %d: %w", seq, err)
				}
				text = string(scalars)
			}
			batch.seqs = append(batch.seqs, seq)
			batch.texts = append(batch.texts, text)
			if len(batch.seqs) == indexBatch {
				jobs <- batch
				batch = job{}
			}
		}
		if len(batch.seqs) > 0 {
			jobs <- batch
		}
		return rows.Err()
	}()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("read %s to index: %w", ref.shape, err)
	}
	q := qIndexItems
	if ref.shape == store.ShapeText {
		q = qIndexChunks
	}
	t.wrote += termBytes(terms)
	s.staged.set(termPrefix(ref.key), terms)
	defer s.staged.set("", nil)
	if _, err := t.exec(q, lo, lo+int64(len(terms))); err != nil {
		return fmt.Errorf("index %s: %w", ref.shape, err)
	}
	if _, err := t.exec(qSetIndexed, ref.key); err != nil {
		return err
	}
	return nil
}

// indexer indexes workspaces in the background after Put returns.
type indexer struct {
	s      *Store
	ids    chan string
	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func newIndexer(s *Store) *indexer {
	ctx, cancel := context.WithCancel(context.Background())
	ix := &indexer{s: s, ids: make(chan string, 64), ctx: ctx, cancel: cancel}
	ix.done.Go(ix.run)
	return ix
}

func (ix *indexer) run() {
	for {
		select {
		case <-ix.ctx.Done():
			return
		case id := <-ix.ids:
			// A failure leaves the workspace to the first search that
			// needs it, which indexes it or reports why not.
			_ = ix.s.ensureIndexed(ix.ctx, id)
		}
	}
}

// enqueue asks for id to be indexed soon. When the queue is full the
// request is dropped: a search indexes what it needs anyway.
func (ix *indexer) enqueue(id string) {
	select {
	case ix.ids <- id:
	default:
	}
}

// close stops the indexer, abandoning (rolling back) work in progress, and
// waits for it.
func (ix *indexer) close() {
	ix.cancel()
	ix.done.Wait()
}
