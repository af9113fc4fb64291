package vault

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// The requests of the episode operations. Times are strings: RFC 3339 or
// a bare date, UTC when they carry no offset (episodic.ParseTime); an
// empty string is absent, anything else must parse. Fields left out take
// the library's defaults.

// WriteEpisodeRequest is a new statement.
type WriteEpisodeRequest struct {
	Content    string         `json:"content" jsonschema:"one self-contained statement about the world, like 'Alice leads the payments team'"`
	Entities   []string       `json:"entities,omitempty" jsonschema:"who or what it is about, like [\"Alice\", \"payments team\"]; trimmed and de-duplicated case-insensitively"`
	Source     string         `json:"source,omitempty" jsonschema:"where it was learned (a person, a document, a URL); default the writer's name"`
	Confidence *float64       `json:"confidence,omitempty" jsonschema:"how sure the writer is, 0 to 1; default 1"`
	Salience   *float64       `json:"salience,omitempty" jsonschema:"how much it matters, 0 to 1; default 0.5"`
	OccurredAt string         `json:"occurred_at,omitempty" jsonschema:"when the event happened (RFC 3339 or a date)"`
	ValidFrom  string         `json:"valid_from,omitempty" jsonschema:"when it started to hold; default occurred_at, else now"`
	ValidTo    string         `json:"valid_to,omitempty" jsonschema:"when it stops holding, if known; default open-ended"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"any other fields to keep with it"`
	DryRun     bool           `json:"dry_run,omitempty" jsonschema:"check the statement and return its hints without writing it"`
}

// WriteEpisodeResult is the written statement and the open statements it
// resembles, each with the action that fits; nothing is merged
// automatically.
type WriteEpisodeResult struct {
	Episode episodic.EpisodeJSON `json:"episode"`
	Hints   []episodic.HintJSON  `json:"hints" jsonschema:"open statements the new one resembles, each with the action that fits"`
	DryRun  bool                 `json:"dry_run,omitempty" jsonschema:"true when nothing was written"`
	Advice  string               `json:"advice,omitempty" jsonschema:"what to do about the hints"`
}

// QueryEpisodesRequest asks what an episodic vault holds.
type QueryEpisodesRequest struct {
	Query           string            `json:"query,omitempty" jsonschema:"words to match (BM25, and vectors when the vault has an embedder); leave it out to list by recency or salience"`
	Entities        []string          `json:"entities,omitempty" jsonschema:"only statements about any of these, case-insensitively"`
	Source          string            `json:"source,omitempty" jsonschema:"only statements from this source"`
	ValidAt         string            `json:"valid_at,omitempty" jsonschema:"world time: what held then; default now"`
	KnownAt         string            `json:"known_at,omitempty" jsonschema:"belief time: as the vault believed it then, before later corrections; default now"`
	IncludeClosed   bool              `json:"include_closed,omitempty" jsonschema:"also statements that no longer hold (invalidated, superseded), unless valid_at is given"`
	Disputed        bool              `json:"disputed,omitempty" jsonschema:"only statements in an open dispute"`
	MinConfidence   float64           `json:"min_confidence,omitempty" jsonschema:"only statements at least this confident"`
	MetadataFilters map[string]any    `json:"metadata_filters,omitempty" jsonschema:"only statements whose metadata has exactly these values"`
	OrderBy         string            `json:"order_by,omitempty" jsonschema:"relevance (default with query; needs query), recency (default without), salience or composite"`
	Limit           int               `json:"limit,omitempty" jsonschema:"how many results, 1 to 200; default 10"`
	HalfLifeDays    *float64          `json:"half_life_days,omitempty" jsonschema:"days for recency to halve, more than 0; default 30"`
	Weights         *episodic.Weights `json:"weights,omitempty" jsonschema:"composite weights of relevance, recency and salience (order_by composite only); default 1 each"`
	Reinforce       bool              `json:"reinforce,omitempty" jsonschema:"record that these statements were recalled (raises their recall_count): a write, it needs write access"`
}

// QueryEpisodesResult is what a query found, best first.
type QueryEpisodesResult struct {
	Query   string               `json:"query,omitempty"`
	OrderBy string               `json:"order_by"`
	Results []episodic.MatchJSON `json:"results" jsonschema:"best first; empty when nothing matched"`
}

