package vaultapi

// CtxVault's HTTP API under /ctxvault, served as its documentation and
// code describe it, so that a program written for CtxVault works
// unchanged: the same routes (its semantic, skill, episodic and shared
// routes, and the POST /init and POST /write of its README's Quick
// Start), the same request fields with the same defaults and bounds, the
// same response fields and types, and the same statuses. Every route
// goes through package vault like the /v1 routes: they only translate.
//
// Requests and errors (compat_fastapi.go): a body or query string that
// does not fit the route's model is a 422 with FastAPI's detail list;
// other errors are {"detail": "message"}, with ctxkit's structured error
// beside it under "error" (code, message, fix). Fields a route does not
// know are ignored, as FastAPI ignores them, except top_k, the field the
// README's query example posts: it is read as n_results (both at once
// must agree). POST /write reads filename, the field its Quick Start
// posts, as file_path. Statuses: 400 for a missing vault, an operation
// its type does not support, and bad input; 403 for a restricted vault
// the caller is not attached to; 404 for a missing episode, document or
// skill, and for a semantic query that matched nothing ("No results
// found."); 409 for an existing file or skill and a closed episode; 200
// for every success.
//
// Authentication (compat_auth.go): by default a bearer token, as on /v1;
// X-CtxVault-Agent is accepted only with the token of the agent it names.
// With `ctxkit serve --ctxvault-auth header` (loopback only), CtxVault's
// own model: a caller without a token is the agent the header names
// (vault.AssertedCaller, audited as asserted) or anonymous; public vaults
// are open to it, read and write, and a restricted vault needs an
// attached agent (403 otherwise, with or without the header: CtxVault's
// README says 403 where its code answers 400 for a missing header).
//
// Paths: file paths are relative to the vault, or absolute inside its
// folder; POST /docs/write and /write echo the path as given.
//
// Episodes: the episode JSON has CtxVault's fields (and ctxkit's beside
// them: state, version, confirmations...); invalidation_reason is also in
// metadata, as CtxVault keeps it. Times are written as CtxVault writes
// its own (Python's isoformat in UTC: 2026-03-02T09:00:00+00:00, with
// microseconds when not zero), so a time given in that form comes back as
// given. A time given with another offset, a Z or as a bare date comes
// back as the same instant in that form: CtxVault would echo the string
// and then compare it as text with the others, which orders mixed offsets
// wrongly; ctxkit compares instants.
//
// Where ctxkit differs on purpose (docs/ctxvault.md lists it for users):
//   - a token is required unless the server runs with --ctxvault-auth
//     header on the loopback; /index and /vaults are checked like every
//     route (CtxVault checks neither); GET /vaults lists the vaults the
//     caller may use (CtxVault lists all), and allowed_agents in full to
//     the owner only, vault_path to the owner only;
//   - DELETE /delete without file_path is a 400: ctxkit does not empty a
//     vault over HTTP; a file that is not there is 404, never "skipped";
//   - score in a query's results is ctxkit's fused relevance, higher is
//     better (CtxVault gives Chroma's distance, lower is better); results
//     come best first in both;
//   - GET /docs/{doc_id}/content gives the document's text as extracted
//     from its file, not rebuilt from chunks: reconstructed is false and
//     warning null;
//   - GET /skill of a missing skill is 404 (CtxVault answers 500);
//   - skills are written in the Agent Skills layout (NAME/SKILL.md, so
//     filename is that path), stored under the slug of the name as
//     people write it (the core's rule) and found by either name;
//   - POST /init creates a vault (global when the server has no
//     project); an unauthenticated caller may not choose its folder
//     (vault_path), and CtxVault's "already initialized" is a 400 as its
//     /init answered; config_path is empty (the registry is ctxkit's);
//   - weights of an episode query count for order_by composite only, and
//     are ignored otherwise (as CtxVault ignores them there);
//   - GET /episodes/entities (in CtxVault's README only) answers
//     {vault_name, entities: [{entity, episodes}]}.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"reflect"
	"slices"
	"time"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// The request models of CtxVault's routes (its api/schemas.py), with
