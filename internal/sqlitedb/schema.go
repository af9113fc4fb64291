package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/migrate"
)

// Exec is a migration step that runs a SQL script.
func Exec(script string) migrate.Step[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, script)
		return err
	}
}

// HasTables returns a [migrate.Schema] Recognize function that recognises
// a database holding every table named.
func HasTables(names ...string) func(ctx context.Context, tx *sql.Tx) (bool, error) {
	return func(ctx context.Context, tx *sql.Tx) (bool, error) {
		for _, name := range names {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil || n == 0 {
				return false, err
			}
		}
		return true, nil
	}
}

// engine is the SQLite [migrate.Engine]: the version is PRAGMA user_version,
// the ownership mark PRAGMA application_id, and the lock an immediate
// transaction on the writer connection.
type engine struct {
	db    *DB
	appID int32
}

var _ migrate.Engine[*sql.Tx] = engine{}

func (e engine) State(ctx context.Context) (st migrate.State, err error) {
	err = e.db.read(ctx, func(tx *sql.Tx) error {
		st, err = e.StateTx(ctx, tx)
		return err
	})
	return st, err
}

func (e engine) Locked(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return e.db.write(ctx, fn)
}

func (e engine) StateTx(ctx context.Context, tx *sql.Tx) (migrate.State, error) {
	var version, objects int
	var appID int32
	err := tx.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version),
		(SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_schema)`).Scan(&version, &appID, &objects)
	if err != nil {
		return migrate.State{}, err
	}
	st := migrate.State{
		Version: version,
		Empty:   objects == 0,
		Mark:    fmt.Sprintf("application_id %#x, user_version %d, %d schema objects", appID, version, objects),
	}
	switch appID {
	case e.appID:
		st.Owner = migrate.Ours
	case 0:
		st.Owner = migrate.Unmarked
	default:
		st.Owner = migrate.Foreign
	}
	return st, nil
}

func (e engine) Record(ctx context.Context, tx *sql.Tx, v int) error {
	// PRAGMA takes no parameters; both values are integers.
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d; PRAGMA application_id = %d`, v, e.appID))
	return err
}
