// Package vault is memory for agents organised as vaults: units with an
// explicit type (semantic, skill, episodic) whose documents a person can
// open, read and edit at any time. The [Service] is the one Go API behind
// every front end (the CLI, the REST API under /v1, the CtxVault-compatible
// API under /ctxvault and the MCP server): each operation takes the
// [Caller] and enforces, itself and once, authorization, validation
// (names, paths, limits, times) and the audit log, so that the front ends
// only translate wire shapes and cannot disagree.
//
// Storage is a [store.Backend]'s: the vault registry (vaults, agents,
// grants, embedder pins, document metadata, audit), and per vault its
// document index, its episodes and its document files ([store.Files]),
// keyed by the vault's id. A vault's documents are the files of its folder
// on this machine, or, on a backend that hosts them (a database several
// machines share), rows of the backend: written through the service or
// uploaded from a local folder ([Service.UploadDocs]). The service reads,
// writes, lists and deletes documents and skills through [store.Files]
// only, so that both kinds of vault answer alike. This package
// imports interfaces only; the backend is chosen by URL by the program.
//
// Access: vaults are public until an agent is attached; then only attached
// agents see them (others get ErrNotFound, as if the vault did not exist),
// and read-only grants cannot write (ErrForbidden). Agents authenticate with
// tokens of which only a SHA-256 hash is stored. The owner (the local user)
// is not subject to the ACL. Every write and every refused access is logged
// in the vault's audit log; refusals are coalesced so that a caller cannot
// grow the log without bound.
package vault

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/embed"
)

// Sentinel errors, checked with errors.Is. Every error the service returns
// for something the caller did wraps one of them (or one of package
// episodic's); [Describe] gives its class for a front end.
var (
	// ErrNotFound: no such vault, or a restricted vault the caller is not
	// attached to (the two are told apart only by ErrRestricted, which
	// only the CtxVault-compatible routes read); also no such document or
	// skill.
	ErrNotFound = errors.New("not found")
	// ErrForbidden: the caller sees the vault but may not do this (a write
	// through a read-only grant, an administrative operation by an agent).
	ErrForbidden = errors.New("access forbidden")
	// ErrExists: a vault, agent, document or skill of that name already
	// exists.
	ErrExists = errors.New("already exists")
	// ErrInvalid: a name, type, path, limit, time or embedding model spec is
	// malformed or out of range.
	ErrInvalid = errors.New("invalid argument")
	// ErrOutside: a path leaves its vault (absolute, "..", a symlink, or
	// into ctxkit's own or hidden files).
	ErrOutside = errors.New("path leaves the vault")
	// ErrWrongType: the operation does not fit the vault's type.
	ErrWrongType = errors.New("operation does not fit the vault type")
	// ErrUnauthenticated: the token matches no agent and is not the
	// owner's, or names no agent.
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrRestricted marks, besides ErrNotFound, a refusal because the
	// vault is restricted and the caller is not attached to it. Front ends
	// answer it exactly like a missing vault; only the CtxVault-compatible
	// routes tell it apart (403 there, as CtxVault answers).
	ErrRestricted = errors.New("restricted vault")
)

// errNotAttached is the kind of a refusal on a restricted vault: not
// found, and restricted.
var errNotAttached = fmt.Errorf("%w (%w)", ErrNotFound, ErrRestricted)

// Type is a vault's kind, fixed at creation.
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
	return "", invalid("type", "vault type %q: want semantic, skill or episodic", s)
}

// Scope says where a vault is recorded.
type Scope string

// The scopes.
const (
	Local  Scope = store.ScopeLocal  // the project's
	Global Scope = store.ScopeGlobal // the user's, visible from every project
)

// Op is what the ACL tells apart.
type Op string

// The operations the ACL tells apart.
const (
	Read  Op = "read"
	Write Op = "write"
)

// OwnerName is the owner's name in audit logs; no agent may take it.
const OwnerName = "owner"

// Caller is who asks: the owner, or an authenticated agent. Front ends get
// one from the service ([Service.Authenticate], [Service.ActAs]) or use
// [Owner]; the zero Caller is anonymous and refused everywhere. A caller
// from [AssertedCaller] is named, or anonymous, by an assertion nobody
// checked (CtxVault's X-CtxVault-Agent header).
type Caller struct {
	name string
	// asserted says how an unauthenticated identity was asserted ("" for
	// an authenticated one); the audit log records it.
	asserted string
}

// AssertedCaller is the caller an unauthenticated transport names, as
// CtxVault trusts its X-CtxVault-Agent header: name is an agent's name,
// which need not exist, or "" for an anonymous caller; via says how it was
// asserted, for the audit log. Such a caller is never the owner; it may
// read and write the public vaults and the restricted ones name is
// attached to, and create vaults in the default place (CtxVault's model,
// for a server on the loopback only). A name that is not an agent name,
// or is the owner's, is ErrInvalid.
func AssertedCaller(name, via string) (Caller, error) {
	if name != "" {
		if err := validAgentName(name); err != nil {
			return Caller{}, err
		}
	}
	return Caller{name: name, asserted: cmp.Or(via, "assertion")}, nil
}

// withAssertion adds to an audit line's detail how the caller's identity
// was asserted, when it was not authenticated.
func (c Caller) withAssertion(detail string) string {
	if c.asserted == "" {
		return detail
	}
	note := "identity asserted by " + c.asserted + ", not authenticated"
	if detail == "" {
		return note
	}
	return detail + "; " + note
}

