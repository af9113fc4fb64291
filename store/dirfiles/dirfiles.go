// Package dirfiles provides the document files of a vault that is a folder
// on this machine, as a [store.Files]. Every access goes through an
// [os.Root] of the folder, and every symbolic link is followed here, one
// element at a time, so that no path, through a link or not, leaves the
// folder or reaches a hidden file or folder in it (the vault's own
// .ctxkit-vault data folder, .git, editors' folders): those are neither
// listed nor read nor written, exactly as the indexer has always skipped
// them. Writes replace a file atomically (a temporary file, synced, then
// renamed or linked into place).
package dirfiles

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

// Modes of what Write creates, as ctxkit has always written documents.
const (
	fileMode = 0o644
	dirMode  = 0o755
)

// maxLinks bounds the symbolic links followed for one path, as the
// operating systems do (ELOOP).
const maxLinks = 40

// Files are the files of one vault folder. The zero value is not usable;
// call [New].
type Files struct {
	dir string
}

var _ store.Files = (*Files)(nil)

// New returns the files of the folder dir. The folder is opened at each
// call: it need not exist yet, and a folder replaced meanwhile is the one
// used.
func New(dir string) *Files { return &Files{dir: dir} }

// Dir returns the folder.
func (f *Files) Dir() string { return f.dir }

func (f *Files) open() (*os.Root, error) {
	r, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, fmt.Errorf("open the vault's folder: %w", err)
	}
	return r, nil
}

