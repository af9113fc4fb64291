package vaultapi

import (
	"net/http"
	"slices"

	"github.com/ctxkit/ctxkit/vault"
)

// DocList is the answer of GET /v1/vaults/{vault}/documents.
type DocList struct {
	Documents []vault.DocInfo `json:"documents"`
}

// DeleteDocResponse is the answer of a document delete.
type DeleteDocResponse struct {
	// Deleted lists the documents removed (several for a folder).
	Deleted []string `json:"deleted"`
}

// ReindexRequest is the body of POST /v1/vaults/{vault}/reindex.
type ReindexRequest struct {
	Path string `json:"path,omitempty" jsonschema:"only this file or folder, processed again; without it the whole index is rebuilt"`
}

func (a *api) documentRoutes() []route {
	rw := []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound}
	ro := []int{http.StatusBadRequest, http.StatusNotFound}
	// What indexes or searches needs the vault's embedder: 503 when it
	// is not available.
	embeds := func(codes ...int) []int { return append(slices.Clone(codes), http.StatusServiceUnavailable) }
	return []route{
		handle("GET", "/v1/vaults/{vault}/documents", "listDocuments", "documents",
			"List the indexed documents of a semantic vault", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (DocList, int, error) {
				docs, err := a.svc.Docs(req.Context(), caller(req), req.PathValue("vault"))
				return DocList{Documents: docs}, 0, err
			}, a),
		handle("GET", "/v1/vaults/{vault}/documents/{path...}", "readDocument", "documents",
			"Read a document's text as extracted for indexing", http.StatusOK, ro,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (*vault.DocText, int, error) {
				return orNil(a.svc.ReadDoc(req.Context(), caller(req), req.PathValue("vault"), req.PathValue("path")))
			}, a),
		handle("PUT", "/v1/vaults/{vault}/documents/{path...}", "writeDocument", "documents",
			"Write a document and index it at once", http.StatusOK, embeds(append(rw, http.StatusConflict)...),
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.WriteDocRequest) (vault.WriteDocResult, int, error) {
				return orNil(a.svc.WriteDoc(req.Context(), caller(req), req.PathValue("vault"), req.PathValue("path"), *b))
			}, a),
		handle("DELETE", "/v1/vaults/{vault}/documents/{path...}", "deleteDocument", "documents",
			"Delete a document, or every document of a folder, from the vault and its index", http.StatusOK, rw,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (DeleteDocResponse, int, error) {
				del, err := a.svc.DeleteDoc(req.Context(), caller(req), req.PathValue("vault"), req.PathValue("path"))
				if del == nil {
					del = []string{}
				}
				return DeleteDocResponse{Deleted: del}, 0, err
			}, a),
		handle("POST", "/v1/vaults/{vault}/index", "indexVault", "documents",
			"Bring a semantic vault's index in step with its files", http.StatusOK, embeds(rw...),
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.IndexRequest) (*vault.IndexReport, int, error) {
				return orNil(a.svc.Index(req.Context(), caller(req), req.PathValue("vault"), *b, nil))
			}, a),
		handle("POST", "/v1/vaults/{vault}/reindex", "reindexVault", "documents",
			"Rebuild a semantic vault's index, or process one path again", http.StatusOK, embeds(rw...),
			func(w http.ResponseWriter, req *http.Request, _ *none, b *ReindexRequest) (*vault.IndexReport, int, error) {
				return orNil(a.svc.Index(req.Context(), caller(req), req.PathValue("vault"),
					vault.IndexRequest{Path: b.Path, Reindex: true}, nil))
			}, a),
		handle("POST", "/v1/vaults/{vault}/query", "queryVault", "documents",
			"Search a semantic vault: BM25 and, with an embedder, vector similarity", http.StatusOK, embeds(ro...),
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.QueryRequest) (*vault.QueryResult, int, error) {
				return orNil(a.svc.Query(req.Context(), caller(req), req.PathValue("vault"), *b))
			}, a),
	}
}