// pydantic's bounds and defaults: a pointer is an optional field whose
// default the service applies (the same as CtxVault's).
type (
	compatVaultParams struct {
		VaultName string `json:"vault_name" fastapi:"required"`
	}
	compatInitRequest struct {
		VaultName  string  `json:"vault_name" fastapi:"required"`
		Restricted bool    `json:"restricted"`
		VaultPath  *string `json:"vault_path"`
		// Type is ctxkit's addition (CtxVault's CLI has --type): semantic
		// by default.
		Type *string `json:"type"`
	}
	compatPathRequest struct {
		VaultName string  `json:"vault_name" fastapi:"required"`
		FilePath  *string `json:"file_path"`
	}
	compatDeleteParams struct {
		VaultName string  `json:"vault_name" fastapi:"required"`
		FilePath  *string `json:"file_path"`
	}
	compatQueryRequest struct {
		VaultName string         `json:"vault_name" fastapi:"required"`
		Query     string         `json:"query" fastapi:"required"`
		Filters   map[string]any `json:"filters" fastapi:"nullable"`
		NResults  *int           `json:"n_results" fastapi:"ge=1,le=100"`
		TopK      *int           `json:"top_k" fastapi:"ge=1,le=100"`
	}
	compatWriteDocRequest struct {
		VaultName     string         `json:"vault_name" fastapi:"required"`
		FilePath      string         `json:"file_path" fastapi:"required"`
		Content       string         `json:"content" fastapi:"required"`
		Overwrite     bool           `json:"overwrite" fastapi:"required"`
		AgentMetadata map[string]any `json:"agent_metadata" fastapi:"nullable"`
	}
	// compatWriteRequest is the older POST /write of the README's Quick
	// Start, which posts filename and no overwrite.
	compatWriteRequest struct {
		VaultName     string         `json:"vault_name" fastapi:"required"`
		FilePath      *string        `json:"file_path"`
		Filename      *string        `json:"filename"`
		Content       string         `json:"content" fastapi:"required"`
		Overwrite     *bool          `json:"overwrite"`
		AgentMetadata map[string]any `json:"agent_metadata" fastapi:"nullable"`
	}
	compatWriteSkillRequest struct {
		VaultName    string `json:"vault_name" fastapi:"required"`
		SkillName    string `json:"skill_name" fastapi:"required"`
		Description  string `json:"description" fastapi:"required"`
		Instructions string `json:"instructions" fastapi:"required"`
		Overwrite    *bool  `json:"overwrite"`
	}
	compatSkillParams struct {
		VaultName string `json:"vault_name" fastapi:"required"`
		SkillName string `json:"skill_name" fastapi:"required"`
	}
	compatWriteEpisodeRequest struct {
		VaultName  string         `json:"vault_name" fastapi:"required"`
		Content    string         `json:"content" fastapi:"required"`
		Entities   []string       `json:"entities"`
		Source     *string        `json:"source"`
		Confidence *float64       `json:"confidence" fastapi:"ge=0,le=1"`
		Salience   *float64       `json:"salience" fastapi:"ge=0,le=1"`
		OccurredAt *string        `json:"occurred_at"`
		ValidFrom  *string        `json:"valid_from"`
		ValidTo    *string        `json:"valid_to"`
		Metadata   map[string]any `json:"metadata"`
	}
	compatQueryEpisodesRequest struct {
		VaultName       string             `json:"vault_name" fastapi:"required"`
		Query           *string            `json:"query"`
		Entities        []string           `json:"entities"`
		Source          *string            `json:"source"`
		MinConfidence   *float64           `json:"min_confidence"`
		ValidAt         *string            `json:"valid_at"`
		KnownAt         *string            `json:"known_at"`
		IncludeClosed   bool               `json:"include_closed"`
		MetadataFilters map[string]any     `json:"metadata_filters"`
		OrderBy         *string            `json:"order_by" fastapi:"oneof=relevance|recency|salience|composite"`
		Limit           *int               `json:"limit" fastapi:"ge=1,le=200"`
		HalfLifeDays    *float64           `json:"half_life_days" fastapi:"gt=0"`
		Weights         map[string]float64 `json:"weights" fastapi:"nullable"`
		Reinforce       bool               `json:"reinforce"`
	}
	compatInvalidateRequest struct {
		VaultName string  `json:"vault_name" fastapi:"required"`
		ValidTo   *string `json:"valid_to"`
		Reason    *string `json:"reason"`
	}
	compatSupersedeRequest struct {
		VaultName  string         `json:"vault_name" fastapi:"required"`
		Content    string         `json:"content" fastapi:"required"`
		Entities   []string       `json:"entities"`
		Source     *string        `json:"source"`
		Confidence *float64       `json:"confidence" fastapi:"ge=0,le=1"`
		Salience   *float64       `json:"salience" fastapi:"ge=0,le=1"`
		OccurredAt *string        `json:"occurred_at"`
		ValidFrom  *string        `json:"valid_from"`
		Metadata   map[string]any `json:"metadata"`
	}
	compatEntitiesParams struct {
		VaultName     string  `json:"vault_name" fastapi:"required"`
		ValidAt       string  `json:"valid_at"`
		KnownAt       string  `json:"known_at"`
		All           bool    `json:"all"`
		Source        string  `json:"source"`
		MinConfidence float64 `json:"min_confidence"`
		MinEpisodes   int     `json:"min_episodes"`
	}
)

