// Package atomicfile writes files so that a crash leaves either the old or
// the new content, never half of it, and serialises read-modify-write
// cycles between processes with an operating-system file lock (flock,
// LockFileEx), which goes away with a process that dies: there is never a
// stale lock to break. It is shared by the client-configuration editor and
// the vault registry.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"
	"unicode/utf8"
)

// ErrLocked is returned by Lock when another holder kept the lock for the
// whole wait.
var ErrLocked = errors.New("file is locked by another process")

// WriteFile replaces path with data: a temporary file in the same
// directory (created with dirMode if missing), synced, given mode, then
// renamed over path, and the directory synced. check, when not nil, runs
// just before the rename; its error cancels the write and is returned
// unchanged (the file on disk is left as it is).
func WriteFile(path string, data []byte, mode, dirMode fs.FileMode, check func() error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+tempStem(filepath.Base(path))+".ctxkit-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Chmod(mode); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if runtime.GOOS != "windows" {
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}

// tempStem is the part of a file's name its temporary file carries: at most
// 64 bytes, cut at a character boundary, so that the temporary name stays
// within the 255 bytes a file system allows even when the file's own name
// nearly fills them.
func tempStem(base string) string {
	const most = 64
	if len(base) <= most {
		return base
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(base[cut]) {
		cut--
	}
	return base[:cut]
}

// Lock takes the exclusive lock on the file at path (created 0600, its
// directory with dirMode, if missing; the file itself is never removed),
// waiting while another process or another open of the file holds it, up
// to wait or until ctx ends. The returned function releases it. Lock the
// side file, not the file WriteFile replaces: a rename swaps the inode
// under the lock.
func Lock(ctx context.Context, path string, dirMode fs.FileMode, wait time.Duration) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return func() { unlockFile(f); f.Close() }, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w (lock file %s)", ErrLocked, path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
