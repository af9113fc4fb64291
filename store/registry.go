package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors of the registry and the key-value store, besides
// ErrNotFound and ErrConflict.
var (
	// ErrExists: a vault of that name already exists in its scope, or an
	// agent of that name exists or existed (revoked names are not given
	// out again).
	ErrExists = errors.New("already exists")
	// ErrCorrupt: what the backend holds does not parse (a hand-edited
	// configuration file); nothing was changed.
	ErrCorrupt = errors.New("stored data does not parse")
	// ErrNoScope: the registry cannot record a vault in that scope here
	// (a local vault with no project to record it in).
	ErrNoScope = errors.New("scope not available here")
)

// Vault scopes: where a vault is recorded. Backends without files keep the
// scope as a field; the file registry keeps local vaults in the project's
// .ctxkit/config.json and global ones in $CTXKIT_HOME/config.json.
const (
	ScopeLocal  = "local"
	ScopeGlobal = "global"
)

// VaultRecord is a vault as the registry records it. The rules (what a
// name may be, who may do what) belong to package vault; the registry
// stores and returns records as given.
type VaultRecord struct {
	// ID identifies the vault for its whole life, and is never given to
	// another vault, even one of the same name: per-vault stores are
	// keyed by it. Assigned by CreateVault.
	ID    string
	Name  string
	Type  string
	Scope string
	// Dir is the vault's folder, absolute; empty for a vault whose
	// documents the backend hosts (see [Backend.Hosted]).
	Dir        string
	Restricted bool
	// Grants are the agents attached to a restricted vault.
	Grants map[string]Grant
	// EmbeddingModel is the embedder spec pinned at creation.
	EmbeddingModel string
}

// Grant is an agent's access to a restricted vault.
type Grant struct {
	ReadOnly bool `json:"read_only,omitempty"`
}

// AgentRecord is an agent as the registry records it: never its token,
// only the token's hash.
type AgentRecord struct {
	Name      string
	TokenHash string
	Created   time.Time
	LastUsed  time.Time // zero until first used
}

// AuditEvent is one entry of a vault's audit log.
type AuditEvent struct {
	Time    time.Time
	Agent   string // an agent's name, or "owner"
	Action  string // the operation: write-doc, attach, query-episodes, ...
	Path    string // inside the vault (a document, a skill, an episode id), when there is one
	Outcome string // "ok" or "refused"
	Reason  string // why it was refused
	Detail  string
	// Repeated counts refusals like this one that were not logged one by
	// one since the last logged one (refusals are coalesced so that a
	// caller cannot grow the log without bound).
	Repeated int
}

// Pin is the embedder a vault's vectors were made with, so that they are
// never searched or extended with another model's.
type Pin struct {
	Model string `json:"model"`
	Dim   int    `json:"dim"`
}

// Registry records vaults and agents, and per vault the embedder pin,
// the metadata of written documents and the audit log. Every method is
// atomic: concurrent callers, in this process or others sharing the
// backend, never lose each other's changes.
type Registry interface {
	// Vaults returns every vault, local ones first, each scope by name.
	Vaults(ctx context.Context) ([]VaultRecord, error)
	// Vault returns the vault with this id, or ErrNotFound.
	Vault(ctx context.Context, id string) (VaultRecord, error)
	// CreateVault records v and returns it with its new ID. A vault of
	// the same name (case-insensitively) in the same scope is ErrExists.
	// check, when set, runs before the record is written, atomically
	// with it, with every vault recorded at that moment; its error is
	// returned unchanged and nothing is written.
	CreateVault(ctx context.Context, v VaultRecord, check func(existing []VaultRecord) error) (VaultRecord, error)
	// UpdateVault changes the vault with this id through fn, atomically,
	// and returns the new record. ErrNotFound when it is not recorded.
	// fn must not change ID, Name, Scope or Dir.
	UpdateVault(ctx context.Context, id string, fn func(*VaultRecord) error) (VaultRecord, error)
	// DeleteVault forgets a vault and returns its last record.
	DeleteVault(ctx context.Context, id string) (VaultRecord, error)

	// CreateAgent records a new agent. A name that exists, or was
	// revoked, is ErrExists.
	CreateAgent(ctx context.Context, a AgentRecord) error
	// Agents returns every agent, by name.
	Agents(ctx context.Context) ([]AgentRecord, error)
	// AgentByToken returns the agent whose token has this hash, or
	// ErrNotFound.
	AgentByToken(ctx context.Context, hash string) (AgentRecord, error)
	// TouchAgent records a use of the agent at at.
	TouchAgent(ctx context.Context, name string, at time.Time) error
	// RevokeAgent deletes an agent (ErrNotFound when there is none) and
	// keeps its name from being given out again.
	RevokeAgent(ctx context.Context, name string, at time.Time) error
	// RevokedAgents returns the names of revoked agents with when each was revoked.
	RevokedAgents(ctx context.Context) (map[string]time.Time, error)

	// Pin returns a vault's embedder pin; ok is false when none is set.
	Pin(ctx context.Context, vaultID string) (p Pin, ok bool, err error)
	// SetPin sets a vault's embedder pin; a nil pin removes it.
	SetPin(ctx context.Context, vaultID string, p *Pin) error

	// DocMeta returns the metadata of a vault's written documents, by
	// path.
	DocMeta(ctx context.Context, vaultID string) (map[string]map[string]string, error)
	// SetDocMeta sets the metadata of documents by path, atomically; a
	// nil map removes a path's.
	SetDocMeta(ctx context.Context, vaultID string, meta map[string]map[string]string) error

	// AppendAudit appends an event to a vault's audit log.
	AppendAudit(ctx context.Context, vaultID string, e AuditEvent) error
	// Audit returns the last n events of a vault's audit log, oldest
	// first (every event when n <= 0).
	Audit(ctx context.Context, vaultID string, n int) ([]AuditEvent, error)
}

// KV is a small key-value store with expiry, for what is neither a
// workspace nor a vault (the guard's summaries). Keys are namespaced by
// their users ("guard/digest/…").
type KV interface {
	// Get returns the value of key, or ErrNotFound when there is none or
	// it has expired at now.
	Get(ctx context.Context, key string, now time.Time) ([]byte, error)
	// Put sets key to value; a ttl > 0 makes it expire at now+ttl.
	Put(ctx context.Context, key string, value []byte, now time.Time, ttl time.Duration) error
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
	// DeleteExpired removes every key expired at now and says how many.
	DeleteExpired(ctx context.Context, now time.Time) (int, error)
	// Each calls fn with every key not expired at now, by key, with its value and expiry (zero when none).
	Each(ctx context.Context, now time.Time, fn func(key string, value []byte, expires time.Time) error) error
}
