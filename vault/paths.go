package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Limits of a path inside a vault: every file system ctxkit runs on takes
// components of 255 bytes, and a path of 1 KiB is far beyond any document
// name a person or an agent chooses.
const (
	maxPathBytes      = 1024
	maxComponentBytes = 255
)

// DataDirName is the folder inside each vault that holds ctxkit's own
// files (audit log, indexes) in the default backend; it is never a
// document, like every hidden file or folder.
const DataDirName = ".ctxkit-vault"

// outside returns an ErrOutside error about a path.
func outside(rel, why string) *Error {
	return &Error{Kind: ErrOutside, Msg: fmt.Sprintf("path %q %s", rel, why), Field: "path",
		Fix: "give a path relative to the vault, like notes/meeting.md: no leading /, no .., no hidden (dot) file or folder"}
}

// resolve turns a path a caller names inside v (slash or OS separated,
// relative to the vault folder) into the absolute path of the file and its
// canonical name in the vault (slash-separated, relative to the vault's
// real folder, "." for the folder itself). An absolute path inside the
// vault folder is read as the path relative to it (CtxVault's clients
// send them). It refuses (ErrOutside):
//   - absolute paths outside the vault folder (and every absolute path of
//     a hosted vault, which has no folder), and paths that climb out with
//     "..";
//   - hidden files and folders (a component starting with '.'): ctxkit's
//     data folder, the project's .ctxkit/config.json when the vault is the
//     project root, .git, editor and agent configurations — none of them is
//     a document, and none may be reached as one;
//   - paths whose existing part leads out through a symlink;
//   - paths into a protected folder (ctxkit's data directory) that the
//     vault folder holds.
//
// Too long a path is ErrInvalid. The path need not exist. A hosted vault
// has no folder: its paths are checked as written, abs is empty, and name
// is the cleaned path.
func (s *Service) resolve(v *Vault, rel string) (abs, name string, err error) {
	if len(rel) > maxPathBytes {
		return "", "", invalid("path", "path of %d bytes is longer than %d", len(rel), maxPathBytes)
	}
	if strings.ContainsRune(rel, 0) {
		return "", "", outside(rel, "holds a NUL byte")
	}
	if filepath.IsAbs(rel) && !v.Hosted() {
		inside, ok := inVault(v.Dir, rel)
		if !ok {
			return "", "", outside(rel, "is absolute and not inside the vault's folder")
		}
		rel = inside
	}
	slashed := strings.ReplaceAll(rel, `\`, "/")
	if filepath.IsAbs(rel) || strings.HasPrefix(slashed, "/") || filepath.VolumeName(rel) != "" {
		return "", "", outside(rel, "is absolute")
	}
	clean := filepath.Clean(filepath.FromSlash(slashed))
	if !filepath.IsLocal(clean) && clean != "." {
		return "", "", outside(rel, "leaves the vault")
	}
	if err := checkComponents(rel, filepath.ToSlash(clean)); err != nil {
		return "", "", err
	}
	if v.Hosted() {
		return "", filepath.ToSlash(clean), nil
	}
	root, err := filepath.EvalSymlinks(v.Dir)
	if err != nil {
		return "", "", fmt.Errorf("the folder of vault %q: %w", v.Name, err)
	}
	abs = filepath.Join(root, clean)
	// Follow the longest existing prefix: a symlink anywhere in it must
	// stay inside the vault, and out of hidden and protected places.
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscallNotDir) {
			return "", "", fmt.Errorf("resolve %q in vault %q: %w", rel, v.Name, err)
		}
		parent := filepath.Dir(existing)
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", "", outside(rel, "cannot be followed: "+hidePaths(err))
	}
	if !within(root, real) {
		return "", "", outside(rel, "leads out through a symbolic link")
	}
	abs = filepath.Join(real, rest)
	// A vault folder that holds ctxkit's data directory must not reach it
	// (a vault inside it, as global vaults are, reaches only its own
	// folder anyway).
	if within(root, s.protected) && within(s.protected, abs) {
		return "", "", outside(rel, "is inside ctxkit's own folder")
	}
	r, err := filepath.Rel(root, abs)
	if err != nil {
		return "", "", err
	}
	name = filepath.ToSlash(r)
	if err := checkComponents(rel, name); err != nil {
		return "", "", err
	}
	return abs, name, nil
}

// inVault returns the path of abs, an absolute path, relative to the vault
// folder dir, and whether abs is inside it: lexically, or once dir's
// symbolic links are followed (a vault folder under /tmp is /private/tmp
// on macOS). The result is checked like any relative path afterwards.
func inVault(dir, abs string) (string, bool) {
	abs = filepath.Clean(abs)
	roots := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		roots = append(roots, real)
	}
	for _, root := range roots {
		if r, err := filepath.Rel(root, abs); err == nil && (r == "." || filepath.IsLocal(r)) {
			return r, true
		}
	}
	return "", false
}

// checkComponents refuses hidden and over-long components of a cleaned,
// slash-separated path.
func checkComponents(rel, clean string) error {
	if clean == "." {
		return nil
	}
	for c := range strings.SplitSeq(clean, "/") {
		if strings.HasPrefix(c, ".") {
			if c == DataDirName {
				return outside(rel, "is ctxkit's own data")
			}
			return outside(rel, "names a hidden file or folder")
		}
		if len(c) > maxComponentBytes {
			return invalid("path", "path %q has a component of %d bytes, longer than %d", rel, len(c), maxComponentBytes)
		}
	}
	return nil
}

// hidePaths returns err's message with the paths of the file system errors
// in it cut to their last element: a caller is told which file failed,
// never where the owner keeps the vault.
func hidePaths(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch pe := e.(type) {
		case *fs.PathError:
			msg = strings.ReplaceAll(msg, pe.Path, filepath.Base(pe.Path))
		case *os.LinkError:
			msg = strings.ReplaceAll(strings.ReplaceAll(msg, pe.Old, filepath.Base(pe.Old)), pe.New, filepath.Base(pe.New))
		}
	}
	return msg
}

// within reports whether p is root or below it (both cleaned, absolute).
func within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && (r == "." || filepath.IsLocal(r))
}

// realPath resolves the symlinks of p's longest existing prefix; the rest
// is appended cleaned.
func realPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
