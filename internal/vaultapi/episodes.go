package vaultapi

import (
	"net/http"
	"reflect"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// WriteEpisodeQuery is the query string of an episode write.
type WriteEpisodeQuery struct {
	DryRun bool `json:"dry_run,omitempty" jsonschema:"check the statement and return its hints without writing it"`
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

func (a *api) episodeRoutes() []route {
	const base = "/v1/vaults/{vault}/episodes"
	// 503: every episode route opens the vault with its embedder, which
	// may not be available.
	ro := []int{http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable}
	rw := []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusServiceUnavailable}
	name := func(req *http.Request) string { return req.PathValue("vault") }
	id := func(req *http.Request) string { return req.PathValue("id") }
	return []route{
		handle("POST", base, "writeEpisode", "episodes",
			"Write a statement; the answer lists the open statements it resembles, with the action that fits", http.StatusCreated, rw,
			func(w http.ResponseWriter, req *http.Request, q *WriteEpisodeQuery, b *vault.WriteEpisodeRequest) (vault.WriteEpisodeResult, int, error) {
				b.DryRun = b.DryRun || q.DryRun
				out, err := a.svc.WriteEpisode(req.Context(), caller(req), name(req), *b)
				if b.DryRun {
					return out, http.StatusOK, err
				}
				return out, 0, err
			}, a),
		handle("POST", base+"/query", "queryEpisodes", "episodes",
			"Query what the vault holds at valid_at as it believed it at known_at", http.StatusOK,
			[]int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusServiceUnavailable}, // 403: reinforce through a read-only grant
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.QueryEpisodesRequest) (vault.QueryEpisodesResult, int, error) {
				return orNil(a.svc.QueryEpisodes(req.Context(), caller(req), name(req), *b))
			}, a),
		handle("GET", base+"/entities", "listEntities", "episodes",
			"Count the selected statements per entity, most named first", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, q *vault.EntitiesRequest, _ *none) (EntityList, int, error) {
				counts, err := a.svc.Entities(req.Context(), caller(req), name(req), *q)
				return EntityList{Entities: counts}, 0, err
			}, a),
		handle("GET", base+"/stats", "episodeStats", "episodes",
			"Count the statements held at known_at: total, open, closed, disputed", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, q *StatsQuery, _ *none) (episodic.Stats, int, error) {
				return orNil(a.svc.EpisodeStats(req.Context(), caller(req), name(req), q.KnownAt))
			}, a),
		a.exportRoute(base),
		a.importRoute(base),
		handle("GET", base+"/{id}", "getEpisode", "episodes",
			"Get an episode as the vault holds it now (a revised one as it was last held)", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (episodic.EpisodeJSON, int, error) {
				return orNil(a.svc.Episode(req.Context(), caller(req), name(req), id(req)))
			}, a),
		handle("GET", base+"/{id}/history", "episodeHistory", "episodes",
			"The chain of statements an episode belongs to (supersessions, revisions), oldest first, with every version", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (vault.HistoryResult, int, error) {
				return orNil(a.svc.EpisodeHistory(req.Context(), caller(req), name(req), id(req)))
			}, a),
		handle("POST", base+"/{id}/invalidate", "invalidateEpisode", "episodes",
			"Close an open episode: it stopped holding at valid_to", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.InvalidateRequest) (episodic.EpisodeJSON, int, error) {
				return orNil(a.svc.Invalidate(req.Context(), caller(req), name(req), id(req), *b))
			}, a),
		handle("POST", base+"/{id}/supersede", "supersedeEpisode", "episodes",
			"Replace an open episode by a new statement (the world changed); answers the new episode", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.SuccessorRequest) (episodic.EpisodeJSON, int, error) {
				return orNil(a.svc.Supersede(req.Context(), caller(req), name(req), id(req), *b))
			}, a),
		handle("POST", base+"/{id}/revise", "reviseEpisode", "episodes",
			"Replace an open episode by a better wording (the world unchanged); answers the revision", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.SuccessorRequest) (episodic.EpisodeJSON, int, error) {
				return orNil(a.svc.Revise(req.Context(), caller(req), name(req), id(req), *b))
			}, a),
		handle("POST", base+"/{id}/confirm", "confirmEpisode", "episodes",
			"Record one more attestation of an open episode", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.ConfirmRequest) (episodic.EpisodeJSON, int, error) {
				return orNil(a.svc.Confirm(req.Context(), caller(req), name(req), id(req), *b))
			}, a),
		handle("POST", base+"/{id}/dispute", "disputeEpisode", "episodes",
			"Record that two open episodes cannot both hold; neither is closed", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.DisputeRequest) (vault.DisputeResult, int, error) {
				return orNil(a.svc.Dispute(req.Context(), caller(req), name(req), id(req), *b))
			}, a),
	}
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
			sw := &startedWriter{w: w}
			if err := a.svc.ExportEpisodes(req.Context(), caller(req), req.PathValue("vault"), sw); err != nil {
				if !sw.started {
					a.fail(w, req, err)
					return
				}
				// Too late for an error answer: the client sees a cut stream
				// (without the last newline), and the log says why.
				a.log.Error("vault API: export cut short", "vault", req.PathValue("vault"), "err", err)
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
			n, err := a.svc.ImportEpisodes(req.Context(), caller(req), req.PathValue("vault"), req.Body)
			if err != nil {
				a.fail(w, req, err)
				return
			}
			writeJSON(w, http.StatusOK, ImportResponse{Imported: n})
		}),
	}
}
