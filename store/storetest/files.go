package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// RunFiles runs the suite of a vault's document files ([store.Files]), each
// subtest against new, empty files returned by open; open registers
// whatever cleanup they need. A folder, a map and a database table pass it
// alike.
func RunFiles(t *testing.T, open func(t *testing.T) store.Files) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Files)
	}{
		{"CreateOverwrite", testFilesCreateOverwrite},
		{"StatRead", testFilesStatRead},
		{"Remove", testFilesRemove},
		{"Tree", testFilesTree},
		{"Walk", testFilesWalk},
		{"PathsRefused", testFilesPathsRefused},
		{"AtomicOverwrite", testFilesAtomicOverwrite},
		{"AtomicCreate", testFilesAtomicCreate},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func filesWrite(t *testing.T, f store.Files, path, data string) {
	t.Helper()
	if err := f.Write(t.Context(), path, []byte(data), true); err != nil {
		t.Fatalf("Write(%q): %v", path, err)
	}
}

// filesHas checks that path holds want.
func filesHas(t *testing.T, f store.Files, path, want string) {
	t.Helper()
	got, err := f.Read(t.Context(), path)
	if err != nil || string(got) != want {
		t.Errorf("Read(%q) = %q, %v; want %q", path, got, err, want)
	}
}

// filesWalk returns the paths Walk gives for dir.
func filesWalk(t *testing.T, f store.Files, dir string) []string {
	t.Helper()
	out := []string{}
	err := f.Walk(t.Context(), dir, func(fi store.FileInfo) error {
		out = append(out, fi.Path)
		return nil
	})
	if err != nil {
		t.Fatalf("Walk(%q): %v", dir, err)
	}
	return out
}

func testFilesCreateOverwrite(t *testing.T, f store.Files) {
	ctx := t.Context()
	if err := f.Write(ctx, "a.md", []byte("one"), false); err != nil {
		t.Fatalf("Write a new file: %v", err)
	}
	filesHas(t, f, "a.md", "one")
	wantErr(t, f.Write(ctx, "a.md", []byte("two"), false), store.ErrExists, "Write over a file without overwrite")
	filesHas(t, f, "a.md", "one")
	if err := f.Write(ctx, "a.md", []byte("three"), true); err != nil {
		t.Fatalf("Write with overwrite: %v", err)
	}
	filesHas(t, f, "a.md", "three")
	// With overwrite a new file is created; an empty one is a file.
	if err := f.Write(ctx, "deep/er/b.md", nil, true); err != nil {
		t.Fatalf("Write an empty file in new folders: %v", err)
	}
	filesHas(t, f, "deep/er/b.md", "")
	if fi, err := f.Stat(ctx, "deep/er/b.md"); err != nil || fi.Size != 0 {
		t.Errorf("Stat of an empty file = %+v, %v", fi, err)
	}
	// Names are bytes: case, spaces and any script are kept.
	for _, p := range []string{"notes/ünï cøde.md", "Notes/A.md", "notes/a.md", "a b/c d.txt"} {
		filesWrite(t, f, p, "text of "+p)
	}
	for _, p := range []string{"notes/ünï cøde.md", "Notes/A.md", "notes/a.md", "a b/c d.txt"} {
		filesHas(t, f, p, "text of "+p)
	}
}

func testFilesStatRead(t *testing.T, f store.Files) {
	ctx := t.Context()
	var all bytes.Buffer
	for i := range 3 {
		for b := range 256 {
			all.WriteByte(byte(b + i))
		}
	}
	before := time.Now()
	if err := f.Write(ctx, "bin/all.json", all.Bytes(), false); err != nil {
		t.Fatal(err)
	}
	got, err := f.Read(ctx, "bin/all.json")
	if err != nil || !bytes.Equal(got, all.Bytes()) {
		t.Errorf("Read of binary content: %d bytes, %v; want the %d written", len(got), err, all.Len())
	}
	fi, err := f.Stat(ctx, "bin/all.json")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if fi.Path != "bin/all.json" || fi.Size != int64(all.Len()) {
		t.Errorf("Stat = %+v; want path bin/all.json, size %d", fi, all.Len())
	}
	// Clocks of a database server and of this machine may differ a little.
	if d := fi.ModTime.Sub(before); fi.ModTime.IsZero() || d < -5*time.Minute || d > 5*time.Minute {
		t.Errorf("Stat: ModTime %s, written at %s", fi.ModTime, before)
	}
	for _, p := range []string{"missing.md", "bin/missing.md", "nodir/x.md", "bin", "bin/all.json/x"} {
		_, err := f.Stat(ctx, p)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("Stat(%q)", p))
		_, err = f.Read(ctx, p)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("Read(%q)", p))
	}
}

