package vaultmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/vault"
)

// CtxVault's MCP server (ctxvault-mcp) names its tools as these do, but a
// few of their arguments otherwise: an agent or a script written for it
// calls query with vault_name, write_doc with file_path and generated_by,
// read_skill with skill_name. The tools take those names too, without a
// second set of tools or of schema properties: ctxvaultArgs renames them
// before the SDK checks the arguments against the tool's schema, which
// lists ctxkit's names only (the instructions name the aliases once).
// warmup_status, CtxVault's readiness check, is a tool of its own.

// argAliases maps CtxVault's argument names to ctxkit's, per tool; "*" is
// every tool.
var argAliases = map[string]map[string]string{
	"*":          {"vault_name": "vault"},
	"write_doc":  {"file_path": "path"},
	"read_doc":   {"file_path": "path"},
	"delete_doc": {"file_path": "path"},
	"read_skill": {"skill_name": "name"},
	// write_skill's name is the skill's: CtxVault's skill_name.
	"write_skill": {"skill_name": "name"},
	"query":       {"top_k": "n_results"},
}

// aliasNote tells the model, in the instructions, that CtxVault's names work.
const aliasNote = "Arguments may also be given by CtxVault's names: vault_name for vault, file_path for path, " +
	"skill_name for name, top_k for n_results, generated_by (write_doc) for metadata.generated_by."

// ctxvaultArgs rewrites a tool call's CtxVault argument names to ctxkit's,
// and leaves out arguments given as null, as CtxVault's Python signatures
// take None for "not given". Both names of one argument with different values are refused, naming
// both; arguments that are not a JSON object are left for the SDK to
// refuse.
func (s *server) ctxvaultArgs(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok || len(p.Arguments) == 0 {
			return next(ctx, method, req)
		}
		args, err := renameArgs(p.Name, p.Arguments)
		if err != nil {
			var res mcp.CallToolResult
			res.SetError(err)
			return &res, nil
		}
		p.Arguments = args
		return next(ctx, method, req)
	}
}

// renameArgs returns a tool's arguments with CtxVault's names replaced by
// ctxkit's; raw is returned as it is when nothing is renamed.
func renameArgs(tool string, raw json.RawMessage) (json.RawMessage, error) {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return raw, nil
	}
	changed := false
	for k, v := range args {
		if string(v) == "null" { // CtxVault's optional arguments default to None: null is left out
			delete(args, k)
			changed = true
		}
	}
	aliases := maps.Clone(argAliases["*"])
	maps.Copy(aliases, argAliases[tool])
	for _, alias := range slices.Sorted(maps.Keys(aliases)) {
		v, ok := args[alias]
		if !ok {
			continue
		}
		name := aliases[alias]
		if own, ok := args[name]; ok && !sameJSON(own, v) {
			return nil, &vault.Error{Kind: vault.ErrInvalid, Field: name,
				Msg: fmt.Sprintf("%s and %s name the same argument with different values", name, alias),
				Fix: "give " + name + " only"}
		}
		args[name] = v
		delete(args, alias)
		changed = true
	}
	if tool == "write_doc" {
		if by, ok := args["generated_by"]; ok {
			if err := putMeta(args, "generated_by", by); err != nil {
				return nil, err
			}
			delete(args, "generated_by")
			changed = true
		}
	}
	if !changed {
		return raw, nil
	}
	out, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("rewrite the arguments of %s: %w", tool, err)
	}
	return out, nil
}

// putMeta sets metadata[key] to a string value, as CtxVault keeps
// generated_by with the document.
func putMeta(args map[string]json.RawMessage, key string, v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return &vault.Error{Kind: vault.ErrInvalid, Field: key, Msg: key + " must be a string", Fix: "give who wrote the document, like \"claude\""}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := args["metadata"]; ok {
		if json.Unmarshal(m, &meta) != nil {
			return nil // the SDK refuses the metadata's type
		}
	}
	if old, ok := meta[key]; ok && !sameJSON(old, v) {
		return &vault.Error{Kind: vault.ErrInvalid, Field: key,
			Msg: fmt.Sprintf("%s and metadata.%s differ", key, key), Fix: "give " + key + " once"}
	}
	meta[key] = v
	b, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	args["metadata"] = b
	return nil
}

// sameJSON reports whether two JSON values are equal as values.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// WarmupIn takes nothing.
type WarmupIn struct{}

// WarmupOut is warmup_status's answer, in CtxVault's shape (ready, status,
// message) and with each vault's embedder.
type WarmupOut struct {
	Ready   bool   `json:"ready" jsonschema:"true when every vault you can use can be searched and written now"`
	Status  string `json:"status" jsonschema:"ready, or unavailable when a vault's embedder cannot run here"`
	Message string `json:"message"`
	// Embedders are the semantic and episodic vaults' embedders.
	Embedders []vault.EmbedderState `json:"embedders"`
}

func (s *server) addWarmupTool(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "warmup_status", Annotations: readOnly, Description: "Say whether the vaults' " +
		"embedders can run: nothing warms up here (a model loads within the first call that needs it), but a vault " +
		"whose embedder is not installed refuses queries and writes until it is; this names such vaults and the fix."},
		s.warmupStatus)
}

func (s *server) warmupStatus(ctx context.Context, _ *mcp.CallToolRequest, _ WarmupIn) (*mcp.CallToolResult, WarmupOut, error) {
	states, err := s.svc.Embedders(ctx, s.caller)
	if err != nil {
		return nil, WarmupOut{}, err
	}
	out := WarmupOut{Ready: true, Status: "ready", Message: "ready: every vault's embedder can run", Embedders: states}
	var missing []string
	for _, st := range states {
		if !st.Available {
			missing = append(missing, fmt.Sprintf("%s (%s: %s)", st.Vault, st.EmbeddingModel, st.Fix))
		}
	}
	if len(missing) > 0 {
		out.Ready, out.Status = false, "unavailable"
		out.Message = "these vaults' embedders are not available, so they refuse queries and writes: " + strings.Join(missing, "; ")
	}
	return nil, out, nil
}
