package vaultmcp

import (
	"context"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/index"
)

// Inputs and outputs of the tools on vaults, documents and skills.

// ListVaultsIn takes nothing.
type ListVaultsIn struct{}

// ListVaultsOut lists the vaults the agent can use.
type ListVaultsOut struct {
	Vaults []VaultInfo `json:"vaults"`
}

// QueryIn asks a semantic vault.
type QueryIn struct {
	Vault    string `json:"vault" jsonschema:"the semantic vault to search (list_vaults shows them)"`
	Query    string `json:"query" jsonschema:"what you are looking for, in words likely to appear in the documents"`
	NResults int    `json:"n_results,omitempty" jsonschema:"how many passages, 1 to 50; default 5"`
}

// QueryOut is what query found.
type QueryOut struct {
	Vault   string    `json:"vault"`
	Query   string    `json:"query"`
	Mode    string    `json:"mode" jsonschema:"hybrid (words and meaning) or lexical (words only)"`
	Results []Passage `json:"results" jsonschema:"best first; empty when nothing matched"`
}

// WriteDocIn writes a document.
type WriteDocIn struct {
	Vault     string            `json:"vault" jsonschema:"the semantic vault to write into"`
	Path      string            `json:"path" jsonschema:"where, relative to the vault, like notes/2026-03-01-meeting.md; the extension picks the format (.md .txt .html .json .csv)"`
	Content   string            `json:"content" jsonschema:"the document's text"`
	Overwrite bool              `json:"overwrite,omitempty" jsonschema:"replace an existing document at path; default false, which refuses to"`
	Metadata  map[string]string `json:"metadata,omitempty" jsonschema:"metadata kept with the document (generated_by is set to you)"`
}

// WriteDocOut says what write_doc stored.
type WriteDocOut struct {
	Vault string `json:"vault"`
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

// VaultIn names a vault.
type VaultIn struct {
	Vault string `json:"vault" jsonschema:"the vault (list_vaults shows them)"`
}

// ListDocsOut lists a semantic vault's documents.
type ListDocsOut struct {
	Vault     string    `json:"vault"`
	Documents []DocInfo `json:"documents"`
}

// ReadDocIn names a document.
type ReadDocIn struct {
	Vault string `json:"vault" jsonschema:"the semantic vault"`
	Path  string `json:"path" jsonschema:"the document's path in the vault, as list_docs or query show it"`
}

// ReadDocOut is a document's text.
type ReadDocOut struct {
	Vault string `json:"vault"`
	Path  string `json:"path"`
	Title string `json:"title,omitempty"`
	Text  string `json:"text" jsonschema:"the extracted text: paragraphs separated by blank lines, pages by a form feed"`
	Bytes int64  `json:"bytes" jsonschema:"the file's size"`
}

// ListSkillsOut lists a skill vault's skills.
type ListSkillsOut struct {
	Vault    string    `json:"vault"`
	Skills   []Skill   `json:"skills" jsonschema:"name and description of each skill; read_skill gives its instructions"`
	Problems []Problem `json:"problems" jsonschema:"files that are not valid skills, and why"`
}

// ReadSkillIn names a skill.
type ReadSkillIn struct {
	Vault string `json:"vault" jsonschema:"the skill vault"`
	Name  string `json:"name" jsonschema:"the skill's name, as list_skills shows it"`
}

// SkillOut is one skill.
type SkillOut struct {
	Vault string `json:"vault"`
	Skill Skill  `json:"skill"`
}

// WriteSkillIn writes a skill.
type WriteSkillIn struct {
	Vault        string `json:"vault" jsonschema:"the skill vault"`
	Name         string `json:"name" jsonschema:"lowercase letters, digits and single hyphens, at most 64 characters, like review-pull-request"`
	Description  string `json:"description" jsonschema:"what the skill does and when to use it, at most 1024 characters: this is what list_skills shows"`
	Instructions string `json:"instructions" jsonschema:"the procedure, in Markdown"`
	Overwrite    bool   `json:"overwrite,omitempty" jsonschema:"replace an existing skill of that name; default false, which refuses to"`
}

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}

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
	vs, err := s.r.Visible(ctx, s.agent)
	if err != nil {
		return nil, ListVaultsOut{}, toolError("list_vaults", "", err)
	}
	out := ListVaultsOut{Vaults: []VaultInfo{}}
	for _, v := range vs {
		access := "read-write"
		if v.Allowed(s.agent, vault.Write) != nil {
			access = "read-only"
		}
		out.Vaults = append(out.Vaults, VaultInfo{Name: v.Name, Type: string(v.Type), Scope: string(v.Scope),
			Restricted: v.Restricted, Access: access, EmbeddingModel: v.EmbeddingModel, Tools: toolsFor[v.Type]})
	}
	return nil, out, nil
}

func (s *server) query(ctx context.Context, _ *mcp.CallToolRequest, in QueryIn) (*mcp.CallToolResult, QueryOut, error) {
	const tool = "query"
	n := in.NResults
	switch {
	case n == 0:
		n = 5
	case n < 1 || n > 50:
		return nil, QueryOut{}, toolError(tool, in.Vault, badInput("n_results %d is out of range: give 1 to 50", n))
	}
	if strings.TrimSpace(in.Query) == "" {
		return nil, QueryOut{}, toolError(tool, in.Vault, badInput("query is empty: say what you are looking for (list_docs lists the documents instead)"))
	}
	v, err := s.vaultFor(ctx, tool, in.Vault, vault.Read, vault.Semantic)
	if err != nil {
		return nil, QueryOut{}, err
	}
	res, err := v.Query(ctx, in.Query, n, nil)
	if err != nil {
		return nil, QueryOut{}, toolError(tool, in.Vault, err)
	}
	out := QueryOut{Vault: v.Name, Query: in.Query, Mode: res.Mode, Results: []Passage{}}
	for _, r := range res.Results {
		out.Results = append(out.Results, Passage{Path: r.Path, Heading: r.Heading, Page: r.Page, Chunk: r.Chunk, Text: r.Text, Score: r.Score})
	}
	return nil, out, nil
}

