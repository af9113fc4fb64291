// Package fileregistry keeps the vault registry in files a person can read,
// edit and commit, as the SQLite backend has always laid them out:
//
//   - local vaults in .ctxkit/config.json of the project root, with paths
//     relative to it (so the file can be committed), and global vaults in
//     $CTXKIT_HOME/config.json; fields this package does not know are kept;
//   - agents, with the SHA-256 of their tokens only, in
//     $CTXKIT_HOME/agents.json (0600);
//   - per vault, inside its folder's .ctxkit-vault data folder: the audit
//     log (audit.jsonl, append-only), the metadata of written documents
//     (documents.json) and the embedder pin (embedding.json).
//
// Every edit of a config, agents.json or documents.json holds an OS file
// lock and replaces the file atomically; a pin is replaced atomically, an
// audit event appended in one write: several processes share the
// registry. It implements
// [store.Registry] and passes storetest's registry suite.
package fileregistry

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// DataDirName is the folder inside each vault that holds ctxkit's own
// files (audit log, metadata, pin, indexes).
const DataDirName = ".ctxkit-vault"

// ConfigDir is the folder of the local config in a project root.
const ConfigDir = ".ctxkit"

// Registry is the file registry of one data directory and project root.
// Every call reads the files; it keeps nothing but the parse of the
// config files as they were last read.
type Registry struct {
	home   string
	root   string
	parsed parsedConfigs
}

var _ store.Registry = (*Registry)(nil)

// New returns the registry of home ($CTXKIT_HOME) and root (the project
// root, whose .ctxkit/config.json records local vaults; "" for none). It
// creates nothing.
func New(home, root string) *Registry {
	return &Registry{home: home, root: root}
}

// ConfigPath returns the config file of a scope.
func (r *Registry) ConfigPath(scope string) string {
	if scope == store.ScopeGlobal || r.root == "" {
		return filepath.Join(r.home, "config.json")
	}
	return filepath.Join(r.root, ConfigDir, "config.json")
}

// hasLocal reports whether local vaults have a file of their own (not
// when the project root is the data directory's parent, as ~ is for
// ~/.ctxkit).
func (r *Registry) hasLocal() bool {
	return r.ConfigPath(store.ScopeLocal) != r.ConfigPath(store.ScopeGlobal)
}

// absPath makes a stored path absolute for its scope.
func (r *Registry) absPath(scope, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if scope == store.ScopeGlobal {
		return filepath.Join(r.home, p)
	}
	return filepath.Join(r.root, p)
}

// storedPath is how a folder is written in a scope's config: relative to
// the project root for a local vault inside it, absolute otherwise.
func (r *Registry) storedPath(scope, dir string) string {
	if scope == store.ScopeLocal {
		if rel, err := filepath.Rel(r.root, dir); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return dir
}

// newID returns a fresh vault id.
func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a vault id: %w", err)
	}
	return "v" + hex.EncodeToString(b[:]), nil
}

// legacyID is the id of a vault recorded before ids were: derived from
// what identified it then, so it is the same in every process.
func legacyID(scope, name, dir string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + name + "\x00" + dir))
	return "l" + hex.EncodeToString(sum[:8])
}

func (r *Registry) record(scope, name string, e *entry) store.VaultRecord {
	dir := r.absPath(scope, e.Path)
	id := e.ID
	if id == "" {
		id = legacyID(scope, name, dir)
	}
	return store.VaultRecord{ID: id, Name: name, Type: e.Type, Scope: scope, Dir: dir, Restricted: e.Restricted,
		Grants: cloneGrants(e.Agents), EmbeddingModel: e.EmbeddingModel}
}

func cloneGrants(g map[string]store.Grant) map[string]store.Grant {
	if g == nil {
		return map[string]store.Grant{}
	}
	return maps.Clone(g)
}

