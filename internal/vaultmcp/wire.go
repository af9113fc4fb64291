package vaultmcp

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// The tools' structured outputs. Episodes keep the wire shape of package
// episodic (the reference system's field names plus what the append-only
// model adds); they are declared here field by field so that the output
// schemas the tools announce describe them exactly.

// VaultInfo is one vault as list_vaults shows it.
type VaultInfo struct {
	Name       string `json:"name"`
	Type       string `json:"type" jsonschema:"semantic (documents), skill (procedures) or episodic (time-stamped statements)"`
	Scope      string `json:"scope" jsonschema:"local (this project) or global"`
	Restricted bool   `json:"restricted" jsonschema:"only attached agents can see the vault"`
	Access     string `json:"access" jsonschema:"read-write, or read-only when you can read and query but not write"`
	// EmbeddingModel is empty for skill vaults.
	EmbeddingModel string `json:"embedding_model,omitempty" jsonschema:"the embedder pinned for the vault; none means lexical search only"`
	Tools          string `json:"tools" jsonschema:"the tools that work on this vault"`
}

// Passage is one passage query found.
type Passage struct {
	Path    string  `json:"path" jsonschema:"the document, for read_doc"`
	Heading string  `json:"heading,omitempty"`
	Page    int     `json:"page,omitempty"`
	Chunk   int     `json:"chunk"`
	Text    string  `json:"text"`
	Score   float64 `json:"score"`
}

// DocInfo is one indexed document of a semantic vault.
type DocInfo struct {
	Path    string            `json:"path"`
	Chunks  int               `json:"chunks"`
	Indexed string            `json:"indexed" jsonschema:"when it was last indexed (UTC)"`
	Meta    map[string]string `json:"meta,omitempty" jsonschema:"metadata given when the document was written"`
}

// Skill is one skill; Instructions only from read_skill and write_skill.
type Skill struct {
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	Path         string            `json:"path"`
	License      string            `json:"license,omitempty"`
	AllowedTools []string          `json:"allowed_tools,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	Instructions string            `json:"instructions,omitempty"`
}

func toSkill(s *vault.SkillDoc) Skill {
	return Skill{Name: s.Name, Description: s.Description, Path: s.Path, License: s.License,
		AllowedTools: s.AllowedTools, Metadata: s.Metadata, Instructions: s.Instructions}
}

// Problem is a file that could not be used, and why.
type Problem struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Episode is an episode as the vault holds it.
type Episode struct {
	ID             string         `json:"id" jsonschema:"the statement's id, for get_episode, confirm_episode, supersede_episode..."`
	Content        string         `json:"content"`
	Entities       []string       `json:"entities"`
	Source         string         `json:"source"`
	Confidence     float64        `json:"confidence"`
	Salience       float64        `json:"salience"`
	OccurredAt     *string        `json:"occurred_at"`
	ValidFrom      *string        `json:"valid_from" jsonschema:"when it started to hold in the world"`
	ValidTo        *string        `json:"valid_to" jsonschema:"when it stopped holding; null while no end is known"`
	RecordedAt     *string        `json:"recorded_at" jsonschema:"when the vault first recorded it"`
	InvalidatedAt  *string        `json:"invalidated_at" jsonschema:"when the vault stopped holding it open; null while open"`
	SupersededBy   *string        `json:"superseded_by"`
	RecallCount    int            `json:"recall_count"`
	LastRecalledAt *string        `json:"last_recalled_at"`
	Metadata       map[string]any `json:"metadata"`

	State             string   `json:"state" jsonschema:"open, invalidated, superseded or revised"`
	InvalidationNote  string   `json:"invalidation_reason,omitempty"`
	Supersedes        string   `json:"supersedes,omitempty"`
	Revises           string   `json:"revises,omitempty"`
	RevisedBy         string   `json:"revised_by,omitempty"`
	ConfirmedCount    int      `json:"confirmed_count"`
	LastConfirmedAt   *string  `json:"last_confirmed_at"`
	DisputedWith      []string `json:"disputed_with" jsonschema:"open statements this one is disputed with"`
	Version           int64    `json:"version"`
	VersionRecordedAt *string  `json:"version_recorded_at"`
}

// EpisodeMatch is an episode query_episodes returned, with its score.
type EpisodeMatch struct {
	Episode
	Score      float64 `json:"score"`
	Relevance  float64 `json:"relevance"`
	BM25       float64 `json:"bm25"`
	Similarity float64 `json:"similarity"`
	Recency    float64 `json:"recency"`
}

// Hint is an open statement a new one resembles, with what to do about it.
type Hint struct {
	Episode    Episode `json:"episode"`
	Similarity float64 `json:"similarity"`
	Action     string  `json:"action" jsonschema:"confirm, supersede, revise or dispute: the tool to call instead of or after writing"`
	Why        string  `json:"why"`
}

// convert copies v's JSON form into out: the episodic types marshal to
// their wire shape, which the types above mirror.
func convert(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode %T: %w", out, err)
	}
	return nil
}

func toEpisode(e episodic.Episode) (Episode, error) {
	var out Episode
	err := convert(e, &out)
	return out, err
}

func toMatches(ms []episodic.Match) ([]EpisodeMatch, error) {
	out := []EpisodeMatch{}
	return out, convert(nonNil(ms), &out)
}

func toHints(hs []episodic.Hint) ([]Hint, error) {
	out := []Hint{}
	return out, convert(nonNil(hs), &out)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
