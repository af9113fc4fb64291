package vaultmcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/vault"
)

// The inputs and outputs of the tools on vaults, documents and skills: the
// service's request and answer types, with the vault's name (and the
// document or skill) beside them.

// VaultIn names a vault.
type VaultIn struct {
	Vault string `json:"vault" jsonschema:"the vault's name (list_vaults shows them)"`
}

// DocIn names a document of a semantic vault.
type DocIn struct {
	Vault string `json:"vault" jsonschema:"the semantic vault"`
	Path  string `json:"path" jsonschema:"the document's path in the vault, like notes/2026-03-01-meeting.md (list_docs and query show them)"`
}

// ListVaultsIn takes nothing.
type ListVaultsIn struct{}

// VaultOut is a vault as list_vaults shows it: what the service says of
// it, and the tools that work on it.
type VaultOut struct {
	vault.VaultInfo
	Tools string `json:"tools" jsonschema:"the tools that work on this vault"`
}

// ListVaultsOut lists the vaults the caller can use.
type ListVaultsOut struct {
	Vaults []VaultOut `json:"vaults"`
}

// QueryIn asks a semantic vault.
type QueryIn struct {
	Vault string `json:"vault" jsonschema:"the semantic vault to search (list_vaults shows them)"`
	vault.QueryRequest
}

// QueryOut is what query found.
type QueryOut struct {
	Vault string `json:"vault"`
	Query string `json:"query"`
	vault.QueryResult
}

// WriteDocIn writes a document.
type WriteDocIn struct {
	DocIn
	vault.WriteDocRequest
}

// ListDocsOut lists a semantic vault's documents.
type ListDocsOut struct {
	Vault     string          `json:"vault"`
	Documents []vault.DocInfo `json:"documents"`
}

// ReadDocOut is a document's text.
type ReadDocOut struct {
	Vault string `json:"vault"`
	vault.DocText
}

// DeleteDocOut lists what delete_doc removed.
type DeleteDocOut struct {
	Vault   string   `json:"vault"`
	Deleted []string `json:"deleted" jsonschema:"the documents removed (several for a folder)"`
}

// ListSkillsOut lists a skill vault's skills.
type ListSkillsOut struct {
	Vault string `json:"vault"`
	vault.SkillReport
}

// SkillIn names a skill.
type SkillIn struct {
	Vault string `json:"vault" jsonschema:"the skill vault"`
	Name  string `json:"name" jsonschema:"the skill's name, as list_skills shows it; lowercase letters, digits and single hyphens"`
}

// SkillOut is one skill.
type SkillOut struct {
	Vault string         `json:"vault"`
	Skill vault.SkillDoc `json:"skill"`
}

// WriteSkillIn writes a skill.
type WriteSkillIn struct {
	SkillIn
	vault.WriteSkillRequest
}

var (
	readOnly    = &mcp.ToolAnnotations{ReadOnlyHint: true}
	destructive = true
)

func (s *server) addVaultTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "list_vaults", Annotations: readOnly, Description: "List the vaults you can use, " +
		"with each one's type, your access (read-write or read-only) and the tools that work on it. Call it first, " +
		"and whenever a tool says there is no vault of the name you gave."}, s.listVaults)
	mcp.AddTool(srv, &mcp.Tool{Name: "query", Annotations: readOnly, Description: "Search the documents of a semantic " +
		"vault and get the best passages, each with its document's path. Use it before answering from memory or " +
		"writing a document that may exist already; read_doc gives a whole document. For episodic vaults use " +
		"query_episodes."}, s.query)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_doc", Description: "Write a document into a semantic vault; it is indexed " +
		"at once, so query finds it. An existing path is refused unless overwrite is true: query or list_docs first, " +
		"and prefer extending a document you have read over writing a near copy."}, s.writeDoc)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_docs", Annotations: readOnly, Description: "List the documents of a " +
		"semantic vault with their metadata."}, s.listDocs)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_doc", Annotations: readOnly, Description: "Read the whole text of one " +
		"document of a semantic vault. A long document comes back as a notice naming a stored result: explore it " +
		"with the result_* tools (search in it, read a page) rather than reading it all."}, s.readDoc)
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_doc", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		Description: "Delete a document, or every document of a folder, from a semantic vault and its index."}, s.deleteDoc)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_skills", Annotations: readOnly, Description: "List the skills of a skill " +
		"vault: the name and description of each procedure. When one fits your task, read_skill gives its " +
		"instructions."}, s.listSkills)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_skill", Annotations: readOnly, Description: "Read one skill's " +
		"instructions; follow them for the task the description names."}, s.readSkill)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_skill", Description: "Save a procedure that worked as a skill, so that " +
		"you or another agent can follow it next time. Check list_skills first: improve an existing skill " +
		"(overwrite true, after read_skill) rather than adding a second one for the same task."}, s.writeSkill)
}

