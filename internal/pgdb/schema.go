package pgdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/migrate"
)

// Exec is a migration step that runs a SQL script (several statements
// separated by semicolons).
func Exec(script string) migrate.Step[pgx.Tx] {
	return func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, script)
		return err
	}
}

// Migrate brings the schema of one component (name, such as "workspaces")
// up to date with steps. Its version is recorded in the table
// ctxkit_schema of the pool's schema. A schema whose version is current is
// read without a lock; otherwise processes starting together serialise on
// an advisory lock of the schema, and the steps run once.
func Migrate(ctx context.Context, db *DB, name string, steps ...migrate.Step[pgx.Tx]) error {
	return migrate.Run(ctx, engine{db: db, name: name}, migrate.Schema[pgx.Tx]{Name: "ctxkit " + name + " schema", Steps: steps})
}

// engine is the PostgreSQL [migrate.Engine]: the version is a row of
// ctxkit_schema, which is also the ownership mark, and the lock an
// advisory transaction lock on the schema's name.
type engine struct {
	db   *DB
	name string
}

var _ migrate.Engine[pgx.Tx] = engine{}

func (e engine) State(ctx context.Context) (st migrate.State, err error) {
	err = e.db.Read(ctx, func(tx pgx.Tx) error {
		st, err = e.StateTx(ctx, tx)
		return err
	})
	return st, err
}

func (e engine) Locked(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return e.db.Write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('ctxkit schema ' || current_schema()))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS ctxkit_schema (component text PRIMARY KEY, version int NOT NULL)`); err != nil {
			return err
		}
		return fn(tx)
	})
}

func (e engine) StateTx(ctx context.Context, tx pgx.Tx) (migrate.State, error) {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('ctxkit_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return migrate.State{}, err
	}
	var version int
	if exists {
		err := tx.QueryRow(ctx, `SELECT version FROM ctxkit_schema WHERE component = $1`, e.name).Scan(&version)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return migrate.State{}, err
		}
	}
	if version == 0 {
		return migrate.State{Empty: true, Mark: "no version recorded for " + e.name}, nil
	}
	return migrate.State{Version: version, Owner: migrate.Ours, Mark: fmt.Sprintf("%s at version %d", e.name, version)}, nil
}

func (e engine) Record(ctx context.Context, tx pgx.Tx, v int) error {
	_, err := tx.Exec(ctx, `INSERT INTO ctxkit_schema (component, version) VALUES ($1, $2)
		ON CONFLICT (component) DO UPDATE SET version = excluded.version`, e.name, v)
	return err
}
