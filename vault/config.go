package vault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
)

// lockWait bounds the wait for another process's config edit.
const lockWait = 30 * time.Second

// entry is one vault in a config file, as stored. Unknown fields of the
// entry are kept in extra.
type entry struct {
	Type           string           `json:"type,omitempty"`
	Path           string           `json:"path"`
	Restricted     bool             `json:"restricted"`
	Agents         map[string]Grant `json:"agents,omitempty"`
	EmbeddingModel string           `json:"embedding_model,omitempty"`

	extra map[string]json.RawMessage
}

// knownFields returns the JSON names of entry's own fields, which are not
// kept in extra (derived from the tags, so a field added later is never
// written twice).
func knownFields() []string {
	var out []string
	t := reflect.TypeFor[entry]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// configFile is a parsed config.json: the vaults, and every other
// top-level field kept as it was.
type configFile struct {
	path   string
	vaults map[string]*entry
	extra  map[string]json.RawMessage
}

// parseError reports a JSON error with the file, line and column.
func parseError(path string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // Offset counts the offending byte

	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("%w: %s: %v", ErrParse, path, err)
	}
	line, col := 1, 1
	for _, c := range data[:min(int(off), len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%w: %s:%d:%d: %v", ErrParse, path, line, col, err)
}

// readConfig reads a config file; a missing or empty file is an empty
// config.
func readConfig(path string) (*configFile, error) {
	c := &configFile{path: path, vaults: map[string]*entry{}, extra: map[string]json.RawMessage{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(data, &c.extra); err != nil {
		return nil, parseError(path, data, err)
	}
	raw, ok := c.extra["vaults"]
	if !ok {
		return c, nil
	}
	delete(c.extra, "vaults")
	var vaults map[string]json.RawMessage
	if err := json.Unmarshal(raw, &vaults); err != nil {
		return nil, fmt.Errorf("%w: %s: \"vaults\" must be an object of vaults by name: %v", ErrParse, path, err)
	}
	for name, r := range vaults {
		e := &entry{}
		if err := json.Unmarshal(r, e); err != nil {
			return nil, fmt.Errorf("%w: %s: vault %q: %v", ErrParse, path, name, err)
		}
		if err := json.Unmarshal(r, &e.extra); err != nil {
			return nil, fmt.Errorf("%w: %s: vault %q: %v", ErrParse, path, name, err)
		}
		for _, k := range knownFields() {
			delete(e.extra, k)
		}
		c.vaults[name] = e
	}
	return c, nil
}

// marshal renders the config: known fields merged over the kept ones,
// indented, keys sorted.
func (c *configFile) marshal() ([]byte, error) {
	top := map[string]any{}
	for k, v := range c.extra {
		top[k] = v
	}
	vaults := map[string]any{}
	for name, e := range c.vaults {
		m := map[string]any{}
		for k, v := range e.extra {
			m[k] = v
		}
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		var own map[string]json.RawMessage
		if err := json.Unmarshal(b, &own); err != nil {
			return nil, err
		}
		for k, v := range own {
			m[k] = v
		}
		vaults[name] = m
	}
	top["vaults"] = vaults
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", c.path, err)
	}
	return append(b, '\n'), nil
}

// configModes are the file and directory modes of a config file of a
// scope: global files hold agent lists and stay private; a local one is
// meant to be committed.
func configModes(s Scope) (file, dir fs.FileMode) {
	if s == Global {
		return 0o600, 0o700
	}
	return 0o644, 0o755
}

// editConfig runs fn on the config at path under its lock and writes the
// result atomically when fn returns nil. A config that does not parse is
// refused before fn runs; nothing is written.
func editConfig(ctx context.Context, path string, scope Scope, fn func(*configFile) error) error {
	fileMode, dirMode := configModes(scope)
	unlock, err := atomicfile.Lock(ctx, path+".lock", dirMode, lockWait)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := readConfig(path)
	if err != nil {
		return err
	}
	if err := fn(c); err != nil {
		return err
	}
	data, err := c.marshal()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		fileMode = fi.Mode().Perm()
	}
	return atomicfile.WriteFile(path, data, fileMode, dirMode, nil)
}

// configDir is the folder of the local config in a project root.
const configDir = ".ctxkit"

// findProjectRoot walks up from cwd to the first directory holding
// .ctxkit/config.json, skipping the data directory's own config.json (so
// that ~/.ctxkit is never mistaken for a project); "" when there is none.
func findProjectRoot(cwd, dataDir string) string {
	skip := realPath(filepath.Join(dataDir, "config.json"))
	for dir := cwd; ; {
		p := filepath.Join(dir, configDir, "config.json")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && realPath(p) != skip {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
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
