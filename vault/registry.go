package vault

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// Options locate a registry's two scopes.
type Options struct {
	// DataDir is $CTXKIT_HOME: global vaults, their config and agents.
	DataDir string
	// Cwd is where the project root is searched from (walking up to the
	// first .ctxkit/config.json); when none is found, Cwd is the root.
	Cwd string
	// Pool, when set, keeps the vaults' files open between calls (servers).
	Pool *Pool
}

// Registry is the set of vaults visible from a working directory. It holds
// no state beyond its paths: every call reads the config files, so several
// processes can share them.
type Registry struct {
	dataDir string
	root    string
	pool    *Pool
}

// Open returns the registry for opts. It creates nothing.
func Open(opts Options) (*Registry, error) {
	if opts.DataDir == "" || opts.Cwd == "" {
		return nil, errors.New("vault registry: DataDir and Cwd are required")
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", opts.DataDir, err)
	}
	cwd, err := filepath.Abs(opts.Cwd)
	if err != nil {
		return nil, fmt.Errorf("working directory %s: %w", opts.Cwd, err)
	}
	root := findProjectRoot(cwd, dataDir)
	if root == "" {
		root = cwd
	}
	return &Registry{dataDir: dataDir, root: root, pool: opts.Pool}, nil
}

// ProjectRoot is the folder whose .ctxkit/config.json records local vaults.
func (r *Registry) ProjectRoot() string { return r.root }

// ConfigPath returns the config file of a scope.
func (r *Registry) ConfigPath(s Scope) string {
	if s == Global {
		return filepath.Join(r.dataDir, "config.json")
	}
	return filepath.Join(r.root, configDir, "config.json")
}

// InitOptions describe a new vault.
type InitOptions struct {
	Name string
	Type Type // "" is Semantic
	// Path is the vault folder; relative paths are taken from Cwd. Default:
	// .ctxkit/vaults/NAME in the project root (local) or
	// $CTXKIT_HOME/vaults/NAME (global).
	Path string
	// Cwd resolves a relative Path; default the project root.
	Cwd        string
	Scope      Scope // "" is Local
	Restricted bool
	// EmbeddingModel is the embedder spec; "" is "none" for semantic and
	// episodic vaults. Skill vaults take none.
	EmbeddingModel string
}

// Init records a new vault in its scope's config and creates its folder
// (0700 for global vaults) and data folder. A vault of the same name in
// the same scope is ErrExists.
func (r *Registry) Init(ctx context.Context, o InitOptions) (*Vault, error) {
	if err := ValidName(o.Name); err != nil {
		return nil, err
	}
	t, err := ParseType(string(o.Type))
	if err != nil {
		return nil, err
	}
	scope := cmp.Or(o.Scope, Local)
	if scope != Local && scope != Global {
		return nil, fmt.Errorf("%w: scope %q", ErrInvalid, scope)
	}
	if scope == Local && r.ConfigPath(Local) == r.ConfigPath(Global) {
		return nil, fmt.Errorf("%w: a local vault here would be recorded in the global config %s; use a global vault or run from a project folder", ErrInvalid, r.ConfigPath(Global))
	}
	model := o.EmbeddingModel
	switch {
	case t == Skill && model != "" && model != "none":
		return nil, fmt.Errorf("%w: skill vaults do not embed; drop --embedding-model", ErrInvalid)
	case t == Skill:
		model = ""
	case model == "" && t == Semantic && r.builtinInstalled():
		model = "builtin:" + embed.DefaultBuiltinModel
	case model == "":
		model = "none"
	}
	if model != "" {
		if err := ValidEmbeddingModel(model); err != nil {
			return nil, err
		}
	}
	base := r.root
	dirMode := os.FileMode(0o755)
	if scope == Global {
		base, dirMode = r.dataDir, 0o700
	}
	var dir string
	switch {
	case o.Path == "":
		if scope == Global {
			dir = filepath.Join(r.dataDir, "vaults", o.Name)
		} else {
			dir = filepath.Join(r.root, configDir, "vaults", o.Name)
		}
	case filepath.IsAbs(o.Path):
		dir = filepath.Clean(o.Path)
	default:
		dir = filepath.Join(cmp.Or(o.Cwd, r.root), o.Path)
	}
	stored := dir
	if scope == Local {
		if rel, err := filepath.Rel(base, dir); err == nil && filepath.IsLocal(rel) {
			stored = filepath.ToSlash(rel)
		}
	}
	v := &Vault{Name: o.Name, Type: t, Scope: scope, Dir: dir, Restricted: o.Restricted, Agents: map[string]Grant{}, EmbeddingModel: model, pool: r.pool, models: r.ModelsDir()}
	otherScope := Global
	if scope == Global {
		otherScope = Local
	}
	others, err := r.load(otherScope)
	if err != nil {
		return nil, err
	}
	err = editConfig(ctx, r.ConfigPath(scope), scope, func(c *configFile) error {
		for name, e := range c.vaults {
			if strings.EqualFold(name, o.Name) {
				return fmt.Errorf("%w: vault %q in %s", ErrExists, name, c.path)
			}
			if err := overlap(dir, name, r.absPath(scope, e.Path)); err != nil {
				return err
			}
		}
		for _, ov := range others {
			if err := overlap(dir, ov.Name, ov.Dir); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("create vault folder %s: %w", dir, err)
		}
		if err := initDataDir(v.DataDir()); err != nil {
			return err
		}
		if scope == Local {
			if err := writeIfMissing(filepath.Join(r.root, configDir, ".gitignore"), "# written by ctxkit: the lock files of config.json\n*.lock\n"); err != nil {
				return err
			}
		}
		c.vaults[o.Name] = &entry{Type: string(t), Path: stored, Restricted: o.Restricted, EmbeddingModel: model}
		return nil
	})
	if err != nil {
		return nil, err
	}
	detail := "type=" + string(t)
	if model != "" {
		detail += " embedding_model=" + model
	}
	if err := v.Log(ctx, Event{Agent: Owner, Action: "init", Outcome: OK, Detail: detail}); err != nil {
		return nil, err
	}
	return v, nil
}

