// Package vault is memory for agents organised as vaults: self-contained,
// directory-backed units with an explicit type (semantic, skill, episodic)
// that a person can open, read and edit at any time. This package is the one
// Go API behind every interface — the CLI now, the HTTP API and the MCP
// server later — so they cannot drift apart.
//
// A Registry finds vaults in two scopes: local vaults recorded in
// .ctxkit/config.json of the project root (found by walking up from the
// working directory, as git does; paths relative to that root so the file
// can be committed), and global vaults under $CTXKIT_HOME/vaults, recorded
// in $CTXKIT_HOME/config.json. A local vault shadows a global one of the
// same name. Config writes hold an OS file lock and replace the file
// atomically; fields this package does not know are kept.
//
// Access: vaults are public until an agent is attached; then only attached
// agents see them (others get ErrNotFound, as if the vault did not exist),
// and read-only grants cannot write (ErrForbidden). Agents authenticate with
// tokens of which only a SHA-256 hash is stored. The owner (the CLI user) is
// not subject to the ACL. Each vault keeps an append-only audit log of every
// write and every refused access.
package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotFound: no such vault, or a restricted vault the agent is not
	// attached to (the two are not told apart to the agent).
	ErrNotFound = errors.New("vault not found")
	// ErrForbidden: the agent sees the vault but may not do this (a write
	// through a read-only grant).
	ErrForbidden = errors.New("access forbidden")
	// ErrExists: a vault or agent of that name already exists in the scope.
	ErrExists = errors.New("already exists")
	// ErrInvalid: a name, type, path or embedding model spec is malformed.
	ErrInvalid = errors.New("invalid argument")
	// ErrOutside: a path leaves its vault (absolute, "..", or a symlink).
	ErrOutside = errors.New("path leaves the vault")
	// ErrWrongType: the operation does not fit the vault's type.
	ErrWrongType = errors.New("operation does not fit the vault type")
	// ErrParse: a configuration file is not valid JSON of the expected
	// shape; nothing was changed.
	ErrParse = errors.New("configuration file does not parse")
	// ErrNoAgent: no agent of that name.
	ErrNoAgent = errors.New("no such agent")
	// ErrUnauthenticated: the token matches no agent.
	ErrUnauthenticated = errors.New("invalid agent token")
)

// Type is a vault's kind, fixed at init.
type Type string

// The vault types.
const (
	Semantic Type = "semantic" // documents, chunked and searched
	Skill    Type = "skill"    // SKILL.md instructions with frontmatter
	Episodic Type = "episodic" // time-stamped facts with validity windows
)

// types lists the vault types in their documented order.
var types = []Type{Semantic, Skill, Episodic}

// ParseType checks a type name; the empty string is Semantic.
func ParseType(s string) (Type, error) {
	if s == "" {
		return Semantic, nil
	}
	if t := Type(strings.ToLower(s)); slices.Contains(types, t) {
		return t, nil
	}
	return "", fmt.Errorf("%w: vault type %q (want semantic, skill or episodic)", ErrInvalid, s)
}

// commands names the CLI commands that fit each type, for Require's message.
var commands = map[Type]string{
	Semantic: "index, reindex, watch, query, docs, write, delete",
	Skill:    "index, skills, skill, write-skill",
	Episodic: "write-episode, episodes, episode, invalidate, supersede, revise, confirm, dispute, export, import",
}

// Scope says where a vault is recorded.
type Scope string

// The scopes.
const (
	Local  Scope = "local"  // .ctxkit/config.json of the project
	Global Scope = "global" // $CTXKIT_HOME/config.json
)

// Op is what an agent asks to do, for the ACL.
type Op string

// The operations the ACL tells apart.
const (
	Read  Op = "read"
	Write Op = "write"
)

// Owner is the identity of the vaults' owner (the CLI user) in audit logs
// and access checks; it is never subject to the ACL and no agent may take
// the name.
const Owner = "owner"

// Grant is an agent's access to a restricted vault.
type Grant struct {
	ReadOnly bool `json:"read_only,omitempty"`
}

// Vault is one vault as recorded in a registry. Its fields are a snapshot
// of the configuration when it was loaded.
type Vault struct {
	Name  string
	Type  Type
	Scope Scope
	// Dir is the vault folder, absolute.
	Dir string
	// Restricted: only the agents in Agents (and the owner) may use it.
	Restricted bool
	Agents     map[string]Grant
	// EmbeddingModel is the embedder spec pinned at init ("none",
	// "builtin", "ollama:MODEL", "openai:MODEL"); empty for skill vaults.
	EmbeddingModel string
	// Shadowed marks a global vault hidden by a local one of the same name
	// (set only in List).
	Shadowed bool

	pool   *Pool  // the registry's, if any
	models string // where builtin models are installed
}

// DataDirName is the folder inside each vault that holds ctxkit's own
// files (audit log, indexes); it is never a document.
const DataDirName = ".ctxkit-vault"

