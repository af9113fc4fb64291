package atomicfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "f.json")
	if err := WriteFile(p, []byte("one"), 0o600, 0o700, nil); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	if err := WriteFile(p, []byte("two"), 0o600, 0o700, func() error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("check error: %v", err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "one" {
		t.Fatalf("after cancelled write: %q %v", b, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

func TestLockExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	unlock, err := Lock(t.Context(), p, 0o700, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(t.Context(), p, 0o700, 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock while held: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Lock(ctx, p, 0o700, 1<<40); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	unlock()
	unlock2, err := Lock(t.Context(), p, 0o700, 0)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}

// TestWriteFileLongName: a file whose name is as long as a file system
// allows (255 bytes) can be written; the temporary file's name must not
// grow past the limit (it did: "." + name + ".ctxkit-NNNN").
func TestWriteFileLongName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{strings.Repeat("a", 255), strings.Repeat("é", 127)} {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, []byte("x"), 0o600, 0o700, nil); err != nil {
			t.Fatalf("WriteFile(%d-byte name): %v", len(name), err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "x" {
			t.Errorf("read back: %q, %v", b, err)
		}
	}
}
