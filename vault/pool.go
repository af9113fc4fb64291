package vault

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// Pool keeps the SQLite files of vaults open between calls. A server
// answering many requests (ctxkit serve) gives its registry one, so each
// vault's index and episode store are opened once instead of per request;
// the CLI, which makes one call, does without. It also keeps each semantic
// vault's Searcher (lexicon and vectors in memory) for Vault.Query,
// reloaded when the index changes. Handles from a pool ignore Close;
// Pool.Close closes them.
type Pool struct {
	mu        sync.Mutex
	indexes   map[string]*sqliteindex.Index
	episodes  map[string]*sqliteepisodic.Store
	searchers map[string]*pooledSearcher // by vault folder
	// embedders are kept by spec: a builtin model reads its weights once.
	embedders map[string]embedderResult
}

type embedderResult struct {
	e   embed.Embedder
	err error
}

// embedder returns the embedder for spec, made once.
func (p *Pool) embedder(spec, models string) (embed.Embedder, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := spec + "\x00" + models
	if r, ok := p.embedders[key]; ok {
		return r.e, r.err
	}
	e, err := embed.New(spec, embed.Options{ModelsDir: models})
	if errors.Is(err, embed.ErrUnavailable) {
		return e, err // not cached: the model may be installed meanwhile
	}
	p.embedders[key] = embedderResult{e, err}
	return e, err
}

// pooledSearcher is a vault's Searcher (lexicon and vectors in memory) and
// the index generation and embedder it was loaded at.
type pooledSearcher struct {
	mu       sync.Mutex
	s        *Searcher
	gen      int64
	spec     string
	building bool
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{indexes: map[string]*sqliteindex.Index{}, episodes: map[string]*sqliteepisodic.Store{},
		searchers: map[string]*pooledSearcher{}, embedders: map[string]embedderResult{}}
}

// searcher returns v's Searcher, loading it again when the index has
// changed since (its generation moved) or the vault's embedder did. While
// one caller reloads, the others keep answering from the previous one: a
// generation behind, as a query that started a moment earlier would be.
func (p *Pool) searcher(ctx context.Context, v *Vault) (*Searcher, error) {
	p.mu.Lock()
	ps := p.searchers[v.Dir]
	if ps == nil {
		ps = &pooledSearcher{}
		p.searchers[v.Dir] = ps
	}
	p.mu.Unlock()
	idx, err := v.openIndex(ctx)
	if err != nil {
		return nil, err
	}
	gen, err := idx.Generation(ctx)
	if err != nil {
		return nil, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	ps.mu.Lock()
	if ps.s != nil && (ps.building || (ps.gen == gen && ps.spec == v.EmbeddingModel)) {
		s := ps.s
		ps.mu.Unlock()
		return s, nil
	}
	ps.building = true
	ps.mu.Unlock()
	s, err := v.searcher(ctx, nil, true)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.building = false
	if err != nil {
		return nil, err
	}
	ps.s, ps.gen, ps.spec = s, gen, v.EmbeddingModel
	return s, nil
}

// pooled is a handle whose Close leaves the pool's file open.
type pooledIndex struct{ index.Index }

func (pooledIndex) Close() error { return nil }

func (p *Pool) index(ctx context.Context, path string) (index.Index, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x, ok := p.indexes[path]; ok {
		return pooledIndex{x}, nil
	}
	x, err := sqliteindex.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	p.indexes[path] = x
	return pooledIndex{x}, nil
}

func (p *Pool) episodeStore(ctx context.Context, path string) (*sqliteepisodic.Store, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.episodes[path]; ok {
		return s, nil
	}
	s, err := sqliteepisodic.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	p.episodes[path] = s
	return s, nil
}

// drop closes what the pool holds in dir (before its files are deleted).
func (p *Pool) drop(dir string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for path, x := range p.indexes {
		if filepath.Dir(filepath.Dir(path)) == dir {
			errs = append(errs, x.Close())
			delete(p.indexes, path)
		}
	}
	for path, s := range p.episodes {
		if filepath.Dir(filepath.Dir(path)) == dir {
			errs = append(errs, s.Close())
			delete(p.episodes, path)
		}
	}
	delete(p.searchers, dir)
	return errors.Join(errs...)
}

// Close closes every file the pool holds.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, x := range p.indexes {
		errs = append(errs, x.Close())
	}
	for _, s := range p.episodes {
		errs = append(errs, s.Close())
	}
	p.indexes, p.episodes = map[string]*sqliteindex.Index{}, map[string]*sqliteepisodic.Store{}
	p.searchers = map[string]*pooledSearcher{}
	return errors.Join(errs...)
}
