// Package vaultpool keeps one open document index and one open episode
// store per vault for a backend, opened on first use and kept until the
// vault is forgotten or dropped or the backend closes, and guards the
// writes of the handles it hands out: a write through a handle that
// outlives its vault (deleted, or deleted and created again under the same
// name, by this process or another) fails with store.ErrNotFound instead
// of going into data nobody will read again. (A read through such a handle
// reads what the vault held, or fails once the handle is closed.)
package vaultpool

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/index"
)

// Guard reports whether a handle's data is still the vault's: nil, or an
// error wrapping store.ErrNotFound once it is gone (any other error says
// the check itself failed).
type Guard func(ctx context.Context) error

// Openers open a vault's stores; each returns the handle and its guard.
type Openers struct {
	Index    func(ctx context.Context, vaultID string) (index.Index, Guard, error)
	Episodes func(ctx context.Context, vaultID string) (episodic.Store, Guard, error)
}

// Pool holds the open handles of a backend's vaults.
type Pool struct {
	open     Openers
	mu       sync.Mutex
	indexes  map[string]held[index.Index]
	episodes map[string]held[episodic.Store]
}

type held[T interface{ Close() error }] struct {
	h T
	g Guard
}

// New returns an empty pool that opens with o.
func New(o Openers) *Pool {
	return &Pool{open: o, indexes: map[string]held[index.Index]{}, episodes: map[string]held[episodic.Store]{}}
}

// get returns m's live handle for id, opening it (again) when there is none
// or its guard says its data is gone. The guard of a held handle (which
// may read the registry) runs outside the pool's lock, so that lookups of
// other vaults do not wait for it; opening runs under it (once per vault,
// rarely).
func get[T interface{ Close() error }](ctx context.Context, mu *sync.Mutex, m map[string]held[T], id string,
	open func(context.Context, string) (T, Guard, error)) (held[T], error) {
	mu.Lock()
	e, ok := m[id]
	mu.Unlock()
	if ok {
		err := e.g(ctx)
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return held[T]{}, err // the check failed, not the handle
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if cur, ok := m[id]; ok {
		err := cur.g(ctx)
		switch {
		case err == nil:
			return cur, nil // opened again meanwhile
		case !errors.Is(err, store.ErrNotFound):
			return held[T]{}, err
		}
		delete(m, id)
		_ = cur.h.Close() // its data is gone; nothing to lose
	}
	h, g, err := open(ctx, id)
	if err != nil {
		return held[T]{}, err
	}
	e = held[T]{h, g}
	m[id] = e
	return e, nil
}

// Index returns the vault's document index.
func (p *Pool) Index(ctx context.Context, vaultID string) (index.Index, error) {
	e, err := get(ctx, &p.mu, p.indexes, vaultID, p.open.Index)
	if err != nil {
		return nil, err
	}
	return guardedIndex{e.h, e.g}, nil
}

// Episodes returns the vault's episode store.
func (p *Pool) Episodes(ctx context.Context, vaultID string) (episodic.Store, error) {
	e, err := get(ctx, &p.mu, p.episodes, vaultID, p.open.Episodes)
	if err != nil {
		return nil, err
	}
	return guardedEpisodes{e.h, e.g}, nil
}

// Registry returns r whose DeleteVault also closes the vault's handles in
// the pool: a forgotten vault holds nothing open.
func (p *Pool) Registry(r store.Registry) store.Registry { return registry{r, p} }

type registry struct {
	store.Registry
	p *Pool
}

func (r registry) DeleteVault(ctx context.Context, id string) (store.VaultRecord, error) {
	rec, err := r.Registry.DeleteVault(ctx, id)
	if err == nil {
		// The handles' writes already fail (their guard); one that does
		// not close cleanly holds nothing anyone could read again.
		_ = r.p.Drop(id)
	}
	return rec, err
}

// Drop closes the vault's handles.
func (p *Pool) Drop(vaultID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	if e, ok := p.indexes[vaultID]; ok {
		errs = append(errs, e.h.Close())
		delete(p.indexes, vaultID)
	}
	if e, ok := p.episodes[vaultID]; ok {
		errs = append(errs, e.h.Close())
		delete(p.episodes, vaultID)
	}
	return errors.Join(errs...)
}

// Close closes every handle.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, e := range p.indexes {
		errs = append(errs, e.h.Close())
	}
	for _, e := range p.episodes {
		errs = append(errs, e.h.Close())
	}
	clear(p.indexes)
	clear(p.episodes)
	return errors.Join(errs...)
}

