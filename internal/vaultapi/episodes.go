package vaultapi

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// The request fields follow the CLI's flags (internal/cli/vault_episode.go):
// times are RFC 3339 or bare dates, UTC when they carry no offset; an
// absent field takes the library's default.

// WriteEpisodeRequest is the body of POST /v1/vaults/{vault}/episodes.
type WriteEpisodeRequest struct {
	Content    string         `json:"content" jsonschema:"the statement"`
	Entities   []string       `json:"entities,omitempty" jsonschema:"what the statement is about; trimmed and de-duplicated case-insensitively"`
	Source     string         `json:"source,omitempty" jsonschema:"who or what said it"`
	Salience   *float64       `json:"salience,omitempty" jsonschema:"how much it matters, 0..1, default 0.5"`
	Confidence *float64       `json:"confidence,omitempty" jsonschema:"how sure the writer is, 0..1, default 1"`
	OccurredAt string         `json:"occurred_at,omitempty" jsonschema:"when the event happened"`
	ValidFrom  string         `json:"valid_from,omitempty" jsonschema:"when it starts to hold, default occurred_at, then now"`
	ValidTo    string         `json:"valid_to,omitempty" jsonschema:"when it stops holding, default no known end"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// WriteEpisodeQuery is the query string of an episode write.
type WriteEpisodeQuery struct {
	DryRun bool `json:"dry_run,omitempty" jsonschema:"check the statement and return its hints without writing it"`
}

// WriteEpisodeResponse is the written episode and the open statements it
// resembles, each with the action that fits (confirm, supersede, revise,
// dispute); nothing is merged automatically.
type WriteEpisodeResponse struct {
	Episode episodic.Episode `json:"episode"`
	Hints   []episodic.Hint  `json:"hints"`
	DryRun  bool             `json:"dry_run,omitempty"`
}

// QueryEpisodesRequest is the body of POST
// /v1/vaults/{vault}/episodes/query.
type QueryEpisodesRequest struct {
	Query         string            `json:"query,omitempty" jsonschema:"text matched by BM25 (and vectors when the vault has an embedder)"`
	Entities      []string          `json:"entities,omitempty" jsonschema:"only statements about any of these, case-insensitively"`
	Source        string            `json:"source,omitempty" jsonschema:"only statements from this source"`
	ValidAt       string            `json:"valid_at,omitempty" jsonschema:"world time: what held then, default now"`
	KnownAt       string            `json:"known_at,omitempty" jsonschema:"belief time: as the vault believed it then, default now"`
	All           bool              `json:"all,omitempty" jsonschema:"no valid-time test: closed statements too (unless valid_at)"`
	Disputed      bool              `json:"disputed,omitempty" jsonschema:"only statements in an open dispute"`
	OrderBy       string            `json:"order_by,omitempty" jsonschema:"relevance, recency, salience or composite; default relevance with query, recency without"`
	N             int               `json:"n,omitempty" jsonschema:"how many results, default 10, at most 200"`
	HalfLifeDays  *float64          `json:"half_life_days,omitempty" jsonschema:"days for recency to halve, default 30"`
	Weights       *episodic.Weights `json:"weights,omitempty" jsonschema:"weights of order_by composite, each default 1"`
	MinConfidence float64           `json:"min_confidence,omitempty" jsonschema:"only statements at least this confident"`
	Metadata      map[string]any    `json:"metadata,omitempty" jsonschema:"only statements whose metadata has exactly these values"`
	Reinforce     bool              `json:"reinforce,omitempty" jsonschema:"record a recall of each result (a write: needs write access)"`
}

// EpisodeMatches is the answer of an episode query, best first.
type EpisodeMatches struct {
	Results []episodic.Match `json:"results"`
}

// EpisodeHistory is the chain of statements an episode belongs to,
// oldest first.
type EpisodeHistory struct {
	Chain []episodic.RecordJSON `json:"chain"`
}

// InvalidateRequest is the body of POST .../episodes/{id}/invalidate.
type InvalidateRequest struct {
	ValidTo string `json:"valid_to,omitempty" jsonschema:"when it stopped holding, default now"`
	Reason  string `json:"reason,omitempty" jsonschema:"why it was closed"`
}

// SupersedeRequest is the body of POST .../episodes/{id}/supersede: the
// new statement. Entities and salience are inherited unless given (an
// empty list clears the entities); confidence is 1 and metadata starts
// fresh unless given.
type SupersedeRequest struct {
	Content    string         `json:"content" jsonschema:"the new statement"`
	Entities   []string       `json:"entities,omitempty" jsonschema:"replaces the inherited entities; [] clears them"`
	Source     string         `json:"source,omitempty"`
	Salience   *float64       `json:"salience,omitempty" jsonschema:"0..1, default inherited"`
	Confidence *float64       `json:"confidence,omitempty" jsonschema:"0..1, default 1"`
	OccurredAt string         `json:"occurred_at,omitempty"`
	ValidFrom  string         `json:"valid_from,omitempty" jsonschema:"where the old statement ends and the new one starts, default occurred_at, then now"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// ReviseRequest is the body of POST .../episodes/{id}/revise: a better
// wording over the same valid interval, inheriting what is not given.
type ReviseRequest struct {
	Content    string         `json:"content" jsonschema:"the better wording"`
	Entities   []string       `json:"entities,omitempty" jsonschema:"replaces the inherited entities; [] clears them"`
	Source     string         `json:"source,omitempty"`
	Salience   *float64       `json:"salience,omitempty" jsonschema:"0..1, default inherited"`
	Confidence *float64       `json:"confidence,omitempty" jsonschema:"0..1, default inherited"`
	OccurredAt string         `json:"occurred_at,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"default inherited"`
}

// ConfirmRequest is the body of POST .../episodes/{id}/confirm.
type ConfirmRequest struct {
	At     string `json:"at,omitempty" jsonschema:"when it was heard again, default now"`
	Source string `json:"source,omitempty" jsonschema:"who or what said it again"`
}

// DisputeRequest is the body of POST .../episodes/{id}/dispute.
type DisputeRequest struct {
	Other string `json:"other" jsonschema:"the id of the open statement that cannot hold together with this one"`
	Note  string `json:"note,omitempty" jsonschema:"why they cannot both hold"`
}

// DisputeResponse is both disputed episodes.
type DisputeResponse struct {
	Episode episodic.Episode `json:"episode"`
	Other   episodic.Episode `json:"other"`
}

// EntitiesQuery is the query string of GET .../episodes/entities.
type EntitiesQuery struct {
	ValidAt       string  `json:"valid_at,omitempty" jsonschema:"world time, default now"`
	KnownAt       string  `json:"known_at,omitempty" jsonschema:"belief time, default now"`
	All           bool    `json:"all,omitempty" jsonschema:"no valid-time test: closed statements too"`
	Source        string  `json:"source,omitempty"`
	MinConfidence float64 `json:"min_confidence,omitempty"`
	Disputed      bool    `json:"disputed,omitempty"`
	MinEpisodes   int     `json:"min_episodes,omitempty" jsonschema:"only entities named by at least this many statements, default 1"`
}

// EntityList is the answer of GET .../episodes/entities, most named
// first.
type EntityList struct {
	Entities []episodic.EntityCount `json:"entities"`
}

// StatsQuery is the query string of GET .../episodes/stats.
type StatsQuery struct {
	KnownAt string `json:"known_at,omitempty" jsonschema:"belief time, default now"`
}

// ImportResponse is the answer of an import.
type ImportResponse struct {
	Imported int `json:"imported"`
}

// parseTime reads a time field; "" is nil.
func parseTime(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := episodic.ParseTime(s)
	if err != nil {
		return nil, &badRequest{msg: fmt.Sprintf("%s: %v", field, err), details: map[string]any{"field": field}}
	}
	return &t, nil
}

// parseTimes reads several time fields, by name, into their targets.
func parseTimes(fields ...any) error {
	for i := 0; i+3 <= len(fields); i += 3 {
		t, err := parseTime(fields[i].(string), fields[i+1].(string))
		if err != nil {
			return err
		}
		*fields[i+2].(**time.Time) = t
	}
	return nil
}

// withEpisodes opens the request's episodic vault for its caller (op
// checked first, so a read-only grant is refused before anything), runs
// fn and closes the store.
func withEpisodes[T any](a *api, req *http.Request, op vault.Op, action string, fn func(context.Context, *vault.Episodes) (T, error)) (T, int, error) {
	var zero T
	v, err := a.vaultFor(req, op, action)
	if err != nil {
		return zero, 0, err
	}
	m, err := v.OpenEpisodes(req.Context(), caller(req), nil)
	if err != nil {
		return zero, 0, err
	}
	defer m.Close()
	out, err := fn(req.Context(), m)
	return out, 0, err
}

func (a *api) episodeRoutes() []route {
	const base = "/v1/vaults/{vault}/episodes"
	ro := []int{http.StatusBadRequest, http.StatusNotFound}
	rw := []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict}
	routes := []route{
		handle("POST", base, "writeEpisode", "episodes",
			"Write a statement; the answer lists the open statements it resembles, with the action that fits", http.StatusCreated, rw,
			func(w http.ResponseWriter, req *http.Request, q *WriteEpisodeQuery, b *WriteEpisodeRequest) (WriteEpisodeResponse, int, error) {
				wr := episodic.Write{Content: b.Content, Entities: b.Entities, Source: b.Source, Salience: b.Salience,
					Confidence: b.Confidence, Metadata: b.Metadata, DryRun: q.DryRun}
				if err := parseTimes("occurred_at", b.OccurredAt, &wr.OccurredAt, "valid_from", b.ValidFrom, &wr.ValidFrom,
					"valid_to", b.ValidTo, &wr.ValidTo); err != nil {
					return WriteEpisodeResponse{}, 0, err
				}
				out, _, err := withEpisodes(a, req, vault.Write, "write", func(ctx context.Context, m *vault.Episodes) (WriteEpisodeResponse, error) {
					res, err := m.Write(ctx, wr)
					if err != nil {
						return WriteEpisodeResponse{}, err
					}
					hints := res.Hints
					if hints == nil {
						hints = []episodic.Hint{}
					}
					return WriteEpisodeResponse{Episode: res.Episode, Hints: hints, DryRun: q.DryRun}, nil
				})
				if q.DryRun {
					return out, http.StatusOK, err
				}
				return out, 0, err
			}, a),
		handle("POST", base+"/query", "queryEpisodes", "episodes",
			"Query what the vault holds at valid_at as it believed it at known_at", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *QueryEpisodesRequest) (EpisodeMatches, int, error) {
				var validAt, knownAt *time.Time
				if err := parseTimes("valid_at", b.ValidAt, &validAt, "known_at", b.KnownAt, &knownAt); err != nil {
					return EpisodeMatches{}, 0, err
				}
				q := episodic.Query{Filter: episodic.Filter{ValidAt: validAt, KnownAt: knownAt, All: b.All, Entities: b.Entities,
					Source: b.Source, MinConfidence: b.MinConfidence, Disputed: b.Disputed, Meta: b.Metadata},
					Text: b.Query, OrderBy: b.OrderBy, Limit: b.N, Reinforce: b.Reinforce}
				if b.N < 0 || b.N > episodic.MaxLimit {
					return EpisodeMatches{}, 0, errBad("n must be between 1 and %d", episodic.MaxLimit)
				}
				if b.HalfLifeDays != nil {
					if !(*b.HalfLifeDays > 0) {
						return EpisodeMatches{}, 0, errBad("half_life_days must be more than 0")
					}
					q.HalfLife = time.Duration(*b.HalfLifeDays * float64(24*time.Hour))
				}
				if b.Weights != nil {
					if b.OrderBy != episodic.OrderComposite {
						return EpisodeMatches{}, 0, errBad("weights weigh order_by composite only")
					}
					q.Weights = *b.Weights
				}
				// Recording recalls changes the vault: the library asks no
				// one, so the grant is checked here.
				op := vault.Read
				if b.Reinforce {
					op = vault.Write
				}
				return withEpisodes(a, req, op, "query-episodes", func(ctx context.Context, m *vault.Episodes) (EpisodeMatches, error) {
					res, err := m.Query(ctx, q)
					if res == nil {
						res = []episodic.Match{}
					}
					return EpisodeMatches{Results: res}, err
				})
			}, a),
		handle("GET", base+"/entities", "listEntities", "episodes",
			"Count the selected statements per entity, most named first", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, q *EntitiesQuery, _ *none) (EntityList, int, error) {
				f := episodic.Filter{All: q.All, Source: q.Source, MinConfidence: q.MinConfidence, Disputed: q.Disputed}
				if err := parseTimes("valid_at", q.ValidAt, &f.ValidAt, "known_at", q.KnownAt, &f.KnownAt); err != nil {
					return EntityList{}, 0, err
				}
				return withEpisodes(a, req, vault.Read, "entities", func(ctx context.Context, m *vault.Episodes) (EntityList, error) {
					counts, err := m.Entities(ctx, f, max(q.MinEpisodes, 1))
					if counts == nil {
						counts = []episodic.EntityCount{}
					}
					return EntityList{Entities: counts}, err
				})
			}, a),
		handle("GET", base+"/stats", "episodeStats", "episodes",
			"Count the statements held at known_at: total, open, closed, disputed", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, q *StatsQuery, _ *none) (episodic.Stats, int, error) {
				known, err := parseTime("known_at", q.KnownAt)
				if err != nil {
					return episodic.Stats{}, 0, err
				}
				return withEpisodes(a, req, vault.Read, "stats", func(ctx context.Context, m *vault.Episodes) (episodic.Stats, error) {
					return m.Stats(ctx, known)
				})
			}, a),
		a.exportRoute(base),
		a.importRoute(base),
		handle("GET", base+"/{id}", "getEpisode", "episodes",
			"Get an episode as the vault holds it now (a revised one as it was last held)", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (episodic.Episode, int, error) {
				return withEpisodes(a, req, vault.Read, "episode", func(ctx context.Context, m *vault.Episodes) (episodic.Episode, error) {
					return m.Get(ctx, req.PathValue("id"))
				})
			}, a),
		handle("GET", base+"/{id}/history", "episodeHistory", "episodes",
			"The chain of statements an episode belongs to (supersessions, revisions), oldest first, with every version", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (EpisodeHistory, int, error) {
				return withEpisodes(a, req, vault.Read, "history", func(ctx context.Context, m *vault.Episodes) (EpisodeHistory, error) {
					chain, err := m.History(ctx, req.PathValue("id"))
					out := EpisodeHistory{Chain: []episodic.RecordJSON{}}
					for _, r := range chain {
						out.Chain = append(out.Chain, r.JSON())
					}
					return out, err
				})
			}, a),
		handle("POST", base+"/{id}/invalidate", "invalidateEpisode", "episodes",
			"Close an open episode: it stopped holding at valid_to", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *InvalidateRequest) (episodic.Episode, int, error) {
				to, err := parseTime("valid_to", b.ValidTo)
				if err != nil {
					return episodic.Episode{}, 0, err
				}
				return withEpisodes(a, req, vault.Write, "invalidate", func(ctx context.Context, m *vault.Episodes) (episodic.Episode, error) {
					return m.Invalidate(ctx, req.PathValue("id"), to, b.Reason)
				})
			}, a),
		handle("POST", base+"/{id}/supersede", "supersedeEpisode", "episodes",
			"Replace an open episode by a new statement (the world changed); answers the new episode", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *SupersedeRequest) (episodic.Episode, int, error) {
				n := episodic.Successor{Content: b.Content, Entities: b.Entities, Source: b.Source, Salience: b.Salience,
					Confidence: b.Confidence, Metadata: b.Metadata}
				if err := parseTimes("occurred_at", b.OccurredAt, &n.OccurredAt, "valid_from", b.ValidFrom, &n.ValidFrom); err != nil {
					return episodic.Episode{}, 0, err
				}
				return withEpisodes(a, req, vault.Write, "supersede", func(ctx context.Context, m *vault.Episodes) (episodic.Episode, error) {
					return m.Supersede(ctx, req.PathValue("id"), n)
				})
			}, a),
		handle("POST", base+"/{id}/revise", "reviseEpisode", "episodes",
			"Replace an open episode by a better wording (the world unchanged); answers the revision", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *ReviseRequest) (episodic.Episode, int, error) {
				n := episodic.Successor{Content: b.Content, Entities: b.Entities, Source: b.Source, Salience: b.Salience,
					Confidence: b.Confidence, Metadata: b.Metadata}
				if err := parseTimes("occurred_at", b.OccurredAt, &n.OccurredAt); err != nil {
					return episodic.Episode{}, 0, err
				}
				return withEpisodes(a, req, vault.Write, "revise", func(ctx context.Context, m *vault.Episodes) (episodic.Episode, error) {
					return m.Revise(ctx, req.PathValue("id"), n)
				})
			}, a),
		handle("POST", base+"/{id}/confirm", "confirmEpisode", "episodes",
			"Record one more attestation of an open episode", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *ConfirmRequest) (episodic.Episode, int, error) {
				at, err := parseTime("at", b.At)
				if err != nil {
					return episodic.Episode{}, 0, err
				}
				return withEpisodes(a, req, vault.Write, "confirm", func(ctx context.Context, m *vault.Episodes) (episodic.Episode, error) {
					return m.Confirm(ctx, req.PathValue("id"), at, b.Source)
				})
			}, a),
		handle("POST", base+"/{id}/dispute", "disputeEpisode", "episodes",
			"Record that two open episodes cannot both hold; neither is closed", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *DisputeRequest) (DisputeResponse, int, error) {
				if b.Other == "" {
					return DisputeResponse{}, 0, errBad("other is required: the id of the disputing episode")
				}
				return withEpisodes(a, req, vault.Write, "dispute", func(ctx context.Context, m *vault.Episodes) (DisputeResponse, error) {
					x, y, err := m.Dispute(ctx, req.PathValue("id"), b.Other, b.Note)
					return DisputeResponse{Episode: x, Other: y}, err
				})
			}, a),
	}
	return routes
}