func (s *server) writeDoc(ctx context.Context, _ *mcp.CallToolRequest, in WriteDocIn) (*mcp.CallToolResult, WriteDocOut, error) {
	const tool = "write_doc"
	v, err := s.vaultFor(ctx, tool, in.Vault, vault.Write, vault.Semantic)
	if err != nil {
		return nil, WriteDocOut{}, err
	}
	meta := map[string]string{}
	maps.Copy(meta, in.Metadata)
	meta["generated_by"] = s.agent
	err = v.Write(ctx, vault.WriteOptions{Agent: s.agent, Path: in.Path, Content: []byte(in.Content), Overwrite: in.Overwrite, Meta: meta})
	if err != nil {
		return nil, WriteDocOut{}, toolError(tool, in.Vault, err)
	}
	return nil, WriteDocOut{Vault: v.Name, Path: in.Path, Bytes: len(in.Content)}, nil
}

func (s *server) listDocs(ctx context.Context, _ *mcp.CallToolRequest, in VaultIn) (*mcp.CallToolResult, ListDocsOut, error) {
	const tool = "list_docs"
	v, err := s.vaultFor(ctx, tool, in.Vault, vault.Read, vault.Semantic)
	if err != nil {
		return nil, ListDocsOut{}, err
	}
	docs, err := v.Docs(ctx)
	if err != nil {
		return nil, ListDocsOut{}, toolError(tool, in.Vault, err)
	}
	out := ListDocsOut{Vault: v.Name, Documents: []DocInfo{}}
	for _, d := range docs {
		out.Documents = append(out.Documents, docInfo(d))
	}
	return nil, out, nil
}

func docInfo(d index.Doc) DocInfo {
	return DocInfo{Path: d.Path, Chunks: d.Chunks, Indexed: d.Indexed.UTC().Format("2006-01-02T15:04:05Z"), Meta: d.Meta}
}

func (s *server) readDoc(ctx context.Context, _ *mcp.CallToolRequest, in ReadDocIn) (*mcp.CallToolResult, ReadDocOut, error) {
	const tool = "read_doc"
	v, err := s.vaultFor(ctx, tool, in.Vault, vault.Read, vault.Semantic)
	if err != nil {
		return nil, ReadDocOut{}, err
	}
	d, err := v.ReadDoc(ctx, s.agent, in.Path)
	if err != nil {
		return nil, ReadDocOut{}, toolError(tool, in.Vault, err)
	}
	// The model reads the document as text; the structured content holds
	// the same with its path and title. A long document is thus stored as
	// text by the offload middleware, to be searched and paged.
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: d.Text}}}
	return res, ReadDocOut{Vault: v.Name, Path: d.Path, Title: d.Title, Text: d.Text, Bytes: d.Bytes}, nil
}

func (s *server) listSkills(ctx context.Context, _ *mcp.CallToolRequest, in VaultIn) (*mcp.CallToolResult, ListSkillsOut, error) {
	const tool = "list_skills"
	v, err := s.vaultFor(ctx, tool, in.Vault, vault.Read, vault.Skill)
	if err != nil {
		return nil, ListSkillsOut{}, err
	}
	rep, err := v.Skills(ctx)
	if err != nil {
		return nil, ListSkillsOut{}, toolError(tool, in.Vault, err)
	}
	out := ListSkillsOut{Vault: v.Name, Skills: []Skill{}, Problems: []Problem{}}
	for i := range rep.Skills {
		sk := toSkill(&rep.Skills[i])
		sk.Instructions = ""
		out.Skills = append(out.Skills, sk)
	}
	for _, p := range rep.Problems {
		out.Problems = append(out.Problems, Problem{Path: p.Path, Error: p.Error})
	}
	return nil, out, nil
}

func (s *server) readSkill(ctx context.Context, _ *mcp.CallToolRequest, in ReadSkillIn) (*mcp.CallToolResult, SkillOut, error) {
	const tool = "read_skill"
	v, err := s.vaultFor(ctx, tool, in.Vault, vault.Read, vault.Skill)
	if err != nil {
		return nil, SkillOut{}, err
	}
	sk, err := v.Skill(ctx, s.agent, in.Name)
	if err != nil {
		return nil, SkillOut{}, toolError(tool, in.Vault, err)
	}
	return nil, SkillOut{Vault: v.Name, Skill: toSkill(sk)}, nil
}

func (s *server) writeSkill(ctx context.Context, _ *mcp.CallToolRequest, in WriteSkillIn) (*mcp.CallToolResult, SkillOut, error) {
	const tool = "write_skill"
	v, err := s.vaultFor(ctx, tool, in.Vault, vault.Write, vault.Skill)
	if err != nil {
		return nil, SkillOut{}, err
	}
	sk, err := v.WriteSkill(ctx, vault.WriteSkillOptions{Agent: s.agent, Name: in.Name, Description: in.Description,
		Instructions: in.Instructions, Overwrite: in.Overwrite})
	if err != nil {
		return nil, SkillOut{}, toolError(tool, in.Vault, err)
	}
	return nil, SkillOut{Vault: v.Name, Skill: toSkill(sk)}, nil
}