// InvalidateRequest closes an open statement.
type InvalidateRequest struct {
	ValidTo string `json:"valid_to,omitempty" jsonschema:"when it stopped holding in the world; default now"`
	Reason  string `json:"reason,omitempty" jsonschema:"why, kept with the episode"`
}

// SuccessorRequest is the new statement of a supersession or a revision.
// Entities and salience are inherited unless given (an empty list clears
// the entities); a supersession's confidence is 1 and its metadata fresh
// unless given, a revision inherits both.
type SuccessorRequest struct {
	Content    string         `json:"content" jsonschema:"the new statement"`
	Entities   []string       `json:"entities,omitempty" jsonschema:"leave out to keep the old statement's entities; an empty list clears them"`
	Source     string         `json:"source,omitempty" jsonschema:"where it was learned; default the writer's name"`
	Confidence *float64       `json:"confidence,omitempty" jsonschema:"0 to 1"`
	Salience   *float64       `json:"salience,omitempty" jsonschema:"0 to 1; default the old statement's"`
	OccurredAt string         `json:"occurred_at,omitempty" jsonschema:"when the change happened"`
	ValidFrom  string         `json:"valid_from,omitempty" jsonschema:"supersede only: when the new statement starts to hold and the old one stops; default occurred_at, else now"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// ConfirmRequest attests an open statement once more.
type ConfirmRequest struct {
	At     string `json:"at,omitempty" jsonschema:"when it was heard again; default now"`
	Source string `json:"source,omitempty" jsonschema:"who said it this time; default the caller's name"`
}

// DisputeRequest names the statement an open one contradicts.
type DisputeRequest struct {
	Other string `json:"other" jsonschema:"the id of the open statement that cannot hold together with this one"`
	Note  string `json:"note,omitempty" jsonschema:"what is in question"`
}

// DisputeResult is both disputed statements.
type DisputeResult struct {
	Episode episodic.EpisodeJSON `json:"episode"`
	Other   episodic.EpisodeJSON `json:"other"`
}

// EntitiesRequest selects the statements whose entities are counted.
type EntitiesRequest struct {
	ValidAt       string  `json:"valid_at,omitempty" jsonschema:"count what held then; default now"`
	KnownAt       string  `json:"known_at,omitempty" jsonschema:"as the vault believed it then; default now"`
	IncludeClosed bool    `json:"include_closed,omitempty" jsonschema:"count closed statements too"`
	Source        string  `json:"source,omitempty"`
	MinConfidence float64 `json:"min_confidence,omitempty"`
	Disputed      bool    `json:"disputed,omitempty"`
	MinEpisodes   int     `json:"min_episodes,omitempty" jsonschema:"only entities named by at least this many statements; default 1"`
}

// HistoryResult is the chain of statements an episode belongs to.
type HistoryResult struct {
	EpisodeID string                `json:"episode_id"`
	Chain     []episodic.RecordJSON `json:"chain" jsonschema:"the statements linked by supersessions and revisions, oldest first, each with every version the vault held"`
}

// parseTime reads a time field; "" is nil.
func parseTime(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := episodic.ParseTime(s)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("%s %q is not a time", field, s), Field: field,
			Fix: "use RFC 3339 like 2026-03-01T14:30:00Z, or a bare date like 2026-03-01 (a time without an offset is UTC)"}
	}
	return &t, nil
}

// parseTimes reads several time fields: pairs of name and value, filling
// targets in order.
func parseTimes(targets []**time.Time, fields ...string) error {
	for i, t := range targets {
		v, err := parseTime(fields[2*i], fields[2*i+1])
		if err != nil {
			return err
		}
		*t = v
	}
	return nil
}

// needID checks an episode id.
func needID(field, id string) error {
	if strings.TrimSpace(id) == "" {
		return invalid(field, "%s is empty: give an episode id (a query shows them)", field)
	}
	return nil
}

// memory opens the rules of an episodic vault over its store, with the
// vault's embedder checked against its pin, and pinned by the first write
// (none included: statements are embedded all alike, or none is). An
// episodic vault needs its embedder for reads too: its queries rank by it.
func (s *Service) memory(ctx context.Context, v *Vault, op Op) (*episodic.Memory, error) {
	em, err := s.embedding(ctx, v, false)
	if err != nil {
		return nil, err
	}
	if !em.pinned && op == Write {
		p := store.Pin{Model: embed.None}
		if em.e != nil {
			p.Model = em.e.Spec()
		}
		if err := s.reg.SetPin(ctx, v.ID, &p); err != nil {
			return nil, fmt.Errorf("pin the embedder of vault %q: %w", v.Name, err)
		}
	}
	st, err := s.b.Episodes(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	return episodic.New(st, episodic.Options{Embedder: em.e, Now: s.now}), nil
}

// episodes opens the episodic vault called name for c with op checked.
func (s *Service) episodes(ctx context.Context, c Caller, name string, op Op, action, at string) (*Vault, *episodic.Memory, error) {
	v, err := s.open(ctx, c, name, op, action, at, Episodic)
	if err != nil {
		return nil, nil, err
	}
	m, err := s.memory(ctx, v, op)
	if err != nil {
		return nil, nil, err
	}
	return v, m, nil
}

// WriteEpisode records a new statement; the result lists the open
// statements it resembles. A dry run needs read access only and writes
// nothing.
func (s *Service) WriteEpisode(ctx context.Context, c Caller, name string, req WriteEpisodeRequest) (WriteEpisodeResult, error) {
	op := Write
	if req.DryRun {
		op = Read
	}
	v, m, err := s.episodes(ctx, c, name, op, "write-episode", "")
	if err != nil {
		return WriteEpisodeResult{}, err
	}
	w := episodic.Write{Content: req.Content, Entities: req.Entities, Source: req.Source, Confidence: req.Confidence,
		Salience: req.Salience, Metadata: req.Metadata, DryRun: req.DryRun}
	if w.Source == "" {
		w.Source = c.String()
	}
	if err := parseTimes([]**time.Time{&w.OccurredAt, &w.ValidFrom, &w.ValidTo},
		"occurred_at", req.OccurredAt, "valid_from", req.ValidFrom, "valid_to", req.ValidTo); err != nil {
		return WriteEpisodeResult{}, err
	}
	res, err := m.Write(ctx, w)
	if err != nil {
		return WriteEpisodeResult{}, err
	}
	out := WriteEpisodeResult{Episode: res.Episode.JSON(), Hints: []episodic.HintJSON{}, DryRun: req.DryRun}
	for _, h := range res.Hints {
		out.Hints = append(out.Hints, h.JSON())
	}
	switch {
	case len(res.Hints) > 0 && req.DryRun:
		out.Advice = "nothing was written. Each hint names an open statement this one resembles and the action that fits: " +
			"confirm (confirm that statement instead of writing), supersede (supersede it if the world changed), revise " +
			"(revise it if this only words it better), dispute (dispute them if both cannot hold). If none fits, write again without dry_run."
	case len(res.Hints) > 0:
		out.Advice = "written as " + res.Episode.ID + ", but it resembles open statements (hints). If it repeats one, " +
			"it should have been a confirmation; if it replaces one, supersede or dispute the old one so that the vault " +
			"does not hold both as true. Next time write with dry_run first."
	case req.DryRun:
		out.Advice = "nothing was written and nothing similar is open: write again without dry_run."
	}
	if !req.DryRun {
		s.audit(ctx, v, c, "write-episode", res.Episode.ID, "")
	}
	return out, nil
}

// QueryEpisodes asks what the vault holds at valid_at as it believed it at
// known_at. With Reinforce it records a recall of each result, which is a
// write: it needs write access.
func (s *Service) QueryEpisodes(ctx context.Context, c Caller, name string, req QueryEpisodesRequest) (QueryEpisodesResult, error) {
	op := Read
	if req.Reinforce {
		op = Write
	}
	v, m, err := s.episodes(ctx, c, name, op, "query-episodes", "")
	if err != nil {
		return QueryEpisodesResult{}, err
	}
	q := episodic.Query{Filter: episodic.Filter{All: req.IncludeClosed, Entities: req.Entities, Source: req.Source,
		MinConfidence: req.MinConfidence, Disputed: req.Disputed, Meta: req.MetadataFilters},
		Text: req.Query, OrderBy: req.OrderBy, Limit: req.Limit, Reinforce: req.Reinforce}
	if err := parseTimes([]**time.Time{&q.ValidAt, &q.KnownAt}, "valid_at", req.ValidAt, "known_at", req.KnownAt); err != nil {
		return QueryEpisodesResult{}, err
	}
	if req.HalfLifeDays != nil {
		if !(*req.HalfLifeDays > 0) {
			return QueryEpisodesResult{}, invalid("half_life_days", "half_life_days must be more than 0")
		}
		q.HalfLife = time.Duration(*req.HalfLifeDays * float64(24*time.Hour))
	}
	if req.Weights != nil {
		q.Weights = *req.Weights
	}
	res, err := m.Query(ctx, q)
	if err != nil {
		return QueryEpisodesResult{}, err
	}
	out := QueryEpisodesResult{Query: req.Query, OrderBy: episodic.DefaultOrder(req.OrderBy, req.Query), Results: []episodic.MatchJSON{}}
	for _, r := range res {
		out.Results = append(out.Results, r.JSON())
	}
	if req.Reinforce && len(res) > 0 {
		s.audit(ctx, v, c, "query-episodes", "", fmt.Sprintf("reinforced=%d", len(res)))
	}
	return out, nil
}

// Episode returns an episode as the vault holds it now (a revised one as it
// was last held).
func (s *Service) Episode(ctx context.Context, c Caller, name, id string) (episodic.EpisodeJSON, error) {
	_, m, err := s.episodes(ctx, c, name, Read, "get-episode", id)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	if err := needID("episode_id", id); err != nil {
		return episodic.EpisodeJSON{}, err
	}
	e, err := m.Get(ctx, id)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	return e.JSON(), nil
}

// EpisodeHistory returns the chain of statements an episode belongs to
// (supersessions, revisions), oldest first, with every version.
func (s *Service) EpisodeHistory(ctx context.Context, c Caller, name, id string) (HistoryResult, error) {
	_, m, err := s.episodes(ctx, c, name, Read, "episode-history", id)
	if err != nil {
		return HistoryResult{}, err
	}
	if err := needID("episode_id", id); err != nil {
		return HistoryResult{}, err
	}
	chain, err := m.History(ctx, id)
	if err != nil {
		return HistoryResult{}, err
	}
	out := HistoryResult{EpisodeID: id, Chain: []episodic.RecordJSON{}}
	for _, r := range chain {
		out.Chain = append(out.Chain, r.JSON())
	}
	return out, nil
}

// change runs one change of an episode, audited under action.
func (s *Service) change(ctx context.Context, c Caller, name, id, action string,
	do func(*episodic.Memory) (episodic.Episode, error)) (episodic.EpisodeJSON, error) {
	v, m, err := s.episodes(ctx, c, name, Write, action, id)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	if err := needID("episode_id", id); err != nil {
		return episodic.EpisodeJSON{}, err
	}
	e, err := do(m)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	s.audit(ctx, v, c, action, id, "")
	return e.JSON(), nil
}

// Invalidate closes an open episode: it stopped holding at valid_to.
func (s *Service) Invalidate(ctx context.Context, c Caller, name, id string, req InvalidateRequest) (episodic.EpisodeJSON, error) {
	to, err := parseTime("valid_to", req.ValidTo)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	return s.change(ctx, c, name, id, "invalidate", func(m *episodic.Memory) (episodic.Episode, error) {
		return m.Invalidate(ctx, id, to, req.Reason)
	})
}

// successor reads the new statement of a supersession or revision.
func successor(c Caller, req SuccessorRequest) (episodic.Successor, error) {
	n := episodic.Successor{Content: req.Content, Entities: req.Entities, Source: req.Source, Salience: req.Salience,
		Confidence: req.Confidence, Metadata: req.Metadata}
	if n.Source == "" {
		n.Source = c.String()
	}
	err := parseTimes([]**time.Time{&n.OccurredAt, &n.ValidFrom}, "occurred_at", req.OccurredAt, "valid_from", req.ValidFrom)
	return n, err
}

// Supersede replaces an open episode by a new statement (the world
// changed) and returns the new one.
func (s *Service) Supersede(ctx context.Context, c Caller, name, id string, req SuccessorRequest) (episodic.EpisodeJSON, error) {
	n, err := successor(c, req)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	return s.change(ctx, c, name, id, "supersede", func(m *episodic.Memory) (episodic.Episode, error) {
		return m.Supersede(ctx, id, n)
	})
}

// Revise replaces an open episode by a better wording (the world
// unchanged) and returns the revision.
func (s *Service) Revise(ctx context.Context, c Caller, name, id string, req SuccessorRequest) (episodic.EpisodeJSON, error) {
	if req.ValidFrom != "" {
		return episodic.EpisodeJSON{}, invalid("valid_from", "a revision holds over the same time as the original, so valid_from does not apply: "+
			"leave it out, or supersede if the world changed")
	}
	n, err := successor(c, req)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	return s.change(ctx, c, name, id, "revise", func(m *episodic.Memory) (episodic.Episode, error) {
		return m.Revise(ctx, id, n)
	})
}

// Confirm records one more attestation of an open episode.
func (s *Service) Confirm(ctx context.Context, c Caller, name, id string, req ConfirmRequest) (episodic.EpisodeJSON, error) {
	at, err := parseTime("at", req.At)
	if err != nil {
		return episodic.EpisodeJSON{}, err
	}
	source := req.Source
	if source == "" {
		source = c.String()
	}
	return s.change(ctx, c, name, id, "confirm", func(m *episodic.Memory) (episodic.Episode, error) {
		return m.Confirm(ctx, id, at, source)
	})
}

// Dispute records that two open episodes cannot both hold; neither is
// closed.
func (s *Service) Dispute(ctx context.Context, c Caller, name, id string, req DisputeRequest) (DisputeResult, error) {
	v, m, err := s.episodes(ctx, c, name, Write, "dispute", id)
	if err != nil {
		return DisputeResult{}, err
	}
	if err := needID("episode_id", id); err != nil {
		return DisputeResult{}, err
	}
	if err := needID("other", req.Other); err != nil {
		return DisputeResult{}, err
	}
	a, b, err := m.Dispute(ctx, id, req.Other, req.Note)
	if err != nil {
		return DisputeResult{}, err
	}
	s.audit(ctx, v, c, "dispute", id, "other="+req.Other)
	return DisputeResult{Episode: a.JSON(), Other: b.JSON()}, nil
}

// Entities counts the selected statements per entity, most named first.
func (s *Service) Entities(ctx context.Context, c Caller, name string, req EntitiesRequest) ([]episodic.EntityCount, error) {
	_, m, err := s.episodes(ctx, c, name, Read, "list-entities", "")
	if err != nil {
		return nil, err
	}
	if req.MinEpisodes < 0 {
		return nil, invalid("min_episodes", "min_episodes must be 1 or more")
	}
	f := episodic.Filter{All: req.IncludeClosed, Source: req.Source, MinConfidence: req.MinConfidence, Disputed: req.Disputed}
	if err := parseTimes([]**time.Time{&f.ValidAt, &f.KnownAt}, "valid_at", req.ValidAt, "known_at", req.KnownAt); err != nil {
		return nil, err
	}
	counts, err := m.Entities(ctx, f, max(req.MinEpisodes, 1))
	if counts == nil {
		counts = []episodic.EntityCount{}
	}
	return counts, err
}

// EpisodeStats counts the statements held at known_at: total, open,
// closed, disputed.
func (s *Service) EpisodeStats(ctx context.Context, c Caller, name, knownAt string) (episodic.Stats, error) {
	_, m, err := s.episodes(ctx, c, name, Read, "episode-stats", "")
	if err != nil {
		return episodic.Stats{}, err
	}
	known, err := parseTime("known_at", knownAt)
	if err != nil {
		return episodic.Stats{}, err
	}
	return m.Stats(ctx, known)
}

// ExportEpisodes writes every statement with its versions, attestations,
// disputes and recalls as JSON lines (what ImportEpisodes reads).
func (s *Service) ExportEpisodes(ctx context.Context, c Caller, name string, w io.Writer) error {
	_, m, err := s.episodes(ctx, c, name, Read, "export", "")
	if err != nil {
		return err
	}
	return m.Export(ctx, w)
}

// ImportEpisodes reads an export into the vault in one transaction: all or
// nothing, a conflict if any statement exists.
func (s *Service) ImportEpisodes(ctx context.Context, c Caller, name string, r io.Reader) (int, error) {
	v, m, err := s.episodes(ctx, c, name, Write, "import", "")
	if err != nil {
		return 0, err
	}
	n, err := m.Import(ctx, r)
	if err != nil {
		return 0, err
	}
	s.audit(ctx, v, c, "import", "", fmt.Sprintf("statements=%d", n))
	return n, nil
}
