package vault

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pathFixture is a vault folder with symlinks in and out of it, and a
// service protecting a data directory inside it.
func pathFixture(tb testing.TB) (*Service, *Vault, string, string) {
	tb.Helper()
	base := tb.TempDir()
	dir, outside := filepath.Join(base, "v"), filepath.Join(base, "o")
	for _, d := range []string{filepath.Join(dir, "sub", "deep"), outside, filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for target, link := range map[string]string{outside: "out", filepath.Join(outside, "f"): "outfile", "sub": "in",
		"../..": "sub/up", "missing-target": "dangling", "home": "h"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			tb.Skip("no symlinks here:", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file.md"), []byte("x"), 0o644); err != nil {
		tb.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(dir)
	s := &Service{protected: realPath(filepath.Join(dir, "home"))}
	return s, &Vault{Name: "v", Dir: dir}, root, outside
}

// TestResolveAbsolute: an absolute path inside the vault folder (as
// given, or through the folder's real path) is the path relative to it,
// and checked as one; outside it, or in a hosted vault, it is refused.
func TestResolveAbsolute(t *testing.T) {
	s, v, root, outside := pathFixture(t)
	for _, tc := range []struct {
		abs  string
		want string // "" refused with ErrOutside
	}{
		{filepath.Join(v.Dir, "file.md"), "file.md"},
		{filepath.Join(root, "sub", "deep", "n.md"), "sub/deep/n.md"},
		{v.Dir, "."},
		{filepath.Join(v.Dir, "sub", "..", "file.md"), "file.md"},
		{filepath.Join(v.Dir, "in", "x.md"), "sub/x.md"},
		{filepath.Join(v.Dir, ".ctxkit-vault", "audit.jsonl"), ""},
		{filepath.Join(v.Dir, "out", "x"), ""},
		{filepath.Join(v.Dir, "..", "o", "f"), ""},
		{filepath.Join(outside, "f"), ""},
		{v.Dir + "-sibling/x.md", ""},
		{"/etc/passwd", ""},
	} {
		_, name, err := s.resolve(v, tc.abs)
		if tc.want == "" {
			if !errors.Is(err, ErrOutside) {
				t.Errorf("resolve(%q) = %q, %v; want ErrOutside", tc.abs, name, err)
			}
			continue
		}
		if err != nil || name != tc.want {
			t.Errorf("resolve(%q) = %q, %v; want %q", tc.abs, name, err, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	s, v, root, _ := pathFixture(t)
	for _, tc := range []struct {
		rel  string
		want string // the name in the vault; "" means refused with ErrOutside, "!" with ErrInvalid
	}{
		{"", "."}, {".", "."}, {"file.md", "file.md"}, {"sub/deep/new.md", "sub/deep/new.md"},
		{"new/dir/x.md", "new/dir/x.md"}, {"sub/../file.md", "file.md"}, {"./a", "a"},
		{"in/x.md", "sub/x.md"}, {"in/deep", "sub/deep"}, {`sub\deep\n.md`, "sub/deep/n.md"},
		{"file.md/below", "file.md/below"},
		{"..", ""}, {"../x", ""}, {"sub/../../x", ""}, {"/etc/passwd", ""}, {`\etc\passwd`, ""},
		{`..\x`, ""}, {"out", ""}, {"out/x", ""}, {"outfile", ""}, {"sub/up/x", ""},
		{"dangling", ""}, {".ctxkit-vault/audit.jsonl", ""}, {".ctxkit-vault", ""},
		{"sub/../.ctxkit-vault/x", ""}, {"a\x00b", ""}, {"..foo", ""}, {".ctxkit/config.json", ""},
		{".git/hooks/pre-commit.md", ""}, {"docs/.vscode/tasks.json", ""}, {".env", ""},
		{"home/config.json", ""}, {"h/agents.json", ""},
		{strings.Repeat("a", 256), "!"}, {strings.Repeat("a/", 600), "!"}, {strings.Repeat("é", 127) + ".m", "!"},
		{strings.Repeat("a", 255), strings.Repeat("a", 255)},
	} {
		abs, name, err := s.resolve(v, tc.rel)
		switch tc.want {
		case "":
			if !errors.Is(err, ErrOutside) {
				t.Errorf("resolve(%q) = %q, %v; want ErrOutside", tc.rel, name, err)
			}
		case "!":
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("resolve(%q) = %q, %v; want ErrInvalid", tc.rel, name, err)
			}
		default:
			if err != nil || name != tc.want || abs != filepath.Join(root, filepath.FromSlash(tc.want)) {
				t.Errorf("resolve(%q) = %q, %q, %v; want %s", tc.rel, abs, name, err, tc.want)
			}
		}
	}
}

// FuzzResolve: whatever the caller names, the result is inside the vault
// (following every symlink of its existing part), never hidden, never in a
// protected folder, and its name is the path from the vault's real folder;
// or the call fails.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../a", "/a", "out/x", "in/../../x", `..\..\x`, "sub/up/up", "a/./b//c", ".ctxkit-vault",
		"in/deep/../../out", "h/x", "home/../file.md"} {
		f.Add(s)
	}
	s, v, root, _ := pathFixture(f)
	f.Fuzz(func(t *testing.T, rel string) {
		abs, name, err := s.resolve(v, rel)
		if err != nil {
			if !errors.Is(err, ErrOutside) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("resolve(%q): %v is neither ErrOutside nor ErrInvalid", rel, err)
			}
			return
		}
		p := abs
		for {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			p = filepath.Dir(p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatalf("resolve(%q) = %q: existing part %s does not resolve: %v", rel, abs, p, err)
		}
		if !within(root, real) || !within(root, abs) {
			t.Fatalf("resolve(%q) = %q leaves %s", rel, abs, root)
		}
		if within(s.protected, real) || within(s.protected, abs) {
			t.Fatalf("resolve(%q) = %q is in a protected folder", rel, abs)
		}
		if name != "." {
			for c := range strings.SplitSeq(name, "/") {
				if strings.HasPrefix(c, ".") {
					t.Fatalf("resolve(%q) = %q is hidden", rel, name)
				}
			}
		}
		if filepath.Join(root, filepath.FromSlash(name)) != abs {
			t.Fatalf("resolve(%q): name %q does not name %q", rel, name, abs)
		}
	})
}
