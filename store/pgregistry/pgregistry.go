// Package pgregistry is the PostgreSQL [store.Registry]: vaults, agents,
// grants, embedder pins, document metadata and audit logs, in tables of
// the pool's schema named reg_…, migrated under the component "registry".
//
// Several processes may share the database; every guarantee of the
// interface holds across them:
//
//   - a vault's name is unique, case-insensitively, in its scope: a unique
//     index on (scope, lower(name)) refuses the second of two creates, and
//     creates are serialised by an advisory transaction lock, so that the
//     caller's check sees every vault recorded at the moment of the insert;
//   - UpdateVault locks the vault's row while its fn runs;
//   - an agent is revoked by clearing its token hash and recording when,
//     in its own row, so that its name, the row's key, is never given out
//     again, and a revoked agent is refused at once: AgentByToken reads
//     the database on every call;
//   - the per-vault calls (pin, document metadata, audit) lock the vault's
//     row against its deletion, so nothing is written for a deleted vault.
//
// Vault ids are random ("v" and 16 hex digits, as the file registry makes
// them). DeleteVault forgets a vault's record only; its pin, document
// metadata and audit rows are deleted by [Registry.Drop], which the
// backend's DropVault calls.
package pgregistry

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/store"
)

// Migrate creates or updates the registry's tables in db's schema. Call it
// once per process, before New.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return pgdb.Migrate(ctx, db, "registry", pgdb.Exec(`
CREATE TABLE reg_vaults (
	id text PRIMARY KEY,
	scope text NOT NULL,
	name text NOT NULL,
	type text NOT NULL,
	dir text NOT NULL,
	restricted boolean NOT NULL,
	grants jsonb NOT NULL,
	embedding_model text NOT NULL
);
CREATE UNIQUE INDEX reg_vaults_scope_name ON reg_vaults (scope, lower(name));

CREATE TABLE reg_agents (
	name text PRIMARY KEY,
	token_hash text,
	created timestamptz NOT NULL,
	last_used timestamptz,
	revoked timestamptz,
	CHECK ((token_hash IS NULL) = (revoked IS NOT NULL))
);
CREATE INDEX reg_agents_token ON reg_agents (token_hash) WHERE revoked IS NULL;

CREATE TABLE reg_pins (
	vault_id text PRIMARY KEY,
	model text NOT NULL,
	dim integer NOT NULL
);

CREATE TABLE reg_doc_meta (
	vault_id text NOT NULL,
	path text NOT NULL,
	meta jsonb NOT NULL,
	PRIMARY KEY (vault_id, path)
);

