package sqliteindex

import (
	"context"
	"database/sql"
	"fmt"
)

// SetUserVersionForTest stamps the file with another schema version.
func (x *Index) SetUserVersionForTest(ctx context.Context, v int) error {
	_, err := x.db.Writer().ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
	return err
}

// ReaderForTest returns the index's read connections.
func (x *Index) ReaderForTest() *sql.DB { return x.db.Reader() }
