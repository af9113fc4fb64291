package clientconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Sentinel errors, checked with errors.Is.
var (
	ErrUnknownClient = errors.New("unknown client")
	ErrScope         = errors.New("unsupported scope")
	ErrParse         = errors.New("configuration file does not parse")
	ErrShape         = errors.New("unexpected configuration shape")
	ErrNoServer      = errors.New("no such server")
	ErrExists        = errors.New("server already exists")
	ErrDrift         = errors.New("entry changed since install")
	ErrLocked        = errors.New("another ctxkit is editing client configurations")
)

// readConfig reads a configuration file; a missing file is nil, false.
func readConfig(path string) ([]byte, fs.FileMode, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, false, fmt.Errorf("stat %s: %w", path, err)
	}
	return b, fi.Mode().Perm(), true, nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, given mode, then renamed over path, and the directory
// synced, so a crash leaves either the old or the new file, never half.
func writeAtomic(path string, data []byte, mode fs.FileMode, dirMode fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".ctxkit-*")
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

// backup copies the current bytes of path under dataDir/backups/CLIENT/
// with a timestamp and a hash of the path in the name, mode 0600.
func backup(dataDir, client, path string, data []byte, now time.Time) (string, error) {
	sum := sha256.Sum256([]byte(path))
	name := fmt.Sprintf("%s-%s-%s", now.UTC().Format("20060102T150405.000000000Z"),
		strings.TrimPrefix(filepath.Base(path), "."), hex.EncodeToString(sum[:4]))
	dst := filepath.Join(dataDir, "backups", client, name)
	if err := writeAtomic(dst, data, 0o600, 0o700); err != nil {
		return "", fmt.Errorf("backup %s: %w", path, err)
	}
	return dst, nil
}

// lock takes the exclusive lock file dataDir/install/lock, waiting while
// another ctxkit holds it. A lock older than a minute is stale (a crashed
// process) and is broken.
func lock(ctx context.Context, dataDir string) (func(), error) {
	dir := filepath.Join(dataDir, "install")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	path := filepath.Join(dir, "lock")
	deadline := time.Now().Add(30 * time.Second)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > time.Minute {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (lock file %s)", ErrLocked, path)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
