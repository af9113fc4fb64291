package vaultapi

import (
	"net/http"

	"github.com/ctxkit/ctxkit/vault"
)

// VaultList is the answer of GET /v1/vaults.
type VaultList struct {
	Vaults []vault.VaultInfo `json:"vaults"`
}

// AttachRequest is the body of POST /v1/vaults/{vault}/agents/{agent}.
type AttachRequest struct {
	ReadOnly bool `json:"read_only,omitempty" jsonschema:"the agent may read but not write"`
}

// AuditQuery is the query string of GET /v1/vaults/{vault}/audit.
type AuditQuery struct {
	N int `json:"n,omitempty" jsonschema:"the last n events, default 100 (vault.DefaultAuditEvents); 0 for all"`
}

// AuditList is the answer of GET /v1/vaults/{vault}/audit.
type AuditList struct {
	Events []vault.AuditEvent `json:"events"`
}

var adminErrors = []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound}

func (a *api) vaultRoutes() []route {
	return []route{
		handle("GET", "/v1/vaults", "listVaults", "vaults",
			"List the vaults the caller may use (the owner: all, shadowed global ones marked)", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (VaultList, int, error) {
				vs, err := a.svc.ListVaults(req.Context(), caller(req))
				return VaultList{Vaults: vs}, 0, err
			}, a),
		handle("POST", "/v1/vaults", "createVault", "vaults",
			"Create a vault (owner only)", http.StatusCreated, []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict},
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.CreateVaultRequest) (vault.VaultInfo, int, error) {
				return orNil(a.svc.CreateVault(req.Context(), caller(req), *b))
			}, a),
		handle("GET", "/v1/vaults/{vault}", "getVault", "vaults",
			"Describe one vault", http.StatusOK, []int{http.StatusBadRequest, http.StatusNotFound},
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (vault.VaultInfo, int, error) {
				return orNil(a.svc.DescribeVault(req.Context(), caller(req), req.PathValue("vault")))
			}, a),
		handle("POST", "/v1/vaults/{vault}/agents/{agent}", "attachAgent", "vaults",
			"Attach an agent to a vault, making it restricted, or change its grant (owner only)", http.StatusOK, adminErrors,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *AttachRequest) (vault.VaultInfo, int, error) {
				return orNil(a.svc.Attach(req.Context(), caller(req), req.PathValue("vault"), req.PathValue("agent"), b.ReadOnly))
			}, a),
		handle("DELETE", "/v1/vaults/{vault}/agents/{agent}", "detachAgent", "vaults",
			"Detach an agent from a vault, which stays restricted (owner only)", http.StatusOK, adminErrors,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (vault.VaultInfo, int, error) {
				return orNil(a.svc.Detach(req.Context(), caller(req), req.PathValue("vault"), req.PathValue("agent")))
			}, a),
		handle("POST", "/v1/vaults/{vault}/publish", "publishVault", "vaults",
			"Make a vault public again, dropping every grant (owner only)", http.StatusOK, adminErrors,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (vault.VaultInfo, int, error) {
				return orNil(a.svc.Publish(req.Context(), caller(req), req.PathValue("vault")))
			}, a),
		handle("GET", "/v1/vaults/{vault}/audit", "vaultAudit", "vaults",
			"The last events of a vault's audit log, oldest first (owner only)", http.StatusOK, adminErrors,
			func(w http.ResponseWriter, req *http.Request, q *AuditQuery, _ *none) (AuditList, int, error) {
				n := q.N
				if !req.URL.Query().Has("n") {
					n = vault.DefaultAuditEvents
				}
				evs, err := a.svc.Audit(req.Context(), caller(req), req.PathValue("vault"), n)
				return AuditList{Events: evs}, 0, err
			}, a),
	}
}

// orNil adapts a service call's (result, error) to a handler's.
func orNil[T any](v T, err error) (T, int, error) { return v, 0, err }