// load reads one scope's vaults, by name.
func (r *Registry) load(scope string) ([]store.VaultRecord, error) {
	if scope == store.ScopeLocal && !r.hasLocal() {
		return nil, nil
	}
	c, err := r.parsed.read(r.ConfigPath(scope))
	if err != nil {
		return nil, err
	}
	return r.records(scope, c), nil
}

func (r *Registry) records(scope string, c *configFile) []store.VaultRecord {
	var out []store.VaultRecord
	for _, name := range slices.Sorted(maps.Keys(c.vaults)) {
		out = append(out, r.record(scope, name, c.vaults[name]))
	}
	return out
}

// Vaults returns local vaults, then global ones, each by name.
func (r *Registry) Vaults(ctx context.Context) ([]store.VaultRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	local, err := r.load(store.ScopeLocal)
	if err != nil {
		return nil, err
	}
	global, err := r.load(store.ScopeGlobal)
	if err != nil {
		return nil, err
	}
	all := append(local, global...)
	// An entry copied by hand keeps the id of the original: both vaults
	// would share their stores, and edits of one would go to the other.
	seen := make(map[string]store.VaultRecord, len(all))
	for _, v := range all {
		if o, ok := seen[v.ID]; ok {
			return nil, fmt.Errorf("%w: vault %q of %s and vault %q of %s have the same id %q; remove the \"id\" of the one that was copied (it will get a new one)",
				store.ErrCorrupt, o.Name, r.ConfigPath(o.Scope), v.Name, r.ConfigPath(v.Scope), v.ID)
		}
		seen[v.ID] = v
	}
	return all, nil
}

// Vault returns the vault with this id.
func (r *Registry) Vault(ctx context.Context, id string) (store.VaultRecord, error) {
	all, err := r.Vaults(ctx)
	if err != nil {
		return store.VaultRecord{}, err
	}
	for _, v := range all {
		if v.ID == id {
			return v, nil
		}
	}
	return store.VaultRecord{}, fmt.Errorf("vault %s: %w", id, store.ErrNotFound)
}

// CreateVault records v in its scope's config, under the config's lock.
func (r *Registry) CreateVault(ctx context.Context, v store.VaultRecord, check func([]store.VaultRecord) error) (store.VaultRecord, error) {
	scope := cmp.Or(v.Scope, store.ScopeLocal)
	if scope != store.ScopeLocal && scope != store.ScopeGlobal {
		return store.VaultRecord{}, fmt.Errorf("scope %q: want %s or %s: %w", scope, store.ScopeLocal, store.ScopeGlobal, store.ErrNoScope)
	}
	if scope == store.ScopeLocal && !r.hasLocal() {
		return store.VaultRecord{}, fmt.Errorf("no project here to record a local vault in (its config would be the global one, %s): %w",
			r.ConfigPath(store.ScopeGlobal), store.ErrNoScope)
	}
	id, err := newID()
	if err != nil {
		return store.VaultRecord{}, err
	}
	out := v
	out.ID, out.Scope, out.Grants = id, scope, cloneGrants(v.Grants)
	add := func(c *configFile, others []store.VaultRecord) error {
		for name := range c.vaults {
			if strings.EqualFold(name, v.Name) {
				return fmt.Errorf("vault %q in %s: %w", name, c.path, store.ErrExists)
			}
		}
		if check != nil {
			local, global := r.records(scope, c), others
			if scope == store.ScopeGlobal {
				local, global = others, local
			}
			if err := check(append(local, global...)); err != nil {
				return err
			}
		}
		if scope == store.ScopeLocal {
			if err := os.MkdirAll(filepath.Join(r.root, ConfigDir), 0o755); err != nil {
				return err
			}
			if err := writeIfMissing(filepath.Join(r.root, ConfigDir, ".gitignore"), "# written by ctxkit: the lock files of config.json\n*.lock\n"); err != nil {
				return err
			}
		}
		c.vaults[v.Name] = &entry{ID: id, Type: v.Type, Path: r.storedPath(scope, v.Dir), Restricted: v.Restricted,
			Agents: cloneGrants(v.Grants), EmbeddingModel: v.EmbeddingModel}
		return nil
	}
	// The check sees both scopes as they are when the record is written:
	// the other scope's config stays locked meanwhile, the global one
	// always locked first, so that two creates never wait for each other.
	if scope == store.ScopeLocal {
		err = r.withLocked(ctx, store.ScopeGlobal, func(global []store.VaultRecord) error {
			return editConfig(ctx, r.ConfigPath(scope), scope, func(c *configFile) error { return add(c, global) })
		})
	} else {
		err = editConfig(ctx, r.ConfigPath(scope), scope, func(c *configFile) error {
			return r.withLocked(ctx, store.ScopeLocal, func(local []store.VaultRecord) error { return add(c, local) })
		})
	}
	if err != nil {
		return store.VaultRecord{}, err
	}
	return out, nil
}

