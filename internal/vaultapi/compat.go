package vaultapi

// The reference system's API (CtxVault's FastAPI routes under /ctxvault),
// served with its routes, field names and answer shapes so that programs
// written for it work unchanged. Every route goes through package vault
// like the /v1 routes, and the same helpers (decode, fail, vaultNamed,
// writeJSON): the vault is named by a vault_name field of the body or of
// the query string instead of the path.
//
// Authentication. The reference trusts an X-CtxVault-Agent header naming
// the agent; here the caller is the bearer token's (Authorization:
// Bearer), as on /v1, and the header is accepted only together with
// that agent's token (or "owner" with the owner's token):
//   - the header without a token is refused, 401, with a message saying
//     how to get a token (ctxkit agent create NAME); it guesses no token,
//     so it does not count as a failed authentication for the rate limit;
//   - a header naming another identity than the token's is 403 (the
//     owner's token cannot act as an agent through the header either);
//   - without the header, the token's identity is the caller.
//
// Where the reference is wrong or silent, the compatibility routes do what
// its documentation promises:
//   - POST /query answers 200 with an empty list when nothing matches
//     (the reference answers 404), and accepts top_k, the field its README
//     posts, as well as n_results (the reference ignores top_k and returns
//     5); both at once must agree.
//   - A missing vault is 404, not the reference's 400: a restricted vault
//     the caller is not attached to must answer exactly like a missing one
//     (404), so the two cannot differ. Missing agent identification is 401
//     (the reference's 400 or 403), and /index and /vaults are checked like
//     every other route (the reference checks neither).
//   - Errors have the /v1 shape {"error": {"code", "message", "details"}},
//     not FastAPI's {"detail": "..."}: the reference's documentation shows
//     no client reading detail, so one error shape serves both APIs. The
//     statuses are the reference's mapping otherwise: 400 bad input or an
//     operation the vault type does not support, 403 access denied (a write
//     through a read-only grant), 404 episode or document missing, 409
//     already closed or already exists, 413 a body over the limit; every
//     success is 200, as FastAPI answers by default.
//   - A body field the route does not know is a 400 that names it (the
//     reference ignores it silently, which is how top_k got lost).
//
// What differs in substance, not in shape:
//   - score in a ChunkMatch is ctxkit's fused relevance, higher is better
//     (the reference gives Chroma's distance, lower is better); results come
//     best first in both. doc_id is the SHA-256 of the document's path in
//     the vault and chunk_id doc_id + "::" + the SHA-256 of the chunk's
//     index as 8 bytes big-endian, as the reference makes them (from the
//     vault-relative path, not an absolute one). generated_by is the
//     agent_metadata's, else the authenticated writer.
//   - filters (Chroma's where) match the documents' metadata and source,
//     filetype, doc_id, chunk_id, chunk_index with $eq, $ne, $in, $nin,
//     $and and $or, among the best 100 passages (maxQueryResults); a key a
//     passage lacks matches no operator.
//   - GET /docs/{doc_id}/content gives the document's text as extracted
//     from the file, not rebuilt from chunks: reconstructed is false,
//     reconstructed_text_hash the SHA-256 of that text, warning null.
//   - DELETE /delete needs file_path: ctxkit does not empty a whole vault
//     over HTTP. A file that is not there is 404, never "skipped".
//   - Skills are written in the Agent Skills layout (NAME/SKILL.md, so
//     filename is that path), with the name lowercased and spaces turned
//     to hyphens as the reference does, then checked against the
//     specification; overwrite defaults to true, as in the reference.
//   - An episode is the reference's JSON with what the append-only model
//     adds (state, confirmed_count, disputed_with, version...); an episode
//     write answers its hints too; supersede answers {vault_name, episode}
//     like invalidate; a history's chain lists each statement of the chain
//     as an episode, oldest first. weights weigh order_by composite only
//     (400 otherwise). GET /episodes/entities (in the reference's README
//     only) answers {vault_name, entities: [{entity, episodes}]}.
//   - allowed_agents in GET /vaults is the whole list for the owner only;
//     an agent sees itself in it when attached, never the others; and
//     vault_path is the owner's only: an agent gets an empty string, and
//     learns nothing of the owner's folders.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// compatAgentHeader is the reference's agent header.
const compatAgentHeader = "X-CtxVault-Agent"

