package vaultapi

import (
	"net/http"

	"github.com/ctxkit/ctxkit/vault"
)

func (a *api) skillRoutes() []route {
	return []route{
		handle("GET", "/v1/vaults/{vault}/skills", "listSkills", "skills",
			"List a skill vault's valid skills, and the files that are not", http.StatusOK, []int{http.StatusBadRequest, http.StatusNotFound},
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (*vault.SkillReport, int, error) {
				return orNil(a.svc.Skills(req.Context(), caller(req), req.PathValue("vault")))
			}, a),
		handle("GET", "/v1/vaults/{vault}/skills/{name}", "readSkill", "skills",
			"Read one skill with its instructions", http.StatusOK, []int{http.StatusBadRequest, http.StatusNotFound},
			func(w http.ResponseWriter, req *http.Request, _ *none, _ *none) (*vault.SkillDoc, int, error) {
				return orNil(a.svc.Skill(req.Context(), caller(req), req.PathValue("vault"), req.PathValue("name")))
			}, a),
		handle("PUT", "/v1/vaults/{vault}/skills/{name}", "writeSkill", "skills",
			"Write a skill (NAME/SKILL.md)", http.StatusOK,
			[]int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict},
			func(w http.ResponseWriter, req *http.Request, _ *none, b *vault.WriteSkillRequest) (*vault.SkillDoc, int, error) {
				return orNil(a.svc.WriteSkill(req.Context(), caller(req), req.PathValue("vault"), req.PathValue("name"), *b))
			}, a),
	}
}