// exportRoute streams an episodic vault's export as JSON lines.
func (a *api) exportRoute(base string) route {
	return route{Method: "GET", Pattern: base + "/export", ID: "exportEpisodes", Tag: "episodes",
		Summary: "Export every statement with its versions, attestations, disputes and recalls as JSON lines (what import reads)",
		Out:     reflect.TypeFor[string](), OutType: "application/x-ndjson", Status: http.StatusOK,
		Errors: []int{http.StatusBadRequest, http.StatusNotFound},
		handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.RawQuery != "" {
				a.fail(w, req, errBad("this route takes no query parameters"))
				return
			}
			v, err := a.vaultFor(req, vault.Read, "export")
			if err != nil {
				a.fail(w, req, err)
				return
			}
			m, err := v.OpenEpisodes(req.Context(), caller(req), nil)
			if err != nil {
				a.fail(w, req, err)
				return
			}
			defer m.Close()
			sw := &startedWriter{w: w}
			if err := m.Export(req.Context(), sw); err != nil {
				if !sw.started {
					a.fail(w, req, err)
					return
				}
				// Too late for an error answer: the client sees a cut stream
				// (without the last newline), and the log says why.
				a.log.Error("vault API: export cut short", "vault", v.Name, "err", err)
				return
			}
			if !sw.started { // an empty vault: an empty stream
				sw.Write(nil)
			}
		}),
	}
}