// compat returns the handler of the compatibility routes under
// /ctxvault/, authenticated by auth (nil: the caller is in the request's
// context, as for /v1).
func (a *api) compat(auth *vaultauth.Authenticator) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range a.compatRoutes() {
		mux.Handle(rt.Method+" "+rt.Pattern, rt.handler)
	}
	var authed http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, ok := vaultauth.Caller(req.Context())
		name := strings.TrimSpace(req.Header.Get(compatAgentHeader))
		switch {
		case !ok && name != "":
			nameOnly(w, name)
			return
		case !ok:
			vaultauth.Unauthorized(w)
			return
		case name != "" && name != c.Name():
			named := name // never log what may be a token sent in the wrong header
			if vault.ValidName(name) != nil {
				named = "(not an agent name)"
			}
			a.log.Warn("vault API: X-CtxVault-Agent names another identity than the token", "header", named, "caller", c.String())
			whose := fmt.Sprintf("agent %q's", c)
			if c.IsOwner() {
				whose = "the owner's"
			}
			vaultauth.WriteError(w, http.StatusForbidden, vaultauth.Error{Code: string(vault.ClassForbidden),
				Message: fmt.Sprintf("%s names agent %q but the bearer token is %s", compatAgentHeader, name, whose),
				Fix:     "send the token of the agent the header names, or drop the header",
				Details: map[string]any{"header": compatAgentHeader, "agent": name}})
			return
		}
		dispatch(mux, w, req)
	})
	if auth == nil {
		return authed
	}
	withAuth := auth.Middleware(authed)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if name := strings.TrimSpace(req.Header.Get(compatAgentHeader)); name != "" {
			if _, ok := vaultauth.Bearer(req); !ok {
				nameOnly(w, name)
				return
			}
		}
		withAuth.ServeHTTP(w, req)
	})
}

