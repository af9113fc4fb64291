package transfer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
	"github.com/ctxkit/ctxkit/store"
)

// hosting is what a backend that can hold vault files itself provides.
//
// TODO(lead): store.Backend is gaining Hosted and Files; once it has them,
// call them directly and drop this interface and folderFiles.
type hosting interface {
	Hosted() bool
	Files(ctx context.Context, v store.VaultRecord) (store.Files, error)
}

// hosted reports whether b keeps the files of vaults without a folder.
func hosted(b store.Backend) bool {
	h, ok := b.(hosting)
	return ok && h.Hosted()
}

// filesOf returns the document files of vault v of backend b.
func filesOf(ctx context.Context, b store.Backend, v store.VaultRecord) (store.Files, error) {
	if h, ok := b.(hosting); ok {
		return h.Files(ctx, v)
	}
	if v.Dir == "" {
		return nil, fmt.Errorf("vault %q has no folder, and its backend hosts no files", v.Name)
	}
	return folderFiles{v.Dir}, nil
}

// folderFiles are the files of a vault folder on disk, as the vault
// service sees its documents: regular files whose path has no hidden
// component (which also leaves out the .ctxkit-vault data folder);
// symbolic links are not followed.
type folderFiles struct{ dir string }

// abs returns the file's path on disk, refusing a path that would leave the
// folder or name a hidden file.
func (f folderFiles) abs(p string) (string, error) {
	if p == "" || !fs.ValidPath(p) {
		return "", fmt.Errorf("path %q is not a file of the vault: %w", p, store.ErrNotFound)
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return "", fmt.Errorf("path %q is hidden, not a document of the vault: %w", p, store.ErrNotFound)
		}
	}
	return filepath.Join(f.dir, filepath.FromSlash(p)), nil
}

func (f folderFiles) Stat(_ context.Context, p string) (store.FileInfo, error) {
	abs, err := f.abs(p)
	if err != nil {
		return store.FileInfo{}, err
	}
	fi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return store.FileInfo{}, fmt.Errorf("file %q: %w", p, store.ErrNotFound)
	}
	if err != nil {
		return store.FileInfo{}, err
	}
	return store.FileInfo{Path: p, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

func (f folderFiles) Read(ctx context.Context, p string) ([]byte, error) {
	if _, err := f.Stat(ctx, p); err != nil {
		return nil, err
	}
	abs, _ := f.abs(p)
	return os.ReadFile(abs)
}

func (f folderFiles) Write(ctx context.Context, p string, data []byte, overwrite bool) error {
	abs, err := f.abs(p)
	if err != nil {
		return err
	}
	if !overwrite {
		if _, err := os.Lstat(abs); err == nil {
			return fmt.Errorf("file %q: %w", p, store.ErrExists)
		}
	}
	return atomicfile.WriteFile(abs, data, 0o644, 0o755, nil)
}

func (f folderFiles) Remove(_ context.Context, p string) error {
	abs, err := f.abs(p)
	if err != nil {
		return err
	}
	if err := os.Remove(abs); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("file %q: %w", p, store.ErrNotFound)
	} else if err != nil {
		return err
	}
	return nil
}

func (f folderFiles) Walk(ctx context.Context, dir string, fn func(store.FileInfo) error) error {
	root := f.dir
	if dir != "" {
		abs, err := f.abs(dir)
		if err != nil {
			return err
		}
		root = abs
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return nil // no folder: no files
			}
			return err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(f.dir, p)
		if err != nil {
			return err
		}
		return fn(store.FileInfo{Path: path.Clean(filepath.ToSlash(rel)), Size: fi.Size(), ModTime: fi.ModTime()})
	})
	return err
}
