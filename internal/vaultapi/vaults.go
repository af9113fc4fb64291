package vaultapi

import (
	"maps"
	"net/http"
	"slices"

	"github.com/ctxkit/ctxkit/vault"
)

// VaultInfo describes a vault to its caller.
type VaultInfo struct {
	Name string `json:"name"`
	// Type is semantic, skill or episodic.
	Type string `json:"type"`
	// Scope is local (the project's) or global.
	Scope      string `json:"scope"`
	Restricted bool   `json:"restricted"`
	// EmbeddingModel is the pinned embedder spec; empty for skill vaults.
	EmbeddingModel string `json:"embedding_model,omitempty"`
	// Access is what the caller may do: read-write or read-only.
	Access string `json:"access"`
	// Agents are the attached agents and their grants, shown to the
	// owner only.
	Agents []AgentGrant `json:"agents,omitempty"`
}

// AgentGrant is an agent attached to a restricted vault.
type AgentGrant struct {
	Agent    string `json:"agent"`
	ReadOnly bool   `json:"read_only"`
}

// VaultList is the answer of GET /v1/vaults.
type VaultList struct {
	Vaults []VaultInfo `json:"vaults"`
}

// CreateVaultRequest is the body of POST /v1/vaults.
type CreateVaultRequest struct {
	Name string `json:"name" jsonschema:"1 to 64 letters, digits, '-', '_' or '.'"`
	// Type defaults to semantic.
	Type string `json:"type,omitempty" jsonschema:"semantic (default), skill or episodic"`
	// Scope defaults to local.
	Scope      string `json:"scope,omitempty" jsonschema:"local (the served project's, default) or global"`
	Restricted bool   `json:"restricted,omitempty" jsonschema:"only attached agents (and the owner) may use it"`
	// EmbeddingModel defaults to none for semantic and episodic vaults.
	EmbeddingModel string `json:"embedding_model,omitempty" jsonschema:"none (default), builtin, ollama:MODEL or openai:MODEL; not for skill vaults"`
}

// AttachRequest is the body of POST /v1/vaults/{vault}/agents/{agent}.
type AttachRequest struct {
	ReadOnly bool `json:"read_only,omitempty" jsonschema:"the agent may read but not write"`
}

// info describes v to agent.
func info(v *vault.Vault, agent string) VaultInfo {
	out := VaultInfo{Name: v.Name, Type: string(v.Type), Scope: string(v.Scope), Restricted: v.Restricted,
		EmbeddingModel: v.EmbeddingModel, Access: "read-write"}
	if v.Allowed(agent, vault.Write) != nil {
		out.Access = "read-only"
	}
	if agent == vault.Owner {
		for _, name := range slices.Sorted(maps.Keys(v.Agents)) {
			out.Agents = append(out.Agents, AgentGrant{Agent: name, ReadOnly: v.Agents[name].ReadOnly})
		}
	}
	return out
}

var adminErrors = []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound}

func (a *api) vaultRoutes() []route {
	return []route{
		handle("GET", "/v1/vaults", "listVaults", "vaults",
			"List the vaults the caller may use (the owner: all but shadowed global ones)", http.StatusOK, nil,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (VaultList, int, error) {
				vs, err := a.r.Visible(req.Context(), caller(req))
				if err != nil {
					return VaultList{}, 0, err
				}
				out := VaultList{Vaults: []VaultInfo{}}
				for _, v := range vs {
					out.Vaults = append(out.Vaults, info(v, caller(req)))
				}
				return out, 0, nil
			}, a),
		handle("POST", "/v1/vaults", "createVault", "vaults",
			"Create a vault (owner only)", http.StatusCreated, []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict},
			func(w http.ResponseWriter, req *http.Request, _ *none, b *CreateVaultRequest) (VaultInfo, int, error) {
				if caller(req) != vault.Owner {
					return VaultInfo{}, 0, errAdmin
				}
				if b.Name == "" {
					return VaultInfo{}, 0, errBad("name is required")
				}
				v, err := a.r.Init(req.Context(), vault.InitOptions{Name: b.Name, Type: vault.Type(b.Type), Scope: vault.Scope(b.Scope),
					Restricted: b.Restricted, EmbeddingModel: b.EmbeddingModel})
				if err != nil {
					return VaultInfo{}, 0, err
				}
				return info(v, vault.Owner), 0, nil
			}, a),
		handle("GET", "/v1/vaults/{vault}", "getVault", "vaults",
			"Describe one vault", http.StatusOK, []int{http.StatusBadRequest, http.StatusNotFound},
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (VaultInfo, int, error) {
				v, err := a.vaultFor(req, vault.Read, "describe")
				if err != nil {
					return VaultInfo{}, 0, err
				}
				return info(v, caller(req)), 0, nil
			}, a),
		handle("POST", "/v1/vaults/{vault}/agents/{agent}", "attachAgent", "vaults",
			"Attach an agent to a vault, making it restricted, or change its grant (owner only)", http.StatusOK, adminErrors,
			func(w http.ResponseWriter, req *http.Request, _ *none, b *AttachRequest) (VaultInfo, int, error) {
				v, err := a.adminVault(req, "attach")
				if err != nil {
					return VaultInfo{}, 0, err
				}
				if v, err = a.r.Attach(req.Context(), v.Name, req.PathValue("agent"), b.ReadOnly); err != nil {
					return VaultInfo{}, 0, err
				}
				return info(v, vault.Owner), 0, nil
			}, a),
		handle("DELETE", "/v1/vaults/{vault}/agents/{agent}", "detachAgent", "vaults",
			"Detach an agent from a vault, which stays restricted (owner only)", http.StatusOK, adminErrors,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (VaultInfo, int, error) {
				v, err := a.adminVault(req, "detach")
				if err != nil {
					return VaultInfo{}, 0, err
				}
				if v, err = a.r.Detach(req.Context(), v.Name, req.PathValue("agent")); err != nil {
					return VaultInfo{}, 0, err
				}
				return info(v, vault.Owner), 0, nil
			}, a),
		handle("POST", "/v1/vaults/{vault}/publish", "publishVault", "vaults",
			"Make a vault public again, dropping every grant (owner only)", http.StatusOK, adminErrors,
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (VaultInfo, int, error) {
				v, err := a.adminVault(req, "publish")
				if err != nil {
					return VaultInfo{}, 0, err
				}
				if v, err = a.r.Publish(req.Context(), v.Name); err != nil {
					return VaultInfo{}, 0, err
				}
				return info(v, vault.Owner), 0, nil
			}, a),
	}
}