// The answers of CtxVault's routes.
type (
	compatInitResponse struct {
		VaultPath  string `json:"vault_path"`
		ConfigPath string `json:"config_path"`
	}
	compatIndexResponse struct {
		IndexedFiles []string `json:"indexed_files"`
		SkippedFiles []string `json:"skipped_files"`
	}
	compatReindexResponse struct {
		ReindexedFiles []string `json:"reindexed_files"`
		SkippedFiles   []string `json:"skipped_files"`
	}
	compatDeleteResponse struct {
		DeletedFiles []string `json:"deleted_files"`
		SkippedFiles []string `json:"skipped_files"`
	}
	compatChunkMatch struct {
		ChunkID      string  `json:"chunk_id"`
		ChunkIndex   int     `json:"chunk_index"`
		Text         string  `json:"text"`
		Score        float64 `json:"score"`
		DocID        string  `json:"doc_id"`
		Source       string  `json:"source"`
		GeneratedBy  *string `json:"generated_by"`
		ArtifactType *string `json:"artifact_type"`
		Topic        *string `json:"topic"`
	}
	compatQueryResponse struct {
		Results []compatChunkMatch `json:"results"`
	}
	compatVaultInfo struct {
		Name          string   `json:"name"`
		Type          string   `json:"type"`
		Scope         string   `json:"scope"`
		VaultPath     string   `json:"vault_path"`
		Restricted    bool     `json:"restricted"`
		AllowedAgents []string `json:"allowed_agents"`
	}
	compatVaultList struct {
		Vaults []compatVaultInfo `json:"vaults"`
	}
	compatDocInfo struct {
		Source      string `json:"source"`
		Filetype    string `json:"filetype"`
		DocID       string `json:"doc_id"`
		ChunksCount int    `json:"chunks_count"`
	}
	compatDocList struct {
		VaultName string          `json:"vault_name"`
		Documents []compatDocInfo `json:"documents"`
	}
	compatDocContent struct {
		compatDocInfo
		Content               string  `json:"content"`
		ReconstructedTextHash string  `json:"reconstructed_text_hash"`
		IndexedAt             string  `json:"indexed_at"`
		Reconstructed         bool    `json:"reconstructed"`
		Warning               *string `json:"warning"`
	}
	compatDocContentResponse struct {
		VaultName string           `json:"vault_name"`
		Document  compatDocContent `json:"document"`
	}
	compatWriteDocResponse struct {
		FilePath string `json:"file_path"`
	}
	compatWriteSkillResponse struct {
		Filename string `json:"filename"`
	}
	compatSkillInfo struct {
		Source       string `json:"source"`
		Filetype     string `json:"filetype"`
		SizeBytes    int64  `json:"size_bytes"`
		SkillName    string `json:"skill_name"`
		Description  string `json:"description"`
		LastModified string `json:"last_modified"`
	}
	compatSkillList struct {
		VaultName string            `json:"vault_name"`
		Skills    []compatSkillInfo `json:"skills"`
	}
	compatSkill struct {
		Name         string            `json:"name"`
		Description  string            `json:"description"`
		Instructions string            `json:"instructions"`
		Metadata     map[string]string `json:"metadata"`
		Path         string            `json:"path"`
	}
	compatSkillResponse struct {
		Skill compatSkill `json:"skill"`
	}
	// compatEpisode is an episode as CtxVault writes it: its source null
	// when there is none, its times in CtxVault's form.
	compatEpisode struct {
		episodic.EpisodeJSON
		Source *string `json:"source"`
	}
	compatEpisodeMatch struct {
		compatEpisode
		Score      float64 `json:"score"`
		Similarity float64 `json:"similarity"`
		Recency    float64 `json:"recency"`
		Relevance  float64 `json:"relevance"`
		BM25       float64 `json:"bm25"`
	}
	compatEpisodeResponse struct {
		VaultName string              `json:"vault_name"`
		Episode   compatEpisode       `json:"episode"`
		Hints     []episodic.HintJSON `json:"hints,omitempty"`
	}
	compatEpisodeMatches struct {
		VaultName string               `json:"vault_name"`
		Query     *string              `json:"query"`
		OrderBy   string               `json:"order_by"`
		Results   []compatEpisodeMatch `json:"results"`
	}
	compatHistory struct {
		VaultName string          `json:"vault_name"`
		EpisodeID string          `json:"episode_id"`
		Chain     []compatEpisode `json:"chain"`
	}
	compatStats struct {
		VaultName string `json:"vault_name"`
		Total     int    `json:"total"`
		Open      int    `json:"open"`
		Closed    int    `json:"closed"`
	}
	compatEntities struct {
		VaultName string                 `json:"vault_name"`
		Entities  []episodic.EntityCount `json:"entities"`
	}
)

