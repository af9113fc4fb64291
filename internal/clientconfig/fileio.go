package clientconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
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

// ErrConcurrentEdit: the configuration file changed on disk while ctxkit
// was editing it, again after one retry (a client rewriting its own file).
var ErrConcurrentEdit = errors.New("configuration file changed while ctxkit was editing it")

// maxLinks bounds the symlinks followed to a configuration file.
const maxLinks = 40

// resolveLink returns the file a configuration path stands for: path itself,
// or the final target of a chain of symlinks (dotfiles managers link
// configuration files), which need not exist yet. Edits replace the target,
// so the link stays a link.
func resolveLink(path string) (string, error) {
	for range maxLinks {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", fmt.Errorf("stat %s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("read link %s: %w", path, err)
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// readConfig reads a configuration file (path already resolved); a missing
// file is nil, false.
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

// unchanged returns a check that path still holds orig (or is still
// missing when existed is false), for writeAtomic's last moment.
func unchanged(path string, orig []byte, existed bool) func() error {
	return func() error {
		b, _, ok, err := readConfig(path)
		if err != nil {
			return err
		}
		if ok != existed || !bytes.Equal(b, orig) {
			return fmt.Errorf("%w: %s", ErrConcurrentEdit, path)
		}
		return nil
	}
}

// writeAtomic replaces path with data atomically (atomicfile.WriteFile).
// check, when not nil, runs just before the rename; its error cancels the
// write (the file on disk is left as it is).
func writeAtomic(path string, data []byte, mode fs.FileMode, dirMode fs.FileMode, check func() error) error {
	return atomicfile.WriteFile(path, data, mode, dirMode, check)
}

// backup copies the current bytes of path under dataDir/backups/CLIENT/
// with a timestamp and a hash of the path in the name, mode 0600.
func backup(dataDir, client, path string, data []byte, now time.Time) (string, error) {
	sum := sha256.Sum256([]byte(path))
	name := fmt.Sprintf("%s-%s-%s", now.UTC().Format("20060102T150405.000000000Z"),
		strings.TrimPrefix(filepath.Base(path), "."), hex.EncodeToString(sum[:4]))
	dst := filepath.Join(dataDir, "backups", client, name)
	if err := writeAtomic(dst, data, 0o600, 0o700, nil); err != nil {
		return "", fmt.Errorf("backup %s: %w", path, err)
	}
	return dst, nil
}

// lock takes the exclusive lock on dataDir/install/lock, waiting (up to 30
// seconds, or until ctx ends) while another ctxkit holds it. The lock is
// the operating system's (flock, LockFileEx) on the open file, so it goes
// away with a process that crashes: there is no stale lock to break, and
// the file itself is never removed.
func lock(ctx context.Context, dataDir string) (func(), error) {
	unlock, err := atomicfile.Lock(ctx, filepath.Join(dataDir, "install", "lock"), 0o700, 30*time.Second)
	if errors.Is(err, atomicfile.ErrLocked) {
		return nil, fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return unlock, err
}
