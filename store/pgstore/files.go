package pgstore

// The files of hosted vaults: one row per file in vault_files.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/store"
)

// MigrateFiles brings the schema of hosted vault files (component
// "files") up to date. Run it once per process, before [NewFiles].
//
// Paths are compared byte by byte (COLLATE "C"), so that the primary key
// orders them as Walk promises and a folder's files are one range of it:
// those from "dir/" up to, not including, "dir0" ('0' follows '/').
func MigrateFiles(ctx context.Context, db *pgdb.DB) error {
	return pgdb.Migrate(ctx, db, "files",
		pgdb.Exec(`CREATE TABLE vault_files (
			vault_id text NOT NULL,
			path     text COLLATE "C" NOT NULL,
			data     bytea NOT NULL,
			size     bigint NOT NULL,
			mod_time timestamptz NOT NULL,
			PRIMARY KEY (vault_id, path)
		)`),
	)
}

// Files are the files of one hosted vault, rows of vault_files: a
// [store.Files] shared by every process on the database. A handle is
// cheap; it holds nothing but the vault's id.
type Files struct {
	db      *pgdb.DB
	vaultID string
}

var _ store.Files = (*Files)(nil)

// NewFiles returns the files of the vault with id vaultID.
func NewFiles(db *pgdb.DB, vaultID string) *Files { return &Files{db: db, vaultID: vaultID} }

// DropFiles deletes every file of a vault.
func DropFiles(ctx context.Context, db *pgdb.DB, vaultID string) error {
	err := db.Write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM vault_files WHERE vault_id = $1`, vaultID)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete the files of vault %s: %w", vaultID, err)
	}
	return nil
}

// checkPath is store.CheckFilePath, and UTF-8, which a text column holds.
func checkPath(path string) error {
	if err := store.CheckFilePath(path); err != nil {
		return err
	}
	if !utf8.ValidString(path) {
		return fmt.Errorf("%w %q: not UTF-8", store.ErrInvalidPath, path)
	}
	return nil
}

// Stat returns a file's info.
func (f *Files) Stat(ctx context.Context, path string) (store.FileInfo, error) {
	if err := checkPath(path); err != nil {
		return store.FileInfo{}, err
	}
	fi := store.FileInfo{Path: path}
	err := f.db.Read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT size, mod_time FROM vault_files WHERE vault_id = $1 AND path = $2`,
			f.vaultID, path).Scan(&fi.Size, &fi.ModTime)
	})
	if err != nil {
		return store.FileInfo{}, f.fail("stat", path, err)
	}
	return fi, nil
}

// Read returns a file's content.
func (f *Files) Read(ctx context.Context, path string) ([]byte, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	var data []byte
	err := f.db.Read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT data FROM vault_files WHERE vault_id = $1 AND path = $2`, f.vaultID, path).Scan(&data)
	})
	if err != nil {
		return nil, f.fail("read", path, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Write stores a file in one transaction. The vault's writes take turns
// (an advisory transaction lock per vault), so that the tree rules hold
// across processes: a file is never written under another file, nor over
// a folder.
func (f *Files) Write(ctx context.Context, path string, data []byte, overwrite bool) error {
	if err := checkPath(path); err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	parents := []string{}
	for i := strings.IndexByte(path, '/'); i >= 0; i = next(path, i) {
		parents = append(parents, path[:i])
	}
	err := f.db.Write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('ctxkit vault_files ' || $1, 0))`, f.vaultID); err != nil {
			return err
		}
		var clash string
		err := tx.QueryRow(ctx, `SELECT path FROM vault_files WHERE vault_id = $1 AND (path = ANY($2) OR (path >= $3 AND path < $4)) LIMIT 1`,
			f.vaultID, parents, path+"/", path+"0").Scan(&clash)
		switch {
		case err == nil && strings.HasPrefix(clash, path+"/"):
			return fmt.Errorf("%s is a folder: %w", path, store.ErrExists)
		case err == nil:
			return fmt.Errorf("%s: the file %s is in its way: %w", path, clash, store.ErrExists)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		q := `INSERT INTO vault_files (vault_id, path, data, size, mod_time) VALUES ($1, $2, $3, $4, clock_timestamp())
			ON CONFLICT (vault_id, path) DO NOTHING`
		if overwrite {
			q = `INSERT INTO vault_files (vault_id, path, data, size, mod_time) VALUES ($1, $2, $3, $4, clock_timestamp())
			ON CONFLICT (vault_id, path) DO UPDATE SET data = excluded.data, size = excluded.size, mod_time = excluded.mod_time`
		}
		tag, err := tx.Exec(ctx, q, f.vaultID, path, data, int64(len(data)))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%s: %w", path, store.ErrExists)
		}
		return nil
	})
	if err != nil {
		return f.fail("write", path, err)
	}
	return nil
}

// next returns the index of the '/' after the one at i, or -1.
func next(path string, i int) int {
	j := strings.IndexByte(path[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// Remove deletes a file.
func (f *Files) Remove(ctx context.Context, path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	err := f.db.Write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM vault_files WHERE vault_id = $1 AND path = $2`, f.vaultID, path)
		if err == nil && tag.RowsAffected() == 0 {
			err = pgx.ErrNoRows
		}
		return err
	})
	if err != nil {
		return f.fail("remove", path, err)
	}
	return nil
}

// Walk lists the files under dir in one read, then calls fn with each,
// outside the transaction: fn may use the files, or take its time.
func (f *Files) Walk(ctx context.Context, dir string, fn func(store.FileInfo) error) error {
	lo, hi := "", ""
	if dir != "" {
		if err := checkPath(dir); err != nil {
			return err
		}
		lo, hi = dir+"/", dir+"0"
	}
	var out []store.FileInfo
	err := f.db.Read(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		q := `SELECT path, size, mod_time FROM vault_files WHERE vault_id = $1 ORDER BY path`
		args := []any{f.vaultID}
		if dir != "" {
			q = `SELECT path, size, mod_time FROM vault_files WHERE vault_id = $1 AND path >= $2 AND path < $3 ORDER BY path`
			args = append(args, lo, hi)
		}
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		var fi store.FileInfo
		_, err = pgx.ForEachRow(rows, []any{&fi.Path, &fi.Size, &fi.ModTime}, func() error {
			out = append(out, fi)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("list the files of vault %s: %w", f.vaultID, err)
	}
	if dir != "" && len(out) == 0 {
		return fmt.Errorf("%s is not a folder: %w", dir, store.ErrNotFound)
	}
	for _, fi := range out {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(fi); err != nil {
			return err
		}
	}
	return nil
}

// fail wraps an error of an operation on path; no row is ErrNotFound.
func (f *Files) fail(op, path string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	if errors.Is(err, store.ErrExists) {
		return err
	}
	return fmt.Errorf("%s %s in vault %s: %w", op, path, f.vaultID, err)
}
