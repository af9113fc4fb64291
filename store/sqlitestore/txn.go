package sqlitestore

import (
	"context"
	"database/sql"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/sqlitedb"
)

// txn is a transaction with its context and the prepared statements of its
// pool. Queries not prepared in advance run unprepared.
type txn struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts sqlitedb.Stmts
	// wrote estimates the bytes a write transaction adds to the WAL.
	wrote int64
}

// textArg returns b as a string parameter without copying it. The driver
// copies every TEXT parameter into SQLite's memory when it binds it, so
// string(b) would only add a Go copy for the collector: 40 MB of garbage for
// the Put of a 40 MB list, which the process carried at its peak. b must not
// change until the statement has run.
func textArg(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (t *txn) query(q string, args ...any) (*sql.Rows, error) {
	return t.stmts.Query(t.ctx, t.tx, q, args...)
}

func (t *txn) queryRow(q string, args ...any) *sql.Row {
	return t.stmts.QueryRow(t.ctx, t.tx, q, args...)
}

func (t *txn) exec(q string, args ...any) (sql.Result, error) {
	return t.stmts.Exec(t.ctx, t.tx, q, args...)
}

// Statements, named by what they do. Those in readQueries and writeQueries
// are prepared when the store opens.
const (
	qLookup          = `SELECT key, shape, items, chars, tokens, next_seq, item_chars, indexed FROM workspaces WHERE id = ?`
	qStat            = `SELECT ` + wsColumns + ` FROM workspaces WHERE id = ?`
	qOwner           = `SELECT key, shape, type, producer, session, indexed FROM workspaces WHERE id = ?`
	qInsertWorkspace = `INSERT INTO workspaces (id, type, shape, format, items, chars, tokens, schema,
		producer, args, meta, session, created_at, accessed_at, ttl, expires_at, next_seq, item_chars, indexed)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING key`
	qInsertBlobs     = `INSERT INTO blobs (ws, raw, value) VALUES (?, ?, ?)`
	qBlobs           = `SELECT raw, value FROM blobs WHERE ws = ?`
	qValue           = `SELECT value FROM blobs WHERE ws = ?`
	qDeleteBlobs     = `DELETE FROM blobs WHERE ws = ?`
	qDeleteWorkspace = `DELETE FROM workspaces WHERE key = ?`
	qDeleteItemsFTS  = `DELETE FROM items_fts WHERE rowid >= ? AND rowid < ?`
	qDeleteItemRange = `DELETE FROM items WHERE id >= ? AND id < ?`
	qDeleteChunksFTS = `DELETE FROM chunks_fts WHERE rowid >= ? AND rowid < ?`
	qDeleteChunks    = `DELETE FROM chunks WHERE id >= ? AND id < ?`
	qTouch           = `UPDATE workspaces SET accessed_at = ? WHERE id = ?`
	qExpired         = `SELECT key, id FROM workspaces WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at`
	qStillExpired    = `SELECT shape, indexed FROM workspaces WHERE key = ? AND expires_at <= ?`
	qListSize        = `UPDATE workspaces SET items = ?, item_chars = ?, next_seq = ?, chars = ?, tokens = ?, version = version + 1 WHERE key = ?`
	qSetIndexed      = `UPDATE workspaces SET indexed = 1 WHERE key = ?`
	qChunkCount      = `UPDATE workspaces SET next_seq = ? WHERE key = ?`

	qItemsPage  = `SELECT data FROM items WHERE ws = ? AND idx >= ? ORDER BY idx LIMIT ?`
	qItemsAll   = `SELECT data FROM items WHERE id >= ? AND id < ? ORDER BY id`
	qItemsRange = `SELECT id, idx, data FROM items WHERE id >= ? AND id < ?`
	// qItemsBatch reads up to ?3 items from id ?1 on, in order, as one row:
	// their count, the last one's id, their lengths in bytes and their JSON
	// concatenated (see readBatches). The subquery's ORDER BY and LIMIT keep
	// SQLite from flattening it, so the aggregates see the rows in id order.
	qItemsBatch = `SELECT count(*), coalesce(max(id), 0), coalesce(group_concat(octet_length(data)), ''), coalesce(group_concat(data, ''), '')
		FROM (SELECT id, data FROM items WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT ?3)`
	qItemsByID   = `SELECT id, idx, data FROM items WHERE id IN (SELECT value FROM json_each(?))`
	qItemAt      = `SELECT id, data FROM items WHERE ws = ? AND idx = ?`
	qItemsAt     = `SELECT id, data FROM items WHERE ws = ? AND idx IN (SELECT value FROM json_each(?))`
	qUpdateItem  = `UPDATE items SET data = ? WHERE id = ?`
	qDeleteItems = `DELETE FROM items WHERE id IN (SELECT value FROM json_each(?))`
	qShiftItems  = `UPDATE items SET idx = idx - ? WHERE ws = ? AND idx > ? AND idx < ?`
	qIndexItems  = `INSERT INTO items_fts (rowid, terms) SELECT id, ctxkit_staged(id - ?1) FROM items WHERE id >= ?1 AND id < ?2`
	qIndexItem   = `INSERT INTO items_fts (rowid, terms) VALUES (?, ?)`
	qUnindexItem = `DELETE FROM items_fts WHERE rowid = ?`
	qUnindexSome = `DELETE FROM items_fts WHERE rowid IN (SELECT value FROM json_each(?))`
	qMatchItems  = `SELECT group_concat(rowid - ?2) FROM items_fts WHERE items_fts MATCH ?1 AND rowid >= ?2 AND rowid < ?3`

	qIndexChunks = `INSERT INTO chunks_fts (rowid, terms) SELECT id, ctxkit_staged(id - ?1) FROM chunks WHERE id >= ?1 AND id < ?2`
	qChunk       = `SELECT start, text FROM chunks WHERE id = ?`
	qChunksAll   = `SELECT text FROM chunks WHERE id >= ? AND id < ? ORDER BY id`
	qChunksText  = `SELECT id, text FROM chunks WHERE id >= ? AND id < ? ORDER BY id`
	qItemsData   = `SELECT id, data FROM items WHERE id >= ? AND id < ? ORDER BY id`
	qChunksSpan  = `SELECT start, text FROM chunks
		WHERE ws = ?1 AND start < ?3 AND start >= (SELECT coalesce(max(start), 0) FROM chunks WHERE ws = ?1 AND start <= ?2)
		ORDER BY start`
	qMatchChunks = `SELECT group_concat(rowid - ?2) FROM chunks_fts WHERE chunks_fts MATCH ?1 AND rowid >= ?2 AND rowid < ?3`
)

var readQueries = []string{
	qLookup, qStat, qBlobs, qValue, qExpired,
	qItemsPage, qItemsAll, qItemsBatch, qItemsRange, qItemsByID, qMatchItems,
	qChunk, qChunksAll, qChunksSpan, qMatchChunks,
}

var writeQueries = []string{
	qLookup, qOwner, qInsertWorkspace, qInsertBlobs, qDeleteBlobs, qDeleteWorkspace,
	qDeleteItemsFTS, qDeleteItemRange, qDeleteChunksFTS, qDeleteChunks, qTouch, qStillExpired,
	qListSize, qSetIndexed, qChunkCount, qItemsData, qChunksText, qInsertItems,
	qItemAt, qItemsAt, qUpdateItem, qDeleteItems, qShiftItems, qIndexItems, qIndexItem,
	qUnindexItem, qUnindexSome, qIndexChunks,
}
