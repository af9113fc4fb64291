package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/vault/embed/bert"
)

// InstallFrom installs a model from files copied by hand into src (for
// machines without network): it loads the model from src to check it,
// then copies the files of Files that src has into dir, each through a
// .part and a rename, after all of them are copied.
func InstallFrom(src, dir string) (*Result, error) {
	var missing []string
	have := func(name string) bool {
		fi, err := os.Stat(filepath.Join(src, filepath.FromSlash(name)))
		return err == nil && fi.Mode().IsRegular()
	}
	res := &Result{Files: map[string]int64{}}
	var names []string
	for _, f := range Files {
		switch {
		case have(f.Name):
			names = append(names, f.Name)
		case f.Fallback != "" && have(f.Fallback):
			names = append(names, f.Fallback)
		case f.Optional:
			res.Missing = append(res.Missing, f.Name)
		case f.Fallback != "":
			missing = append(missing, f.Name+" (or "+f.Fallback+")")
		default:
			missing = append(missing, f.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("install from %s: missing %s (a model needs %s)", src, strings.Join(missing, ", "), RequiredListing)
	}
	if _, err := bert.Load(src); err != nil {
		return nil, fmt.Errorf("install from %s: %w", src, err)
	}
	for _, name := range names {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		n, err := copyFile(filepath.Join(src, filepath.FromSlash(name)), dst+".part")
		if err != nil {
			return nil, fmt.Errorf("install from %s: %s: %w", src, name, err)
		}
		res.Files[name] = n
		res.Unverified = append(res.Unverified, name)
	}
	for _, name := range names {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.Rename(dst+".part", dst); err != nil {
			return nil, fmt.Errorf("install from %s: %w", src, err)
		}
	}
	if !have(PoolingFile) {
		if err := WriteMeanPooling(dir); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Dimension reads the embedding dimension (hidden_size) from a model
// directory's config.json.
func Dimension(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, bert.ConfigFile))
	if err != nil {
		return 0, fmt.Errorf("model %s: %w", dir, err)
	}
	var cfg struct {
		HiddenSize int `json:"hidden_size"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return 0, fmt.Errorf("model %s: %s: %w", dir, bert.ConfigFile, err)
	}
	if cfg.HiddenSize <= 0 {
		return 0, fmt.Errorf("model %s: %s has no hidden_size", dir, bert.ConfigFile)
	}
	return cfg.HiddenSize, nil
}

// Installed describes a model directory.
type Installed struct {
	Name string `json:"name"`
	// Size is the bytes of its files, .part files included.
	Size int64 `json:"size"`
	// Dimension is hidden_size from config.json; 0 when unreadable.
	Dimension int `json:"dimension"`
	// Complete is set when every required file is in place.
	Complete bool `json:"complete"`
}

// List describes the model directories under models, by name; a missing
// models directory is an empty list.
func List(models string) ([]Installed, error) {
	entries, err := os.ReadDir(models)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	var out []Installed
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(models, e.Name())
		m := Installed{Name: e.Name(), Complete: true}
		err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err == nil {
				m.Size += fi.Size()
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list models: %w", err)
		}
		m.Dimension, _ = Dimension(dir)
		exists := func(name string) bool {
			_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
			return err == nil
		}
		for _, f := range Files {
			if !f.Optional && !exists(f.Name) && (f.Fallback == "" || !exists(f.Fallback)) {
				m.Complete = false
			}
		}
		if !exists(PoolingFile) { // embed.New wants it
			m.Complete = false
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
