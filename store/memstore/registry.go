package memstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Registry is an in-memory [store.Registry]: vaults, agents and each
// vault's pin, document metadata and audit log, lost when the process
// exits.
type Registry struct {
	mu      sync.Mutex
	vaults  map[string]store.VaultRecord // by id
	agents  map[string]store.AgentRecord // by name
	revoked map[string]time.Time
	pins    map[string]store.Pin
	meta    map[string]map[string]map[string]string
	audit   map[string][]store.AuditEvent
}

var _ store.Registry = (*Registry)(nil)

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{vaults: map[string]store.VaultRecord{}, agents: map[string]store.AgentRecord{}, revoked: map[string]time.Time{},
		pins: map[string]store.Pin{}, meta: map[string]map[string]map[string]string{}, audit: map[string][]store.AuditEvent{}}
}

func copyVault(v store.VaultRecord) store.VaultRecord {
	v.Grants = maps.Clone(v.Grants)
	if v.Grants == nil {
		v.Grants = map[string]store.Grant{}
	}
	return v
}

// sorted returns the vaults, local ones first, each scope by name.
func (r *Registry) sorted() []store.VaultRecord {
	out := make([]store.VaultRecord, 0, len(r.vaults))
	for _, v := range r.vaults {
		out = append(out, copyVault(v))
	}
	slices.SortFunc(out, func(a, b store.VaultRecord) int {
		return cmp.Or(cmp.Compare(scopeRank(a.Scope), scopeRank(b.Scope)), strings.Compare(a.Name, b.Name))
	})
	return out
}

// scopeRank orders local vaults before global ones.
func scopeRank(scope string) int {
	if scope == store.ScopeLocal {
		return 0
	}
	return 1
}

func (r *Registry) vault(id string) (store.VaultRecord, error) {
	v, ok := r.vaults[id]
	if !ok {
		return store.VaultRecord{}, fmt.Errorf("vault %s: %w", id, store.ErrNotFound)
	}
	return v, nil
}

// Vaults returns every vault.
func (r *Registry) Vaults(ctx context.Context) ([]store.VaultRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sorted(), ctx.Err()
}

// Vault returns one vault.
func (r *Registry) Vault(_ context.Context, id string) (store.VaultRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.vault(id)
	return copyVault(v), err
}

// CreateVault records a vault.
func (r *Registry) CreateVault(_ context.Context, v store.VaultRecord, check func([]store.VaultRecord) error) (store.VaultRecord, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return store.VaultRecord{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v.Scope = cmp.Or(v.Scope, store.ScopeLocal)
	if v.Scope != store.ScopeLocal && v.Scope != store.ScopeGlobal {
		return store.VaultRecord{}, fmt.Errorf("scope %q: want %s or %s: %w", v.Scope, store.ScopeLocal, store.ScopeGlobal, store.ErrNoScope)
	}
	for _, o := range r.vaults {
		if o.Scope == v.Scope && strings.EqualFold(o.Name, v.Name) {
			return store.VaultRecord{}, fmt.Errorf("vault %q: %w", o.Name, store.ErrExists)
		}
	}
	if check != nil {
		if err := check(r.sorted()); err != nil {
			return store.VaultRecord{}, err
		}
	}
	v = copyVault(v)
	v.ID = "v" + hex.EncodeToString(b[:])
	r.vaults[v.ID] = v
	return copyVault(v), nil
}

// UpdateVault changes one vault.
func (r *Registry) UpdateVault(_ context.Context, id string, fn func(*store.VaultRecord) error) (store.VaultRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.vault(id)
	if err != nil {
		return store.VaultRecord{}, err
	}
	v = copyVault(v)
	if err := fn(&v); err != nil {
		return store.VaultRecord{}, err
	}
	r.vaults[id] = copyVault(v)
	return v, nil
}

// DeleteVault forgets one vault and what was kept for it.
func (r *Registry) DeleteVault(_ context.Context, id string) (store.VaultRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.vault(id)
	if err != nil {
		return store.VaultRecord{}, err
	}
	delete(r.vaults, id)
	delete(r.pins, id)
	delete(r.meta, id)
	delete(r.audit, id)
	return v, nil
}

// CreateAgent records an agent.
func (r *Registry) CreateAgent(_ context.Context, a store.AgentRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.agents[a.Name]; ok {
		return fmt.Errorf("agent %q: %w", a.Name, store.ErrExists)
	}
	if when, ok := r.revoked[a.Name]; ok {
		return fmt.Errorf("agent %q was revoked on %s and its name is not given out again: %w", a.Name, when.Format(time.DateOnly), store.ErrExists)
	}
	r.agents[a.Name] = a
	return nil
}

// Agents returns the agents by name.
func (r *Registry) Agents(ctx context.Context) ([]store.AgentRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]store.AgentRecord, 0, len(r.agents))
	for _, name := range slices.Sorted(maps.Keys(r.agents)) {
		out = append(out, r.agents[name])
	}
	return out, ctx.Err()
}

