package vaultmcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// The inputs and outputs of the episode tools: the service's request and
// answer types, with the vault's name (and the episode) beside them.

// EpisodicIn names an episodic vault.
type EpisodicIn struct {
	Vault string `json:"vault" jsonschema:"the episodic vault"`
}

// EpisodeIn names an episode.
type EpisodeIn struct {
	Vault     string `json:"vault" jsonschema:"the episodic vault"`
	EpisodeID string `json:"episode_id" jsonschema:"the episode's id, as query_episodes shows it"`
}

// WriteEpisodeIn is a new statement.
type WriteEpisodeIn struct {
	EpisodicIn
	vault.WriteEpisodeRequest
}

// WriteEpisodeOut is the written statement and what it resembles.
type WriteEpisodeOut struct {
	Vault string `json:"vault"`
	vault.WriteEpisodeResult
}

// QueryEpisodesIn asks what an episodic vault holds.
type QueryEpisodesIn struct {
	EpisodicIn
	vault.QueryEpisodesRequest
}

// QueryEpisodesOut is what query_episodes found.
type QueryEpisodesOut struct {
	Vault string `json:"vault"`
	vault.QueryEpisodesResult
}

// EpisodeOut is one episode.
type EpisodeOut struct {
	Vault   string               `json:"vault"`
	Episode episodic.EpisodeJSON `json:"episode"`
}

// HistoryOut is an episode's chain.
type HistoryOut struct {
	Vault string `json:"vault"`
	vault.HistoryResult
}

// InvalidateIn closes an episode.
type InvalidateIn struct {
	EpisodeIn
	vault.InvalidateRequest
}

// SuccessorIn is the new statement of supersede_episode and revise_episode.
type SuccessorIn struct {
	EpisodeIn
	vault.SuccessorRequest
}

// SuccessorOut is the new statement and the one it replaced.
type SuccessorOut struct {
	Vault    string               `json:"vault"`
	Episode  episodic.EpisodeJSON `json:"episode" jsonschema:"the new statement"`
	Replaced string               `json:"replaced" jsonschema:"the id of the statement it replaced, now closed"`
}

// ConfirmIn attests an episode once more.
type ConfirmIn struct {
	EpisodeIn
	vault.ConfirmRequest
}

// DisputeIn names two statements that cannot both hold.
type DisputeIn struct {
	EpisodeIn
	vault.DisputeRequest
}

// DisputeOut is the two disputed episodes.
type DisputeOut struct {
	Vault string `json:"vault"`
	vault.DisputeResult
}

// EntitiesIn selects the statements whose entities are counted.
type EntitiesIn struct {
	EpisodicIn
	vault.EntitiesRequest
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
	mcp.AddTool(srv, &mcp.Tool{Name: "query_episodes", Description: "Ask an episodic vault " +
		"what holds now, or held at valid_at, as the vault believed it at known_at. Filter by words, entities, " +
		"source or confidence; include_closed shows statements that no longer hold. Use it before writing, and to " +
		"find the episode ids the other episode tools take. With reinforce true it records that the results were " +
		"recalled, which needs write access."}, s.queryEpisodes)
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

func (s *server) writeEpisode(ctx context.Context, _ *mcp.CallToolRequest, in WriteEpisodeIn) (*mcp.CallToolResult, WriteEpisodeOut, error) {
	res, err := s.svc.WriteEpisode(ctx, s.caller, in.Vault, in.WriteEpisodeRequest)
	return nil, WriteEpisodeOut{Vault: in.Vault, WriteEpisodeResult: res}, err
}

func (s *server) queryEpisodes(ctx context.Context, _ *mcp.CallToolRequest, in QueryEpisodesIn) (*mcp.CallToolResult, QueryEpisodesOut, error) {
	res, err := s.svc.QueryEpisodes(ctx, s.caller, in.Vault, in.QueryEpisodesRequest)
	return nil, QueryEpisodesOut{Vault: in.Vault, QueryEpisodesResult: res}, err
}

// episode answers one episode.
func episode(vaultName string, e episodic.EpisodeJSON, err error) (*mcp.CallToolResult, EpisodeOut, error) {
	return nil, EpisodeOut{Vault: vaultName, Episode: e}, err
}

func (s *server) getEpisode(ctx context.Context, _ *mcp.CallToolRequest, in EpisodeIn) (*mcp.CallToolResult, EpisodeOut, error) {
	e, err := s.svc.Episode(ctx, s.caller, in.Vault, in.EpisodeID)
	return episode(in.Vault, e, err)
}

func (s *server) episodeHistory(ctx context.Context, _ *mcp.CallToolRequest, in EpisodeIn) (*mcp.CallToolResult, HistoryOut, error) {
	h, err := s.svc.EpisodeHistory(ctx, s.caller, in.Vault, in.EpisodeID)
	return nil, HistoryOut{Vault: in.Vault, HistoryResult: h}, err
}

func (s *server) invalidateEpisode(ctx context.Context, _ *mcp.CallToolRequest, in InvalidateIn) (*mcp.CallToolResult, EpisodeOut, error) {
	e, err := s.svc.Invalidate(ctx, s.caller, in.Vault, in.EpisodeID, in.InvalidateRequest)
	return episode(in.Vault, e, err)
}

func (s *server) supersedeEpisode(ctx context.Context, _ *mcp.CallToolRequest, in SuccessorIn) (*mcp.CallToolResult, SuccessorOut, error) {
	e, err := s.svc.Supersede(ctx, s.caller, in.Vault, in.EpisodeID, in.SuccessorRequest)
	return nil, SuccessorOut{Vault: in.Vault, Episode: e, Replaced: in.EpisodeID}, err
}

func (s *server) reviseEpisode(ctx context.Context, _ *mcp.CallToolRequest, in SuccessorIn) (*mcp.CallToolResult, SuccessorOut, error) {
	e, err := s.svc.Revise(ctx, s.caller, in.Vault, in.EpisodeID, in.SuccessorRequest)
	return nil, SuccessorOut{Vault: in.Vault, Episode: e, Replaced: in.EpisodeID}, err
}

func (s *server) confirmEpisode(ctx context.Context, _ *mcp.CallToolRequest, in ConfirmIn) (*mcp.CallToolResult, EpisodeOut, error) {
	e, err := s.svc.Confirm(ctx, s.caller, in.Vault, in.EpisodeID, in.ConfirmRequest)
	return episode(in.Vault, e, err)
}

func (s *server) disputeEpisodes(ctx context.Context, _ *mcp.CallToolRequest, in DisputeIn) (*mcp.CallToolResult, DisputeOut, error) {
	res, err := s.svc.Dispute(ctx, s.caller, in.Vault, in.EpisodeID, in.DisputeRequest)
	return nil, DisputeOut{Vault: in.Vault, DisputeResult: res}, err
}

func (s *server) listEntities(ctx context.Context, _ *mcp.CallToolRequest, in EntitiesIn) (*mcp.CallToolResult, EntitiesOut, error) {
	counts, err := s.svc.Entities(ctx, s.caller, in.Vault, in.EntitiesRequest)
	return nil, EntitiesOut{Vault: in.Vault, Entities: counts}, err
}
