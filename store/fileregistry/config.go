package fileregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
	"github.com/ctxkit/ctxkit/store"
)

// lockWait bounds the wait for another process's edit of a file.
const lockWait = 30 * time.Second

// entry is one vault in a config file, as stored. Unknown fields of the
// entry are kept in extra.
type entry struct {
	ID             string                 `json:"id,omitempty"`
	Type           string                 `json:"type,omitempty"`
	Path           string                 `json:"path"`
	Restricted     bool                   `json:"restricted"`
	Agents         map[string]store.Grant `json:"agents,omitempty"`
	EmbeddingModel string                 `json:"embedding_model,omitempty"`

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
		return fmt.Errorf("%w: %s: %v", store.ErrCorrupt, path, err)
	}
	line, col := 1, 1
	for _, c := range data[:min(int(off), len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%w: %s:%d:%d: %v", store.ErrCorrupt, path, line, col, err)
}

// readConfig reads a config file; a missing or empty file is an empty
// config.
func readConfig(path string) (*configFile, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parseConfig(path, data)
}

// maxFileBytes bounds a registry file (a project's config comes with the
// project, and may be anyone's): far beyond any real one.
const maxFileBytes = 16 << 20

// readFile reads one of the registry's files, at most maxFileBytes; nil
// when it is missing.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s is over %d bytes: %w", path, maxFileBytes, store.ErrCorrupt)
	}
	return data, nil
}

// parsedConfigs keeps the last parse of each config file, reused while the
// file holds the same bytes: every lookup still reads the file, but does
// not parse it again when it has not changed (lookups, one or more per
// call of the vault layer, far outnumber edits).
type parsedConfigs struct {
	mu    sync.Mutex
	files map[string]parsedConfig // by path
}

type parsedConfig struct {
	data []byte
	c    *configFile // never changed once kept here
}

// read returns the config at path, which the caller must not change.
func (p *parsedConfigs) read(path string) (*configFile, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	last, ok := p.files[path]
	p.mu.Unlock()
	if ok && bytes.Equal(last.data, data) {
		return last.c, nil
	}
	c, err := parseConfig(path, data)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = map[string]parsedConfig{}
	}
	p.files[path] = parsedConfig{data, c}
	return c, nil
}

// parseConfig parses the bytes of the config file at path.
func parseConfig(path string, data []byte) (*configFile, error) {
	c := &configFile{path: path, vaults: map[string]*entry{}, extra: map[string]json.RawMessage{}}
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
		return nil, fmt.Errorf("%w: %s: \"vaults\" must be an object of vaults by name: %v", store.ErrCorrupt, path, err)
	}
	for name, r := range vaults {
		e := &entry{}
		if err := json.Unmarshal(r, e); err != nil {
			return nil, fmt.Errorf("%w: %s: vault %q: %v", store.ErrCorrupt, path, name, err)
		}
		if err := json.Unmarshal(r, &e.extra); err != nil {
			return nil, fmt.Errorf("%w: %s: vault %q: %v", store.ErrCorrupt, path, name, err)
		}
		for _, k := range knownFields() {
			delete(e.extra, k)
		}
		if e.Path == "" {
			return nil, fmt.Errorf("%w: %s: vault %q has no path", store.ErrCorrupt, path, name)
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
func configModes(scope string) (file, dir fs.FileMode) {
	if scope == store.ScopeGlobal {
		return 0o600, 0o700
	}
	return 0o644, 0o755
}

// lockConfig takes the lock of the config file of a scope at path.
func lockConfig(ctx context.Context, path, scope string) (unlock func(), err error) {
	_, dirMode := configModes(scope)
	return atomicfile.Lock(ctx, path+".lock", dirMode, lockWait)
}

// editConfig runs fn on the config at path under its lock and writes the
// result atomically when fn returns nil. A config that does not parse is
// refused before fn runs; nothing is written.
func editConfig(ctx context.Context, path, scope string, fn func(*configFile) error) error {
	unlock, err := lockConfig(ctx, path, scope)
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
	fileMode, dirMode := configModes(scope)
	if fi, err := os.Stat(path); err == nil {
		fileMode = fi.Mode().Perm()
	}
	return atomicfile.WriteFile(path, data, fileMode, dirMode, nil)
}

// writeIfMissing creates path with text unless it exists.
func writeIfMissing(path, text string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Size() > 0 {
		return nil
	}
	// Missing, or left empty by a crash of an older version: written whole.
	return atomicfile.WriteFile(path, []byte(text), 0o644, 0o700, nil)
}

// editJSON runs fn on the JSON document at path (v, a pointer, left at
// its zero value when the file is missing) under the file's lock, and
// writes it back atomically (mode 0600) when fn reports a change.
func editJSON(ctx context.Context, path string, v any, fn func() (changed bool, err error)) error {
	unlock, err := atomicfile.Lock(ctx, path+".lock", 0o700, lockWait)
	if err != nil {
		return err
	}
	defer unlock()
	if err := readJSON(path, v); err != nil {
		return err
	}
	changed, err := fn()
	if err != nil || !changed {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600, 0o700, nil)
}

// readJSON reads the JSON document at path into v; a missing file leaves
// v as it is.
func readJSON(path string, v any) error {
	data, err := readFile(path)
	if err != nil || data == nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return parseError(path, data, err)
	}
	return nil
}

// dataDir is a vault's own data folder.
func dataDir(dir string) string { return filepath.Join(dir, DataDirName) }