// Stat returns a regular file's info; a folder, a missing path or one
// through a missing folder is ErrNotFound.
func (f *Files) Stat(ctx context.Context, name string) (store.FileInfo, error) {
	if err := store.CheckFilePath(name); err != nil {
		return store.FileInfo{}, err
	}
	r, err := f.open()
	if err != nil {
		return store.FileInfo{}, err
	}
	defer r.Close()
	real, err := resolve(r, name)
	if err != nil {
		return store.FileInfo{}, err
	}
	fi, err := r.Lstat(real)
	if err != nil {
		return store.FileInfo{}, fileErr(name, err)
	}
	if !fi.Mode().IsRegular() {
		return store.FileInfo{}, notFound(name)
	}
	return store.FileInfo{Path: name, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Read returns a regular file's content.
func (f *Files) Read(ctx context.Context, name string) ([]byte, error) {
	if err := store.CheckFilePath(name); err != nil {
		return nil, err
	}
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	real, err := resolve(r, name)
	if err != nil {
		return nil, err
	}
	fi, err := r.Lstat(real)
	if err != nil {
		return nil, fileErr(name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notFound(name)
	}
	file, err := r.Open(real)
	if err != nil {
		return nil, fileErr(name, err)
	}
	defer file.Close()
	data, err := io.ReadAll(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data, nil
}

// Write replaces or creates a file atomically: a temporary file beside it
// (hidden, so that no walk and no watcher takes it for a document), synced
// and given mode 0644, then renamed over it, or, without overwrite, linked
// to its name, which fails if a file took the name meanwhile. Missing
// folders are created (0755).
func (f *Files) Write(ctx context.Context, name string, data []byte, overwrite bool) error {
	if err := store.CheckFilePath(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	real, err := resolve(r, name)
	if err != nil {
		return err
	}
	parent := path.Dir(real)
	if parent != "." {
		if err := r.MkdirAll(parent, dirMode); err != nil {
			if underFile(r, parent) {
				return fmt.Errorf("%s: a file of the vault is in its way: %w", name, store.ErrExists)
			}
			return fileErr(name, err)
		}
	}
	switch fi, err := r.Lstat(real); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a folder: %w", name, store.ErrExists)
	case err == nil && !overwrite:
		return fmt.Errorf("%s: %w", name, store.ErrExists)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fileErr(name, err)
	}
	tmp, err := writeTemp(r, parent, path.Base(real), data)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer r.Remove(tmp) // gone already after a rename
	if overwrite {
		if err := r.Rename(tmp, real); err != nil {
			if fi, serr := r.Lstat(real); serr == nil && fi.IsDir() {
				return fmt.Errorf("%s is a folder: %w", name, store.ErrExists)
			}
			return fileErr(name, err)
		}
	} else if err := r.Link(tmp, real); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", name, store.ErrExists)
		}
		// A file system without hard links: the name was free a moment
		// ago, which is the best it can tell.
		if _, serr := r.Lstat(real); serr == nil {
			return fmt.Errorf("%s: %w", name, store.ErrExists)
		}
		if err := r.Rename(tmp, real); err != nil {
			return fileErr(name, err)
		}
	}
	syncDir(r, parent)
	return nil
}

// writeTemp writes data to a new hidden file in dir and returns its name.
func writeTemp(r *os.Root, dir, base string, data []byte) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := path.Join(dir, "."+tempStem(base)+".ctxkit-"+hex.EncodeToString(rnd[:]))
	file, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return "", err
	}
	_, err = file.Write(data)
	if err == nil && runtime.GOOS != "windows" {
		err = file.Chmod(fileMode) // whatever the umask
	}
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// tempStem is the part of a file's name its temporary file carries: at most
// 64 bytes, cut at a character boundary, so that the temporary name stays
// within the 255 bytes a file system allows.
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

// syncDir makes a rename in dir durable, where the system allows it.
func syncDir(r *os.Root, dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	if d, err := r.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// underFile reports whether dir, or one of its parents, is a file.
func underFile(r *os.Root, dir string) bool {
	for p := dir; p != "." && p != "/"; p = path.Dir(p) {
		if fi, err := r.Lstat(p); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// Remove deletes a regular file (the file a link leads to, when name is a
// link); a folder is ErrNotFound. Folders it leaves empty stay.
func (f *Files) Remove(ctx context.Context, name string) error {
	if err := store.CheckFilePath(name); err != nil {
		return err
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	real, err := resolve(r, name)
	if err != nil {
		return err
	}
	fi, err := r.Lstat(real)
	if err != nil {
		return fileErr(name, err)
	}
	if !fi.Mode().IsRegular() {
		return notFound(name)
	}
	if err := r.Remove(real); err != nil {
		return fileErr(name, err)
	}
	return nil
}

// Walk calls fn with every regular file under dir, hidden files and
// folders left out, in the byte order of their paths. A link to a file of
// the folder is walked under its own path, with its file's size and time.
// A link to a folder of the folder is not followed but walked as it is,
// size 0 (reading it is ErrNotFound), so that an indexer reports it rather
// than miss it silently; links that lead out of the folder, into a hidden
// place or nowhere are left out.
func (f *Files) Walk(ctx context.Context, dir string, fn func(store.FileInfo) error) error {
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	start := "."
	if dir != "" {
		if err := store.CheckFilePath(dir); err != nil {
			return err
		}
		real, err := resolve(r, dir)
		if err != nil {
			return err
		}
		fi, err := r.Lstat(real)
		if err != nil {
			return fileErr(dir, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder: %w", dir, store.ErrNotFound)
		}
		start = real
	}
	var out []store.FileInfo
	var walk func(real, name string) error
	walk = func(real, name string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := r.Open(real)
		if err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
		entries, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			realChild, child := path.Join(real, e.Name()), e.Name()
			if name != "" {
				child = name + "/" + child
			}
			switch {
			case e.IsDir():
				if err := walk(realChild, child); err != nil {
					return err
				}
			case e.Type().IsRegular():
				fi, err := e.Info()
				if err != nil {
					continue // gone meanwhile
				}
				out = append(out, store.FileInfo{Path: child, Size: fi.Size(), ModTime: fi.ModTime()})
			case e.Type()&fs.ModeSymlink != 0:
				target, err := resolve(r, child)
				if err != nil {
					continue // leads out, or into a hidden place
				}
				if fi, err := r.Lstat(target); err == nil {
					size := fi.Size()
					if !fi.Mode().IsRegular() {
						size = 0
					}
					out = append(out, store.FileInfo{Path: child, Size: size, ModTime: fi.ModTime()})
				}
			}
		}
		return nil
	}
	if err := walk(start, dir); err != nil {
		return err
	}
	slices.SortFunc(out, func(a, b store.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	for _, fi := range out {
		if err := fn(fi); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows the symbolic links of name (checked by CheckFilePath)
// inside the folder, element by element, and returns the path it leads to,
// relative to the folder: the path of a file no link leads to, or of one
// that does not exist yet (its missing part taken as written). A link that
// leads out of the folder (absolute, or above it with "..") or into a
// hidden file or folder is ErrInvalidPath.
func resolve(r *os.Root, name string) (string, error) {
	var done []string
	todo := strings.Split(name, "/")
	links, missing := 0, false
	for len(todo) > 0 {
		e := todo[0]
		todo = todo[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", escape(name)
			}
			done = done[:len(done)-1]
			continue
		}
		if strings.HasPrefix(e, ".") {
			return "", fmt.Errorf("%w %q: leads to a hidden file or folder", store.ErrInvalidPath, name)
		}
		cur := path.Join(append(done, e)...)
		if missing {
			done = append(done, e)
			continue
		}
		fi, err := r.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missing = true
			done = append(done, e)
			continue
		case err != nil:
			return "", fileErr(name, err)
		case fi.Mode()&fs.ModeSymlink == 0:
			done = append(done, e)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many symbolic links: %w", name, store.ErrInvalidPath)
		}
		target, err := r.Readlink(cur)
		if err != nil {
			return "", fileErr(name, err)
		}
		target = strings.ReplaceAll(target, `\`, "/")
		if strings.HasPrefix(target, "/") || (len(target) > 1 && target[1] == ':') {
			return "", escape(name)
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return "", fmt.Errorf("%w %q: leads to the vault's folder itself", store.ErrInvalidPath, name)
	}
	return path.Join(done...), nil
}

func escape(name string) error {
	return fmt.Errorf("%w %q: leads out of the vault's folder", store.ErrInvalidPath, name)
}

func notFound(name string) error { return fmt.Errorf("%s: %w", name, store.ErrNotFound) }

// fileErr translates an error of the file system about name: a missing
// file is ErrNotFound, a path os.Root refuses as leaving the folder is
// ErrInvalidPath.
func fileErr(name string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: %w (%w)", name, store.ErrNotFound, err)
	case errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent":
		return escape(name)
	}
	return err
}

// ForVault returns the files of a vault's folder, for the backends whose
// vaults are all folders: a record without one (a vault hosted by another
// backend) is refused.
func ForVault(v store.VaultRecord) (store.Files, error) {
	if v.Dir == "" {
		return nil, fmt.Errorf("vault %q has no folder, and this backend hosts no files: %w", v.Name, store.ErrNotFound)
	}
	return New(v.Dir), nil
}