// guarded runs a write between two checks of g: the first keeps a write
// from going into deleted data; the second reports one that raced with a
// deletion, so that it is never acknowledged as stored.
func guarded(ctx context.Context, g Guard, write func() error) error {
	if err := g(ctx); err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	return g(context.WithoutCancel(ctx))
}

// guardedIndex is an index handle whose writes are guarded and whose
// Close leaves the pool's handle open.
type guardedIndex struct {
	index.Index
	g Guard
}

func (x guardedIndex) Put(ctx context.Context, d index.Doc, c []index.Chunk) error {
	return guarded(ctx, x.g, func() error { return x.Index.Put(ctx, d, c) })
}

func (x guardedIndex) Delete(ctx context.Context, path string) error {
	return guarded(ctx, x.g, func() error { return x.Index.Delete(ctx, path) })
}

// Rebuild guards the start of the rebuild and its builder's writes.
func (x guardedIndex) Rebuild(ctx context.Context) (index.Builder, error) {
	var b index.Builder
	err := guarded(ctx, x.g, func() (err error) {
		b, err = x.Index.Rebuild(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return guardedBuilder{b, x.g}, nil
}

func (guardedIndex) Close() error { return nil }

// guardedBuilder is a rebuild whose writes are guarded.
type guardedBuilder struct {
	index.Builder
	g Guard
}

func (b guardedBuilder) Put(ctx context.Context, d index.Doc, c []index.Chunk) error {
	return guarded(ctx, b.g, func() error { return b.Builder.Put(ctx, d, c) })
}

func (b guardedBuilder) Commit(ctx context.Context) error {
	return guarded(ctx, b.g, func() error { return b.Builder.Commit(ctx) })
}

// guardedEpisodes is an episode store handle whose writes are guarded and
// whose Close leaves the pool's handle open.
type guardedEpisodes struct {
	episodic.Store
	g Guard
}

func (s guardedEpisodes) Apply(ctx context.Context, c *episodic.Change, now time.Time) (time.Time, error) {
	var at time.Time
	err := guarded(ctx, s.g, func() (err error) {
		at, err = s.Store.Apply(ctx, c, now)
		return err
	})
	return at, err
}

func (s guardedEpisodes) Import(ctx context.Context, recs []*episodic.Record) error {
	return guarded(ctx, s.g, func() error { return s.Store.Import(ctx, recs) })
}

func (guardedEpisodes) Close() error { return nil }

// WhileRecorded returns Openers that open with openIndex and openEpisodes
// once reg records the vault, guarded for as long as it does: for backends
// whose per-vault data has no life of its own outside the registry (in
// memory, or rows keyed by a vault id that is never given out again).
func WhileRecorded(reg store.Registry, openIndex func(ctx context.Context, id string) (index.Index, error),
	openEpisodes func(ctx context.Context, id string) (episodic.Store, error)) Openers {
	guard := func(ctx context.Context, id string) (Guard, error) {
		if _, err := reg.Vault(ctx, id); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			_, err := reg.Vault(ctx, id)
			return err
		}, nil
	}
	return Openers{
		Index: func(ctx context.Context, id string) (index.Index, Guard, error) {
			g, err := guard(ctx, id)
			if err != nil {
				return nil, nil, err
			}
			x, err := openIndex(ctx, id)
			return x, g, err
		},
		Episodes: func(ctx context.Context, id string) (episodic.Store, Guard, error) {
			g, err := guard(ctx, id)
			if err != nil {
				return nil, nil, err
			}
			s, err := openEpisodes(ctx, id)
			return s, g, err
		},
	}
}
