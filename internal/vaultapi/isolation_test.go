package vaultapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// routeType is the vault type a route works on ("" for any).
func routeType(pattern string) vault.Type {
	switch {
	case strings.Contains(pattern, "/episodes"):
		return vault.Episodic
	case strings.Contains(pattern, "/skills"):
		return vault.Skill
	case strings.Contains(pattern, "/documents"), strings.HasSuffix(pattern, "/index"),
		strings.HasSuffix(pattern, "/reindex"), strings.HasSuffix(pattern, "/query"):
		return vault.Semantic
	}
	return ""
}

// writes says whether a route changes anything.
func writes(rt route) bool {
	return rt.Method != "GET" && rt.ID != "queryVault" && rt.ID != "queryEpisodes"
}

var adminRoutes = []string{"attachAgent", "detachAgent", "publishVault", "vaultAudit"}

// matrix holds the vaults of the isolation tests: for each type, one
// restricted to a, one to b, one public, and one where a has a read-only
// grant (and b a full one), each with a document, a skill or an episode.
type matrix struct {
	*env
	episode map[string]string // the first episode's id, by vault
	scratch int
}

func newMatrix(t *testing.T) *matrix {
	m := &matrix{env: newEnv(t, Options{}), episode: map[string]string{}}
	for _, typ := range []vault.Type{vault.Semantic, vault.Skill, vault.Episodic} {
		for prefix, agents := range map[string][]string{"a": {"a"}, "b": {"b"}, "pub": nil, "ro": {"a:ro", "b"}} {
			name := prefix + "-" + string(typ)
			m.vault(name, typ, agents...)
			switch typ {
			case vault.Semantic:
				m.want(m.do(owner, "PUT", "/v1/vaults/"+name+"/documents/doc.md", map[string]any{"content": "# Secret\n\nthe secret of " + name}), 200, "seed")
			case vault.Skill:
				m.want(m.do(owner, "PUT", "/v1/vaults/"+name+"/skills/brew-tea", map[string]any{"description": "secret of " + name, "instructions": "steep"}), 200, "seed")
			case vault.Episodic:
				m.episode[name] = m.fresh(name)
			}
		}
	}
	return m
}

// fresh writes a new episode into an episodic vault, as the owner.
func (m *matrix) fresh(name string) string {
	r := m.want(m.do(owner, "POST", "/v1/vaults/"+name+"/episodes", map[string]any{"content": "the secret of " + name, "entities": []string{"secret"}}), 201, "seed")
	return r.json(m.t)["episode"].(map[string]any)["id"].(string)
}

// request builds a valid call of rt on vault name by who: what a
// caller with full access would get a 2xx for.
func (m *matrix) request(rt route, name, who string) (string, any) {
	path := strings.ReplaceAll(rt.Pattern, "{vault}", name)
	path = strings.ReplaceAll(path, "{agent}", who)
	path = strings.ReplaceAll(path, "{name}", "brew-tea")
	switch rt.ID {
	case "readDocument":
		path = strings.ReplaceAll(path, "{path...}", "doc.md")
	case "writeDocument":
		path = strings.ReplaceAll(path, "{path...}", "by-"+who+".md")
	case "deleteDocument":
		m.want(m.do(owner, "PUT", "/v1/vaults/"+name+"/documents/doomed.md", map[string]any{"content": "x", "overwrite": true}), 200, "seed")
		path = strings.ReplaceAll(path, "{path...}", "doomed.md")
	}
	if strings.Contains(path, "{id}") {
		id := m.episode[name]
		if writes(rt) {
			id = m.fresh(name)
		}
		path = strings.ReplaceAll(path, "{id}", id)
	}
	var body any
	switch rt.ID {
	case "writeDocument":
		body = map[string]any{"content": "written by " + who, "overwrite": true}
	case "queryVault", "queryEpisodes":
		body = map[string]any{"query": "secret"}
	case "writeSkill":
		body = map[string]any{"description": "by " + who, "instructions": "x", "overwrite": true}
	case "writeEpisode":
		body = map[string]any{"content": "written by " + who}
	case "supersedeEpisode", "reviseEpisode":
		body = map[string]any{"content": "changed by " + who}
	case "disputeEpisode":
		body = map[string]any{"other": m.fresh(name)}
	case "importEpisodes":
		m.scratch++
		s := fmt.Sprintf("scratch%d", m.scratch)
		m.vault(s, vault.Episodic)
		m.fresh(s)
		body = string(m.want(m.do(owner, "GET", "/v1/vaults/"+s+"/episodes/export", nil), 200, "scratch").body)
	}
	return path, body
}

