package vault

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/embed"
)

// VaultInfo describes a vault to its caller: the one wire shape of a vault
// for every front end.
type VaultInfo struct {
	Name string `json:"name"`
	Type Type   `json:"type" jsonschema:"semantic (documents), skill (procedures) or episodic (time-stamped statements)"`
	// Scope is local (the project's) or global.
	Scope      Scope `json:"scope" jsonschema:"local (this project) or global"`
	Restricted bool  `json:"restricted" jsonschema:"only attached agents can see the vault"`
	// EmbeddingModel is empty for skill vaults.
	EmbeddingModel string `json:"embedding_model,omitempty" jsonschema:"the embedder pinned for the vault; none means lexical search only"`
	// Access is what the caller may do.
	Access string `json:"access" jsonschema:"read-write, or read-only when you can read and query but not write"`
	// Path, Agents and Shadowed are shown to the owner only: an agent
	// learns nothing of the owner's folders or of other agents.
	Path     string       `json:"path,omitempty" jsonschema:"the vault's folder (owner only)"`
	Agents   []AgentGrant `json:"agents,omitempty" jsonschema:"the attached agents and their grants (owner only)"`
	Shadowed bool         `json:"shadowed,omitempty" jsonschema:"a global vault hidden by a local one of the same name (owner only)"`
}

// AgentGrant is an agent attached to a restricted vault.
type AgentGrant struct {
	Agent    string `json:"agent"`
	ReadOnly bool   `json:"read_only"`
}

// info describes v to c.
func info(v *Vault, c Caller) VaultInfo {
	out := VaultInfo{Name: v.Name, Type: v.Type, Scope: v.Scope, Restricted: v.Restricted, EmbeddingModel: v.EmbeddingModel,
		Access: v.Access(c)}
	if c.IsOwner() {
		out.Path, out.Shadowed = v.Dir, v.Shadowed
		for _, name := range slices.Sorted(maps.Keys(v.Agents)) {
			out.Agents = append(out.Agents, AgentGrant{Agent: name, ReadOnly: v.Agents[name].ReadOnly})
		}
	}
	return out
}

// ListVaults returns the vaults c may use: for an agent, the public vaults
// and the restricted ones it is attached to; for the owner every vault,
// shadowed global vaults included (marked).
func (s *Service) ListVaults(ctx context.Context, c Caller) ([]VaultInfo, error) {
	vs, err := s.visible(ctx, c)
	out := []VaultInfo{}
	for _, v := range vs {
		out = append(out, info(v, c))
	}
	return out, err
}

// NoVaults explains an empty ListVaults to c: where the vaults were looked
// for, and how to create one. An agent is told nothing of folders.
func (s *Service) NoVaults(c Caller) string {
	if !c.IsOwner() {
		return fmt.Sprintf("No vaults that agent %q may use: it sees the public vaults and the restricted ones it is attached to.", c.Name())
	}
	if s.Hosted() {
		return "No vaults in this store: it hosts its vaults, global to every machine that uses it.\n" +
			"Create one with: ctxkit vault init NAME"
	}
	global := fmt.Sprintf("none global in the data directory %s ($CTXKIT_HOME)", s.home)
	if s.root == "" {
		return "No vaults: no project (local vaults are read from the .ctxkit/config.json of the project found walking up " +
			"from the working directory), and " + global + ".\nCreate one with: ctxkit vault init NAME --global"
	}
	if fi, err := os.Stat(filepath.Join(s.root, ".ctxkit", "config.json")); err == nil && !fi.IsDir() {
		return fmt.Sprintf("No vaults: none local in the project at %s (found walking up from the working directory), and %s.\n"+
			"Create one with: ctxkit vault init NAME (local to this project), or with --global", s.root, global)
	}
	return fmt.Sprintf("No vaults: no project at %s or above (a project is the first folder holding .ctxkit/config.json, "+
		"walking up from the working directory; its local vaults are listed from there), and %s.\n"+
		"Create one with: ctxkit vault init NAME (local, which makes %s a project), or with --global", s.root, global, s.root)
}