CREATE TABLE reg_audit (
	vault_id text NOT NULL,
	seq bigint GENERATED ALWAYS AS IDENTITY,
	at timestamptz NOT NULL,
	agent text NOT NULL,
	action text NOT NULL,
	path text NOT NULL,
	outcome text NOT NULL,
	reason text NOT NULL,
	detail text NOT NULL,
	repeated integer NOT NULL,
	PRIMARY KEY (vault_id, seq)
);
`))
}

// Registry is the registry kept in a PostgreSQL database. It holds no
// state but the pool: every call reads the database.
type Registry struct {
	db *pgdb.DB
}

var _ store.Registry = (*Registry)(nil)

// New returns the registry of db, whose schema Migrate brought up to date.
func New(db *pgdb.DB) *Registry {
	return &Registry{db: db}
}

// createLock is the advisory transaction lock that serialises vault
// creates in the pool's schema.
const createLock = `SELECT pg_advisory_xact_lock(hashtext('ctxkit registry vaults ' || current_schema()))`

// nameIndex is the unique index of a scope's vault names.
const nameIndex = "reg_vaults_scope_name"

// vaultColumns are the columns scanVault reads, in its order.
const vaultColumns = `id, scope, name, type, dir, restricted, grants, embedding_model`

// single runs fn, a single statement on the pool (a transaction of its
// own), again when it failed before it reached the server or, for a read,
// when its connection was lost.
func (r *Registry) single(ctx context.Context, read bool, fn func() error) error {
	var err error
	for range 3 {
		err = fn()
		if err == nil || ctx.Err() != nil || !pgdb.Retryable(err, read) {
			return err
		}
	}
	return err
}

func scanVault(row pgx.Row) (store.VaultRecord, error) {
	var v store.VaultRecord
	var grants []byte
	if err := row.Scan(&v.ID, &v.Scope, &v.Name, &v.Type, &v.Dir, &v.Restricted, &grants, &v.EmbeddingModel); err != nil {
		return store.VaultRecord{}, err
	}
	if err := json.Unmarshal(grants, &v.Grants); err != nil {
		return store.VaultRecord{}, fmt.Errorf("grants of vault %s: %w: %v", v.ID, store.ErrCorrupt, err)
	}
	if v.Grants == nil {
		v.Grants = map[string]store.Grant{}
	}
	return v, nil
}

func grantsJSON(g map[string]store.Grant) (string, error) {
	if g == nil {
		g = map[string]store.Grant{}
	}
	b, err := json.Marshal(g)
	return string(b), err
}

// scopeRank orders local vaults before global ones.
func scopeRank(scope string) int {
	if scope == store.ScopeLocal {
		return 0
	}
	return 1
}

// allVaults reads every vault, local ones first, each scope by name.
func allVaults(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]store.VaultRecord, error) {
	rows, err := q.Query(ctx, `SELECT `+vaultColumns+` FROM reg_vaults`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.VaultRecord, error) { return scanVault(row) })
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.VaultRecord) int {
		return cmp.Or(cmp.Compare(scopeRank(a.Scope), scopeRank(b.Scope)), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}

// Vaults returns every vault, local ones first, each scope by name.
func (r *Registry) Vaults(ctx context.Context) ([]store.VaultRecord, error) {
	var out []store.VaultRecord
	err := r.single(ctx, true, func() (err error) {
		out, err = allVaults(ctx, r.db.Pool)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read vaults: %w", err)
	}
	return out, nil
}

// Vault returns the vault with this id, or ErrNotFound.
func (r *Registry) Vault(ctx context.Context, id string) (store.VaultRecord, error) {
	var v store.VaultRecord
	err := r.single(ctx, true, func() (err error) {
		v, err = scanVault(r.db.Pool.QueryRow(ctx, `SELECT `+vaultColumns+` FROM reg_vaults WHERE id = $1`, id))
		return err
	})
	return v, vaultErr(id, err)
}

// vaultErr wraps err, ErrNotFound when no row was found.
func vaultErr(id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("vault %s: %w", id, store.ErrNotFound)
	default:
		return fmt.Errorf("vault %s: %w", id, err)
	}
}

// newID returns a fresh vault id.
func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a vault id: %w", err)
	}
	return "v" + hex.EncodeToString(b[:]), nil
}

// CreateVault records v with a new id. Creates are serialised by an
// advisory transaction lock, so check sees every vault recorded when the
// record is written; the unique index on the scope's names backs the name
// rule.
func (r *Registry) CreateVault(ctx context.Context, v store.VaultRecord, check func([]store.VaultRecord) error) (store.VaultRecord, error) {
	v.Scope = cmp.Or(v.Scope, store.ScopeLocal)
	if v.Scope != store.ScopeLocal && v.Scope != store.ScopeGlobal {
		return store.VaultRecord{}, fmt.Errorf("scope %q: want %s or %s: %w", v.Scope, store.ScopeLocal, store.ScopeGlobal, store.ErrNoScope)
	}
	grants, err := grantsJSON(v.Grants)
	if err != nil {
		return store.VaultRecord{}, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	err = r.db.Write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, createLock); err != nil {
			return err
		}
		existing, err := allVaults(ctx, tx)
		if err != nil {
			return err
		}
		for _, o := range existing {
			if o.Scope == v.Scope && strings.EqualFold(o.Name, v.Name) {
				return fmt.Errorf("%s vault %q: %w", o.Scope, o.Name, store.ErrExists)
			}
		}
		if check != nil {
			if err := check(existing); err != nil {
				return err
			}
		}
		for {
			if v.ID, err = newID(); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `INSERT INTO reg_vaults (`+vaultColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)
				ON CONFLICT (id) DO NOTHING`, v.ID, v.Scope, v.Name, v.Type, v.Dir, v.Restricted, grants, v.EmbeddingModel)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				return nil
			}
		}
	})
	if pgdb.IsUniqueViolation(err, nameIndex) {
		return store.VaultRecord{}, fmt.Errorf("%s vault %q: %w", v.Scope, v.Name, store.ErrExists)
	}
	if err != nil {
		return store.VaultRecord{}, err
	}
	// What CreateVault returns is the caller's: decode the stored grants.
	v.Grants = map[string]store.Grant{}
	if err := json.Unmarshal([]byte(grants), &v.Grants); err != nil {
		return store.VaultRecord{}, err
	}
	return v, nil
}