// compatHandle builds a /ctxvault route: its handler reads the query
// string into Q and the body into B as FastAPI would (a Q or B of
// struct{} means none: the query string is then ignored, as FastAPI
// ignores parameters it does not declare), calls fn and answers its
// result with 200, or its error as compatFail does.
func compatHandle[Q, B, O any](a *api, method, pattern, id string, fn func(req *http.Request, q *Q, b *B) (O, error)) route {
	rt := route{Method: method, Pattern: pattern, ID: id, Status: http.StatusOK, Out: reflect.TypeFor[O]()}
	hasQ, hasB := reflect.TypeFor[Q]().NumField() > 0, reflect.TypeFor[B]().NumField() > 0
	rt.handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var q Q
		var b B
		var err error
		if hasQ {
			err = decodeParams(req, &q)
		}
		if hasB && err == nil {
			err = decodeBody(req, &b)
		}
		var out O
		if err == nil {
			out, err = fn(req, &q, &b)
		}
		if err != nil {
			a.compatFail(w, req, err, vaultNamed(&q, &b))
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
	return rt
}

// vaultNamed is the vault_name field of the first model that has one.
func vaultNamed(models ...any) string {
	for _, m := range models {
		v := reflect.ValueOf(m).Elem()
		if f := v.FieldByName("VaultName"); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
	}
	return ""
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (a *api) compatRoutes() []route {
	const base = "/ctxvault"
	rs := []route{
		compatHandle(a, "POST", base+"/init", "compatInit", a.compatInit),
		compatHandle(a, "PUT", base+"/index", "compatIndex", func(req *http.Request, _ *none, b *compatPathRequest) (compatIndexResponse, error) {
			ok, skipped, err := a.runIndex(req, b, false)
			return compatIndexResponse{IndexedFiles: ok, SkippedFiles: skipped}, err
		}),
		compatHandle(a, "PUT", base+"/reindex", "compatReindex", func(req *http.Request, _ *none, b *compatPathRequest) (compatReindexResponse, error) {
			ok, skipped, err := a.runIndex(req, b, true)
			return compatReindexResponse{ReindexedFiles: ok, SkippedFiles: skipped}, err
		}),
		compatHandle(a, "DELETE", base+"/delete", "compatDelete", func(req *http.Request, q *compatDeleteParams, _ *none) (compatDeleteResponse, error) {
			if q.FilePath == nil || *q.FilePath == "" {
				return compatDeleteResponse{}, &badRequest{msg: "file_path is required here: ctxkit does not empty a whole vault over HTTP; name the document or folder to delete",
					details: map[string]any{"parameter": "file_path"}}
			}
			del, err := a.svc.DeleteDoc(req.Context(), caller(req), q.VaultName, *q.FilePath)
			if del == nil {
				del = []string{}
			}
			return compatDeleteResponse{DeletedFiles: del, SkippedFiles: []string{}}, err
		}),
		compatHandle(a, "POST", base+"/query", "compatQuery", a.compatQuery),
		compatHandle(a, "GET", base+"/vaults", "compatVaults", a.compatVaults),
		compatHandle(a, "GET", base+"/docs", "compatDocs", func(req *http.Request, q *compatVaultParams, _ *none) (compatDocList, error) {
			docs, err := a.svc.Docs(req.Context(), caller(req), q.VaultName)
			out := compatDocList{VaultName: q.VaultName, Documents: []compatDocInfo{}}
			for _, d := range docs {
				out.Documents = append(out.Documents, docInfo(d))
			}
			return out, err
		}),
		compatHandle(a, "GET", base+"/docs/{doc_id}/content", "compatDocContent", a.compatDocContent),
		compatHandle(a, "POST", base+"/docs/write", "compatWriteDoc", func(req *http.Request, _ *none, b *compatWriteDocRequest) (compatWriteDocResponse, error) {
			return a.compatWrite(req, b.VaultName, b.FilePath, b.Content, b.Overwrite, b.AgentMetadata)
		}),
		compatHandle(a, "POST", base+"/write", "compatWrite", func(req *http.Request, _ *none, b *compatWriteRequest) (compatWriteDocResponse, error) {
			p := b.FilePath
			if p == nil {
				p = b.Filename
			}
			if p == nil {
				return compatWriteDocResponse{}, invalidField("body", "file_path", "missing", "Field required (or filename)", nil)
			}
			return a.compatWrite(req, b.VaultName, *p, b.Content, b.Overwrite != nil && *b.Overwrite, b.AgentMetadata)
		}),
		compatHandle(a, "POST", base+"/skills/write", "compatWriteSkill", func(req *http.Request, _ *none, b *compatWriteSkillRequest) (compatWriteSkillResponse, error) {
			name := b.SkillName // the core stores a name as people write it under its slug
			sk, err := a.svc.WriteSkill(req.Context(), caller(req), b.VaultName, name, vault.WriteSkillRequest{
				Description: b.Description, Instructions: b.Instructions, Overwrite: b.Overwrite == nil || *b.Overwrite})
			if err != nil {
				return compatWriteSkillResponse{}, err
			}
			return compatWriteSkillResponse{Filename: sk.Path}, nil
		}),
		compatHandle(a, "GET", base+"/skills", "compatSkills", func(req *http.Request, q *compatVaultParams, _ *none) (compatSkillList, error) {
			rep, err := a.svc.Skills(req.Context(), caller(req), q.VaultName)
			if err != nil {
				return compatSkillList{}, err
			}
			out := compatSkillList{VaultName: q.VaultName, Skills: []compatSkillInfo{}}
			for _, sk := range rep.Skills {
				out.Skills = append(out.Skills, compatSkillInfo{Source: sk.Path, Filetype: path.Ext(sk.Path), SkillName: sk.Title(),
					Description: sk.Description, SizeBytes: sk.Size, LastModified: pyTime(sk.Modified)})
			}
			return out, nil
		}),
		compatHandle(a, "GET", base+"/skill", "compatSkill", func(req *http.Request, q *compatSkillParams, _ *none) (compatSkillResponse, error) {
			sk, err := a.svc.Skill(req.Context(), caller(req), q.VaultName, q.SkillName)
			if err != nil {
				return compatSkillResponse{}, err
			}
			return compatSkillResponse{Skill: compatSkill{Name: sk.Title(), Description: sk.Description, Instructions: sk.Instructions,
				Metadata: sk.Metadata, Path: sk.Path}}, nil
		}),
	}
	return append(rs, a.compatEpisodeRoutes(base)...)
}

// compatInit creates a vault: CtxVault's POST /init.
func (a *api) compatInit(req *http.Request, _ *none, b *compatInitRequest) (compatInitResponse, error) {
	info, err := a.svc.CreateVault(req.Context(), caller(req), vault.CreateVaultRequest{Name: b.VaultName,
		Type: vault.Type(deref(b.Type)), Path: deref(b.VaultPath), Restricted: b.Restricted})
	if err != nil && vault.Describe(err).Class == vault.ClassExists {
		return compatInitResponse{}, &badRequest{msg: fmt.Sprintf("Vault %q already initialized", b.VaultName),
			details: map[string]any{"field": "vault_name"}}
	}
	return compatInitResponse{VaultPath: info.Path}, err
}

// compatWrite writes a document and indexes it, echoing its path as
// given: POST /docs/write and POST /write.
func (a *api) compatWrite(req *http.Request, name, file, content string, overwrite bool, agentMeta map[string]any) (compatWriteDocResponse, error) {
	if agentMeta != nil {
		// CtxVault's AgentMetadata requires these two, and keeps any other.
		var missing []fieldError
		for _, k := range []string{"generated_by", "timestamp"} {
			if v, ok := agentMeta[k]; !ok {
				missing = append(missing, fieldError{Type: "missing", Loc: []any{"body", "agent_metadata", k}, Msg: "Field required", Input: agentMeta})
			} else if _, ok := v.(string); !ok {
				missing = append(missing, fieldError{Type: "string_type", Loc: []any{"body", "agent_metadata", k}, Msg: "Input should be a valid string", Input: v})
			}
		}
		if missing != nil {
			return compatWriteDocResponse{}, &validationError{items: missing}
		}
	}
	meta, err := metaString(agentMeta)
	if err != nil {
		return compatWriteDocResponse{}, err
	}
	_, err = a.svc.WriteDoc(req.Context(), caller(req), name, file, vault.WriteDocRequest{Content: content, Overwrite: overwrite, Metadata: meta})
	return compatWriteDocResponse{FilePath: file}, err
}

// compatN picks the number of results of a query from n_results and
// top_k (the field the README posts); both at once must agree.
func compatN(nResults, topK *int) (int, error) {
	switch {
	case nResults != nil && topK != nil && *nResults != *topK:
		return 0, &validationError{items: []fieldError{{Type: "value_error", Loc: []any{"body", "top_k"},
			Msg: fmt.Sprintf("Value error, top_k (%d) and n_results (%d) disagree: send one of them", *topK, *nResults), Input: *topK}}}
	case nResults != nil:
		return *nResults, nil
	case topK != nil:
		return *topK, nil
	}
	return vault.DefaultQueryResults, nil
}

// compatQuery searches the vault named in b, answering CtxVault's
// ChunkMatch list, best first; no match is CtxVault's 404.
func (a *api) compatQuery(req *http.Request, _ *none, b *compatQueryRequest) (compatQueryResponse, error) {
	out := compatQueryResponse{Results: []compatChunkMatch{}}
	n, err := compatN(b.NResults, b.TopK)
	if err != nil {
		return out, err
	}
	var keep chunkFilter
	fetch := n
	if len(b.Filters) > 0 {
		if keep, err = compileFilter(b.Filters); err != nil {
			return out, err
		}
		fetch = vault.MaxQueryResults
	}
	res, err := a.svc.Query(req.Context(), caller(req), b.VaultName, vault.QueryRequest{Query: b.Query, NResults: fetch, WithMetadata: true})
	if err != nil {
		return out, err
	}
	for _, r := range res.Results {
		id := vault.DocID(r.Path)
		m := chunkMeta(r.Path, id, r.Chunk, r.Metadata)
		if keep != nil && !keep(m) {
			continue
		}
		out.Results = append(out.Results, compatChunkMatch{ChunkID: m["chunk_id"], ChunkIndex: r.Chunk, Text: r.Text, Score: r.Score,
			DocID: id, Source: r.Path, GeneratedBy: optMeta(m, "generated_by", "written_by"),
			ArtifactType: optMeta(m, "artifact_type"), Topic: optMeta(m, "topic")})
		if len(out.Results) == n {
			break
		}
	}
	if len(out.Results) == 0 {
		return out, errNoResults
	}
	return out, nil
}

// compatVaults lists the vaults the caller may use.
func (a *api) compatVaults(req *http.Request, _ *none, _ *none) (compatVaultList, error) {
	who := caller(req)
	vs, err := a.svc.ListVaults(req.Context(), who)
	out := compatVaultList{Vaults: []compatVaultInfo{}}
	for _, v := range vs {
		if v.Shadowed {
			continue
		}
		// The owner sees every attached agent (and the folder); an agent
		// sees itself when attached.
		agents := []string{}
		for _, g := range v.Agents {
			agents = append(agents, g.Agent)
		}
		if !who.IsOwner() && v.Restricted && who.Name() != "" {
			agents = append(agents, who.Name())
		}
		out.Vaults = append(out.Vaults, compatVaultInfo{Name: v.Name, Type: string(v.Type), Scope: string(v.Scope),
			VaultPath: v.Path, Restricted: v.Restricted, AllowedAgents: agents})
	}
	return out, err
}

// compatDocContent reads a document's text by its id.
func (a *api) compatDocContent(req *http.Request, q *compatVaultParams, _ *none) (compatDocContentResponse, error) {
	id := req.PathValue("doc_id")
	text, err := a.svc.ReadDocByID(req.Context(), caller(req), q.VaultName, id)
	if err != nil {
		return compatDocContentResponse{}, err
	}
	docs, err := a.svc.Docs(req.Context(), caller(req), q.VaultName)
	if err != nil {
		return compatDocContentResponse{}, err
	}
	i := slices.IndexFunc(docs, func(d vault.DocInfo) bool { return d.ID == id })
	if i < 0 {
		return compatDocContentResponse{}, fmt.Errorf("document %s in vault %q: %w", id, q.VaultName, vault.ErrNotFound)
	}
	d := docs[i]
	sum := sha256.Sum256([]byte(text.Text))
	return compatDocContentResponse{VaultName: q.VaultName, Document: compatDocContent{compatDocInfo: docInfo(d),
		Content: text.Text, ReconstructedTextHash: hex.EncodeToString(sum[:]), IndexedAt: pyTime(d.Indexed)}}, nil
}

// runIndex indexes the vault named in b, collecting the files done.
func (a *api) runIndex(req *http.Request, b *compatPathRequest, reindex bool) ([]string, []string, error) {
	var done []string
	r := vault.IndexRequest{Path: deref(b.FilePath), Reindex: reindex}
	rep, err := a.svc.Index(req.Context(), caller(req), b.VaultName, r, func(_, _ int, p string) { done = append(done, p) })
	if err != nil {
		return nil, nil, err
	}
	ok, skipped := indexed(done, rep)
	return ok, skipped, nil
}

// pyTime writes t as CtxVault writes its times: Python's isoformat of a
// UTC datetime, microseconds only when not zero.
func pyTime(t time.Time) string {
	t = episodic.Normalize(t)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05+00:00")
	}
	return t.Format("2006-01-02T15:04:05.000000+00:00")
}

// pyTimeOf rewrites a time as the episode JSON writes it (TimeFormat) in
// CtxVault's form.
func pyTimeOf(s string) string {
	t, err := time.Parse(episodic.TimeFormat, s)
	if err != nil {
		return s
	}
	return pyTime(t)
}

// pyTimePtr is pyTimeOf for an optional time.
func pyTimePtr(s *string) *string {
	if s == nil {
		return nil
	}
	out := pyTimeOf(*s)
	return &out
}