// visible returns the vaults c may list: every one for the owner (shadowed
// ones too), else those c may read.
func (s *Service) visible(ctx context.Context, c Caller) ([]*Vault, error) {
	all, err := s.vaults(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Vault
	for _, v := range all {
		if c.IsOwner() || (!v.Shadowed && v.allowed(c, Read) == nil) {
			out = append(out, v)
		}
	}
	return out, nil
}

// DescribeVault describes one vault c may see.
func (s *Service) DescribeVault(ctx context.Context, c Caller, name string) (VaultInfo, error) {
	v, err := s.open(ctx, c, name, Read, "describe", "")
	if err != nil {
		return VaultInfo{}, err
	}
	return info(v, c), nil
}

// CreateVaultRequest describes a new vault.
type CreateVaultRequest struct {
	Name string `json:"name" jsonschema:"1 to 64 letters, digits, '-', '_' or '.'"`
	// Type defaults to semantic.
	Type Type `json:"type,omitempty" jsonschema:"semantic (default), skill or episodic"`
	// Scope defaults to local when there is a project, else global; on a
	// backend that hosts vaults (Service.Hosted) a vault is global.
	Scope Scope `json:"scope,omitempty" jsonschema:"local (the project's, default) or global"`
	// Path is the vault folder: absolute, or relative to the project root
	// (local) or to $CTXKIT_HOME (global; it must stay in its vaults
	// folder). The CLI makes a path relative to the working directory
	// absolute.
	// Default .ctxkit/vaults/NAME in the project root (local) or
	// $CTXKIT_HOME/vaults/NAME (global). A hosted vault has none.
	Path       string `json:"path,omitempty" jsonschema:"the vault folder, absolute or relative to the project root"`
	Restricted bool   `json:"restricted,omitempty" jsonschema:"only attached agents (and the owner) may use it"`
	// EmbeddingModel defaults to builtin for semantic vaults once the
	// builtin model is installed, else none; skill vaults take none.
	EmbeddingModel string `json:"embedding_model,omitempty" jsonschema:"none, builtin, ollama:MODEL or openai:MODEL; not for skill vaults"`
}

// CreateVault records a new vault and creates its folder (0700 for global
// vaults). On a backend that hosts vaults (Service.Hosted) the vault has
// no folder: it is global, and a path or the local scope is refused. The
// owner only, but for a caller from AssertedCaller, which creates vaults
// as CtxVault lets anyone, in the default place (no path, no embedder).
func (s *Service) CreateVault(ctx context.Context, c Caller, req CreateVaultRequest) (VaultInfo, error) {
	switch {
	case c.asserted != "" && (req.Path != "" || req.EmbeddingModel != ""):
		// CtxVault lets anyone create a vault; a caller nobody
		// authenticated gets that, but never chooses a folder on disk or
		// an embedder.
		field := "embedding_model"
		if req.Path != "" {
			field = "path"
		}
		return VaultInfo{}, &Error{Kind: ErrForbidden, Msg: fmt.Sprintf("an unauthenticated caller creates vaults in the default place only; %s is the owner's choice", field),
			Field: field, Fix: "leave it out, or ask the owner (ctxkit vault create)"}
	case c.asserted != "": // CtxVault's model: anyone creates a vault
	default:
		if err := s.ownerOnly(ctx, c, nil, "create"); err != nil {
			return VaultInfo{}, err
		}
	}
	if err := ValidName(req.Name); err != nil {
		return VaultInfo{}, err
	}
	t, err := ParseType(string(req.Type))
	if err != nil {
		return VaultInfo{}, err
	}
	hosted := s.b.Hosted()
	scope := req.Scope
	if scope == "" {
		scope = Local
		if s.root == "" || hosted {
			scope = Global
		}
	}
	if scope != Local && scope != Global {
		return VaultInfo{}, invalid("scope", "scope %q: want local or global", scope)
	}
	if hosted {
		return s.createHosted(ctx, c, req, t, scope)
	}
	if scope == Local && s.root == "" {
		return VaultInfo{}, invalid("scope", "no project here to record a local vault in; create a global vault, or run from a project folder")
	}
	model, err := s.defaultModel(t, req.EmbeddingModel)
	if err != nil {
		return VaultInfo{}, err
	}
	dir, dirMode := s.vaultDir(scope, req.Name, req.Path)
	if err := s.checkFolder(dir); err != nil {
		return VaultInfo{}, err
	}
	if scope == Local && !s.inProject(dir) {
		return VaultInfo{}, invalid("path", "a local vault's folder must be inside the project %s; for a folder elsewhere, create a global vault", s.root)
	}
	rec, err := s.reg.CreateVault(ctx, store.VaultRecord{Name: req.Name, Type: string(t), Scope: string(scope), Dir: dir,
		Restricted: req.Restricted, EmbeddingModel: model}, func(existing []store.VaultRecord) error {
		for _, o := range existing {
			if o.Dir == "" {
				continue // hosted: no folder
			}
			if err := overlap(dir, o.Name, o.Dir); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, store.ErrExists) {
		return VaultInfo{}, &Error{Kind: ErrExists, Msg: fmt.Sprintf("a vault named %q exists already in the %s scope", req.Name, scope), Field: "name"}
	}
	if err != nil {
		return VaultInfo{}, err
	}
	// The folder is made once the vault is recorded, so that a refused
	// create leaves nothing behind.
	if err := os.MkdirAll(dir, dirMode); err != nil {
		if _, derr := s.reg.DeleteVault(context.WithoutCancel(ctx), rec.ID); derr != nil {
			err = errors.Join(err, fmt.Errorf("forget the vault again: %w", derr))
		}
		return VaultInfo{}, fmt.Errorf("create vault folder %s: %w", dir, err)
	}
	return s.created(ctx, c, rec), nil
}

// created audits the creation of the vault rec and describes it.
func (s *Service) created(ctx context.Context, c Caller, rec store.VaultRecord) VaultInfo {
	v := fromRecord(rec)
	detail := "type=" + string(v.Type)
	if v.EmbeddingModel != "" {
		detail += " embedding_model=" + v.EmbeddingModel
	}
	s.audit(ctx, v, c, "create", "", detail)
	return info(v, c)
}

// createHosted records a vault whose documents the backend hosts: global,
// without a folder.
func (s *Service) createHosted(ctx context.Context, c Caller, req CreateVaultRequest, t Type, scope Scope) (VaultInfo, error) {
	if scope == Local {
		return VaultInfo{}, &Error{Kind: ErrInvalid, Field: "scope",
			Msg: "this store hosts its vaults for every machine that uses it: a vault here is global, not one project's",
			Fix: "create it as a global vault (leave the scope out, or set it to global)"}
	}
	if req.Path != "" {
		return VaultInfo{}, &Error{Kind: ErrInvalid, Field: "path",
			Msg: fmt.Sprintf("this store keeps vault %q's documents itself, not in a folder: a vault here has no path", req.Name),
			Fix: fmt.Sprintf("create it without a path (--path); then write documents (ctxkit vault write), or upload a local folder: ctxkit vault index %s --from DIR", req.Name)}
	}
	model, err := s.defaultModel(t, req.EmbeddingModel)
	if err != nil {
		return VaultInfo{}, err
	}
	rec, err := s.reg.CreateVault(ctx, store.VaultRecord{Name: req.Name, Type: string(t), Scope: string(scope),
		Restricted: req.Restricted, EmbeddingModel: model}, nil)
	if errors.Is(err, store.ErrExists) {
		return VaultInfo{}, &Error{Kind: ErrExists, Msg: fmt.Sprintf("a vault named %q exists already in the %s scope", req.Name, scope), Field: "name"}
	}
	if err != nil {
		return VaultInfo{}, err
	}
	return s.created(ctx, c, rec), nil
}

// defaultModel checks the embedder of a new vault of type t, or picks it.
func (s *Service) defaultModel(t Type, model string) (string, error) {
	switch {
	case t == Skill && model != "" && model != embed.None:
		return "", invalid("embedding_model", "skill vaults do not embed; drop the embedding model")
	case t == Skill:
		return "", nil
	case model == "" && t == Semantic && s.builtinInstalled():
		return "builtin:" + embed.DefaultBuiltinModel, nil
	case model == "":
		return embed.None, nil
	}
	return EmbeddingModelSpec(model)
}

// builtinInstalled reports whether the default builtin model is installed,
// which makes it the default embedder of new semantic vaults.
func (s *Service) builtinInstalled() bool {
	_, err := embed.New("builtin", embed.Options{ModelsDir: s.ModelsDir()})
	return err == nil
}

// vaultDir is the folder of a new vault, and the mode to create it with.
func (s *Service) vaultDir(scope Scope, name, path string) (string, os.FileMode) {
	base, mode := s.root, os.FileMode(0o755)
	if scope == Global {
		base, mode = s.home, 0o700
	}
	switch {
	case path == "" && scope == Global:
		return filepath.Join(s.home, "vaults", name), mode
	case path == "":
		return filepath.Join(s.root, ".ctxkit", "vaults", name), mode
	case filepath.IsAbs(path):
		return filepath.Clean(path), mode
	}
	return filepath.Join(base, path), mode
}

// checkFolder refuses a vault folder that would expose more than a vault:
// the file system's root, the home folder, a folder holding ctxkit's data
// directory, or one inside it but for its vaults folder (where global
// vaults live).
func (s *Service) checkFolder(dir string) error {
	real := realPath(dir)
	if real == filepath.VolumeName(real)+string(filepath.Separator) {
		return invalid("path", "a vault folder cannot be the file system's root")
	}
	if home, err := os.UserHomeDir(); err == nil && real == realPath(home) {
		return invalid("path", "a vault folder cannot be your home folder %s; use a folder inside it", dir)
	}
	p := s.protected
	vaults := filepath.Join(p, "vaults")
	if within(real, p) || (within(p, real) && (real == vaults || !within(vaults, real))) {
		return invalid("path", "folder %s holds or is inside ctxkit's data directory %s", dir, s.home)
	}
	return nil
}

// overlap refuses a new vault folder dir that is, holds or sits inside the
// folder of vault name.
func overlap(dir, name, other string) error {
	a, b := realPath(dir), realPath(other)
	switch {
	case a == b:
		return &Error{Kind: ErrExists, Msg: fmt.Sprintf("folder %s is vault %q's", dir, name), Field: "path"}
	case within(b, a):
		return invalid("path", "folder %s is inside vault %q (%s)", dir, name, other)
	case within(a, b):
		return invalid("path", "folder %s holds vault %q (%s)", dir, name, other)
	}
	return nil
}

// update changes a vault's record (the owner only) and audits it.
func (s *Service) update(ctx context.Context, c Caller, name, action, detail string, check func(*Vault) error, fn func(*store.VaultRecord) error) (VaultInfo, error) {
	v, err := s.lookup(ctx, c, name)
	if err != nil {
		return VaultInfo{}, err
	}
	return s.updateVault(ctx, c, v, action, detail, check, fn)
}

// updateVault is update on the vault v.
func (s *Service) updateVault(ctx context.Context, c Caller, v *Vault, action, detail string, check func(*Vault) error, fn func(*store.VaultRecord) error) (VaultInfo, error) {
	if err := s.ownerOnly(ctx, c, v, action); err != nil {
		return VaultInfo{}, err
	}
	if check != nil {
		if err := check(v); err != nil {
			return VaultInfo{}, err
		}
	}
	rec, err := s.reg.UpdateVault(ctx, v.ID, fn)
	if err != nil {
		return VaultInfo{}, err
	}
	nv := fromRecord(rec)
	s.audit(ctx, nv, c, action, "", detail)
	return info(nv, c), nil
}

// Attach grants agent access to the vault and makes it restricted;
// attaching an attached agent changes its grant. The agent must exist
// (ErrNotFound otherwise: a typo would restrict the vault to nobody but
// the owner). The owner only.
func (s *Service) Attach(ctx context.Context, c Caller, name, agent string, readOnly bool) (VaultInfo, error) {
	if err := validAgentName(agent); err != nil {
		return VaultInfo{}, err
	}
	detail := "agent=" + agent
	if readOnly {
		detail += " read_only"
	}
	exists := func(*Vault) error { return s.agentExists(ctx, agent) }
	return s.update(ctx, c, name, "attach", detail, exists, func(r *store.VaultRecord) error {
		if r.Grants == nil {
			r.Grants = map[string]store.Grant{}
		}
		r.Grants[agent] = Grant{ReadOnly: readOnly}
		r.Restricted = true
		return nil
	})
}

// agentExists checks that agent is a current agent: created, and not
// revoked.
func (s *Service) agentExists(ctx context.Context, agent string) error {
	agents, err := s.reg.Agents(ctx)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(agents, func(a store.AgentRecord) bool { return a.Name == agent }) {
		return nil
	}
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("there is no agent %q; attaching it would restrict the vault to the owner alone", agent),
		Fix: "create the agent first (ctxkit agent create " + agent + "), or check the name: ctxkit agent list", Field: "agent"}
}

// Detach removes agent's grant (ErrNotFound when it has none). The vault
// stays restricted, even with no agent left: only the owner can use it
// then, until Publish.
func (s *Service) Detach(ctx context.Context, c Caller, name, agent string) (VaultInfo, error) {
	return s.update(ctx, c, name, "detach", "agent="+agent, nil, func(r *store.VaultRecord) error {
		if _, ok := r.Grants[agent]; !ok {
			return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("agent %q is not attached to vault %q", agent, name), Field: "agent"}
		}
		delete(r.Grants, agent)
		return nil
	})
}

// Publish makes the vault public again and drops every grant.
func (s *Service) Publish(ctx context.Context, c Caller, name string) (VaultInfo, error) {
	return s.update(ctx, c, name, "publish", "", nil, func(r *store.VaultRecord) error {
		r.Restricted = false
		clear(r.Grants)
		return nil
	})
}

// SetEmbeddingModel changes the embedder of a semantic or episodic vault.
// A semantic vault's index keeps the vectors of the old model until it is
// rebuilt (Index with Reindex), and refuses queries until then. An
// episodic vault keeps the embedder its first statements were written with
// (its statements cannot be embedded again): the change is refused once
// it has any.
func (s *Service) SetEmbeddingModel(ctx context.Context, c Caller, name, model string) (VaultInfo, error) {
	spec, err := EmbeddingModelSpec(model)
	if err != nil {
		return VaultInfo{}, err
	}
	check := func(v *Vault) error {
		if v.Type != Skill {
			// Moving to an embedder that cannot run would leave the vault
			// with neither: it is installed first.
			if _, err := s.embedder(spec); err != nil {
				return err
			}
		}
		switch v.Type {
		case Skill:
			return &Error{Kind: ErrWrongType, Msg: "skill vaults have no embedder", Field: "embedding_model"}
		case Episodic:
			p, pinned, err := s.reg.Pin(ctx, v.ID)
			if err != nil {
				return err
			}
			if pinned && p.Model != spec {
				return &Error{Kind: ErrInvalid, Field: "embedding_model",
					Msg: fmt.Sprintf("episodic vault %q holds statements embedded with %s, which cannot be embedded again", v.Name, p.Model),
					Fix: "create a new episodic vault with --embedding-model " + spec + " for the statements to come"}
			}
		}
		return nil
	}
	return s.update(ctx, c, name, "embedding-model", "model="+spec, check, func(r *store.VaultRecord) error {
		r.EmbeddingModel = spec
		return nil
	})
}

// RemoveVault forgets a vault. With purge, its stored data and its folder
// (a hosted vault's files) are deleted too, unless that folder holds more than a vault would (a
// project of its own), which is refused rather than risked. The owner
// only.
func (s *Service) RemoveVault(ctx context.Context, c Caller, name string, purge bool) (VaultInfo, error) {
	v, err := s.lookup(ctx, c, name)
	if err != nil {
		return VaultInfo{}, err
	}
	if err := s.ownerOnly(ctx, c, v, "remove"); err != nil {
		return VaultInfo{}, err
	}
	if purge && !v.Hosted() {
		if err := s.checkPurge(v); err != nil {
			return VaultInfo{}, err
		}
	}
	detail := ""
	if purge {
		detail = "purge"
	}
	s.audit(ctx, v, c, "remove", "", detail) // kept with the folder, unless purged
	rec, err := s.reg.DeleteVault(ctx, v.ID)
	if err != nil {
		return VaultInfo{}, err
	}
	s.forgetSearcher(v.ID)
	out := info(v, c)
	if !purge {
		return out, nil
	}
	if err := s.b.DropVault(ctx, rec); err != nil {
		return out, fmt.Errorf("vault %q is forgotten but its stored data is not fully deleted: %w", name, err)
	}
	if v.Hosted() {
		return out, nil // its files went with its stored data
	}
	if err := os.RemoveAll(v.Dir); err != nil {
		return out, fmt.Errorf("vault %q is forgotten but its folder %s is not fully deleted: %w", name, v.Dir, err)
	}
	return out, nil
}

func (s *Service) checkPurge(v *Vault) error {
	dir := realPath(v.Dir)
	if s.root != "" && dir == realPath(s.root) {
		return invalid("purge", "vault %q's folder %s is the project's; delete it by hand", v.Name, v.Dir)
	}
	if err := s.checkFolder(dir); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, ".ctxkit", "config.json")); err == nil {
		return invalid("purge", "vault %q's folder %s holds a project (.ctxkit/config.json); delete it by hand", v.Name, v.Dir)
	}
	return nil
}