// withLocked runs fn with a scope's vaults, holding its config's lock.
func (r *Registry) withLocked(ctx context.Context, scope string, fn func([]store.VaultRecord) error) error {
	if scope == store.ScopeLocal && !r.hasLocal() {
		return fn(nil)
	}
	unlock, err := lockConfig(ctx, r.ConfigPath(scope), scope)
	if err != nil {
		return err
	}
	defer unlock()
	vs, err := r.load(scope)
	if err != nil {
		return err
	}
	return fn(vs)
}

// edit runs fn on the entry of the vault with this id, under its config's
// lock.
func (r *Registry) edit(ctx context.Context, id string, fn func(c *configFile, name string, e *entry) error) (store.VaultRecord, error) {
	v, err := r.Vault(ctx, id)
	if err != nil {
		return store.VaultRecord{}, err
	}
	var out store.VaultRecord
	err = editConfig(ctx, r.ConfigPath(v.Scope), v.Scope, func(c *configFile) error {
		e, ok := c.vaults[v.Name]
		if !ok || r.record(v.Scope, v.Name, e).ID != id {
			return fmt.Errorf("vault %q (removed meanwhile): %w", v.Name, store.ErrNotFound)
		}
		out = r.record(v.Scope, v.Name, e)
		return fn(c, v.Name, e)
	})
	return out, err
}

// UpdateVault changes a vault's record under its config's lock.
func (r *Registry) UpdateVault(ctx context.Context, id string, fn func(*store.VaultRecord) error) (store.VaultRecord, error) {
	var out store.VaultRecord
	_, err := r.edit(ctx, id, func(c *configFile, name string, e *entry) error {
		v := r.record(c.scopeOf(r), name, e)
		if err := fn(&v); err != nil {
			return err
		}
		e.Type, e.Restricted, e.EmbeddingModel = v.Type, v.Restricted, v.EmbeddingModel
		e.Agents = nil
		if len(v.Grants) > 0 {
			e.Agents = maps.Clone(v.Grants)
		}
		if e.ID == "" {
			e.ID = v.ID // a legacy entry keeps the id it was known by
		}
		out = r.record(c.scopeOf(r), name, e)
		return nil
	})
	return out, err
}

// scopeOf is the scope of a config file of r.
func (c *configFile) scopeOf(r *Registry) string {
	if c.path == r.ConfigPath(store.ScopeGlobal) {
		return store.ScopeGlobal
	}
	return store.ScopeLocal
}

// DeleteVault removes a vault's entry from its config.
func (r *Registry) DeleteVault(ctx context.Context, id string) (store.VaultRecord, error) {
	return r.edit(ctx, id, func(c *configFile, name string, _ *entry) error {
		delete(c.vaults, name)
		return nil
	})
}

// agentsFile is agents.json.
type agentsFile struct {
	Agents map[string]*agentEntry `json:"agents"`
	// Revoked remembers revoked names, which are never given out again:
	// vault configs, in any project, may still grant them access.
	Revoked map[string]time.Time `json:"revoked,omitempty"`
}

