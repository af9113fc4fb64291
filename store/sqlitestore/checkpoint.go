package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// Checkpointing copies the pages a transaction appended to the WAL back into
// the database file. SQLite does it by default in the connection that
// commits, once the WAL passes 1,000 pages, which would make the Put of a
// large list pay for copying (and fsyncing) all of it again. The writer
// connection disables that (wal_autocheckpoint=0) and a goroutine runs a
// PASSIVE checkpoint, which neither waits for nor blocks readers and
// writers, on a read connection after enough has been written. Every
// process does this for its own writes; whatever a process leaves behind,
// the next one to open the file checkpoints.
const (
	// checkpointBytes is about how much is written between checkpoints.
	checkpointBytes = 16 << 20
	// minWriteBytes is what a small transaction counts for: at least a
	// page or two of data, index and metadata.
	minWriteBytes = 32 << 10
	// walSizeLimit is the size the WAL file is truncated to when SQLite
	// restarts it after a checkpoint, so one large write does not leave a
	// large file behind.
	walSizeLimit = 64 << 20
)

type checkpointer struct {
	db      *sql.DB
	pending atomic.Int64
	kick    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func newCheckpointer(db *sql.DB) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
	c.done.Go(c.run)
	c.kick <- struct{}{} // whatever earlier processes left in the WAL
	return c
}

// wrote records that a committed transaction wrote about n bytes.
func (c *checkpointer) wrote(n int64) {
	if c.pending.Add(max(n, minWriteBytes)) >= checkpointBytes {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

func (c *checkpointer) run() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.kick:
			c.pending.Store(0)
			// A checkpoint that fails or cannot finish (a reader still
			// uses old pages) is retried after the next writes.
			_, _ = c.db.ExecContext(c.ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}

func (c *checkpointer) close() {
	c.cancel()
	c.done.Wait()
}