// UpdateVault runs fn on the vault's record with its row locked, and
// writes back what fn may change: type, restriction, grants, embedder.
func (r *Registry) UpdateVault(ctx context.Context, id string, fn func(*store.VaultRecord) error) (store.VaultRecord, error) {
	var out store.VaultRecord
	err := r.db.Write(ctx, func(tx pgx.Tx) error {
		v, err := scanVault(tx.QueryRow(ctx, `SELECT `+vaultColumns+` FROM reg_vaults WHERE id = $1 FOR NO KEY UPDATE`, id))
		if err != nil {
			return vaultErr(id, err)
		}
		if err := fn(&v); err != nil {
			return err
		}
		grants, err := grantsJSON(v.Grants)
		if err != nil {
			return fmt.Errorf("vault %s: %w", id, err)
		}
		out, err = scanVault(tx.QueryRow(ctx, `UPDATE reg_vaults SET type = $2, restricted = $3, grants = $4::jsonb, embedding_model = $5
			WHERE id = $1 RETURNING `+vaultColumns, id, v.Type, v.Restricted, grants, v.EmbeddingModel))
		return vaultErr(id, err)
	})
	if err != nil {
		return store.VaultRecord{}, err
	}
	return out, nil
}

// DeleteVault forgets a vault's record and returns it. Its pin, document
// metadata and audit log stay until Drop.
func (r *Registry) DeleteVault(ctx context.Context, id string) (store.VaultRecord, error) {
	var v store.VaultRecord
	err := r.single(ctx, false, func() (err error) {
		v, err = scanVault(r.db.Pool.QueryRow(ctx, `DELETE FROM reg_vaults WHERE id = $1 RETURNING `+vaultColumns, id))
		return err
	})
	return v, vaultErr(id, err)
}

// Drop deletes the pin, document metadata and audit log of a vault the
// registry no longer records (the backend's DropVault calls it); a vault
// still recorded is ErrConflict and nothing is deleted.
func (r *Registry) Drop(ctx context.Context, vaultID string) error {
	err := r.db.Write(ctx, func(tx pgx.Tx) error {
		var recorded bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM reg_vaults WHERE id = $1 FOR KEY SHARE)`, vaultID).Scan(&recorded); err != nil {
			return err
		}
		if recorded {
			return fmt.Errorf("it is still recorded: %w", store.ErrConflict)
		}
		for _, table := range []string{"reg_pins", "reg_doc_meta", "reg_audit"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE vault_id = $1`, vaultID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop the registry's data of vault %s: %w", vaultID, err)
	}
	return nil
}