// AgentByToken finds the agent whose token hash is hash.
func (r *Registry) AgentByToken(_ context.Context, hash string) (store.AgentRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.agents {
		if subtle.ConstantTimeCompare([]byte(a.TokenHash), []byte(hash)) == 1 {
			return a, nil
		}
	}
	return store.AgentRecord{}, fmt.Errorf("agent token: %w", store.ErrNotFound)
}

// TouchAgent records a use.
func (r *Registry) TouchAgent(_ context.Context, name string, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[name]
	if !ok {
		return fmt.Errorf("agent %q: %w", name, store.ErrNotFound)
	}
	a.LastUsed = at
	r.agents[name] = a
	return nil
}

// RevokeAgent deletes an agent and keeps its name.
func (r *Registry) RevokeAgent(_ context.Context, name string, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.agents[name]; !ok {
		return fmt.Errorf("agent %q: %w", name, store.ErrNotFound)
	}
	delete(r.agents, name)
	r.revoked[name] = at
	return nil
}

// RevokedAgents returns the revoked names with when each was revoked.
func (r *Registry) RevokedAgents(ctx context.Context) (map[string]time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.revoked), ctx.Err()
}

// Pin returns a vault's pin.
func (r *Registry) Pin(_ context.Context, id string) (store.Pin, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.vault(id); err != nil {
		return store.Pin{}, false, err
	}
	p, ok := r.pins[id]
	return p, ok, nil
}

// SetPin sets or removes a vault's pin.
func (r *Registry) SetPin(_ context.Context, id string, p *store.Pin) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.vault(id); err != nil {
		return err
	}
	if p == nil {
		delete(r.pins, id)
	} else {
		r.pins[id] = *p
	}
	return nil
}

// DocMeta returns a vault's document metadata.
func (r *Registry) DocMeta(_ context.Context, id string) (map[string]map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.vault(id); err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for p, m := range r.meta[id] {
		out[p] = maps.Clone(m)
	}
	return out, nil
}

// SetDocMeta sets or removes documents' metadata.
func (r *Registry) SetDocMeta(_ context.Context, id string, meta map[string]map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.vault(id); err != nil {
		return err
	}
	m := r.meta[id]
	if m == nil {
		m = map[string]map[string]string{}
		r.meta[id] = m
	}
	for p, md := range meta {
		if md == nil {
			delete(m, p)
		} else {
			m[p] = maps.Clone(md)
		}
	}
	return nil
}

// AppendAudit appends an event.
func (r *Registry) AppendAudit(_ context.Context, id string, e store.AuditEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.vault(id); err != nil {
		return err
	}
	r.audit[id] = append(r.audit[id], e)
	return nil
}

// Audit returns the last n events.
func (r *Registry) Audit(_ context.Context, id string, n int) ([]store.AuditEvent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.vault(id); err != nil {
		return nil, err
	}
	evs := r.audit[id]
	if n > 0 && len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	return slices.Clone(evs), nil
}