func testFilesRemove(t *testing.T, f store.Files) {
	ctx := t.Context()
	filesWrite(t, f, "a.md", "a")
	filesWrite(t, f, "dir/b.md", "b")
	filesWrite(t, f, "dir/c.md", "c")
	if err := f.Remove(ctx, "a.md"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	_, err := f.Read(ctx, "a.md")
	wantErr(t, err, store.ErrNotFound, "Read after Remove")
	wantErr(t, f.Remove(ctx, "a.md"), store.ErrNotFound, "Remove again")
	wantErr(t, f.Remove(ctx, "dir"), store.ErrNotFound, "Remove of a folder")
	if got := filesWalk(t, f, ""); !slices.Equal(got, []string{"dir/b.md", "dir/c.md"}) {
		t.Errorf("after removing a.md and refusing dir: %q", got)
	}
	if err := f.Remove(ctx, "dir/b.md"); err != nil {
		t.Fatal(err)
	}
	if got := filesWalk(t, f, "dir"); !slices.Equal(got, []string{"dir/c.md"}) {
		t.Errorf("Walk(dir) after removing dir/b.md: %q", got)
	}
	// A removed file may be created again.
	if err := f.Write(ctx, "a.md", []byte("again"), false); err != nil {
		t.Errorf("Write a removed file again without overwrite: %v", err)
	}
}

func testFilesTree(t *testing.T, f store.Files) {
	ctx := t.Context()
	filesWrite(t, f, "a.md", "a")
	filesWrite(t, f, "notes/x.md", "x")
	for _, overwrite := range []bool{false, true} {
		wantErr(t, f.Write(ctx, "a.md/b.md", []byte("b"), overwrite), store.ErrExists, fmt.Sprintf("Write under a file (overwrite %v)", overwrite))
		wantErr(t, f.Write(ctx, "notes", []byte("n"), overwrite), store.ErrExists, fmt.Sprintf("Write over a folder (overwrite %v)", overwrite))
	}
	filesHas(t, f, "a.md", "a")
	filesHas(t, f, "notes/x.md", "x")
	if got := filesWalk(t, f, ""); !slices.Equal(got, []string{"a.md", "notes/x.md"}) {
		t.Errorf("after refused writes: %q", got)
	}
}

func testFilesWalk(t *testing.T, f store.Files) {
	ctx := t.Context()
	if got := filesWalk(t, f, ""); len(got) != 0 {
		t.Errorf("Walk of empty files: %q", got)
	}
	paths := []string{"b.md", "a.md", "a-c.md", "a/b.md", "a/c/d.md", "ab/x.md", "a/c.md", "z/y/x/w.md", "A.md"}
	for _, p := range paths {
		filesWrite(t, f, p, "data "+p)
	}
	want := slices.Clone(paths)
	slices.Sort(want) // byte order: "a-c.md" < "a.md" < "a/b.md" < "ab/x.md"
	if got := filesWalk(t, f, ""); !slices.Equal(got, want) {
		t.Errorf("Walk(\"\") = %q\nwant %q", got, want)
	}
	for dir, want := range map[string][]string{
		"a":     {"a/b.md", "a/c.md", "a/c/d.md"},
		"a/c":   {"a/c/d.md"},
		"ab":    {"ab/x.md"},
		"z":     {"z/y/x/w.md"},
		"z/y/x": {"z/y/x/w.md"},
	} {
		if got := filesWalk(t, f, dir); !slices.Equal(got, want) {
			t.Errorf("Walk(%q) = %q, want %q", dir, got, want)
		}
	}
	var infos []store.FileInfo
	if err := f.Walk(ctx, "a/c", func(fi store.FileInfo) error { infos = append(infos, fi); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Size != int64(len("data a/c/d.md")) || infos[0].ModTime.IsZero() {
		t.Errorf("Walk(a/c) infos = %+v", infos)
	}
	for _, dir := range []string{"nosuch", "a/nosuch", "a.md", "a/c.md", "A"} {
		err := f.Walk(ctx, dir, func(store.FileInfo) error { t.Errorf("Walk(%q) called fn", dir); return nil })
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("Walk(%q)", dir))
	}
	stop := errors.New("stop")
	n := 0
	err := f.Walk(ctx, "", func(store.FileInfo) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("Walk whose fn fails at the third file: %v after %d calls", err, n)
	}
	// fn may use the files.
	err = f.Walk(ctx, "a", func(fi store.FileInfo) error {
		_, err := f.Read(ctx, fi.Path)
		return err
	})
	if err != nil {
		t.Errorf("Read inside Walk: %v", err)
	}
}

// badPaths try to leave the vault, reach hidden files, or are not clean.
var badPaths = []string{
	"", ".", "..", "../x.md", "/etc/passwd", "a/../../x.md", "a/../b.md", "./a.md", "a//b.md", "a/", "/a.md",
	"a/./b.md", "..\x00", "x\x00.md", ".ctxkit-vault/index.db", ".ctxkit-vault", "a/.git/config", ".env", "notes/.hidden.md",
}

func testFilesPathsRefused(t *testing.T, f store.Files) {
	ctx := t.Context()
	filesWrite(t, f, "a/b.md", "b")
	for _, p := range badPaths {
		wantErr(t, f.Write(ctx, p, []byte("x"), true), store.ErrInvalidPath, fmt.Sprintf("Write(%q)", p))
		_, err := f.Stat(ctx, p)
		wantErr(t, err, store.ErrInvalidPath, fmt.Sprintf("Stat(%q)", p))
		_, err = f.Read(ctx, p)
		wantErr(t, err, store.ErrInvalidPath, fmt.Sprintf("Read(%q)", p))
		wantErr(t, f.Remove(ctx, p), store.ErrInvalidPath, fmt.Sprintf("Remove(%q)", p))
		if p != "" {
			err := f.Walk(ctx, p, func(store.FileInfo) error { return nil })
			wantErr(t, err, store.ErrInvalidPath, fmt.Sprintf("Walk(%q)", p))
		}
		if err := store.CheckFilePath(p); !errors.Is(err, store.ErrInvalidPath) {
			t.Errorf("CheckFilePath(%q) = %v", p, err)
		}
	}
	if got := filesWalk(t, f, ""); !slices.Equal(got, []string{"a/b.md"}) {
		t.Errorf("after refused paths: %q", got)
	}
	filesHas(t, f, "a/b.md", "b")
}

// testFilesAtomicOverwrite overwrites a file again and again with contents
// of different lengths while others read it: every read is one whole
// content.
func testFilesAtomicOverwrite(t *testing.T, f store.Files) {
	ctx := t.Context()
	contents := []string{strings.Repeat("a", 100_000), strings.Repeat("b", 3), strings.Repeat("c", 250_000)}
	filesWrite(t, f, "doc.md", contents[0])
	var wg sync.WaitGroup
	var stop atomic.Bool
	var torn atomic.Int64
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				got, err := f.Read(ctx, "doc.md")
				if err != nil {
					t.Errorf("Read while overwritten: %v", err)
					return
				}
				if !slices.Contains(contents, string(got)) {
					torn.Add(1)
				}
			}
		})
	}
	var writers sync.WaitGroup
	for w := range 3 {
		writers.Go(func() {
			for i := range 10 {
				if err := f.Write(ctx, "doc.md", []byte(contents[(w+i)%len(contents)]), true); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	wg.Wait()
	if n := torn.Load(); n > 0 {
		t.Errorf("%d reads saw a content that was never written whole", n)
	}
	if got := filesWalk(t, f, ""); !slices.Equal(got, []string{"doc.md"}) {
		t.Errorf("after concurrent writes: %q (no temporary file may show)", got)
	}
}

// testFilesAtomicCreate has writers create one file at once without
// overwrite: exactly one succeeds, and its content is the file's.
func testFilesAtomicCreate(t *testing.T, f store.Files) {
	ctx := t.Context()
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f.Write(ctx, "new/one.md", []byte(fmt.Sprintf("writer %d", i)), false) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both created the file", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrExists):
			t.Errorf("writer %d: %v; want nil or ErrExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer created the file")
	}
	filesHas(t, f, "new/one.md", fmt.Sprintf("writer %d", winner))
}
