package vaultmcp

import (
	"context"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// Inputs and outputs of the episode tools.

// WriteEpisodeIn is a new statement.
type WriteEpisodeIn struct {
	Vault      string         `json:"vault" jsonschema:"the episodic vault"`
	Content    string         `json:"content" jsonschema:"one self-contained statement about the world, like 'Alice leads the payments team'"`
	Entities   []string       `json:"entities,omitempty" jsonschema:"who or what it is about, like [\"Alice\", \"payments team\"]: query_episodes and list_entities find statements by them"`
	Source     string         `json:"source,omitempty" jsonschema:"where you learned it (a person, a document, a URL); default your agent name"`
	Confidence *float64       `json:"confidence,omitempty" jsonschema:"how sure you are, 0 to 1; default 1"`
	Salience   *float64       `json:"salience,omitempty" jsonschema:"how much it matters, 0 to 1; default 0.5"`
	OccurredAt string         `json:"occurred_at,omitempty" jsonschema:"when the event happened (RFC 3339 or a date)"`
	ValidFrom  string         `json:"valid_from,omitempty" jsonschema:"when it started to hold; default occurred_at, else now"`
	ValidTo    string         `json:"valid_to,omitempty" jsonschema:"when it stops holding, if known; default open-ended"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"any other fields to keep with it"`
	DryRun     bool           `json:"dry_run,omitempty" jsonschema:"check the statement and return its hints without writing it"`
}

// WriteEpisodeOut is the written statement and what it resembles.
type WriteEpisodeOut struct {
	Vault   string  `json:"vault"`
	Episode Episode `json:"episode"`
	Hints   []Hint  `json:"hints" jsonschema:"open statements the new one resembles, each with the action that fits"`
	DryRun  bool    `json:"dry_run,omitempty" jsonschema:"true when nothing was written"`
	Advice  string  `json:"advice,omitempty" jsonschema:"what to do about the hints"`
}

// QueryEpisodesIn asks what an episodic vault holds.
type QueryEpisodesIn struct {
	Vault         string            `json:"vault" jsonschema:"the episodic vault"`
	Query         string            `json:"query,omitempty" jsonschema:"words to match; leave it out to list by recency or salience"`
	Entities      []string          `json:"entities,omitempty" jsonschema:"only statements about any of these, case-insensitively"`
	Source        string            `json:"source,omitempty" jsonschema:"only statements from this source"`
	ValidAt       string            `json:"valid_at,omitempty" jsonschema:"world time: what held then; default now"`
	KnownAt       string            `json:"known_at,omitempty" jsonschema:"belief time: as the vault believed it then, before later corrections; default now"`
	IncludeClosed bool              `json:"include_closed,omitempty" jsonschema:"also statements that no longer hold (invalidated, superseded), unless valid_at is given"`
	Disputed      bool              `json:"disputed,omitempty" jsonschema:"only statements in an open dispute"`
	MinConfidence float64           `json:"min_confidence,omitempty" jsonschema:"only statements at least this confident"`
	OrderBy       string            `json:"order_by,omitempty" jsonschema:"relevance (default with query; needs query), recency (default without), salience or composite"`
	Limit         int               `json:"limit,omitempty" jsonschema:"how many results, 1 to 200; default 10"`
	HalfLifeDays  float64           `json:"half_life_days,omitempty" jsonschema:"days for recency to halve; default 30"`
	Weights       *episodic.Weights `json:"weights,omitempty" jsonschema:"composite weights of relevance, recency and salience (order_by composite only); default 1 each"`
	Reinforce     bool              `json:"reinforce,omitempty" jsonschema:"record that these statements were recalled (raises their recall_count)"`
}

// QueryEpisodesOut is what query_episodes found.
type QueryEpisodesOut struct {
	Vault   string         `json:"vault"`
	Query   string         `json:"query,omitempty"`
	OrderBy string         `json:"order_by"`
	Results []EpisodeMatch `json:"results" jsonschema:"best first; empty when nothing matched"`
}

// EpisodeIn names an episode.
type EpisodeIn struct {
	Vault     string `json:"vault" jsonschema:"the episodic vault"`
	EpisodeID string `json:"episode_id" jsonschema:"the episode's id, as query_episodes shows it"`
}

// EpisodeOut is one episode.
type EpisodeOut struct {
	Vault   string  `json:"vault"`
	Episode Episode `json:"episode"`
}

// HistoryOut is an episode's chain.
type HistoryOut struct {
	Vault     string                `json:"vault"`
	EpisodeID string                `json:"episode_id"`
	Chain     []episodic.RecordJSON `json:"chain" jsonschema:"the statements linked by supersessions and revisions, oldest first, each with every version the vault held"`
}

// InvalidateIn closes an episode.
type InvalidateIn struct {
	Vault     string `json:"vault" jsonschema:"the episodic vault"`
	EpisodeID string `json:"episode_id" jsonschema:"the open episode that stopped holding"`
	ValidTo   string `json:"valid_to,omitempty" jsonschema:"when it stopped holding in the world; default now"`
	Reason    string `json:"reason,omitempty" jsonschema:"why, kept with the episode"`
}

// SuccessorIn is the new statement of supersede_episode and revise_episode.
type SuccessorIn struct {
	Vault      string         `json:"vault" jsonschema:"the episodic vault"`
	EpisodeID  string         `json:"episode_id" jsonschema:"the open episode to replace"`
	Content    string         `json:"content" jsonschema:"the new statement"`
	Entities   []string       `json:"entities,omitempty" jsonschema:"leave out to keep the old statement's entities; an empty list clears them"`
	Source     string         `json:"source,omitempty" jsonschema:"where you learned it"`
	Confidence *float64       `json:"confidence,omitempty" jsonschema:"0 to 1"`
	Salience   *float64       `json:"salience,omitempty" jsonschema:"0 to 1; default the old statement's"`
	OccurredAt string         `json:"occurred_at,omitempty" jsonschema:"when the change happened"`
	ValidFrom  string         `json:"valid_from,omitempty" jsonschema:"supersede_episode only: when the new statement starts to hold and the old one stops; default occurred_at, else now"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// SuccessorOut is the new statement and the one it replaced.
type SuccessorOut struct {
	Vault    string  `json:"vault"`
	Episode  Episode `json:"episode" jsonschema:"the new statement"`
	Replaced string  `json:"replaced" jsonschema:"the id of the statement it replaced, now closed"`
}

// ConfirmIn attests an episode once more.
type ConfirmIn struct {
	Vault     string `json:"vault" jsonschema:"the episodic vault"`
	EpisodeID string `json:"episode_id" jsonschema:"the open episode you heard again"`
	At        string `json:"at,omitempty" jsonschema:"when you heard it; default now"`
	Source    string `json:"source,omitempty" jsonschema:"who said it this time; default your agent name"`
}

// DisputeIn names two statements that cannot both hold.
type DisputeIn struct {
	Vault     string `json:"vault" jsonschema:"the episodic vault"`
	EpisodeID string `json:"episode_id" jsonschema:"one open episode"`
	OtherID   string `json:"other_id" jsonschema:"the open episode it contradicts"`
	Note      string `json:"note,omitempty" jsonschema:"what is in question"`
}

// DisputeOut is the two disputed episodes.
type DisputeOut struct {
	Vault    string    `json:"vault"`
	Episodes []Episode `json:"episodes"`
}

// EntitiesIn selects the statements whose entities are counted.
type EntitiesIn struct {
	Vault         string `json:"vault" jsonschema:"the episodic vault"`
	ValidAt       string `json:"valid_at,omitempty" jsonschema:"count what held then; default now"`
	KnownAt       string `json:"known_at,omitempty" jsonschema:"as the vault believed it then; default now"`
	IncludeClosed bool   `json:"include_closed,omitempty" jsonschema:"count closed statements too"`
	MinEpisodes   int    `json:"min_episodes,omitempty" jsonschema:"only entities named by at least this many statements; default 1"`
}

// EntitiesOut counts statements per entity.
type EntitiesOut struct {
	Vault    string                 `json:"vault"`
	Entities []episodic.EntityCount `json:"entities" jsonschema:"most named first"`
}

func (s *server) addEpisodeTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "write_episode", Description: "Record a new statement about the world in an " +
		"episodic vault: a fact, a decision, an event, with when it holds. Do not use it to change what the vault " +
		"already says: if the statement may be there already, query_episodes first or call with dry_run true, and " +
		"follow the hints — confirm (the same statement again: confirm_episode, do not write it twice), supersede " +
		"(the world changed: supersede_episode), revise (a better wording of the same fact: revise_episode), " +
		"dispute (both cannot hold and you cannot tell which is right: dispute_episodes)."}, s.writeEpisode)
	mcp.AddTool(srv, &mcp.Tool{Name: "query_episodes", Annotations: readOnly, Description: "Ask an episodic vault " +
		"what holds now, or held at valid_at, as the vault believed it at known_at. Filter by words, entities, " +
		"source or confidence; include_closed shows statements that no longer hold. Use it before writing, and to " +
		"find the episode ids the other episode tools take."}, s.queryEpisodes)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_episode", Annotations: readOnly, Description: "Get one episode by id, " +
		"with its state, confirmations, disputes and successor."}, s.getEpisode)
	mcp.AddTool(srv, &mcp.Tool{Name: "episode_history", Annotations: readOnly, Description: "Show how a statement " +
		"changed: the chain of statements linked by supersessions and revisions, oldest first, from any member, " +
		"with every version the vault held. Use it when a change is refused because the episode is closed, to find " +
		"the open statement that replaced it."}, s.episodeHistory)
	mcp.AddTool(srv, &mcp.Tool{Name: "invalidate_episode", Description: "Record that an open statement stopped " +
		"holding (at valid_to, default now) with nothing to replace it: the project was cancelled, the person left. " +
		"If a new statement replaces it, use supersede_episode; if it was never true, dispute or revise it instead. " +
		"The statement stays in history."}, s.invalidateEpisode)
	mcp.AddTool(srv, &mcp.Tool{Name: "supersede_episode", Description: "Replace an open statement because the world " +
		"changed (the price went up, the owner changed): the old one stops holding where the new one starts " +
		"(valid_from, default now), and the two are linked. Use it whenever new information contradicts something " +
		"already recorded that was true until now. If the old statement was only badly worded, use revise_episode; " +
		"if it simply stopped holding, invalidate_episode."}, s.supersedeEpisode)
	mcp.AddTool(srv, &mcp.Tool{Name: "revise_episode", Description: "Replace an open statement by a better wording " +
		"of the same fact, the world unchanged (a correction of a typo, a more precise phrasing): the revision holds " +
		"over the same time and keeps the confirmations and disputes. If the world changed, use supersede_episode."}, s.reviseEpisode)
	mcp.AddTool(srv, &mcp.Tool{Name: "confirm_episode", Description: "Record that you heard an open statement again " +
		"(from the same or another source). Use it instead of writing the same statement twice: it raises the " +
		"statement's confirmed_count and leaves it unchanged."}, s.confirmEpisode)
	mcp.AddTool(srv, &mcp.Tool{Name: "dispute_episodes", Description: "Record that two open statements contradict " +
		"each other and you cannot tell which is right: both stay, each listing the other in disputed_with, until " +
		"one is superseded or invalidated. When you know which is right, supersede or invalidate the wrong one " +
		"instead."}, s.disputeEpisodes)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_entities", Annotations: readOnly, Description: "List the entities (people, " +
		"projects, things) an episodic vault's statements are about, most named first: an overview of what the " +
		"vault knows, and the names query_episodes filters by."}, s.listEntities)
}

// episodes opens the episodic vault name for the agent, op checked.
func (s *server) episodes(ctx context.Context, tool, name string, op vault.Op) (*vault.Episodes, error) {
	v, err := s.vaultFor(ctx, tool, name, op, vault.Episodic)
	if err != nil {
		return nil, err
	}
	m, err := v.OpenEpisodes(ctx, s.agent, nil)
	if err != nil {
		return nil, toolError(tool, name, err)
	}
	return m, nil
}

// needID checks an episode id argument.
func needID(field, id string) error {
	if strings.TrimSpace(id) == "" {
		return badInput("%s is empty: give an episode id (query_episodes shows them)", field)
	}
	return nil
}

func (s *server) writeEpisode(ctx context.Context, _ *mcp.CallToolRequest, in WriteEpisodeIn) (*mcp.CallToolResult, WriteEpisodeOut, error) {
	const tool = "write_episode"
	w := episodic.Write{Content: in.Content, Entities: in.Entities, Source: in.Source, Confidence: in.Confidence,
		Salience: in.Salience, Metadata: in.Metadata, DryRun: in.DryRun}
	if w.Source == "" {
		w.Source = s.agent
	}
	var err error
	if w.OccurredAt, err = parseTime("occurred_at", in.OccurredAt); err != nil {
		return nil, WriteEpisodeOut{}, toolError(tool, in.Vault, err)
	}
	if w.ValidFrom, err = parseTime("valid_from", in.ValidFrom); err != nil {
		return nil, WriteEpisodeOut{}, toolError(tool, in.Vault, err)
	}
	if w.ValidTo, err = parseTime("valid_to", in.ValidTo); err != nil {
		return nil, WriteEpisodeOut{}, toolError(tool, in.Vault, err)
	}
	op := vault.Write
	if in.DryRun {
		op = vault.Read
	}
	m, err := s.episodes(ctx, tool, in.Vault, op)
	if err != nil {
		return nil, WriteEpisodeOut{}, err
	}
	defer m.Close()
	res, err := m.Write(ctx, w)
	if err != nil {
		return nil, WriteEpisodeOut{}, toolError(tool, in.Vault, err)
	}
	out := WriteEpisodeOut{Vault: in.Vault, DryRun: in.DryRun}
	if out.Episode, err = toEpisode(res.Episode); err != nil {
		return nil, WriteEpisodeOut{}, toolError(tool, in.Vault, err)
	}
	if out.Hints, err = toHints(res.Hints); err != nil {
		return nil, WriteEpisodeOut{}, toolError(tool, in.Vault, err)
	}
	switch {
	case len(res.Hints) > 0 && in.DryRun:
		out.Advice = "nothing was written. Each hint names an open statement this one resembles and the tool that fits: " +
			"confirm → confirm_episode on it instead of writing; supersede → supersede_episode on it if the world changed; " +
			"revise → revise_episode on it if this only words it better; dispute → dispute_episodes if both cannot hold. " +
			"If none fits, call write_episode again without dry_run."
	case len(res.Hints) > 0:
		out.Advice = "written as " + res.Episode.ID + ", but it resembles open statements (hints). If it repeats one, " +
			"it should have been confirm_episode; if it replaces one, supersede or dispute the old one " +
			"so that the vault does not hold both as true. Next time call with dry_run true first."
	case in.DryRun:
		out.Advice = "nothing was written and nothing similar is open: call write_episode again without dry_run."
	}
	return nil, out, nil
}

func (s *server) queryEpisodes(ctx context.Context, _ *mcp.CallToolRequest, in QueryEpisodesIn) (*mcp.CallToolResult, QueryEpisodesOut, error) {
	const tool = "query_episodes"
	fail := func(err error) (*mcp.CallToolResult, QueryEpisodesOut, error) {
		return nil, QueryEpisodesOut{}, toolError(tool, in.Vault, err)
	}
	validAt, err := parseTime("valid_at", in.ValidAt)
	if err != nil {
		return fail(err)
	}
	knownAt, err := parseTime("known_at", in.KnownAt)
	if err != nil {
		return fail(err)
	}
	if in.Limit < 0 || in.Limit > episodic.MaxLimit {
		return fail(badInput("limit %d is out of range: give 1 to %d", in.Limit, episodic.MaxLimit))
	}
	if in.HalfLifeDays < 0 {
		return fail(badInput("half_life_days must be more than 0"))
	}
	order := in.OrderBy
	switch order {
	case "":
		order = episodic.OrderRecency
		if strings.TrimSpace(in.Query) != "" {
			order = episodic.OrderRelevance
		}
	case episodic.OrderRelevance:
		if strings.TrimSpace(in.Query) == "" {
			return fail(badInput("order_by relevance needs a query: give query, or order by recency or salience"))
		}
	case episodic.OrderRecency, episodic.OrderSalience, episodic.OrderComposite:
	default:
		return fail(badInput("order_by %q is not one of relevance, recency, salience, composite", in.OrderBy))
	}
	if in.Weights != nil && order != episodic.OrderComposite {
		return fail(badInput("weights apply to order_by composite only: set order_by to composite, or leave weights out"))
	}
	m, err := s.episodes(ctx, tool, in.Vault, vault.Read)
	if err != nil {
		return nil, QueryEpisodesOut{}, err
	}
	defer m.Close()
	q := episodic.Query{Filter: episodic.Filter{ValidAt: validAt, KnownAt: knownAt, All: in.IncludeClosed,
		Entities: in.Entities, Source: in.Source, MinConfidence: in.MinConfidence, Disputed: in.Disputed},
		Text: in.Query, OrderBy: order, Limit: in.Limit, Reinforce: in.Reinforce,
		HalfLife: time.Duration(in.HalfLifeDays * float64(24*time.Hour))}
	if in.Weights != nil {
		q.Weights = *in.Weights
	}
	res, err := m.Query(ctx, q)
	if err != nil {
		return fail(err)
	}
	out := QueryEpisodesOut{Vault: in.Vault, Query: in.Query, OrderBy: order}
	if out.Results, err = toMatches(res); err != nil {
		return fail(err)
	}
	return nil, out, nil
}

func (s *server) getEpisode(ctx context.Context, _ *mcp.CallToolRequest, in EpisodeIn) (*mcp.CallToolResult, EpisodeOut, error) {
	return s.change(ctx, "get_episode", in.Vault, in.EpisodeID, vault.Read, func(m *vault.Episodes) (episodic.Episode, error) {
		return m.Get(ctx, in.EpisodeID)
	})
}

// change runs one operation on an episode and returns the episode.
func (s *server) change(ctx context.Context, tool, name, id string, op vault.Op,
	do func(*vault.Episodes) (episodic.Episode, error)) (*mcp.CallToolResult, EpisodeOut, error) {
	if err := needID("episode_id", id); err != nil {
		return nil, EpisodeOut{}, toolError(tool, name, err)
	}
	m, err := s.episodes(ctx, tool, name, op)
	if err != nil {
		return nil, EpisodeOut{}, err
	}
	defer m.Close()
	e, err := do(m)
	if err != nil {
		return nil, EpisodeOut{}, toolError(tool, name, err)
	}
	out := EpisodeOut{Vault: name}
	if out.Episode, err = toEpisode(e); err != nil {
		return nil, EpisodeOut{}, toolError(tool, name, err)
	}
	return nil, out, nil
}

func (s *server) episodeHistory(ctx context.Context, _ *mcp.CallToolRequest, in EpisodeIn) (*mcp.CallToolResult, HistoryOut, error) {
	const tool = "episode_history"
	if err := needID("episode_id", in.EpisodeID); err != nil {
		return nil, HistoryOut{}, toolError(tool, in.Vault, err)
	}
	m, err := s.episodes(ctx, tool, in.Vault, vault.Read)
	if err != nil {
		return nil, HistoryOut{}, err
	}
	defer m.Close()
	chain, err := m.History(ctx, in.EpisodeID)
	if err != nil {
		return nil, HistoryOut{}, toolError(tool, in.Vault, err)
	}
	out := HistoryOut{Vault: in.Vault, EpisodeID: in.EpisodeID, Chain: []episodic.RecordJSON{}}
	for _, r := range chain {
		out.Chain = append(out.Chain, r.JSON())
	}
	return nil, out, nil
}

func (s *server) invalidateEpisode(ctx context.Context, _ *mcp.CallToolRequest, in InvalidateIn) (*mcp.CallToolResult, EpisodeOut, error) {
	const tool = "invalidate_episode"
	validTo, err := parseTime("valid_to", in.ValidTo)
	if err != nil {
		return nil, EpisodeOut{}, toolError(tool, in.Vault, err)
	}
	return s.change(ctx, tool, in.Vault, in.EpisodeID, vault.Write, func(m *vault.Episodes) (episodic.Episode, error) {
		return m.Invalidate(ctx, in.EpisodeID, validTo, in.Reason)
	})
}

// successor reads the new statement of supersede_episode and revise_episode.
func successor(in *SuccessorIn) (episodic.Successor, error) {
	n := episodic.Successor{Content: in.Content, Entities: in.Entities, Source: in.Source, Salience: in.Salience,
		Confidence: in.Confidence, Metadata: in.Metadata}
	var err error
	if n.OccurredAt, err = parseTime("occurred_at", in.OccurredAt); err != nil {
		return n, err
	}
	if n.ValidFrom, err = parseTime("valid_from", in.ValidFrom); err != nil {
		return n, err
	}
	return n, nil
}

func (s *server) supersedeEpisode(ctx context.Context, _ *mcp.CallToolRequest, in SuccessorIn) (*mcp.CallToolResult, SuccessorOut, error) {
	return s.replace(ctx, "supersede_episode", &in, (*vault.Episodes).Supersede)
}

func (s *server) reviseEpisode(ctx context.Context, _ *mcp.CallToolRequest, in SuccessorIn) (*mcp.CallToolResult, SuccessorOut, error) {
	const tool = "revise_episode"
	if in.ValidFrom != "" {
		return nil, SuccessorOut{}, toolError(tool, in.Vault, badInput("a revision holds over the same time as the original, "+
			"so valid_from does not apply: leave it out, or use supersede_episode if the world changed"))
	}
	return s.replace(ctx, tool, &in, (*vault.Episodes).Revise)
}

// replace runs Supersede or Revise.
func (s *server) replace(ctx context.Context, tool string, in *SuccessorIn,
	do func(*vault.Episodes, context.Context, string, episodic.Successor) (episodic.Episode, error)) (*mcp.CallToolResult, SuccessorOut, error) {
	n, err := successor(in)
	if err != nil {
		return nil, SuccessorOut{}, toolError(tool, in.Vault, err)
	}
	res, out, err := s.change(ctx, tool, in.Vault, in.EpisodeID, vault.Write, func(m *vault.Episodes) (episodic.Episode, error) {
		return do(m, ctx, in.EpisodeID, n)
	})
	if err != nil {
		return nil, SuccessorOut{}, err
	}
	return res, SuccessorOut{Vault: out.Vault, Episode: out.Episode, Replaced: in.EpisodeID}, nil
}

func (s *server) confirmEpisode(ctx context.Context, _ *mcp.CallToolRequest, in ConfirmIn) (*mcp.CallToolResult, EpisodeOut, error) {
	const tool = "confirm_episode"
	at, err := parseTime("at", in.At)
	if err != nil {
		return nil, EpisodeOut{}, toolError(tool, in.Vault, err)
	}
	source := in.Source
	if source == "" {
		source = s.agent
	}
	return s.change(ctx, tool, in.Vault, in.EpisodeID, vault.Write, func(m *vault.Episodes) (episodic.Episode, error) {
		return m.Confirm(ctx, in.EpisodeID, at, source)
	})
}

func (s *server) disputeEpisodes(ctx context.Context, _ *mcp.CallToolRequest, in DisputeIn) (*mcp.CallToolResult, DisputeOut, error) {
	const tool = "dispute_episodes"
	fail := func(err error) (*mcp.CallToolResult, DisputeOut, error) {
		return nil, DisputeOut{}, toolError(tool, in.Vault, err)
	}
	if err := needID("episode_id", in.EpisodeID); err != nil {
		return fail(err)
	}
	if err := needID("other_id", in.OtherID); err != nil {
		return fail(err)
	}
	m, err := s.episodes(ctx, tool, in.Vault, vault.Write)
	if err != nil {
		return nil, DisputeOut{}, err
	}
	defer m.Close()
	a, b, err := m.Dispute(ctx, in.EpisodeID, in.OtherID, in.Note)
	if err != nil {
		return fail(err)
	}
	out := DisputeOut{Vault: in.Vault, Episodes: make([]Episode, 2)}
	for i, e := range []episodic.Episode{a, b} {
		if out.Episodes[i], err = toEpisode(e); err != nil {
			return fail(err)
		}
	}
	return nil, out, nil
}

func (s *server) listEntities(ctx context.Context, _ *mcp.CallToolRequest, in EntitiesIn) (*mcp.CallToolResult, EntitiesOut, error) {
	const tool = "list_entities"
	fail := func(err error) (*mcp.CallToolResult, EntitiesOut, error) {
		return nil, EntitiesOut{}, toolError(tool, in.Vault, err)
	}
	validAt, err := parseTime("valid_at", in.ValidAt)
	if err != nil {
		return fail(err)
	}
	knownAt, err := parseTime("known_at", in.KnownAt)
	if err != nil {
		return fail(err)
	}
	if in.MinEpisodes < 0 {
		return fail(badInput("min_episodes must be 1 or more"))
	}
	m, err := s.episodes(ctx, tool, in.Vault, vault.Read)
	if err != nil {
		return nil, EntitiesOut{}, err
	}
	defer m.Close()
	counts, err := m.Entities(ctx, episodic.Filter{ValidAt: validAt, KnownAt: knownAt, All: in.IncludeClosed}, max(in.MinEpisodes, 1))
	if err != nil {
		return fail(err)
	}
	return nil, EntitiesOut{Vault: in.Vault, Entities: nonNil(counts)}, nil
}