// nameOnly refuses an agent named by the header without its token, and
// says how to get one.
func nameOnly(w http.ResponseWriter, name string) {
	shown := name
	if vault.ValidName(name) != nil {
		shown = "NAME"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit"`)
	vaultauth.WriteError(w, http.StatusUnauthorized, vaultauth.Error{Code: string(vault.ClassUnauthenticated),
		Message: compatAgentHeader + " alone does not identify an agent",
		Fix: fmt.Sprintf("send the agent's token as Authorization: Bearer <token> (with the header or without it); "+
			"the owner creates a token with: ctxkit agent create %s", shown),
		Details: map[string]any{"header": compatAgentHeader, "agent": name}})
}

// compatVault checks the vault_name field a compatibility route names its
// vault in.
func compatVault(name string) error {
	if name == "" {
		return &badRequest{msg: "vault_name is required", details: map[string]any{"field": "vault_name"}}
	}
	return nil
}

// The request and answer shapes of the reference (its api/schemas.py).
type (
	compatVaultQuery struct {
		VaultName string `json:"vault_name"`
	}
	compatPathRequest struct {
		VaultName string `json:"vault_name"`
		FilePath  string `json:"file_path,omitempty"`
	}
	compatIndexResponse struct {
		IndexedFiles []string `json:"indexed_files"`
		SkippedFiles []string `json:"skipped_files"`
	}
	compatReindexResponse struct {
		ReindexedFiles []string `json:"reindexed_files"`
		SkippedFiles   []string `json:"skipped_files"`
	}
	compatDeleteQuery struct {
		VaultName string `json:"vault_name"`
		FilePath  string `json:"file_path"`
	}
	compatDeleteResponse struct {
		DeletedFiles []string `json:"deleted_files"`
		SkippedFiles []string `json:"skipped_files"`
	}
	compatQueryRequest struct {
		VaultName string         `json:"vault_name"`
		Query     string         `json:"query"`
		Filters   map[string]any `json:"filters,omitempty"`
		NResults  *int           `json:"n_results,omitempty"`
		TopK      *int           `json:"top_k,omitempty"`
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
	compatWriteDocRequest struct {
		VaultName     string         `json:"vault_name"`
		FilePath      string         `json:"file_path"`
		Content       string         `json:"content"`
		Overwrite     bool           `json:"overwrite,omitempty"`
		AgentMetadata map[string]any `json:"agent_metadata,omitempty"`
	}
	compatWriteDocResponse struct {
		FilePath string `json:"file_path"`
	}
	compatWriteSkillRequest struct {
		VaultName    string `json:"vault_name"`
		SkillName    string `json:"skill_name"`
		Description  string `json:"description"`
		Instructions string `json:"instructions"`
		Overwrite    *bool  `json:"overwrite,omitempty"`
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
	compatSkillQuery struct {
		VaultName string `json:"vault_name"`
		SkillName string `json:"skill_name"`
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
	compatWriteEpisodeRequest struct {
		VaultName string `json:"vault_name"`
		vault.WriteEpisodeRequest
	}
	compatEpisodeResponse struct {
		VaultName string               `json:"vault_name"`
		Episode   episodic.EpisodeJSON `json:"episode"`
		Hints     []episodic.HintJSON  `json:"hints,omitempty"`
	}
	// compatQueryEpisodesRequest is the service's request with the
	// reference's vault_name, and its limit (which must be 1 to 200 when
	// given: the reference refuses 0) and min_confidence as pointers.
	compatQueryEpisodesRequest struct {
		VaultName string `json:"vault_name"`
		vault.QueryEpisodesRequest
		Limit         *int     `json:"limit,omitempty"`
		MinConfidence *float64 `json:"min_confidence,omitempty"`
	}
	compatEpisodeMatches struct {
		VaultName string               `json:"vault_name"`
		Query     *string              `json:"query"`
		OrderBy   string               `json:"order_by"`
		Results   []episodic.MatchJSON `json:"results"`
	}
	compatHistory struct {
		VaultName string                 `json:"vault_name"`
		EpisodeID string                 `json:"episode_id"`
		Chain     []episodic.EpisodeJSON `json:"chain"`
	}
	compatInvalidateRequest struct {
		VaultName string `json:"vault_name"`
		vault.InvalidateRequest
	}
	compatSupersedeRequest struct {
		VaultName string `json:"vault_name"`
		vault.SuccessorRequest
	}
	compatStats struct {
		VaultName string `json:"vault_name"`
		Total     int    `json:"total"`
		Open      int    `json:"open"`
		Closed    int    `json:"closed"`
	}
	compatEntitiesQuery struct {
		VaultName     string  `json:"vault_name"`
		ValidAt       string  `json:"valid_at,omitempty"`
		KnownAt       string  `json:"known_at,omitempty"`
		All           bool    `json:"all,omitempty"`
		Source        string  `json:"source,omitempty"`
		MinConfidence float64 `json:"min_confidence,omitempty"`
		MinEpisodes   int     `json:"min_episodes,omitempty"`
	}
	compatEntities struct {
		VaultName string                 `json:"vault_name"`
		Entities  []episodic.EntityCount `json:"entities"`
	}
)

// chunkID is the reference's id of a document's chunk: the doc_id, "::"
// and the hex SHA-256 of the chunk's index as 8 bytes big-endian.
func chunkID(doc string, i int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	h := sha256.Sum256(b[:])
	return doc + "::" + hex.EncodeToString(h[:])
}

// compatN picks the number of results of a query from n_results and
// top_k (the field the reference's README posts).
func compatN(nResults, topK *int) (int, error) {
	n := 0 // the service's default, which is the reference's (5)
	switch {
	case nResults != nil && topK != nil && *nResults != *topK:
		return 0, errBad("n_results (%d) and top_k (%d) disagree: send one of them", *nResults, *topK)
	case nResults != nil:
		n = *nResults
	case topK != nil:
		n = *topK
	}
	if n == 0 && (nResults != nil || topK != nil) {
		return 0, errBad("n_results must be at least 1") // the reference refuses 0; /v1 reads it as the default
	}
	return vault.QueryResults(n)
}

// chunkFilter is a compiled Chroma where filter over a passage's
// metadata.
type chunkFilter func(meta map[string]string) bool

// compileFilter compiles a where filter: {key: value}, {key: {$op:
// value}} with $eq, $ne, $in or $nin, and {$and: [...]}, {$or: [...]};
// the clauses of one object must all hold.
func compileFilter(where map[string]any) (chunkFilter, error) {
	var all []chunkFilter
	for _, k := range slices.Sorted(maps.Keys(where)) {
		v := where[k]
		switch k {
		case "$and", "$or":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil, errBad("filters: %s takes a non-empty list of filters", k)
			}
			var subs []chunkFilter
			for _, s := range list {
				m, ok := s.(map[string]any)
				if !ok {
					return nil, errBad("filters: %s takes a list of filter objects", k)
				}
				f, err := compileFilter(m)
				if err != nil {
					return nil, err
				}
				subs = append(subs, f)
			}
			and := k == "$and"
			all = append(all, func(meta map[string]string) bool {
				for _, f := range subs {
					if f(meta) != and {
						return !and
					}
				}
				return and
			})
			continue
		}
		if strings.HasPrefix(k, "$") {
			return nil, errBad("filters: unknown operator %s (supported: $and, $or, and per key $eq, $ne, $in, $nin)", k)
		}
		op, arg := "$eq", v
		if m, ok := v.(map[string]any); ok {
			if len(m) != 1 {
				return nil, errBad("filters: %q takes one operator", k)
			}
			for op, arg = range m {
			}
		}
		f, err := compileClause(k, op, arg)
		if err != nil {
			return nil, err
		}
		all = append(all, f)
	}
	return func(meta map[string]string) bool {
		for _, f := range all {
			if !f(meta) {
				return false
			}
		}
		return true
	}, nil
}

// compileClause compiles one key's operator.
func compileClause(key, op string, arg any) (chunkFilter, error) {
	var want []string
	switch op {
	case "$eq", "$ne":
		s, ok := filterValue(arg)
		if !ok {
			return nil, errBad("filters: %q %s takes a string, number or boolean", key, op)
		}
		want = []string{s}
	case "$in", "$nin":
		list, ok := arg.([]any)
		if !ok {
			return nil, errBad("filters: %q %s takes a list", key, op)
		}
		for _, x := range list {
			s, ok := filterValue(x)
			if !ok {
				return nil, errBad("filters: %q %s takes a list of strings, numbers or booleans", key, op)
			}
			want = append(want, s)
		}
	default:
		return nil, errBad("filters: unknown operator %s on %q (supported: $eq, $ne, $in, $nin)", op, key)
	}
	in := op == "$eq" || op == "$in"
	return func(meta map[string]string) bool {
		got, ok := meta[key]
		return ok && slices.Contains(want, got) == in
	}, nil
}

// filterValue is a filter's scalar as metadata holds it: a string.
func filterValue(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// metaString turns agent_metadata values into the strings a document's
// metadata holds: strings as they are, anything else as JSON.
func metaString(m map[string]any) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, errBad("agent_metadata %q: %v", k, err)
		}
		out[k] = string(j)
	}
	return out, nil
}

// optMeta is a metadata value, nil when absent.
func optMeta(meta map[string]string, keys ...string) *string {
	for _, k := range keys {
		if v, ok := meta[k]; ok {
			return &v
		}
	}
	return nil
}

// docInfo describes d in the reference's shape.
func docInfo(d vault.DocInfo) compatDocInfo {
	return compatDocInfo{Source: d.Path, Filetype: path.Ext(d.Path), DocID: d.ID, ChunksCount: d.Chunks}
}

// indexed splits an index run's files into the reference's lists.
func indexed(done []string, rep *vault.IndexReport) (ok, skipped []string) {
	failed := map[string]bool{}
	skipped = []string{}
	for _, f := range rep.Failed {
		failed[f.Path] = true
		skipped = append(skipped, fmt.Sprintf("%s (%s)", f.Path, f.Error))
	}
	ok = []string{}
	for _, p := range done {
		if !failed[p] {
			ok = append(ok, p)
		}
	}
	return ok, skipped
}

// runIndex indexes the vault named in b, collecting the files done.
func (a *api) runIndex(req *http.Request, b *compatPathRequest, reindex bool) ([]string, []string, error) {
	if err := compatVault(b.VaultName); err != nil {
		return nil, nil, err
	}
	var done []string
	r := vault.IndexRequest{Path: b.FilePath, Reindex: reindex}
	rep, err := a.svc.Index(req.Context(), caller(req), b.VaultName, r, func(_, _ int, p string) { done = append(done, p) })
	if err != nil {
		return nil, nil, err
	}
	ok, skipped := indexed(done, rep)
	return ok, skipped, nil
}

func (a *api) compatRoutes() []route {
	const base = "/ctxvault"
	rs := []route{
		handle("PUT", base+"/index", "compatIndex", "compat", "Index a semantic vault, or one path of it", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatPathRequest) (compatIndexResponse, int, error) {
				ok, skipped, err := a.runIndex(req, b, false)
				return compatIndexResponse{IndexedFiles: ok, SkippedFiles: skipped}, 0, err
			}, a),
		handle("PUT", base+"/reindex", "compatReindex", "compat", "Rebuild a semantic vault's index, or process one path again", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatPathRequest) (compatReindexResponse, int, error) {
				ok, skipped, err := a.runIndex(req, b, true)
				return compatReindexResponse{ReindexedFiles: ok, SkippedFiles: skipped}, 0, err
			}, a),
		handle("DELETE", base+"/delete", "compatDelete", "compat", "Delete a document or folder from a semantic vault", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatDeleteQuery, _ *none) (compatDeleteResponse, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatDeleteResponse{}, 0, err
				}
				if q.FilePath == "" {
					return compatDeleteResponse{}, 0, &badRequest{msg: "file_path is required: name the document or folder to delete",
						details: map[string]any{"parameter": "file_path"}}
				}
				del, err := a.svc.DeleteDoc(req.Context(), caller(req), q.VaultName, q.FilePath)
				if del == nil {
					del = []string{}
				}
				return compatDeleteResponse{DeletedFiles: del, SkippedFiles: []string{}}, 0, err
			}, a),
		handle("POST", base+"/query", "compatQuery", "compat", "Search a semantic vault", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatQueryRequest) (compatQueryResponse, int, error) {
				return a.compatQuery(req, b)
			}, a),
		handle("GET", base+"/vaults", "compatVaults", "compat", "List the vaults the caller may use", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (compatVaultList, int, error) {
				who := caller(req)
				vs, err := a.svc.ListVaults(req.Context(), who)
				out := compatVaultList{Vaults: []compatVaultInfo{}}
				for _, v := range vs {
					if v.Shadowed {
						continue
					}
					// The owner sees every attached agent (and the folder);
					// an agent sees itself when attached.
					agents := []string{}
					for _, g := range v.Agents {
						agents = append(agents, g.Agent)
					}
					if !who.IsOwner() && v.Restricted {
						agents = append(agents, who.Name())
					}
					out.Vaults = append(out.Vaults, compatVaultInfo{Name: v.Name, Type: string(v.Type), Scope: string(v.Scope),
						VaultPath: v.Path, Restricted: v.Restricted, AllowedAgents: agents})
				}
				return out, 0, err
			}, a),
		handle("GET", base+"/docs", "compatDocs", "compat", "List a semantic vault's documents", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatVaultQuery, _ *none) (compatDocList, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatDocList{}, 0, err
				}
				docs, err := a.svc.Docs(req.Context(), caller(req), q.VaultName)
				out := compatDocList{VaultName: q.VaultName, Documents: []compatDocInfo{}}
				for _, d := range docs {
					out.Documents = append(out.Documents, docInfo(d))
				}
				return out, 0, err
			}, a),
		handle("GET", base+"/docs/{doc_id}/content", "compatDocContent", "compat", "Read a document's text", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatVaultQuery, _ *none) (compatDocContentResponse, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatDocContentResponse{}, 0, err
				}
				id := req.PathValue("doc_id")
				text, err := a.svc.ReadDocByID(req.Context(), caller(req), q.VaultName, id)
				if err != nil {
					return compatDocContentResponse{}, 0, err
				}
				docs, err := a.svc.Docs(req.Context(), caller(req), q.VaultName)
				if err != nil {
					return compatDocContentResponse{}, 0, err
				}
				i := slices.IndexFunc(docs, func(d vault.DocInfo) bool { return d.ID == id })
				if i < 0 {
					return compatDocContentResponse{}, 0, fmt.Errorf("document %s in vault %q: %w", id, q.VaultName, vault.ErrNotFound)
				}
				d := docs[i]
				sum := sha256.Sum256([]byte(text.Text))
				return compatDocContentResponse{VaultName: q.VaultName, Document: compatDocContent{compatDocInfo: docInfo(d),
					Content: text.Text, ReconstructedTextHash: hex.EncodeToString(sum[:]),
					IndexedAt: d.Indexed.UTC().Format(time.RFC3339Nano)}}, 0, nil
			}, a),
		handle("POST", base+"/docs/write", "compatWriteDoc", "compat", "Write a document and index it", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatWriteDocRequest) (compatWriteDocResponse, int, error) {
				if err := compatVault(b.VaultName); err != nil {
					return compatWriteDocResponse{}, 0, err
				}
				if b.FilePath == "" {
					return compatWriteDocResponse{}, 0, &badRequest{msg: "file_path is required", details: map[string]any{"field": "file_path"}}
				}
				meta, err := metaString(b.AgentMetadata)
				if err != nil {
					return compatWriteDocResponse{}, 0, err
				}
				res, err := a.svc.WriteDoc(req.Context(), caller(req), b.VaultName, b.FilePath,
					vault.WriteDocRequest{Content: b.Content, Overwrite: b.Overwrite, Metadata: meta})
				return compatWriteDocResponse{FilePath: res.Path}, 0, err
			}, a),
		handle("POST", base+"/skills/write", "compatWriteSkill", "compat", "Write a skill", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatWriteSkillRequest) (compatWriteSkillResponse, int, error) {
				if err := compatVault(b.VaultName); err != nil {
					return compatWriteSkillResponse{}, 0, err
				}
				name := b.SkillName // the core stores a name as people write it under its slug
				sk, err := a.svc.WriteSkill(req.Context(), caller(req), b.VaultName, name, vault.WriteSkillRequest{
					Description: b.Description, Instructions: b.Instructions, Overwrite: b.Overwrite == nil || *b.Overwrite})
				if err != nil {
					return compatWriteSkillResponse{}, 0, err
				}
				return compatWriteSkillResponse{Filename: sk.Path}, 0, nil
			}, a),
		handle("GET", base+"/skills", "compatSkills", "compat", "List a skill vault's skills", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatVaultQuery, _ *none) (compatSkillList, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatSkillList{}, 0, err
				}
				rep, err := a.svc.Skills(req.Context(), caller(req), q.VaultName)
				if err != nil {
					return compatSkillList{}, 0, err
				}
				out := compatSkillList{VaultName: q.VaultName, Skills: []compatSkillInfo{}}
				for _, sk := range rep.Skills {
					out.Skills = append(out.Skills, compatSkillInfo{Source: sk.Path, Filetype: path.Ext(sk.Path), SkillName: sk.Name,
						Description: sk.Description, SizeBytes: sk.Size, LastModified: sk.Modified.UTC().Format(time.RFC3339Nano)})
				}
				return out, 0, nil
			}, a),
		handle("GET", base+"/skill", "compatSkill", "compat", "Read one skill", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatSkillQuery, _ *none) (compatSkillResponse, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatSkillResponse{}, 0, err
				}
				if q.SkillName == "" {
					return compatSkillResponse{}, 0, &badRequest{msg: "skill_name is required", details: map[string]any{"parameter": "skill_name"}}
				}
				sk, err := a.svc.Skill(req.Context(), caller(req), q.VaultName, q.SkillName)
				if err != nil {
					return compatSkillResponse{}, 0, err
				}
				return compatSkillResponse{Skill: compatSkill{Name: sk.Name, Description: sk.Description, Instructions: sk.Instructions,
					Metadata: sk.Metadata, Path: sk.Path}}, 0, nil
			}, a),
	}
	return append(rs, a.compatEpisodeRoutes(base)...)
}