// Asserted reports how the caller's identity was asserted without
// authentication ("" when it was authenticated).
func (c Caller) Asserted() string { return c.asserted }

// Owner is the vaults' owner, not subject to the ACL.
func Owner() Caller { return Caller{name: OwnerName} }

// Name is the caller's name: an agent's, or OwnerName.
func (c Caller) Name() string { return c.name }

// IsOwner reports whether the caller is the owner.
func (c Caller) IsOwner() bool { return c.name == OwnerName }

// String is the caller's name, or "anonymous".
func (c Caller) String() string {
	if c.name == "" {
		return "anonymous"
	}
	return c.name
}

// Grant is an agent's access to a restricted vault.
type Grant = store.Grant

// Vault is a vault as the registry records it, with what the service
// derives from the record.
type Vault struct {
	// ID identifies the vault in its backend for its whole life.
	ID    string
	Name  string
	Type  Type
	Scope Scope
	// Dir is the vault folder, absolute; empty for a vault whose
	// documents the backend hosts (on a backend whose Hosted is true).
	Dir string
	// Restricted: only the agents in Agents (and the owner) may use it.
	Restricted bool
	Agents     map[string]Grant
	// EmbeddingModel is the embedder spec pinned at creation ("none",
	// "builtin", "builtin:MODEL", "ollama:MODEL", "openai:MODEL"); empty
	// for skill vaults.
	EmbeddingModel string
	// Shadowed marks a global vault hidden by a local one of the same name.
	Shadowed bool

	rec store.VaultRecord // as the registry recorded it
}

func fromRecord(r store.VaultRecord) *Vault {
	return &Vault{ID: r.ID, Name: r.Name, Type: Type(r.Type), Scope: Scope(r.Scope), Dir: r.Dir, Restricted: r.Restricted,
		Agents: r.Grants, EmbeddingModel: r.EmbeddingModel, rec: r}
}

// Hosted reports whether the backend keeps the vault's documents (it has
// no folder).
func (v *Vault) Hosted() bool { return v.Dir == "" }

// allowed says whether c may do op on v: nil, ErrNotFound for a restricted
// vault c is not attached to (or an anonymous caller), ErrForbidden for a
// write through a read-only grant. The owner is always allowed.
func (v *Vault) allowed(c Caller, op Op) error {
	if c.IsOwner() {
		return nil
	}
	if c.name == "" && c.asserted == "" {
		return fmt.Errorf("vault %q: %w", v.Name, ErrNotFound)
	}
	if !v.Restricted {
		return nil
	}
	g, ok := v.Agents[c.name]
	if !ok || c.name == "" {
		return fmt.Errorf("vault %q: %w", v.Name, errNotAttached)
	}
	if op != Read && g.ReadOnly {
		return &Error{Kind: ErrForbidden, Msg: fmt.Sprintf("agent %q has read-only access to vault %q", c.name, v.Name),
			Fix: "read and query it, but write to a vault where your access is read-write, or ask the owner for write access"}
	}
	return nil
}

// Access is what c may do with v: "read-write" or "read-only".
func (v *Vault) Access(c Caller) string {
	if v.allowed(c, Write) != nil {
		return "read-only"
	}
	return "read-write"
}

// commands names the operations that fit each type, for wrong-type errors.
var commands = map[Type]string{
	Semantic: "index, reindex, query, docs, read, write, delete",
	Skill:    "skills, skill, write-skill",
	Episodic: "write-episode, episodes, episode, history, invalidate, supersede, revise, confirm, dispute, entities, stats, export, import",
}

// require checks that v has one of types; otherwise the error names the
// vault's type and the operations that fit it.
func (v *Vault) require(types ...Type) error {
	if slices.Contains(types, v.Type) {
		return nil
	}
	want := make([]string, len(types))
	for i, t := range types {
		want[i] = string(t)
	}
	return &Error{Kind: ErrWrongType,
		Msg: fmt.Sprintf("%q is %s vault, this needs %s vault", v.Name, english.A(string(v.Type)), english.A(strings.Join(want, " or "))),
		Fix: fmt.Sprintf("%s vaults take: %s", v.Type, commands[v.Type])}
}

// ValidName checks a vault or agent name: 1 to 64 letters, digits, '-',
// '_' or '.', and not "." or "..".
func ValidName(name string) error {
	if name == "" || len(name) > 64 {
		return invalid("name", "name %q must be 1 to 64 characters", name)
	}
	if name == "." || name == ".." {
		return invalid("name", "name %q", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return invalid("name", "name %q may hold only letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}

// validAgentName is ValidName, and not the owner's name.
func validAgentName(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if name == OwnerName {
		return invalid("agent", "%q is reserved for the vaults' owner", name)
	}
	return nil
}

// EmbeddingModelSpec returns the spec a vault pins for what the user
// called its embedder (embed.Resolve): a spec, "none", "builtin",
// "builtin:MODEL", "ollama:MODEL" or "openai:MODEL" (MODEL without
// spaces), or a sentence-transformers model name such as
// all-MiniLM-L6-v2, which is the builtin embedder's. Whether the model is
// installed is checked when it is used.
func EmbeddingModelSpec(name string) (string, error) {
	spec, err := embed.Resolve(name)
	if err != nil {
		return "", invalid("embedding_model", "%v", err)
	}
	return spec, nil
}

// ValidEmbeddingModel checks what EmbeddingModelSpec takes.
func ValidEmbeddingModel(name string) error {
	_, err := EmbeddingModelSpec(name)
	return err
}
