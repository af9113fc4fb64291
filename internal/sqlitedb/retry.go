package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// retries bounds how often Retry calls again after SQLITE_BUSY: with its
// backoff, about 8 s in all.
const retries = 8

// Retry calls attempt until it succeeds, fails with something other than
// SQLITE_BUSY or SQLITE_LOCKED, or retries is exhausted, backing off with
// jitter from 5 ms to 1 s. attempt must be safe to run again: a whole
// transaction, or an open.
//
// It covers SQLITE_BUSY where busy_timeout does not help: the recovery of a
// WAL another process left, the moment a last connection closes and
// checkpoints, processes creating a new file's schema at once, or a lock
// held past the timeout. "database is locked" then reaches a caller only
// when the lock stayed taken through every retry. [DB.Write] and [DB.Read]
// retry through it.
func Retry(ctx context.Context, attempt func() error) error {
	delay := 5 * time.Millisecond
	for i := 0; ; i++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%v)", cerr, err)
		}
		if !IsBusy(err) || i >= retries || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// IsBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED, in
// any of their extended forms.
func IsBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}
