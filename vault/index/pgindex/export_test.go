package pgindex

import (
	"context"

	"github.com/ctxkit/ctxkit/internal/pgdb"
)

// MigrateV1ForTest brings a database to schema 1 only, the last without
// locators.
func MigrateV1ForTest(ctx context.Context, db *pgdb.DB) error {
	return pgdb.Migrate(ctx, db, "index", pgdb.Exec(schemaV1))
}
