package vaultapi

import (
	"maps"
	"net/http"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// toCompatEpisode is e as CtxVault writes an episode: its times in
// CtxVault's form, a null source for none, and invalidation_reason in
// metadata too, where CtxVault keeps it.
func toCompatEpisode(e episodic.EpisodeJSON) compatEpisode {
	e.OccurredAt, e.ValidTo, e.InvalidatedAt = pyTimePtr(e.OccurredAt), pyTimePtr(e.ValidTo), pyTimePtr(e.InvalidatedAt)
	e.LastRecalledAt, e.LastConfirmedAt = pyTimePtr(e.LastRecalledAt), pyTimePtr(e.LastConfirmedAt)
	e.ValidFrom, e.RecordedAt, e.VersionRecordedAt = pyTimeOf(e.ValidFrom), pyTimeOf(e.RecordedAt), pyTimeOf(e.VersionRecordedAt)
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	if e.InvalidationNote != "" {
		if _, ok := e.Metadata["invalidation_reason"]; !ok {
			m := maps.Clone(e.Metadata)
			m["invalidation_reason"] = e.InvalidationNote
			e.Metadata = m
		}
	}
	out := compatEpisode{EpisodeJSON: e}
	if e.Source != "" {
		out.Source = &e.Source
	}
	return out
}

// compatEpisodeAnswer answers one episode.
func compatEpisodeAnswer(name string, e episodic.EpisodeJSON, err error) (compatEpisodeResponse, error) {
	if err != nil {
		return compatEpisodeResponse{}, err
	}
	return compatEpisodeResponse{VaultName: name, Episode: toCompatEpisode(e)}, nil
}

// nonEmpty is list, or nil when it is empty: CtxVault's routes pass
// "entities or None" on, so an empty list means none given.
func nonEmpty(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	return list
}

func (a *api) compatEpisodeRoutes(base string) []route {
	base += "/episodes"
	id := func(req *http.Request) string { return req.PathValue("id") }
	return []route{
		compatHandle(a, "POST", base+"/write", "compatWriteEpisode", func(req *http.Request, _ *none, b *compatWriteEpisodeRequest) (compatEpisodeResponse, error) {
			res, err := a.svc.WriteEpisode(req.Context(), caller(req), b.VaultName, vault.WriteEpisodeRequest{Content: b.Content,
				Entities: b.Entities, Source: deref(b.Source), Confidence: b.Confidence, Salience: b.Salience,
				OccurredAt: deref(b.OccurredAt), ValidFrom: deref(b.ValidFrom), ValidTo: deref(b.ValidTo), Metadata: b.Metadata})
			if err != nil {
				return compatEpisodeResponse{}, err
			}
			return compatEpisodeResponse{VaultName: b.VaultName, Episode: toCompatEpisode(res.Episode), Hints: res.Hints}, nil
		}),
		compatHandle(a, "POST", base+"/query", "compatQueryEpisodes", a.compatQueryEpisodes),
		compatHandle(a, "GET", base, "compatEpisodeStats", func(req *http.Request, q *compatVaultParams, _ *none) (compatStats, error) {
			st, err := a.svc.EpisodeStats(req.Context(), caller(req), q.VaultName, "")
			return compatStats{VaultName: q.VaultName, Total: st.Total, Open: st.Open, Closed: st.Closed}, err
		}),
		compatHandle(a, "GET", base+"/entities", "compatEntities", func(req *http.Request, q *compatEntitiesParams, _ *none) (compatEntities, error) {
			counts, err := a.svc.Entities(req.Context(), caller(req), q.VaultName, vault.EntitiesRequest{ValidAt: q.ValidAt,
				KnownAt: q.KnownAt, IncludeClosed: q.All, Source: q.Source, MinConfidence: q.MinConfidence, MinEpisodes: q.MinEpisodes})
			return compatEntities{VaultName: q.VaultName, Entities: counts}, err
		}),
		compatHandle(a, "GET", base+"/{id}", "compatGetEpisode", func(req *http.Request, q *compatVaultParams, _ *none) (compatEpisodeResponse, error) {
			e, err := a.svc.Episode(req.Context(), caller(req), q.VaultName, id(req))
			return compatEpisodeAnswer(q.VaultName, e, err)
		}),
		compatHandle(a, "GET", base+"/{id}/history", "compatEpisodeHistory", func(req *http.Request, q *compatVaultParams, _ *none) (compatHistory, error) {
			out := compatHistory{VaultName: q.VaultName, EpisodeID: id(req), Chain: []compatEpisode{}}
			h, err := a.svc.EpisodeHistory(req.Context(), caller(req), q.VaultName, id(req))
			if err != nil {
				return out, err
			}
			for _, r := range h.Chain {
				e, err := a.svc.Episode(req.Context(), caller(req), q.VaultName, r.ID)
				if err != nil {
					return out, err
				}
				out.Chain = append(out.Chain, toCompatEpisode(e))
			}
			return out, nil
		}),
		compatHandle(a, "POST", base+"/{id}/invalidate", "compatInvalidateEpisode", func(req *http.Request, _ *none, b *compatInvalidateRequest) (compatEpisodeResponse, error) {
			e, err := a.svc.Invalidate(req.Context(), caller(req), b.VaultName, id(req), vault.InvalidateRequest{ValidTo: deref(b.ValidTo), Reason: deref(b.Reason)})
			return compatEpisodeAnswer(b.VaultName, e, err)
		}),
		compatHandle(a, "POST", base+"/{id}/supersede", "compatSupersedeEpisode", func(req *http.Request, _ *none, b *compatSupersedeRequest) (compatEpisodeResponse, error) {
			e, err := a.svc.Supersede(req.Context(), caller(req), b.VaultName, id(req), vault.SuccessorRequest{Content: b.Content,
				Entities: nonEmpty(b.Entities), Source: deref(b.Source), Confidence: b.Confidence, Salience: b.Salience,
				OccurredAt: deref(b.OccurredAt), ValidFrom: deref(b.ValidFrom), Metadata: b.Metadata})
			return compatEpisodeAnswer(b.VaultName, e, err)
		}),
	}
}

// compatQueryEpisodes queries an episodic vault: CtxVault's POST
// /episodes/query.
func (a *api) compatQueryEpisodes(req *http.Request, _ *none, b *compatQueryEpisodesRequest) (compatEpisodeMatches, error) {
	r := vault.QueryEpisodesRequest{Query: deref(b.Query), Entities: nonEmpty(b.Entities), Source: deref(b.Source),
		ValidAt: deref(b.ValidAt), KnownAt: deref(b.KnownAt), IncludeClosed: b.IncludeClosed, MetadataFilters: b.MetadataFilters,
		OrderBy: deref(b.OrderBy), HalfLifeDays: b.HalfLifeDays, Reinforce: b.Reinforce}
	if len(r.MetadataFilters) == 0 {
		r.MetadataFilters = nil
	}
	if b.MinConfidence != nil {
		r.MinConfidence = *b.MinConfidence
	}
	if b.Limit != nil {
		r.Limit = *b.Limit
	}
	// CtxVault reads weights with order_by composite only, and ignores
	// them otherwise; the service refuses them there, so they go on only
	// then. Keys other than its three are ignored, as CtxVault ignores
	// them.
	if b.Weights != nil && r.OrderBy == "composite" {
		w := &episodic.Weights{}
		for k, p := range map[string]**float64{"relevance": &w.Relevance, "recency": &w.Recency, "salience": &w.Salience} {
			if x, ok := b.Weights[k]; ok {
				*p = &x
			}
		}
		r.Weights = w
	}
	res, err := a.svc.QueryEpisodes(req.Context(), caller(req), b.VaultName, r)
	if err != nil {
		return compatEpisodeMatches{}, err
	}
	out := compatEpisodeMatches{VaultName: b.VaultName, Query: b.Query, OrderBy: res.OrderBy, Results: []compatEpisodeMatch{}}
	if out.Query != nil && *out.Query == "" {
		out.Query = nil
	}
	for _, m := range res.Results {
		out.Results = append(out.Results, compatEpisodeMatch{compatEpisode: toCompatEpisode(m.EpisodeJSON), Score: m.Score,
			Similarity: m.Similarity, Recency: m.Recency, Relevance: m.Relevance, BM25: m.BM25})
	}
	return out, nil
}
