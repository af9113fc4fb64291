package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalidPath: a file path that is not one of a vault's files' paths:
// empty, absolute, not clean ("a//b", "./a", "a/"), climbing out with
// "..", holding a NUL byte, or naming a hidden file or folder (an element
// starting with '.', such as the vault's .ctxkit-vault data folder); in a
// folder, also a path that leads out of it through a symbolic link.
var ErrInvalidPath = errors.New("invalid file path")

// CheckFilePath checks a path given to [Files]: slash-separated, relative,
// clean, every element neither "." nor ".." nor hidden (starting with
// '.'), no NUL byte. Its error wraps [ErrInvalidPath]. Every
// implementation of Files applies it, so that a path means the same file,
// or is refused the same way, in a folder and in a database.
func CheckFilePath(path string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidPath, path, why) }
	switch {
	case path == "":
		return bad("empty")
	case strings.IndexByte(path, 0) >= 0:
		return bad("holds a NUL byte")
	case strings.HasPrefix(path, "/"):
		return bad("absolute")
	}
	for elem := range strings.SplitSeq(path, "/") {
		switch {
		case elem == "":
			return bad("not clean (an empty element)")
		case elem == "." || elem == "..":
			return bad("not clean (a . or .. element)")
		case strings.HasPrefix(elem, "."):
			return bad("names a hidden file or folder")
		}
	}
	return nil
}

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
// folder) is never one of its files, nor is any hidden file: every path is
// checked by [CheckFilePath] (ErrInvalidPath). Every method is atomic: a
// reader sees a file whole, before or after a write. Files form a tree as
// in a folder: a path that has files under it is a folder, not a file
// (Stat, Read and Remove of it are ErrNotFound, a Write of it ErrExists),
// and a file cannot be written under another file (ErrExists).
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
	// Walk calls fn with every file under dir ("" for the whole vault), in
	// the byte order of their paths, until fn returns an error, which Walk
	// returns. A dir that is not a folder (no file is under it, or it is
	// a file) is ErrNotFound; "" always is one. Hidden files and folders
	// are never walked.
	Walk(ctx context.Context, dir string, fn func(FileInfo) error) error
}
