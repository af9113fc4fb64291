package store

import (
	"context"
	"time"
)

// FileInfo describes one document file of a vault.
type FileInfo struct {
	// Path is the file's path inside the vault, slash-separated, never
	// absolute and never with "." or ".." elements.
	Path    string
	Size    int64
	ModTime time.Time
}

// Files are the document files of one vault: a folder on disk for a vault
// that has one (VaultRecord.Dir set), rows of the backend's database for a
// hosted vault (Dir empty, on a backend whose [Backend.Hosted] is true).
// Paths are slash-separated and relative to the vault; a path that would
// leave the vault is refused. The vault's own data (its .ctxkit-vault
// folder) is never one of its files. Every method is atomic: a reader sees
// a file whole, before or after a write.
type Files interface {
	// Stat returns a file's info, or ErrNotFound.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// Read returns a file's content, or ErrNotFound.
	Read(ctx context.Context, path string) ([]byte, error)
	// Write creates or, with overwrite, replaces a file; without
	// overwrite an existing file is ErrExists.
	Write(ctx context.Context, path string, data []byte, overwrite bool) error
	// Remove deletes a file, or returns ErrNotFound.
	Remove(ctx context.Context, path string) error
	// Walk calls fn with every file under dir ("" for the whole vault), by
	// path, until fn returns an error, which Walk returns.
	Walk(ctx context.Context, dir string, fn func(FileInfo) error) error
}
