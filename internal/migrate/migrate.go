// Package migrate brings a database's schema up to date with an ordered list
// of steps, for any engine: the engine says how to read the schema version
// and the ownership mark, how to take the lock that serialises migrations
// and how to record a version, and Run applies the rules.
//
// A database whose schema is current is opened without taking a write lock:
// Run reads its state on a path that takes none, and only when the schema is
// behind (or the database is not marked yet) does it take the engine's lock,
// read the state again inside it and run the missing steps in the same
// transaction that records the new version. Processes opening a new database
// at once therefore all succeed and the steps run once. A database whose
// version is newer than the steps, or that is marked as another
// application's, is refused and left untouched.
//
// Steps[i] moves a database from version i to i+1. A published step is never
// edited: a change to the schema is a new step.
package migrate

import (
	"context"
	"errors"
	"fmt"
)

// ErrNewer is returned for a database whose schema version is newer than
// the steps this code knows.
var ErrNewer = errors.New("database schema is newer than this ctxkit")

// ErrForeign is returned for a database that belongs to something else.
var ErrForeign = errors.New("database belongs to another application")

// Step is one change of the schema, run inside the transaction that holds
// the engine's lock and records the version it reaches.
type Step[Tx any] func(ctx context.Context, tx Tx) error

// Owner says whose a database is, by its ownership mark.
type Owner int

// What an ownership mark says.
const (
	// Unmarked: no mark, as on a new database (or one written before the
	// schema had a mark).
	Unmarked Owner = iota
	// Ours: the mark of this schema.
	Ours
	// Foreign: another application's mark.
	Foreign
)

// State is what Run needs to know of a database.
type State struct {
	// Version is the schema version recorded; 0 for a new database.
	Version int
	// Owner is what the database's ownership mark says.
	Owner Owner
	// Empty reports that the database holds no object at all.
	Empty bool
	// Mark describes the mark and the version as the engine found them,
	// for error messages ("application_id 0x1234, user_version 3").
	Mark string
}

// Engine is what Run needs of a database engine.
type Engine[Tx any] interface {
	// State reads the database's state without taking a write lock.
	State(ctx context.Context) (State, error)
	// Locked runs fn in a transaction that holds the lock migrations
	// serialise on (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory
	// lock), and commits it when fn returns nil.
	Locked(ctx context.Context, fn func(tx Tx) error) error
	// StateTx reads the database's state inside tx.
	StateTx(ctx context.Context, tx Tx) (State, error)
	// Record marks the database as ours, at version v, inside tx.
	Record(ctx context.Context, tx Tx, v int) error
}

// Schema is a database schema as a list of steps.
type Schema[Tx any] struct {
	// Name names what the database holds, for errors ("ctxkit store").
	Name string
	// Steps are the changes, in order.
	Steps []Step[Tx]
	// Unmarked is the highest version a database of this schema may have
	// without the ownership mark: one written before the schema had a mark,
	// which Run then marks. Zero means only a new, empty database may lack
	// it.
	Unmarked int
	// Recognize, when set, tells such an unmarked database of this schema
	// from another one at the same version (another store's, from before
	// the marks); Run refuses a database it does not recognise.
	Recognize func(ctx context.Context, tx Tx) (bool, error)
}

// Run brings the database e reaches up to the latest version of s.
func Run[Tx any](ctx context.Context, e Engine[Tx], s Schema[Tx]) error {
	st, err := e.State(ctx)
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if done, err := s.check(st); done || err != nil {
		return err
	}
	return e.Locked(ctx, func(tx Tx) error {
		// Another process may have migrated it since it was read.
		st, err := e.StateTx(ctx, tx)
		if err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if done, err := s.check(st); done || err != nil {
			return err
		}
		if st.Owner == Unmarked && st.Version > 0 && s.Recognize != nil {
			ok, err := s.Recognize(ctx, tx)
			if err != nil {
				return fmt.Errorf("recognise the %s schema: %w", s.Name, err)
			}
			if !ok {
				return s.foreign(st)
			}
		}
		for v := st.Version; v < len(s.Steps); v++ {
			if err := s.Steps[v](ctx, tx); err != nil {
				return fmt.Errorf("migrate the %s schema to version %d: %w", s.Name, v+1, err)
			}
		}
		if err := e.Record(ctx, tx, len(s.Steps)); err != nil {
			return fmt.Errorf("record the %s schema version %d: %w", s.Name, len(s.Steps), err)
		}
		return nil
	})
}

// check refuses a database this schema cannot use, and reports whether st
// is current: at the latest version and marked.
func (s Schema[Tx]) check(st State) (current bool, err error) {
	latest := len(s.Steps)
	switch {
	case st.Owner == Foreign,
		st.Owner == Unmarked && st.Version == 0 && !st.Empty,
		st.Owner == Unmarked && st.Version > s.Unmarked:
		return false, s.foreign(st)
	case st.Version > latest:
		return false, fmt.Errorf("%w: the %s is at version %d, this ctxkit knows up to %d; upgrade ctxkit", ErrNewer, s.Name, st.Version, latest)
	}
	return st.Version == latest && st.Owner == Ours, nil
}

func (s Schema[Tx]) foreign(st State) error {
	return fmt.Errorf("%w: not a %s (%s)", ErrForeign, s.Name, st.Mark)
}