// lockVault takes a key-share lock of the vault's row, which keeps it
// from being deleted until tx ends, or returns ErrNotFound.
func lockVault(ctx context.Context, tx pgx.Tx, id string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM reg_vaults WHERE id = $1 FOR KEY SHARE`, id).Scan(&one)
	return vaultErr(id, err)
}

// utc returns t in UTC, as read from the database.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// CreateAgent records a new agent; a name that exists or was revoked is
// ErrExists.
func (r *Registry) CreateAgent(ctx context.Context, a store.AgentRecord) error {
	var lastUsed *time.Time
	if !a.LastUsed.IsZero() {
		lastUsed = &a.LastUsed
	}
	var revoked *time.Time
	var created bool
	err := r.db.Write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO reg_agents (name, token_hash, created, last_used) VALUES ($1, $2, $3, $4)
			ON CONFLICT (name) DO NOTHING`, a.Name, a.TokenHash, a.Created, lastUsed)
		if err != nil {
			return err
		}
		if created = tag.RowsAffected() == 1; created {
			return nil
		}
		// The name is taken: by an agent, or by one revoked (rows are
		// never deleted).
		return tx.QueryRow(ctx, `SELECT revoked FROM reg_agents WHERE name = $1`, a.Name).Scan(&revoked)
	})
	switch {
	case err != nil:
		return fmt.Errorf("agent %q: %w", a.Name, err)
	case created:
		return nil
	case revoked != nil:
		return fmt.Errorf("agent %q was revoked on %s and its name is not given out again, since vaults may still grant it access: %w",
			a.Name, revoked.UTC().Format(time.DateOnly), store.ErrExists)
	default:
		return fmt.Errorf("agent %q: %w", a.Name, store.ErrExists)
	}
}

// scanAgent reads name, token_hash, created, last_used.
func scanAgent(row pgx.Row) (store.AgentRecord, error) {
	var a store.AgentRecord
	var created, lastUsed *time.Time
	if err := row.Scan(&a.Name, &a.TokenHash, &created, &lastUsed); err != nil {
		return store.AgentRecord{}, err
	}
	a.Created, a.LastUsed = utc(created), utc(lastUsed)
	return a, nil
}