// startedWriter sets the export's headers at its first byte, and
// remembers that the answer has started.
type startedWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startedWriter) Write(b []byte) (int, error) {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", "application/x-ndjson")
		s.w.WriteHeader(http.StatusOK)
	}
	return s.w.Write(b)
}

// importRoute reads an export (JSON lines) into an episodic vault.
func (a *api) importRoute(base string) route {
	return route{Method: "POST", Pattern: base + "/import", ID: "importEpisodes", Tag: "episodes",
		Summary: "Import an export (JSON lines) in one transaction: all or nothing, a conflict if any statement exists",
		Body:    reflect.TypeFor[string](), BodyType: "application/x-ndjson",
		Out: reflect.TypeFor[ImportResponse](), Status: http.StatusOK,
		Errors: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict},
		handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.RawQuery != "" {
				a.fail(w, req, errBad("this route takes no query parameters"))
				return
			}
			out, _, err := withEpisodes(a, req, vault.Write, "import", func(ctx context.Context, m *vault.Episodes) (ImportResponse, error) {
				n, err := m.Import(ctx, req.Body)
				return ImportResponse{Imported: n}, err
			})
			if err != nil {
				a.fail(w, req, err)
				return
			}
			writeJSON(w, http.StatusOK, out)
		}),
	}
}
