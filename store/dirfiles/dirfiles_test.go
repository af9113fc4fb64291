package dirfiles_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/dirfiles"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func TestFiles(t *testing.T) {
	storetest.RunFiles(t, func(t *testing.T) store.Files { return dirfiles.New(t.TempDir()) })
}

func put(t *testing.T, dir, rel, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func walk(t *testing.T, f store.Files, dir string) []string {
	t.Helper()
	var out []string
	if err := f.Walk(t.Context(), dir, func(fi store.FileInfo) error { out = append(out, fi.Path); return nil }); err != nil {
		t.Fatalf("Walk(%q): %v", dir, err)
	}
	return out
}

// TestHiddenNeverWalked: the vault's data folder and every hidden file or
// folder on disk stay out of Walk, as the indexer has always skipped them.
func TestHiddenNeverWalked(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a.md", ".ctxkit-vault/index.db", ".ctxkit-vault/x.md", ".git/config", ".env", "notes/.draft.md", "notes/.cache/x.md", "notes/b.md"} {
		put(t, dir, p, p)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := dirfiles.New(dir)
	if got := walk(t, f, ""); !slices.Equal(got, []string{"a.md", "notes/b.md"}) {
		t.Errorf("Walk = %q", got)
	}
	if got := walk(t, f, "empty"); len(got) != 0 {
		t.Errorf("Walk(empty) = %q", got)
	}
}

// TestWriteOnDisk: a write is the file on disk, mode 0644, and leaves no
// temporary file.
func TestWriteOnDisk(t *testing.T) {
	dir := t.TempDir()
	f := dirfiles.New(dir)
	if err := f.Write(t.Context(), "n/a.md", []byte("hello"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(t.Context(), "n/a.md", []byte("hello again"), true); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "n", "a.md"))
	if err != nil || string(data) != "hello again" {
		t.Fatalf("on disk: %q, %v", data, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "n", "a.md")); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "n"))
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries after two writes", len(entries))
	}
}

// TestSymlinks: links inside the folder are followed; links that lead out,
// or into a hidden folder, are refused and never walked.
func TestSymlinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	ctx := t.Context()
	outside := t.TempDir()
	put(t, outside, "secret.md", "secret")
	dir := t.TempDir()
	put(t, dir, "notes/real.md", "real")
	put(t, dir, ".ctxkit-vault/audit.jsonl", "audit")
	links := map[string]string{
		"in.md":          "notes/real.md",
		"up.md":          "notes/../notes/real.md",
		"out.md":         filepath.Join(outside, "secret.md"),
		"rel-out.md":     "../" + filepath.Base(outside) + "/secret.md",
		"data.md":        ".ctxkit-vault/audit.jsonl",
		"outdir":         outside,
		"datadir":        ".ctxkit-vault",
		"notes/loop.md":  "loop2.md",
		"notes/loop2.md": "loop.md",
		"dangling.md":    "nowhere.md",
		"folder.md":      "notes",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	f := dirfiles.New(dir)
	for _, p := range []string{"in.md", "up.md"} {
		if data, err := f.Read(ctx, p); err != nil || string(data) != "real" {
			t.Errorf("Read(%q) = %q, %v", p, data, err)
		}
	}
	for _, p := range []string{"out.md", "rel-out.md", "data.md", "outdir/secret.md", "datadir/audit.jsonl"} {
		if data, err := f.Read(ctx, p); !errors.Is(err, store.ErrInvalidPath) {
			t.Errorf("Read(%q) = %q, %v; want ErrInvalidPath", p, data, err)
		}
		if _, err := f.Stat(ctx, p); !errors.Is(err, store.ErrInvalidPath) {
			t.Errorf("Stat(%q): %v; want ErrInvalidPath", p, err)
		}
		if err := f.Write(ctx, p, []byte("x"), true); !errors.Is(err, store.ErrInvalidPath) {
			t.Errorf("Write(%q): %v; want ErrInvalidPath", p, err)
		}
		if err := f.Remove(ctx, p); !errors.Is(err, store.ErrInvalidPath) {
			t.Errorf("Remove(%q): %v; want ErrInvalidPath", p, err)
		}
	}
	if err := f.Write(ctx, "outdir/new.md", []byte("x"), true); err == nil {
		t.Error("Write through a link to a folder outside succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "new.md")); err == nil {
		t.Error("a write reached the folder outside")
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret.md")); string(data) != "secret" {
		t.Errorf("the file outside changed: %q", data)
	}
	if _, err := f.Read(ctx, "dangling.md"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Read of a dangling link: %v", err)
	}
	if _, err := f.Read(ctx, "notes/loop.md"); err == nil {
		t.Error("Read of a link loop succeeded")
	}
	// Links to folders inside are listed (reading them fails), not followed.
	if got := walk(t, f, ""); !slices.Equal(got, []string{"folder.md", "in.md", "notes/real.md", "up.md"}) {
		t.Errorf("Walk = %q", got)
	}
	if _, err := f.Read(ctx, "folder.md"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Read of a link to a folder: %v", err)
	}
	// Writing through a link inside replaces the file it leads to.
	if err := f.Write(ctx, "in.md", []byte("new"), true); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "notes", "real.md")); string(data) != "new" {
		t.Errorf("notes/real.md after a write through in.md: %q", data)
	}
	if err := f.Walk(ctx, "outdir", func(store.FileInfo) error { return nil }); !errors.Is(err, store.ErrInvalidPath) {
		t.Errorf("Walk(outdir): %v", err)
	}
}

// TestMissingFolder: a vault whose folder is gone fails plainly, naming no
// document as missing.
func TestMissingFolder(t *testing.T) {
	f := dirfiles.New(filepath.Join(t.TempDir(), "gone"))
	err := f.Walk(t.Context(), "", func(store.FileInfo) error { return nil })
	if err == nil || errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "folder") {
		t.Errorf("Walk of a missing folder: %v", err)
	}
}
