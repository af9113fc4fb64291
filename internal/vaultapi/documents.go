package vaultapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/vault"
)

// DocInfo is an indexed document of a semantic vault.
type DocInfo struct {
	Path   string `json:"path"`
	Chunks int    `json:"chunks"`
	// Indexed is when it was last indexed.
	Indexed time.Time `json:"indexed"`
	// Metadata was given when the document was written (with written_by
	// and written_at).
	Metadata map[string]string `json:"metadata"`
}

// DocList is the answer of GET /v1/vaults/{vault}/documents.
type DocList struct {
	Documents []DocInfo `json:"documents"`
}

// WriteDocRequest is the body of PUT /v1/vaults/{vault}/documents/{path}.
type WriteDocRequest struct {
	Content   string            `json:"content" jsonschema:"the document; its path's extension picks the format (.md .txt .html .json .csv)"`
	Overwrite bool              `json:"overwrite,omitempty" jsonschema:"replace an existing document (otherwise 409)"`
	Metadata  map[string]string `json:"metadata,omitempty" jsonschema:"kept with the document in the index, across reindexing"`
}

// WriteDocResponse is the answer of a document write.
type WriteDocResponse struct {
	Vault string `json:"vault"`
	Path  string `json:"path"`
}

// DeleteDocResponse is the answer of a document delete.
type DeleteDocResponse struct {
	// Deleted lists the documents removed (several for a folder).
	Deleted []string `json:"deleted"`
}

// IndexRequest is the body of POST /v1/vaults/{vault}/index.
type IndexRequest struct {
	Path  string `json:"path,omitempty" jsonschema:"only this file or folder of the vault"`
	Force bool   `json:"force,omitempty" jsonschema:"process files again even when unchanged"`
}

// ReindexRequest is the body of POST /v1/vaults/{vault}/reindex.
type ReindexRequest struct {
	Path string `json:"path,omitempty" jsonschema:"only this file or folder, processed again; without it the whole index is rebuilt"`
}

// QueryRequest is the body of POST /v1/vaults/{vault}/query.
type QueryRequest struct {
	Query string `json:"query" jsonschema:"what to search for"`
	N     int    `json:"n,omitempty" jsonschema:"how many passages, default 5"`
}

// maxQueryResults bounds n of a query.
const maxQueryResults = 100

func (a *api) documentRoutes() []route {
	rw := []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound}
	ro := []int{http.StatusBadRequest, http.StatusNotFound}
	return []route{
		handle("GET", "/v1/vaults/{vault}/documents", "listDocuments", "documents",
			"List the indexed documents of a semantic vault", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (DocList, int, error) {
				v, err := a.vaultFor(req, vault.Read, "docs")
				if err != nil {
					return DocList{}, 0, err
				}
				docs, err := v.Docs(req.Context())
				if err != nil {
					return DocList{}, 0, err
				}
				out := DocList{Documents: []DocInfo{}}
				for _, d := range docs {
					meta := d.Meta
					if meta == nil {
						meta = map[string]string{}
					}
					out.Documents = append(out.Documents, DocInfo{Path: d.Path, Chunks: d.Chunks, Indexed: d.Indexed.UTC(), Metadata: meta})
				}
				return out, 0, nil
			}, a),
		handle("GET", "/v1/vaults/{vault}/documents/{path...}", "readDocument", "documents",
			"Read a document's text as extracted for indexing", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (*vault.DocText, int, error) {
				v, err := a.vaultFor(req, vault.Read, "read")
				if err != nil {
					return nil, 0, err
				}
				d, err := v.ReadDoc(req.Context(), caller(req), docPath(req))
				return d, 0, err
			}, a),
		handle("PUT", "/v1/vaults/{vault}/documents/{path...}", "writeDocument", "documents",
			"Write a document and index it at once", http.StatusOK, append(rw, http.StatusConflict),
			func(w http.ResponseWriter, req *http.Request, _ *none, b *WriteDocRequest) (WriteDocResponse, int, error) {
				v, err := a.vaultFor(req, vault.Write, "write")
				if err != nil {
					return WriteDocResponse{}, 0, err
				}
				p := docPath(req)
				if p == "" {
					return WriteDocResponse{}, 0, errBad("name the document: PUT /v1/vaults/%s/documents/PATH", v.Name)
				}
				err = v.Write(req.Context(), vault.WriteOptions{Agent: caller(req), Path: p, Content: []byte(b.Content),
					Overwrite: b.Overwrite, Meta: b.Metadata})
				return WriteDocResponse{Vault: v.Name, Path: p}, 0, err
			}, a),
		handle("DELETE", "/v1/vaults/{vault}/documents/{path...}", "deleteDocument", "documents",
			"Delete a document, or every document of a folder, from the vault and its index", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (DeleteDocResponse, int, error) {
				v, err := a.vaultFor(req, vault.Write, "delete")
				if err != nil {
					return DeleteDocResponse{}, 0, err
				}
				if docPath(req) == "" {
					return DeleteDocResponse{}, 0, errBad("name the document or folder to delete")
				}
				del, err := v.Delete(req.Context(), caller(req), docPath(req))
				if del == nil {
					del = []string{}
				}
				return DeleteDocResponse{Deleted: del}, 0, err
			}, a),
		handle("POST", "/v1/vaults/{vault}/index", "indexVault", "documents",
			"Bring a semantic vault's index in step with its files", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *IndexRequest) (*vault.IndexReport, int, error) {
				v, err := a.vaultFor(req, vault.Write, "index")
				if err != nil {
					return nil, 0, err
				}
				return orNil(v.Index(req.Context(), vault.IndexOptions{Agent: caller(req), Path: b.Path, Force: b.Force}))
			}, a),
		handle("POST", "/v1/vaults/{vault}/reindex", "reindexVault", "documents",
			"Rebuild a semantic vault's index, or process one path again", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *ReindexRequest) (*vault.IndexReport, int, error) {
				v, err := a.vaultFor(req, vault.Write, "reindex")
				if err != nil {
					return nil, 0, err
				}
				return orNil(v.Index(req.Context(), vault.IndexOptions{Agent: caller(req), Path: b.Path, Reindex: b.Path == "", Force: true}))
			}, a),
		handle("POST", "/v1/vaults/{vault}/query", "queryVault", "documents",
			"Search a semantic vault: BM25 and, with an embedder, vector similarity", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *QueryRequest) (*vault.QueryResult, int, error) {
				v, err := a.vaultFor(req, vault.Read, "query")
				if err != nil {
					return nil, 0, err
				}
				if strings.TrimSpace(b.Query) == "" {
					return nil, 0, errBad("query is required")
				}
				if b.N < 0 || b.N > maxQueryResults {
					return nil, 0, errBad("n must be between 1 and %d", maxQueryResults)
				}
				return orNil(v.Query(req.Context(), b.Query, b.N, nil))
			}, a),
	}
}

// docPath is the {path...} of a document route.
func docPath(req *http.Request) string { return req.PathValue("path") }

// orNil adapts a library call's (result, error) to a handler's.
func orNil[T any](v T, err error) (T, int, error) { return v, 0, err }
