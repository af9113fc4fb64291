package vault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// episodesFile is the episodic store inside the data folder.
const episodesFile = "episodes.db"

// Episodes is an episodic vault opened for one agent: the rules of package
// episodic over the vault's store, with the vault's access control on
// every change and every change in its audit log.
type Episodes struct {
	*episodic.Memory
	store  *sqliteepisodic.Store
	pooled bool
}

// Close releases the store (a pool's stays open).
func (e *Episodes) Close() error {
	if e.pooled {
		return nil
	}
	return e.store.Close()
}

// OpenEpisodes opens an episodic vault for agent (Owner for the CLI): its
// read access is checked now, its write access before each change. The
// vault's embedder (or override) embeds new statements; a vault written
// with one model refuses another.
func (v *Vault) OpenEpisodes(ctx context.Context, agent string, override embed.Embedder) (*Episodes, error) {
	if err := v.Authorize(ctx, agent, Read, "open-episodes", ""); err != nil {
		return nil, err
	}
	if err := v.Require(Episodic); err != nil {
		return nil, err
	}
	e, err := v.embedder(override)
	if err != nil {
		return nil, err
	}
	p, err := v.readPin()
	if err != nil {
		return nil, err
	}
	if err := v.checkPin(p, e); err != nil {
		return nil, err
	}
	if p == nil && e != nil {
		if err := v.writePin(pin{Model: e.Spec()}); err != nil {
			return nil, fmt.Errorf("pin the embedder: %w", err)
		}
	}
	if err := os.MkdirAll(v.DataDir(), 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(v.DataDir(), episodesFile)
	var s *sqliteepisodic.Store
	if v.pool != nil {
		s, err = v.pool.episodeStore(ctx, path)
	} else {
		s, err = sqliteepisodic.Open(ctx, path)
	}
	if err != nil {
		return nil, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	m := episodic.New(s, episodic.Options{
		Embedder: e,
		Authorize: func(ctx context.Context, action, id string) error {
			return v.Authorize(ctx, agent, Write, action, id)
		},
		Changed: func(ctx context.Context, action, id string) {
			// The change is made; a failed log line must not undo it.
			_ = v.Log(ctx, Event{Agent: agent, Action: action, Path: id, Outcome: OK})
		},
	})
	return &Episodes{Memory: m, store: s, pooled: v.pool != nil}, nil
}