// compatQuery searches the vault named in b, answering the reference's
// ChunkMatch list, best first.
func (a *api) compatQuery(req *http.Request, b *compatQueryRequest) (compatQueryResponse, int, error) {
	out := compatQueryResponse{Results: []compatChunkMatch{}}
	if err := compatVault(b.VaultName); err != nil {
		return out, 0, err
	}
	n, err := compatN(b.NResults, b.TopK)
	if err != nil {
		return out, 0, err
	}
	var keep chunkFilter
	fetch := n
	if len(b.Filters) > 0 {
		if keep, err = compileFilter(b.Filters); err != nil {
			return out, 0, err
		}
		fetch = vault.MaxQueryResults
	}
	res, err := a.svc.Query(req.Context(), caller(req), b.VaultName, vault.QueryRequest{Query: b.Query, NResults: fetch})
	if err != nil || len(res.Results) == 0 {
		return out, 0, err
	}
	docs, err := a.svc.Docs(req.Context(), caller(req), b.VaultName)
	if err != nil {
		return out, 0, err
	}
	metas := map[string]map[string]string{}
	for _, d := range docs {
		metas[d.Path] = d.Metadata
	}
	for _, r := range res.Results {
		id := vault.DocID(r.Path)
		m := chunkMeta(r.Path, id, r.Chunk, metas[r.Path])
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
	return out, 0, nil
}

// chunkMeta is the metadata a filter sees of a passage: its document's,
// and what the reference adds to every chunk.
func chunkMeta(p, id string, chunk int, doc map[string]string) map[string]string {
	m := make(map[string]string, len(doc)+5)
	maps.Copy(m, doc)
	m["source"], m["filetype"], m["doc_id"] = p, path.Ext(p), id
	m["chunk_id"], m["chunk_index"] = chunkID(id, chunk), strconv.Itoa(chunk)
	return m
}

// compatEpisode answers one episode in the reference's shape.
func compatEpisode(name string, e episodic.EpisodeJSON, err error) (compatEpisodeResponse, int, error) {
	return compatEpisodeResponse{VaultName: name, Episode: e}, 0, err
}

func (a *api) compatEpisodeRoutes(base string) []route {
	base += "/episodes"
	id := func(req *http.Request) string { return req.PathValue("id") }
	return []route{
		handle("POST", base+"/write", "compatWriteEpisode", "compat", "Write an episode", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatWriteEpisodeRequest) (compatEpisodeResponse, int, error) {
				if err := compatVault(b.VaultName); err != nil {
					return compatEpisodeResponse{}, 0, err
				}
				res, err := a.svc.WriteEpisode(req.Context(), caller(req), b.VaultName, b.WriteEpisodeRequest)
				return compatEpisodeResponse{VaultName: b.VaultName, Episode: res.Episode, Hints: res.Hints}, 0, err
			}, a),
		handle("POST", base+"/query", "compatQueryEpisodes", "compat", "Query episodes", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatQueryEpisodesRequest) (compatEpisodeMatches, int, error) {
				if err := compatVault(b.VaultName); err != nil {
					return compatEpisodeMatches{}, 0, err
				}
				r := b.QueryEpisodesRequest
				if b.Limit != nil {
					if *b.Limit < 1 || *b.Limit > episodic.MaxLimit {
						return compatEpisodeMatches{}, 0, errBad("limit must be between 1 and %d", episodic.MaxLimit)
					}
					r.Limit = *b.Limit
				}
				if b.MinConfidence != nil {
					r.MinConfidence = *b.MinConfidence
				}
				res, err := a.svc.QueryEpisodes(req.Context(), caller(req), b.VaultName, r)
				out := compatEpisodeMatches{VaultName: b.VaultName, OrderBy: res.OrderBy, Results: res.Results}
				if b.Query != "" {
					out.Query = &b.Query
				}
				return out, 0, err
			}, a),
		handle("GET", base, "compatEpisodeStats", "compat", "Count an episodic vault's episodes", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatVaultQuery, _ *none) (compatStats, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatStats{}, 0, err
				}
				st, err := a.svc.EpisodeStats(req.Context(), caller(req), q.VaultName, "")
				return compatStats{VaultName: q.VaultName, Total: st.Total, Open: st.Open, Closed: st.Closed}, 0, err
			}, a),
		handle("GET", base+"/entities", "compatEntities", "compat", "Count the episodes per entity", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatEntitiesQuery, _ *none) (compatEntities, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatEntities{}, 0, err
				}
				counts, err := a.svc.Entities(req.Context(), caller(req), q.VaultName, vault.EntitiesRequest{ValidAt: q.ValidAt,
					KnownAt: q.KnownAt, IncludeClosed: q.All, Source: q.Source, MinConfidence: q.MinConfidence, MinEpisodes: q.MinEpisodes})
				return compatEntities{VaultName: q.VaultName, Entities: counts}, 0, err
			}, a),
		handle("GET", base+"/{id}", "compatGetEpisode", "compat", "Get an episode", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatVaultQuery, _ *none) (compatEpisodeResponse, int, error) {
				if err := compatVault(q.VaultName); err != nil {
					return compatEpisodeResponse{}, 0, err
				}
				e, err := a.svc.Episode(req.Context(), caller(req), q.VaultName, id(req))
				return compatEpisode(q.VaultName, e, err)
			}, a),
		handle("GET", base+"/{id}/history", "compatEpisodeHistory", "compat", "The chain of episodes an episode belongs to, oldest first", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, q *compatVaultQuery, _ *none) (compatHistory, int, error) {
				out := compatHistory{VaultName: q.VaultName, EpisodeID: id(req), Chain: []episodic.EpisodeJSON{}}
				if err := compatVault(q.VaultName); err != nil {
					return out, 0, err
				}
				h, err := a.svc.EpisodeHistory(req.Context(), caller(req), q.VaultName, id(req))
				if err != nil {
					return out, 0, err
				}
				for _, r := range h.Chain {
					e, err := a.svc.Episode(req.Context(), caller(req), q.VaultName, r.ID)
					if err != nil {
						return out, 0, fmt.Errorf("history of %s: %w", id(req), err)
					}
					out.Chain = append(out.Chain, e)
				}
				return out, 0, nil
			}, a),
		handle("POST", base+"/{id}/invalidate", "compatInvalidateEpisode", "compat", "Close an open episode", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatInvalidateRequest) (compatEpisodeResponse, int, error) {
				if err := compatVault(b.VaultName); err != nil {
					return compatEpisodeResponse{}, 0, err
				}
				e, err := a.svc.Invalidate(req.Context(), caller(req), b.VaultName, id(req), b.InvalidateRequest)
				return compatEpisode(b.VaultName, e, err)
			}, a),
		handle("POST", base+"/{id}/supersede", "compatSupersedeEpisode", "compat", "Replace an open episode by a new one", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *compatSupersedeRequest) (compatEpisodeResponse, int, error) {
				if err := compatVault(b.VaultName); err != nil {
					return compatEpisodeResponse{}, 0, err
				}
				e, err := a.svc.Supersede(req.Context(), caller(req), b.VaultName, id(req), b.SuccessorRequest)
				return compatEpisode(b.VaultName, e, err)
			}, a),
	}
}