// DataDir returns the vault's own data folder.
func (v *Vault) DataDir() string { return filepath.Join(v.Dir, DataDirName) }

// ValidName checks a vault or agent name: 1 to 64 letters, digits, '-',
// '_' or '.', and not "." or "..".
func ValidName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: name %q must be 1 to 64 characters", ErrInvalid, name)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%w: name %q", ErrInvalid, name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return fmt.Errorf("%w: name %q may hold only letters, digits, '-', '_' and '.'", ErrInvalid, name)
		}
	}
	return nil
}

// ValidEmbeddingModel checks an embedder spec's syntax: "none", "builtin",
// "builtin:MODEL", "ollama:MODEL" or "openai:MODEL", MODEL without spaces.
// Whether the model exists is checked when it is first used.
func ValidEmbeddingModel(spec string) error {
	provider, model, hasModel := strings.Cut(spec, ":")
	bad := func(why string) error {
		return fmt.Errorf("%w: embedding model %q: %s (want none, builtin, ollama:MODEL or openai:MODEL)", ErrInvalid, spec, why)
	}
	if strings.ContainsAny(model, " \t\r\n") {
		return bad("the model name has spaces")
	}
	switch provider {
	case "none":
		if hasModel {
			return bad("none takes no model")
		}
	case "builtin":
		if hasModel && model == "" {
			return bad("empty model")
		}
	case "ollama", "openai":
		if model == "" {
			return bad("the model is missing")
		}
	default:
		return bad("unknown provider")
	}
	return nil
}

// Require checks that the vault has one of types; otherwise the error
// (ErrWrongType) names the vault's type and the commands that fit it.
func (v *Vault) Require(types ...Type) error {
	if slices.Contains(types, v.Type) {
		return nil
	}
	want := make([]string, len(types))
	for i, t := range types {
		want[i] = string(t)
	}
	return fmt.Errorf("%w: %q is a %s vault, this needs a %s vault; %s vaults take: %s",
		ErrWrongType, v.Name, v.Type, strings.Join(want, " or "), v.Type, commands[v.Type])
}

// Allowed says whether agent may do op on the vault: nil, ErrNotFound for
// a restricted vault the agent is not attached to (or an anonymous caller,
// agent ""), ErrForbidden for a write through a read-only grant. The Owner
// is always allowed. Allowed logs nothing; Authorize does.
func (v *Vault) Allowed(agent string, op Op) error {
	if agent == Owner || !v.Restricted {
		return nil
	}
	g, ok := v.Agents[agent]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, v.Name)
	}
	if op != Read && g.ReadOnly {
		return fmt.Errorf("%w: agent %q has read-only access to vault %q", ErrForbidden, agent, v.Name)
	}
	return nil
}

// Resolve turns a path a caller names inside the vault (slash or OS
// separated, relative to the vault folder) into an absolute path, refusing
// (ErrOutside) absolute paths, paths that climb out with "..", paths into
// the vault's data folder, and paths whose existing part leads out through
// a symlink. The path need not exist. "" and "." are the vault folder.
func (v *Vault) Resolve(rel string) (string, error) {
	if strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%w: %q holds a NUL byte", ErrOutside, rel)
	}
	slashed := strings.ReplaceAll(rel, `\`, "/")
	if filepath.IsAbs(rel) || strings.HasPrefix(slashed, "/") || filepath.VolumeName(rel) != "" {
		return "", fmt.Errorf("%w: %q is absolute", ErrOutside, rel)
	}
	clean := filepath.Clean(filepath.FromSlash(slashed))
	if !filepath.IsLocal(clean) && clean != "." {
		return "", fmt.Errorf("%w: %q", ErrOutside, rel)
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(clean), "/"); first == DataDirName {
		return "", fmt.Errorf("%w: %q is ctxkit's own data", ErrOutside, rel)
	}
	root, err := filepath.EvalSymlinks(v.Dir)
	if err != nil {
		return "", fmt.Errorf("vault %q folder %s: %w", v.Name, v.Dir, err)
	}
	abs := filepath.Join(root, clean)
	// Follow the longest existing prefix: a symlink anywhere in it must
	// stay inside the vault.
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscallNotDir) {
			return "", fmt.Errorf("resolve %q in vault %q: %w", rel, v.Name, err)
		}
		parent := filepath.Dir(existing)
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrOutside, rel, err)
	}
	if !within(root, real) {
		return "", fmt.Errorf("%w: %q leads out through a symbolic link", ErrOutside, rel)
	}
	out := filepath.Join(real, rest)
	if r, err := filepath.Rel(root, out); err == nil {
		if first, _, _ := strings.Cut(filepath.ToSlash(r), "/"); first == DataDirName {
			return "", fmt.Errorf("%w: %q is ctxkit's own data", ErrOutside, rel)
		}
	}
	return out, nil
}

// within reports whether p is root or below it (both cleaned, absolute).
func within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && (r == "." || filepath.IsLocal(r))
}
