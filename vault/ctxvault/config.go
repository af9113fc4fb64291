// Package ctxvault reads the data of CtxVault (the Python memory vaults
// ctxkit's vaults replace) from disk, and imports it into ctxkit's vaults
// through vault.Service: `ctxkit import ctxvault` is its front end. It is
// a public package, not an internal one, because a program that embeds
// ctxkit's vaults as a library migrates its users' CtxVault data the same
// way; it holds no rule of ctxkit's vaults (those are vault.ImportVault's),
// only the knowledge of CtxVault's layout:
//
//   - config.json in ~/.ctxvault (global) and in .ctxvault, found by walking
//     up from a folder (local): {"vaults": {NAME: {"type", "vault_path",
//     "db_path", "restricted", "allowed_agents"}}}, paths of local vaults
//     relative to the project root (the folder holding .ctxvault), a
//     missing type meaning semantic;
//   - semantic vaults: the documents in vault_path (Chroma's vectors in
//     db_path are not read: ctxkit embeds the documents again);
//   - skill vaults: *.md at the top of vault_path with YAML frontmatter
//     (name, description; the name defaults to the file's stem), the body
//     being the instructions (skills-index.json is not read: CtxVault
//     rebuilds it from the files too);
//   - episodic vaults: episodes.db (SQLite, schema_version 1 of
//     storage/sqlite_store.py: tables episodes, episode_entities, meta),
//     and the additions of CtxVault 0.8.2, whose README describes them
//     but whose schema no published source shows. This package defines
//     them as schema_version 2: a column episodes.revised_by (the
//     revision of a revised episode), a table attestations(episode_id, at,
//     source, recorded_at) and a table disputes(episode_a, episode_b, note,
//     recorded_at); each is read only when present.
//
// CtxVault changes an episode's row in place when it invalidates or
// supersedes it; ctxkit keeps every version. Each row becomes a statement
// whose versions say what CtxVault believed when: open (with no known end)
// from recorded_at until invalidated_at, then closed at valid_to, so that a
// query known at a time before a late correction finds what CtxVault
// believed then (CtxVault itself no longer can). See Records.
package ctxvault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/vault"
)

// DirName is the folder CtxVault keeps its configuration in, in the home
// folder (global) and in a project (local).
const DirName = ".ctxvault"

// maxConfigBytes bounds config.json.
const maxConfigBytes = 4 << 20

// Entry is one vault of a config.json, as CtxVault writes it.
type Entry struct {
	Type          string   `json:"type"`
	VaultPath     string   `json:"vault_path"`
	DBPath        *string  `json:"db_path"`
	Restricted    bool     `json:"restricted"`
	AllowedAgents []string `json:"allowed_agents"`
}

// Config is a config.json. Keys other than vaults (older versions wrote
// active_vault) are ignored.
type Config struct {
	Vaults map[string]Entry `json:"vaults"`
}

// ParseConfig reads a config.json. A file that is not one JSON object with
// vaults as an object of entries is an error; what is wrong with one entry
// is that vault's (Source.Vaults), not the file's.
func ParseConfig(data []byte) (*Config, error) {
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("config.json is over %d bytes", maxConfigBytes)
	}
	var raw struct {
		Vaults map[string]json.RawMessage `json:"vaults"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	c := &Config{Vaults: make(map[string]Entry, len(raw.Vaults))}
	for name, msg := range raw.Vaults {
		var e Entry
		if err := json.Unmarshal(msg, &e); err != nil {
			// Kept with an impossible type, so the vault is reported.
			e = Entry{Type: "unreadable: " + err.Error()}
		}
		c.Vaults[name] = e
	}
	return c, nil
}

// Source is one config.json found: the local one of a project or the
// global one.
type Source struct {
	Scope vault.Scope
	// Config is the config.json; Root the folder its relative paths are
	// relative to (the project root, or the home folder).
	Config, Root string
	Vaults       []Vault
}

// Vault is one vault of a Source, its paths made absolute.
type Vault struct {
	Name  string
	Scope vault.Scope
	Type  vault.Type
	// Dir is vault_path; DB is db_path (for an episodic vault, its
	// episodes.db; empty when the entry has none).
	Dir, DB    string
	Restricted bool
	Agents     []string
	// Err says why the entry cannot be imported (a bad type, a missing
	// path, a name ctxkit does not take); nil when it can be read.
	Err error
}

// Find returns the local config of the project dir is in (the first
// .ctxvault/config.json walking up from dir, as CtxVault looks for it, the
// global one excepted) and the global one in home, those that exist, local
// first. A config that cannot be read or parsed is an error.
func Find(dir, home string) ([]*Source, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	global := ""
	if home != "" {
		global = filepath.Join(home, DirName, "config.json")
	}
	var out []*Source
	for d := dir; ; {
		p := filepath.Join(d, DirName, "config.json")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && !samePath(p, global) {
			s, err := Load(p, vault.Local)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if global != "" {
		if _, err := os.Stat(global); err == nil {
			s, err := Load(global, vault.Global)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return out, nil
}

// samePath reports whether a and b name the same file.
func samePath(a, b string) bool {
	if b == "" {
		return false
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// Load reads the config.json at path, of scope, with its vaults in name
// order.
func Load(path string, scope vault.Scope) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	root := filepath.Dir(filepath.Dir(path))
	s := &Source{Scope: scope, Config: path, Root: root}
	names := make([]string, 0, len(c.Vaults))
	for n := range c.Vaults {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s.Vaults = append(s.Vaults, entry(n, scope, root, c.Vaults[n]))
	}
	return s, nil
}

// entry makes the vault of a config entry, its paths absolute.
func entry(name string, scope vault.Scope, root string, e Entry) Vault {
	v := Vault{Name: name, Scope: scope, Restricted: e.Restricted, Agents: e.AllowedAgents}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	v.Dir = abs(e.VaultPath)
	if e.DBPath != nil {
		v.DB = abs(*e.DBPath)
	}
	switch e.Type {
	case "", "semantic":
		v.Type = vault.Semantic
	case "skill":
		v.Type = vault.Skill
	case "episodic":
		v.Type = vault.Episodic
		if v.DB == "" && v.Dir != "" {
			v.DB = filepath.Join(v.Dir, "episodes.db")
		}
	default:
		v.Err = fmt.Errorf("type %q is not one CtxVault has (semantic, skill, episodic)", e.Type)
		return v
	}
	switch {
	case vault.ValidName(name) != nil:
		v.Err = fmt.Errorf("%v: ctxkit does not take this name", vault.ValidName(name))
	case v.Dir == "":
		v.Err = errors.New("the entry has no vault_path")
	case scope == vault.Local && (!inside(root, v.Dir) || v.DB != "" && !inside(root, v.DB)):
		// A project's config is committed with it: it must not lead the
		// import to files outside the project (CtxVault keeps them in).
		v.Err = fmt.Errorf("its vault_path or db_path leads outside the project %s, which a project's config may not", root)
	}
	return v
}

// inside reports whether p, its links resolved as far as it exists, is
// root or lies in it.
func inside(root, p string) bool {
	r, err := filepath.Rel(realPath(root), realPath(p))
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

// realPath is p with the links of its longest existing prefix resolved.
func realPath(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(realPath(parent), filepath.Base(p))
}
