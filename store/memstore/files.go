package memstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Files are a vault's document files in a Go map, for tests of hosted
// vaults without a database: the [store.Files] a backend whose Hosted is
// true hands out, held in memory. The zero value is not usable; call
// [NewFiles].
type Files struct {
	mu    sync.RWMutex
	files map[string]memFile
	now   func() time.Time
}

type memFile struct {
	data []byte
	mod  time.Time
}

var _ store.Files = (*Files)(nil)

// NewFiles returns an empty set of files.
func NewFiles() *Files { return &Files{files: map[string]memFile{}, now: time.Now} }

// Stat returns a file's info.
func (f *Files) Stat(_ context.Context, path string) (store.FileInfo, error) {
	if err := store.CheckFilePath(path); err != nil {
		return store.FileInfo{}, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	m, ok := f.files[path]
	if !ok {
		return store.FileInfo{}, fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	return store.FileInfo{Path: path, Size: int64(len(m.data)), ModTime: m.mod}, nil
}

// Read returns a copy of a file's content.
func (f *Files) Read(_ context.Context, path string) ([]byte, error) {
	if err := store.CheckFilePath(path); err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	m, ok := f.files[path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	return slices.Clone(m.data), nil
}

// Write stores a copy of data at path.
func (f *Files) Write(ctx context.Context, path string, data []byte, overwrite bool) error {
	if err := store.CheckFilePath(path); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[path]; ok && !overwrite {
		return fmt.Errorf("%s: %w", path, store.ErrExists)
	}
	for p := range f.files {
		if strings.HasPrefix(p, path+"/") {
			return fmt.Errorf("%s is a folder: %w", path, store.ErrExists)
		}
	}
	for dir := path; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			break
		}
		dir = dir[:i]
		if _, ok := f.files[dir]; ok {
			return fmt.Errorf("%s: the file %s is in its way: %w", path, dir, store.ErrExists)
		}
	}
	f.files[path] = memFile{data: slices.Clone(data), mod: f.now()}
	return nil
}

// Remove deletes a file.
func (f *Files) Remove(_ context.Context, path string) error {
	if err := store.CheckFilePath(path); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[path]; !ok {
		return fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	delete(f.files, path)
	return nil
}

// Walk calls fn with the files under dir, by path, outside the lock: fn
// may use the files.
func (f *Files) Walk(ctx context.Context, dir string, fn func(store.FileInfo) error) error {
	if dir != "" {
		if err := store.CheckFilePath(dir); err != nil {
			return err
		}
	}
	f.mu.RLock()
	var out []store.FileInfo
	for _, p := range slices.Sorted(maps.Keys(f.files)) {
		if dir == "" || strings.HasPrefix(p, dir+"/") {
			out = append(out, store.FileInfo{Path: p, Size: int64(len(f.files[p].data)), ModTime: f.files[p].mod})
		}
	}
	f.mu.RUnlock()
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