type agentEntry struct {
	Hash     string    `json:"sha256"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero"`
}

func (r *Registry) agentsPath() string { return filepath.Join(r.home, "agents.json") }

func (r *Registry) readAgents() (*agentsFile, error) {
	f := &agentsFile{}
	if err := readJSON(r.agentsPath(), f); err != nil {
		return nil, err
	}
	if f.Agents == nil {
		f.Agents = map[string]*agentEntry{}
	}
	return f, nil
}

func (r *Registry) editAgents(ctx context.Context, fn func(*agentsFile) (bool, error)) error {
	f := &agentsFile{}
	return editJSON(ctx, r.agentsPath(), f, func() (bool, error) {
		if f.Agents == nil {
			f.Agents = map[string]*agentEntry{}
		}
		return fn(f)
	})
}

// CreateAgent records a new agent in agents.json.
func (r *Registry) CreateAgent(ctx context.Context, a store.AgentRecord) error {
	return r.editAgents(ctx, func(f *agentsFile) (bool, error) {
		if _, ok := f.Agents[a.Name]; ok {
			return false, fmt.Errorf("agent %q: %w", a.Name, store.ErrExists)
		}
		if when, ok := f.Revoked[a.Name]; ok {
			return false, fmt.Errorf("agent %q was revoked on %s and its name is not given out again, since vaults may still grant it access: %w",
				a.Name, when.Format(time.DateOnly), store.ErrExists)
		}
		f.Agents[a.Name] = &agentEntry{Hash: a.TokenHash, Created: a.Created.UTC(), LastUsed: a.LastUsed.UTC()}
		return true, nil
	})
}

// Agents returns the agents by name.
func (r *Registry) Agents(ctx context.Context) ([]store.AgentRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := r.readAgents()
	if err != nil {
		return nil, err
	}
	out := make([]store.AgentRecord, 0, len(f.Agents))
	for _, name := range slices.Sorted(maps.Keys(f.Agents)) {
		e := f.Agents[name]
		out = append(out, store.AgentRecord{Name: name, TokenHash: e.Hash, Created: e.Created, LastUsed: e.LastUsed})
	}
	return out, nil
}

// AgentByToken compares hash with every agent's in constant time.
func (r *Registry) AgentByToken(ctx context.Context, hash string) (store.AgentRecord, error) {
	agents, err := r.Agents(ctx)
	if err != nil {
		return store.AgentRecord{}, err
	}
	found := -1
	for i, a := range agents {
		if subtle.ConstantTimeCompare([]byte(hash), []byte(a.TokenHash)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return store.AgentRecord{}, fmt.Errorf("agent token: %w", store.ErrNotFound)
	}
	return agents[found], nil
}

// TouchAgent records the agent's last use.
func (r *Registry) TouchAgent(ctx context.Context, name string, at time.Time) error {
	return r.editAgents(ctx, func(f *agentsFile) (bool, error) {
		e, ok := f.Agents[name]
		if !ok {
			return false, fmt.Errorf("agent %q: %w", name, store.ErrNotFound)
		}
		e.LastUsed = at.UTC()
		return true, nil
	})
}

// RevokeAgent deletes the agent and remembers its name.
func (r *Registry) RevokeAgent(ctx context.Context, name string, at time.Time) error {
	return r.editAgents(ctx, func(f *agentsFile) (bool, error) {
		if _, ok := f.Agents[name]; !ok {
			return false, fmt.Errorf("agent %q: %w", name, store.ErrNotFound)
		}
		delete(f.Agents, name)
		if f.Revoked == nil {
			f.Revoked = map[string]time.Time{}
		}
		f.Revoked[name] = at.UTC()
		return true, nil
	})
}

// RevokedAgents returns the revoked names of agents.json with when each
// was revoked.
func (r *Registry) RevokedAgents(ctx context.Context) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := r.readAgents()
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(f.Revoked))
	for name, at := range f.Revoked {
		out[name] = at
	}
	return out, nil
}