// AuditEvent is one entry of a vault's audit log.
type AuditEvent struct {
	Time    time.Time `json:"time"`
	Agent   string    `json:"agent" jsonschema:"an agent's name, or owner"`
	Action  string    `json:"action"`
	Path    string    `json:"path,omitempty" jsonschema:"the document, skill or episode, when there is one"`
	Outcome string    `json:"outcome" jsonschema:"ok or refused"`
	Reason  string    `json:"reason,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	// Repeated counts the refusals like this one that were not logged
	// one by one since the previous one that was.
	Repeated int `json:"repeated,omitempty"`
}

// DefaultAuditEvents is how many audit events a front end shows when the
// caller does not say.
const DefaultAuditEvents = 100

// Audit returns the last n events of a vault's audit log, oldest first
// (all of them when n is 0). The owner only.
func (s *Service) Audit(ctx context.Context, c Caller, name string, n int) ([]AuditEvent, error) {
	if n < 0 {
		return nil, invalid("n", "n must be 0 (all) or more")
	}
	v, err := s.lookup(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if err := s.ownerOnly(ctx, c, v, "audit"); err != nil {
		return nil, err
	}
	evs, err := s.reg.Audit(ctx, v.ID, n)
	if err != nil {
		return nil, err
	}
	out := make([]AuditEvent, len(evs))
	for i, e := range evs {
		out[i] = AuditEvent(e)
		out[i].Time = e.Time.UTC()
	}
	return out, nil
}

// lastUsedEvery bounds how often authentication records an agent's use.
const lastUsedEvery = time.Minute

// AgentInfo describes an agent, never its token.
type AgentInfo struct {
	Name     string     `json:"name"`
	Created  time.Time  `json:"created"`
	LastUsed *time.Time `json:"last_used,omitempty"`
}

// CreateAgent creates an agent and returns its token, which is shown this
// once: only its SHA-256 hash is stored. The owner only.
func (s *Service) CreateAgent(ctx context.Context, c Caller, name string) (string, error) {
	if err := s.ownerOnly(ctx, c, nil, "create-agent"); err != nil {
		return "", err
	}
	if err := validAgentName(name); err != nil {
		return "", err
	}
	token, err := newToken(TokenPrefix)
	if err != nil {
		return "", err
	}
	err = s.reg.CreateAgent(ctx, store.AgentRecord{Name: name, TokenHash: hashToken(token), Created: s.now().UTC().Truncate(time.Second)})
	if errors.Is(err, store.ErrExists) {
		return "", &Error{Kind: ErrExists, Msg: err.Error(), Field: "name", Fix: "choose another name"}
	}
	if err != nil {
		return "", err
	}
	return token, nil
}

// Agents lists the agents by name. The owner only.
func (s *Service) Agents(ctx context.Context, c Caller) ([]AgentInfo, error) {
	if err := s.ownerOnly(ctx, c, nil, "list-agents"); err != nil {
		return nil, err
	}
	recs, err := s.reg.Agents(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]AgentInfo, len(recs))
	for i, a := range recs {
		out[i] = AgentInfo{Name: a.Name, Created: a.Created}
		if !a.LastUsed.IsZero() {
			out[i].LastUsed = &a.LastUsed
		}
	}
	return out, nil
}

// RevokeAgent deletes the agent: its token stops working at once, for every
// instance sharing the backend. Its grants stay in the vaults' records
// (which may be committed); revoked names are never given out again. The
// owner only.
func (s *Service) RevokeAgent(ctx context.Context, c Caller, name string) error {
	if err := s.ownerOnly(ctx, c, nil, "revoke-agent"); err != nil {
		return err
	}
	err := s.reg.RevokeAgent(ctx, name, s.now().UTC().Truncate(time.Second))
	if errors.Is(err, store.ErrNotFound) {
		return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("no agent named %q", name), Field: "name"}
	}
	return err
}

// Authenticate returns the caller a bearer token belongs to: the owner for
// the owner's token, an agent for an agent's; ErrUnauthenticated
// otherwise. An agent's last use is recorded (at most once a minute).
func (s *Service) Authenticate(ctx context.Context, token string) (Caller, error) {
	if strings.HasPrefix(token, OwnerTokenPrefix) {
		if s.isOwnerToken(ctx, token) {
			return Owner(), nil
		}
		return Caller{}, errBadToken
	}
	if !strings.HasPrefix(token, TokenPrefix) {
		return Caller{}, errBadToken
	}
	a, err := s.reg.AgentByToken(ctx, hashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, errBadToken
	}
	if err != nil {
		return Caller{}, err
	}
	if now := s.now().UTC(); now.Sub(a.LastUsed) >= lastUsedEvery {
		if err := s.reg.TouchAgent(ctx, a.Name, now.Truncate(time.Second)); errors.Is(err, store.ErrNotFound) {
			return Caller{}, errBadToken // revoked meanwhile
		} else if err != nil {
			return Caller{}, err
		}
	}
	return Caller{name: a.Name}, nil
}

var errBadToken = &Error{Kind: ErrUnauthenticated, Msg: "invalid token: it matches no agent (revoked?) and is not the owner's",
	Fix: "send an agent's token (ctxkit agent create NAME prints one) or the owner's"}

// ActAs returns the caller acting as the agent called name, for the owner
// who delegates to it (a local process the owner starts for an agent, as
// `ctxkit mcp --agent NAME`): the agent's access applies from then on. The
// agent must exist.
func (s *Service) ActAs(ctx context.Context, c Caller, name string) (Caller, error) {
	if !c.IsOwner() {
		return Caller{}, &Error{Kind: ErrForbidden, Msg: "only the owner may act as an agent"}
	}
	if name == "" || name == OwnerName {
		return Owner(), nil
	}
	if err := validAgentName(name); err != nil {
		return Caller{}, err
	}
	agents, err := s.reg.Agents(ctx)
	if err != nil {
		return Caller{}, err
	}
	if !slices.ContainsFunc(agents, func(a store.AgentRecord) bool { return a.Name == name }) {
		return Caller{}, &Error{Kind: ErrUnauthenticated, Msg: fmt.Sprintf("no agent named %s", name), Field: "agent",
			Fix: fmt.Sprintf("create it with ctxkit agent create %s (then attach it to its vaults), or act as the owner", name)}
	}
	return Caller{name: name}, nil
}