func (s *server) listVaults(ctx context.Context, _ *mcp.CallToolRequest, _ ListVaultsIn) (*mcp.CallToolResult, ListVaultsOut, error) {
	vs, err := s.svc.ListVaults(ctx, s.caller)
	out := ListVaultsOut{Vaults: []VaultOut{}}
	for _, v := range vs {
		if !v.Shadowed {
			out.Vaults = append(out.Vaults, VaultOut{VaultInfo: v, Tools: toolsFor[v.Type]})
		}
	}
	return nil, out, err
}

func (s *server) query(ctx context.Context, _ *mcp.CallToolRequest, in QueryIn) (*mcp.CallToolResult, QueryOut, error) {
	res, err := s.svc.Query(ctx, s.caller, in.Vault, in.QueryRequest)
	if err != nil {
		return nil, QueryOut{}, err
	}
	return nil, QueryOut{Vault: in.Vault, Query: in.Query, QueryResult: *res}, nil
}

func (s *server) writeDoc(ctx context.Context, _ *mcp.CallToolRequest, in WriteDocIn) (*mcp.CallToolResult, vault.WriteDocResult, error) {
	res, err := s.svc.WriteDoc(ctx, s.caller, in.Vault, in.Path, in.WriteDocRequest)
	return nil, res, err
}

func (s *server) listDocs(ctx context.Context, _ *mcp.CallToolRequest, in VaultIn) (*mcp.CallToolResult, ListDocsOut, error) {
	docs, err := s.svc.Docs(ctx, s.caller, in.Vault)
	return nil, ListDocsOut{Vault: in.Vault, Documents: docs}, err
}

func (s *server) readDoc(ctx context.Context, _ *mcp.CallToolRequest, in DocIn) (*mcp.CallToolResult, ReadDocOut, error) {
	d, err := s.svc.ReadDoc(ctx, s.caller, in.Vault, in.Path)
	if err != nil {
		return nil, ReadDocOut{}, err
	}
	// The model reads the document as text; the structured content holds
	// the same with its path and title. A long document is thus stored as
	// text by the offload middleware, to be searched and paged.
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: d.Text}}}
	return res, ReadDocOut{Vault: in.Vault, DocText: *d}, nil
}

func (s *server) deleteDoc(ctx context.Context, _ *mcp.CallToolRequest, in DocIn) (*mcp.CallToolResult, DeleteDocOut, error) {
	del, err := s.svc.DeleteDoc(ctx, s.caller, in.Vault, in.Path)
	if del == nil {
		del = []string{}
	}
	return nil, DeleteDocOut{Vault: in.Vault, Deleted: del}, err
}

func (s *server) listSkills(ctx context.Context, _ *mcp.CallToolRequest, in VaultIn) (*mcp.CallToolResult, ListSkillsOut, error) {
	rep, err := s.svc.Skills(ctx, s.caller, in.Vault)
	if err != nil {
		return nil, ListSkillsOut{}, err
	}
	return nil, ListSkillsOut{Vault: in.Vault, SkillReport: *rep}, nil
}

func (s *server) readSkill(ctx context.Context, _ *mcp.CallToolRequest, in SkillIn) (*mcp.CallToolResult, SkillOut, error) {
	sk, err := s.svc.Skill(ctx, s.caller, in.Vault, in.Name)
	if err != nil {
		return nil, SkillOut{}, err
	}
	return nil, SkillOut{Vault: in.Vault, Skill: *sk}, nil
}

func (s *server) writeSkill(ctx context.Context, _ *mcp.CallToolRequest, in WriteSkillIn) (*mcp.CallToolResult, SkillOut, error) {
	sk, err := s.svc.WriteSkill(ctx, s.caller, in.Vault, in.Name, in.WriteSkillRequest)
	if err != nil {
		return nil, SkillOut{}, err
	}
	return nil, SkillOut{Vault: in.Vault, Skill: *sk}, nil
}