// Agents returns every agent not revoked, by name.
func (r *Registry) Agents(ctx context.Context) ([]store.AgentRecord, error) {
	var out []store.AgentRecord
	err := r.single(ctx, true, func() error {
		rows, err := r.db.Pool.Query(ctx, `SELECT name, token_hash, created, last_used FROM reg_agents
			WHERE revoked IS NULL ORDER BY name COLLATE "C"`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.AgentRecord, error) { return scanAgent(row) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read agents: %w", err)
	}
	return out, nil
}

// AgentByToken returns the agent whose token has this hash, reading the
// database every time, so that an agent revoked by another process is
// refused at once.
func (r *Registry) AgentByToken(ctx context.Context, hash string) (store.AgentRecord, error) {
	var a store.AgentRecord
	err := r.single(ctx, true, func() (err error) {
		a, err = scanAgent(r.db.Pool.QueryRow(ctx, `SELECT name, token_hash, created, last_used FROM reg_agents
			WHERE token_hash = $1 AND revoked IS NULL ORDER BY name COLLATE "C" LIMIT 1`, hash))
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.AgentRecord{}, fmt.Errorf("agent token: %w", store.ErrNotFound)
	case err != nil:
		return store.AgentRecord{}, fmt.Errorf("agent token: %w", err)
	}
	return a, nil
}

// TouchAgent records a use of the agent at at, in one statement; the row
// is not written again when its last use is already in the same second.
func (r *Registry) TouchAgent(ctx context.Context, name string, at time.Time) error {
	var found bool
	err := r.single(ctx, false, func() error {
		return r.db.Pool.QueryRow(ctx, `WITH touched AS (
				UPDATE reg_agents SET last_used = $2
				WHERE name = $1 AND revoked IS NULL AND (last_used IS NULL OR
					date_trunc('second', last_used AT TIME ZONE 'UTC') <> date_trunc('second', $2::timestamptz AT TIME ZONE 'UTC'))
				RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM touched) OR EXISTS (SELECT 1 FROM reg_agents WHERE name = $1 AND revoked IS NULL)`,
			name, at).Scan(&found)
	})
	switch {
	case err != nil:
		return fmt.Errorf("agent %q: %w", name, err)
	case !found:
		return fmt.Errorf("agent %q: %w", name, store.ErrNotFound)
	}
	return nil
}

// RevokeAgent forgets the agent's token and records when it was revoked;
// its name stays taken.
func (r *Registry) RevokeAgent(ctx context.Context, name string, at time.Time) error {
	var n int64
	err := r.single(ctx, false, func() error {
		tag, err := r.db.Pool.Exec(ctx, `UPDATE reg_agents SET token_hash = NULL, revoked = $2
			WHERE name = $1 AND revoked IS NULL`, name, at)
		n = tag.RowsAffected()
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("agent %q: %w", name, err)
	case n == 0:
		return fmt.Errorf("agent %q: %w", name, store.ErrNotFound)
	}
	return nil
}

// RevokedAgents returns the names of revoked agents with when each was
// revoked.
func (r *Registry) RevokedAgents(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := r.single(ctx, true, func() error {
		clear(out)
		rows, err := r.db.Pool.Query(ctx, `SELECT name, revoked FROM reg_agents WHERE revoked IS NOT NULL`)
		if err != nil {
			return err
		}
		var name string
		var at time.Time
		_, err = pgx.ForEachRow(rows, []any{&name, &at}, func() error {
			out[name] = at.UTC()
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read revoked agents: %w", err)
	}
	return out, nil
}

// Pin returns a vault's embedder pin.
func (r *Registry) Pin(ctx context.Context, vaultID string) (store.Pin, bool, error) {
	var model *string
	var dim *int
	err := r.single(ctx, true, func() error {
		return r.db.Pool.QueryRow(ctx, `SELECT p.model, p.dim FROM reg_vaults v LEFT JOIN reg_pins p ON p.vault_id = v.id
			WHERE v.id = $1`, vaultID).Scan(&model, &dim)
	})
	if err != nil {
		return store.Pin{}, false, vaultErr(vaultID, err)
	}
	if model == nil {
		return store.Pin{}, false, nil
	}
	return store.Pin{Model: *model, Dim: *dim}, true, nil
}

// SetPin sets or, when p is nil, removes a vault's embedder pin.
func (r *Registry) SetPin(ctx context.Context, vaultID string, p *store.Pin) error {
	return r.db.Write(ctx, func(tx pgx.Tx) error {
		if err := lockVault(ctx, tx, vaultID); err != nil {
			return err
		}
		var err error
		if p == nil {
			_, err = tx.Exec(ctx, `DELETE FROM reg_pins WHERE vault_id = $1`, vaultID)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO reg_pins (vault_id, model, dim) VALUES ($1, $2, $3)
				ON CONFLICT (vault_id) DO UPDATE SET model = excluded.model, dim = excluded.dim`, vaultID, p.Model, p.Dim)
		}
		if err != nil {
			return fmt.Errorf("pin of vault %s: %w", vaultID, err)
		}
		return nil
	})
}

// DocMeta returns the metadata of a vault's written documents, by path.
func (r *Registry) DocMeta(ctx context.Context, vaultID string) (map[string]map[string]string, error) {
	var out map[string]map[string]string
	err := r.single(ctx, true, func() error {
		out = nil
		rows, err := r.db.Pool.Query(ctx, `SELECT m.path, m.meta FROM reg_vaults v LEFT JOIN reg_doc_meta m ON m.vault_id = v.id
			WHERE v.id = $1`, vaultID)
		if err != nil {
			return err
		}
		var path *string
		var meta []byte
		_, err = pgx.ForEachRow(rows, []any{&path, &meta}, func() error {
			if out == nil {
				out = map[string]map[string]string{}
			}
			if path == nil {
				return nil // the vault, without metadata
			}
			m := map[string]string{}
			if err := json.Unmarshal(meta, &m); err != nil {
				return fmt.Errorf("metadata of %q: %w: %v", *path, store.ErrCorrupt, err)
			}
			out[*path] = m
			return nil
		})
		return err
	})
	if err == nil && out == nil {
		err = pgx.ErrNoRows
	}
	if err != nil {
		return nil, vaultErr(vaultID, err)
	}
	return out, nil
}

// SetDocMeta sets the metadata of documents by path, in one transaction;
// a nil map removes a path's.
func (r *Registry) SetDocMeta(ctx context.Context, vaultID string, meta map[string]map[string]string) error {
	// Rows are written in the order of their paths, so that concurrent
	// calls lock them in the same order.
	paths := make([]string, 0, len(meta))
	values := make(map[string]string, len(meta))
	for p, m := range meta {
		paths = append(paths, p)
		if m != nil {
			b, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("metadata of %q: %w", p, err)
			}
			values[p] = string(b)
		}
	}
	slices.Sort(paths)
	return r.db.Write(ctx, func(tx pgx.Tx) error {
		if err := lockVault(ctx, tx, vaultID); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, p := range paths {
			if v, ok := values[p]; ok {
				b.Queue(`INSERT INTO reg_doc_meta (vault_id, path, meta) VALUES ($1, $2, $3::jsonb)
					ON CONFLICT (vault_id, path) DO UPDATE SET meta = excluded.meta`, vaultID, p, v)
			} else {
				b.Queue(`DELETE FROM reg_doc_meta WHERE vault_id = $1 AND path = $2`, vaultID, p)
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("metadata of vault %s: %w", vaultID, err)
		}
		return nil
	})
}

// AppendAudit appends an event to a vault's audit log, in one statement
// that locks the vault's row against its deletion.
func (r *Registry) AppendAudit(ctx context.Context, vaultID string, e store.AuditEvent) error {
	var n int64
	err := r.single(ctx, false, func() error {
		tag, err := r.db.Pool.Exec(ctx, `INSERT INTO reg_audit (vault_id, at, agent, action, path, outcome, reason, detail, repeated)
			SELECT id, $2, $3, $4, $5, $6, $7, $8, $9 FROM reg_vaults WHERE id = $1 FOR KEY SHARE`,
			vaultID, e.Time, e.Agent, e.Action, e.Path, e.Outcome, e.Reason, e.Detail, e.Repeated)
		n = tag.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		err = pgx.ErrNoRows
	}
	return vaultErr(vaultID, err)
}

// Audit returns the last n events of a vault's audit log (every event when
// n <= 0), oldest first.
func (r *Registry) Audit(ctx context.Context, vaultID string, n int) ([]store.AuditEvent, error) {
	var limit *int
	if n > 0 {
		limit = &n
	}
	var out []store.AuditEvent
	var found bool
	err := r.single(ctx, true, func() error {
		out, found = nil, false
		rows, err := r.db.Pool.Query(ctx, `SELECT a.seq, a.at, a.agent, a.action, a.path, a.outcome, a.reason, a.detail, a.repeated
			FROM reg_vaults v LEFT JOIN LATERAL (
				SELECT * FROM reg_audit WHERE vault_id = v.id ORDER BY seq DESC LIMIT $2) a ON true
			WHERE v.id = $1 ORDER BY a.seq`, vaultID, limit)
		if err != nil {
			return err
		}
		var seq *int64
		var at *time.Time
		var agent, action, path, outcome, reason, detail *string
		var repeated *int
		_, err = pgx.ForEachRow(rows, []any{&seq, &at, &agent, &action, &path, &outcome, &reason, &detail, &repeated}, func() error {
			found = true
			if seq != nil {
				out = append(out, store.AuditEvent{Time: at.UTC(), Agent: *agent, Action: *action, Path: *path,
					Outcome: *outcome, Reason: *reason, Detail: *detail, Repeated: *repeated})
			}
			return nil
		})
		return err
	})
	if err == nil && !found {
		err = pgx.ErrNoRows
	}
	if err != nil {
		return nil, vaultErr(vaultID, err)
	}
	return out, nil
}