// TestIsolation checks every route that names a vault, for agents a and
// b: a restricted vault of the other agent is 404 everywhere (and comes
// out unchanged), a read-only grant is 403 on every write, a public
// vault is theirs to use (but not to administer).
func TestIsolation(t *testing.T) {
	m := newMatrix(t)
	routes := (&api{}).routes()
	n := 0
	for _, rt := range routes {
		if !strings.Contains(rt.Pattern, "{vault}") {
			continue
		}
		n++
		for _, who := range []string{"a", "b"} {
			other := map[string]string{"a": "b", "b": "a"}[who]
			types := []vault.Type{routeType(rt.Pattern)}
			if types[0] == "" {
				types = []vault.Type{vault.Semantic, vault.Skill, vault.Episodic}
			}
			for _, typ := range types {
				try := func(name string, want func(int) bool, expect string) {
					path, body := m.request(rt, name, who)
					r := m.do(who, rt.Method, path, body)
					if !want(r.status) {
						t.Errorf("%s %s %s (%s): %d, want %s: %s", who, rt.Method, path, rt.ID, r.status, expect, r.body)
					}
					if r.status >= 400 && strings.Contains(string(r.body), "secret of") {
						t.Errorf("%s %s %s: the error leaks content: %s", who, rt.Method, path, r.body)
					}
				}
				is := func(s int) func(int) bool { return func(got int) bool { return got == s } }
				ok := func(got int) bool { return got >= 200 && got < 300 }
				// The other agent's restricted vault does not exist.
				try(other+"-"+string(typ), is(http.StatusNotFound), "404")
				// Public: usable, not administrable.
				switch {
				case slices.Contains(adminRoutes, rt.ID):
					try("pub-"+string(typ), is(http.StatusForbidden), "403")
				default:
					try("pub-"+string(typ), ok, "2xx")
				}
				// a's read-only grant; b's full grant on the same vault.
				switch {
				case rt.ID == "queryEpisodes" && who == "a":
					try("ro-"+string(typ), ok, "2xx")
					// Reinforcing records recalls: a write.
					path, _ := m.request(rt, "ro-episodic", who)
					m.want(m.do(who, "POST", path, map[string]any{"reinforce": true}), 403, "reinforce through a read-only grant")
				case slices.Contains(adminRoutes, rt.ID):
					try("ro-"+string(typ), is(http.StatusForbidden), "403")
				case who == "a" && writes(rt):
					try("ro-"+string(typ), is(http.StatusForbidden), "403")
				default:
					try("ro-"+string(typ), ok, "2xx")
				}
			}
		}
	}
	if n < 25 {
		t.Errorf("only %d routes name a vault", n)
	}

	// Not listed, and unchanged.
	for _, who := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[who]
		for _, v := range m.want(m.do(who, "GET", "/v1/vaults", nil), 200, "list").json(t)["vaults"].([]any) {
			if name := v.(map[string]any)["name"].(string); strings.HasPrefix(name, other+"-") {
				t.Errorf("%s lists %s", who, name)
			}
		}
		get := func(path string) map[string]any {
			return m.want(m.do(owner, "GET", "/v1/vaults/"+other+"-"+path, nil), 200, path).json(t)
		}
		// The owner seeded documents and episodes for the calls; the
		// agents' calls must have left no trace.
		for _, d := range get("semantic/documents")["documents"].([]any) {
			if by := d.(map[string]any)["metadata"].(map[string]any)["written_by"]; by != owner {
				t.Errorf("%s-semantic has a document by %v: %v", other, by, d)
			}
		}
		if s := get("skill/skills/brew-tea"); s["description"] != "secret of "+other+"-skill" {
			t.Errorf("%s-skill changed: %v", other, s)
		}
		if st := get("episodic/episodes/stats"); st["closed"] != 0.0 || st["disputed"] != 0.0 {
			t.Errorf("%s-episodic changed: %v", other, st)
		}
		q := m.want(m.do(owner, "POST", "/v1/vaults/"+other+"-episodic/episodes/query", map[string]any{"include_closed": true, "limit": 200}), 200, "query").json(t)
		for _, e := range q["results"].([]any) {
			if e := e.(map[string]any); e["content"] != "the secret of "+other+"-episodic" || e["confirmed_count"] != 0.0 {
				t.Errorf("%s-episodic has an episode an agent wrote or changed: %v", other, e)
			}
		}
		if v := get("semantic"); !v["restricted"].(bool) || len(v["agents"].([]any)) != 1 {
			t.Errorf("%s-semantic's grants changed: %v", other, v)
		}
	}
	// The read-only vaults kept what a could not write.
	if s := m.want(m.do(owner, "GET", "/v1/vaults/ro-semantic/documents/by-a.md", nil), 404, "a's write").json(t); s == nil {
		t.Error("no answer")
	}
}