// overlap refuses a new vault folder dir that is, holds or sits inside the
// folder of vault name.
func overlap(dir, name, other string) error {
	a, b := realPath(dir), realPath(other)
	switch {
	case a == b:
		return fmt.Errorf("%w: folder %s is vault %q", ErrExists, dir, name)
	case within(b, a):
		return fmt.Errorf("%w: folder %s is inside vault %q (%s)", ErrInvalid, dir, name, other)
	case within(a, b):
		return fmt.Errorf("%w: folder %s holds vault %q (%s)", ErrInvalid, dir, name, other)
	}
	return nil
}

// initDataDir creates a vault's data folder (0700) with a .gitignore that
// keeps its contents (audit log, indexes) out of a repository holding the
// vault's documents.
func initDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create vault data folder %s: %w", dir, err)
	}
	return writeIfMissing(filepath.Join(dir, ".gitignore"), "# written by ctxkit: this folder is derived or per-machine data\n*\n")
}

// writeIfMissing creates path with text unless it exists.
func writeIfMissing(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// absPath makes a stored path absolute for its scope.
func (r *Registry) absPath(s Scope, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if s == Global {
		return filepath.Join(r.dataDir, p)
	}
	return filepath.Join(r.root, p)
}

// load reads one scope's vaults.
func (r *Registry) load(s Scope) ([]*Vault, error) {
	c, err := readConfig(r.ConfigPath(s))
	if err != nil {
		return nil, err
	}
	var out []*Vault
	for _, name := range slices.Sorted(maps.Keys(c.vaults)) {
		v, err := r.vault(s, name, c.vaults[name], c.path)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (r *Registry) vault(s Scope, name string, e *entry, path string) (*Vault, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t, err := ParseType(e.Type)
	if err != nil {
		return nil, fmt.Errorf("%s: vault %q: %w", path, name, err)
	}
	if e.Path == "" {
		return nil, fmt.Errorf("%w: %s: vault %q has no path", ErrParse, path, name)
	}
	agents := maps.Clone(e.Agents)
	if agents == nil {
		agents = map[string]Grant{}
	}
	return &Vault{Name: name, Type: t, Scope: s, Dir: r.absPath(s, e.Path), Restricted: e.Restricted,
		Agents: agents, EmbeddingModel: e.EmbeddingModel, pool: r.pool, models: r.ModelsDir()}, nil
}

// List returns every vault: local ones first, then global ones, each by
// name; a global vault with the name of a local one is marked Shadowed.
func (r *Registry) List(ctx context.Context) ([]*Vault, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	local, err := r.load(Local)
	if err != nil {
		return nil, err
	}
	global, err := r.load(Global)
	if err != nil {
		return nil, err
	}
	if r.ConfigPath(Local) == r.ConfigPath(Global) {
		local = nil
	}
	names := map[string]bool{}
	for _, v := range local {
		names[v.Name] = true
	}
	for _, v := range global {
		v.Shadowed = names[v.Name]
	}
	return append(local, global...), nil
}

// Get returns the vault called name (local before global), or ErrNotFound.
// It does not check access: callers acting for an agent call Authorize.
func (r *Registry) Get(ctx context.Context, name string) (*Vault, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	all, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range all {
		if v.Name == name {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
}

// Visible returns the vaults agent may read, as an HTTP API or MCP server
// lists them for an authenticated agent: public vaults and restricted ones
// it is attached to, without shadowed global vaults.
func (r *Registry) Visible(ctx context.Context, agent string) ([]*Vault, error) {
	all, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Vault
	for _, v := range all {
		if !v.Shadowed && v.Allowed(agent, Read) == nil {
			out = append(out, v)
		}
	}
	return out, nil
}

// update edits the recorded entry of the vault name resolves to, under the
// config lock, and logs the change in the vault's audit log.
func (r *Registry) update(ctx context.Context, name, action, detail string, fn func(*entry) error) (*Vault, error) {
	v, err := r.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	var out *Vault
	err = editConfig(ctx, r.ConfigPath(v.Scope), v.Scope, func(c *configFile) error {
		e, ok := c.vaults[name]
		if !ok {
			return fmt.Errorf("%w: %q (removed meanwhile)", ErrNotFound, name)
		}
		if err := fn(e); err != nil {
			return err
		}
		out, err = r.vault(v.Scope, name, e, c.path)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := out.Log(ctx, Event{Agent: Owner, Action: action, Outcome: OK, Detail: detail}); err != nil {
		return nil, err
	}
	return out, nil
}

// Attach grants agent access to the vault and makes it restricted. Attaching
// an attached agent changes its grant.
func (r *Registry) Attach(ctx context.Context, name, agent string, readOnly bool) (*Vault, error) {
	if err := validAgentName(agent); err != nil {
		return nil, err
	}
	detail := "agent=" + agent
	if readOnly {
		detail += " read_only"
	}
	return r.update(ctx, name, "attach", detail, func(e *entry) error {
		if e.Agents == nil {
			e.Agents = map[string]Grant{}
		}
		e.Agents[agent] = Grant{ReadOnly: readOnly}
		e.Restricted = true
		return nil
	})
}

// Detach removes agent's grant (ErrNoAgent when it has none). The vault
// stays restricted, even with no agent left: only the owner can use it then
// until Publish.
func (r *Registry) Detach(ctx context.Context, name, agent string) (*Vault, error) {
	return r.update(ctx, name, "detach", "agent="+agent, func(e *entry) error {
		if _, ok := e.Agents[agent]; !ok {
			return fmt.Errorf("%w: %q is not attached to vault %q", ErrNoAgent, agent, name)
		}
		delete(e.Agents, agent)
		return nil
	})
}

// Publish makes the vault public again and drops every grant.
func (r *Registry) Publish(ctx context.Context, name string) (*Vault, error) {
	return r.update(ctx, name, "publish", "", func(e *entry) error {
		e.Restricted = false
		e.Agents = nil
		return nil
	})
}

// ModelsDir is where builtin embedding models are installed:
// $CTXKIT_HOME/models.
func (r *Registry) ModelsDir() string { return filepath.Join(r.dataDir, "models") }

// builtinInstalled reports whether the default builtin model is installed,
// which makes it the default embedder of new semantic vaults.
func (r *Registry) builtinInstalled() bool {
	_, err := embed.New("builtin", embed.Options{ModelsDir: r.ModelsDir()})
	return err == nil
}

// SetEmbeddingModel changes the embedder pinned for a semantic or episodic
// vault. Its index keeps the vectors of the old model until it is rebuilt
// (Index with Reindex), and refuses queries until then.
func (r *Registry) SetEmbeddingModel(ctx context.Context, name, spec string) (*Vault, error) {
	if err := ValidEmbeddingModel(spec); err != nil {
		return nil, err
	}
	return r.update(ctx, name, "embedding-model", "model="+spec, func(e *entry) error {
		if Type(e.Type) == Skill {
			return fmt.Errorf("%w: skill vaults have no embedder", ErrWrongType)
		}
		e.EmbeddingModel = spec
		return nil
	})
}

// Remove forgets a vault: its config entry goes. With purge, its folder is
// deleted too — unless that folder holds more than a vault would (the
// project root, the home folder, a folder with its own .ctxkit), which is
// refused rather than risked.
func (r *Registry) Remove(ctx context.Context, name string, purge bool) (*Vault, error) {
	v, err := r.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if purge {
		if err := r.checkPurge(v); err != nil {
			return nil, err
		}
	}
	err = editConfig(ctx, r.ConfigPath(v.Scope), v.Scope, func(c *configFile) error {
		if _, ok := c.vaults[name]; !ok {
			return fmt.Errorf("%w: %q (removed meanwhile)", ErrNotFound, name)
		}
		delete(c.vaults, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if purge {
		if r.pool != nil {
			_ = r.pool.drop(v.Dir) // its files go next
		}
		if err := os.RemoveAll(v.Dir); err != nil {
			return v, fmt.Errorf("vault %q is forgotten but its folder %s is not fully deleted: %w", name, v.Dir, err)
		}
	}
	return v, nil
}

func (r *Registry) checkPurge(v *Vault) error {
	dir := filepath.Clean(v.Dir)
	home, _ := os.UserHomeDir()
	for _, keep := range []string{r.root, home, r.dataDir} {
		if keep != "" && filepath.Clean(keep) == dir {
			return fmt.Errorf("%w: vault %q's folder %s is not only the vault's; delete it by hand", ErrInvalid, v.Name, dir)
		}
	}
	if dir == filepath.VolumeName(dir)+string(filepath.Separator) {
		return fmt.Errorf("%w: vault %q's folder is the file system's root", ErrInvalid, v.Name)
	}
	if _, err := os.Stat(filepath.Join(dir, ".ctxkit", "config.json")); err == nil {
		return fmt.Errorf("%w: vault %q's folder %s holds a project (.ctxkit/config.json); delete it by hand", ErrInvalid, v.Name, dir)
	}
	return nil
}
