package vaultapi

import (
	"net/http"

	"github.com/ctxkit/ctxkit/vault"
)

// WriteSkillRequest is the body of PUT /v1/vaults/{vault}/skills/{name}.
type WriteSkillRequest struct {
	Description  string `json:"description" jsonschema:"what the skill does and when to use it, at most 1024 characters"`
	Instructions string `json:"instructions" jsonschema:"the body of SKILL.md, after the frontmatter"`
	Overwrite    bool   `json:"overwrite,omitempty" jsonschema:"replace an existing skill of that name (otherwise 409)"`
}

func (a *api) skillRoutes() []route {
	return []route{
		handle("GET", "/v1/vaults/{vault}/skills", "listSkills", "skills",
			"List a skill vault's valid skills, and the files that are not", http.StatusOK, []int{http.StatusBadRequest, http.StatusNotFound},
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (*vault.SkillReport, int, error) {
				v, err := a.vaultFor(req, vault.Read, "skills")
				if err != nil {
					return nil, 0, err
				}
				return orNil(v.Skills(req.Context()))
			}, a),
		handle("GET", "/v1/vaults/{vault}/skills/{name}", "readSkill", "skills",
			"Read one skill with its instructions", http.StatusOK, []int{http.StatusBadRequest, http.StatusNotFound},
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (*vault.SkillDoc, int, error) {
				v, err := a.vaultFor(req, vault.Read, "skill")
				if err != nil {
					return nil, 0, err
				}
				return orNil(v.Skill(req.Context(), caller(req), req.PathValue("name")))
			}, a),
		handle("PUT", "/v1/vaults/{vault}/skills/{name}", "writeSkill", "skills",
			"Write a skill (NAME/SKILL.md)", http.StatusOK,
			[]int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict},
			func(w http.ResponseWriter, req *http.Request, _ *none, b *WriteSkillRequest) (*vault.SkillDoc, int, error) {
				v, err := a.vaultFor(req, vault.Write, "write-skill")
				if err != nil {
					return nil, 0, err
				}
				return orNil(v.WriteSkill(req.Context(), vault.WriteSkillOptions{Agent: caller(req), Name: req.PathValue("name"),
					Description: b.Description, Instructions: b.Instructions, Overwrite: b.Overwrite}))
			}, a),
	}
}
