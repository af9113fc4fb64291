package vaultapi

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// TestCtxVaultTestAPI ports CtxVault's own API tests (tests/test_api.py,
// episodic v1 cut) to this server: the same requests, as a CtxVault client
// sends them (no token, in header mode; with a token added, in token
// mode), and the same assertions on statuses and fields. Its fixtures
// become vaults made here: test_vault (semantic, docs/file1.txt and
// docs/file2.txt in it) and test_skill_vault; its Chroma mock, which finds
// a passage for any query, becomes a query for words the files hold.
//
// Where ctxkit answers otherwise on purpose, the case says so (deviates)
// and asserts ctxkit's answer instead; docs/ctxvault.md lists them.
func TestCtxVaultTestAPI(t *testing.T) {
	type check func(t *testing.T, m map[string]any, dir string)
	type tcase struct {
		name     string // CtxVault's test
		method   string
		path     string
		params   url.Values
		body     func(dir string) any
		status   int
		check    check
		deviates string // why ctxkit differs, when it does
	}
	has := func(keys ...string) check {
		return func(t *testing.T, m map[string]any, _ string) {
			for _, k := range keys {
				if _, ok := m[k]; !ok {
					t.Errorf("no %q in %v", k, m)
				}
			}
		}
	}
	isList := func(key string) check {
		return func(t *testing.T, m map[string]any, _ string) {
			if _, ok := m[key].([]any); !ok {
				t.Errorf("%q is not a list: %v", key, m)
			}
		}
	}
	all := func(cs ...check) check {
		return func(t *testing.T, m map[string]any, dir string) {
			for _, c := range cs {
				c(t, m, dir)
			}
		}
	}
	body := func(b map[string]any) func(string) any { return func(string) any { return b } }
	docs := func(dir string) string { return filepath.Join(dir, "docs") }
	writeSkill := map[string]any{"vault_name": "test_skill_vault", "skill_name": "Deploy Service", "description": "How to deploy",
		"instructions": "Run docker build.", "overwrite": true}
	cases := []tcase{
		{name: "test_index_success", method: "PUT", path: "/index",
			body:   func(dir string) any { return map[string]any{"vault_name": "test_vault", "file_path": docs(dir)} },
			status: 200, check: has("indexed_files", "skipped_files")},
		{name: "test_index_missing_file_path", method: "PUT", path: "/index", body: body(map[string]any{"vault_name": "test_vault"}),
			status: 200, check: isList("indexed_files")},
		{name: "test_query_success", method: "POST", path: "/query", body: body(map[string]any{"vault_name": "test_vault", "query": "Content of file"}),
			status: 200, check: func(t *testing.T, m map[string]any, _ string) {
				if r, _ := m["results"].([]any); len(r) == 0 {
					t.Errorf("no results: %v", m)
				}
			}},
		{name: "test_query_empty_string", method: "POST", path: "/query", body: body(map[string]any{"vault_name": "test_vault", "query": ""}),
			status: 400, check: func(t *testing.T, m map[string]any, _ string) {
				if d, _ := m["detail"].(string); !strings.Contains(d, "Query text cannot be empty.") {
					t.Errorf("detail %v", m["detail"])
				}
			}},
		{name: "test_query_no_results", method: "POST", path: "/query", body: body(map[string]any{"vault_name": "test_vault", "query": "nonexistent"}), status: 404},
		{name: "test_query_on_skill_vault_returns_400", method: "POST", path: "/query", body: body(map[string]any{"vault_name": "test_skill_vault", "query": "something"}), status: 400},
		{name: "test_delete_success", method: "DELETE", path: "/delete",
			params: nil, body: nil, status: 200, check: all(has("deleted_files", "skipped_files"))},
		{name: "test_delete_missing_param", method: "DELETE", path: "/delete", params: vp("test_vault"), status: 400,
			deviates: "CtxVault answers 200 and empties the vault; ctxkit does not empty a vault over HTTP"},
		{name: "test_reindex_success", method: "PUT", path: "/reindex",
			body:   func(dir string) any { return map[string]any{"vault_name": "test_vault", "file_path": docs(dir)} },
			status: 200, check: has("reindexed_files")},
		{name: "test_reindex_missing_field", method: "PUT", path: "/reindex", body: body(map[string]any{"vault_name": "test_vault"}), status: 200},
		{name: "test_list_vaults", method: "GET", path: "/vaults", status: 200, check: isList("vaults")},
		{name: "test_list_vaults_contains_both_types", method: "GET", path: "/vaults", status: 200, check: func(t *testing.T, m map[string]any, _ string) {
			types := map[any]bool{}
			for _, v := range m["vaults"].([]any) {
				types[v.(map[string]any)["type"]] = true
			}
			if !types["semantic"] || !types["skill"] {
				t.Errorf("types %v", types)
			}
		}},
		{name: "test_list_docs_success", method: "GET", path: "/docs", params: vp("test_vault"), status: 200, check: has("vault_name", "documents")},
		{name: "test_list_docs_on_skill_vault_returns_400", method: "GET", path: "/docs", params: vp("test_skill_vault"), status: 400},
		{name: "test_doc_content_success", method: "GET", path: "/docs/" + vault.DocID("docs/file1.txt") + "/content", params: vp("test_vault"), status: 200,
			check: func(t *testing.T, m map[string]any, _ string) {
				d := m["document"].(map[string]any)
				if m["vault_name"] != "test_vault" || d["doc_id"] != vault.DocID("docs/file1.txt") || d["content"] != "Content of file 1" || d["reconstructed_text_hash"] == "" {
					t.Errorf("content %v", m)
				}
				if d["warning"] != nil {
					t.Errorf("warning %v", d["warning"])
				}
			},
			deviates: "CtxVault rebuilds the text from chunks and warns so; ctxkit reads the file: reconstructed false, warning null"},
		{name: "test_doc_content_not_found", method: "GET", path: "/docs/missing/content", params: vp("test_vault"), status: 404},
		{name: "test_doc_content_on_skill_vault_returns_400", method: "GET", path: "/docs/1/content", params: vp("test_skill_vault"), status: 400},
		{name: "test_list_skills_success", method: "GET", path: "/skills", params: vp("test_skill_vault"), status: 200,
			check: all(has("vault_name", "skills"), isList("skills"))},
		{name: "test_list_skills_on_semantic_vault_returns_400", method: "GET", path: "/skills", params: vp("test_vault"), status: 400},
		{name: "test_read_skill_success", method: "GET", path: "/skill", params: vp("test_skill_vault", "skill_name", "Write Tests"), status: 200,
			check: func(t *testing.T, m map[string]any, _ string) {
				s := m["skill"].(map[string]any)
				if s["name"] != "Write Tests" || !strings.Contains(s["instructions"].(string), "pytest") {
					t.Errorf("skill %v", s)
				}
			}},
		{name: "test_read_skill_not_found_returns_500", method: "GET", path: "/skill", params: vp("test_skill_vault", "skill_name", "Nonexistent"), status: 404,
			deviates: "CtxVault answers 500 for a skill that is not there; ctxkit 404"},
		{name: "test_read_skill_on_semantic_vault_returns_400", method: "GET", path: "/skill", params: vp("test_vault", "skill_name", "anything"), status: 400},
		{name: "test_write_doc_success", method: "POST", path: "/docs/write",
			body:   body(map[string]any{"vault_name": "test_vault", "file_path": "test.md", "content": "Hello world", "overwrite": true}),
			status: 200, check: func(t *testing.T, m map[string]any, dir string) {
				if m["file_path"] != "test.md" {
					t.Errorf("file_path %v", m["file_path"])
				}
				if _, err := os.Stat(filepath.Join(dir, "test.md")); err != nil {
					t.Error(err)
				}
			}},
		{name: "test_write_doc_no_overwrite_conflict", method: "POST", path: "/docs/write",
			body:   body(map[string]any{"vault_name": "test_vault", "file_path": "dup.md", "content": "second", "overwrite": false}),
			status: 409},
		{name: "test_write_doc_on_skill_vault_returns_400", method: "POST", path: "/docs/write",
			body:   body(map[string]any{"vault_name": "test_skill_vault", "file_path": "test.md", "content": "hello", "overwrite": true}),
			status: 400},
		{name: "test_write_skill_success", method: "POST", path: "/skills/write", body: body(writeSkill), status: 200,
			check: func(t *testing.T, m map[string]any, dir string) {
				f, ok := m["filename"].(string)
				if !ok {
					t.Fatalf("no filename: %v", m)
				}
				// The file is in the skill vault, named by filename.
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "test_skill_vault", filepath.FromSlash(f))); err != nil {
					t.Error(err)
				}
			}},
		{name: "test_write_skill_no_overwrite_conflict", method: "POST", path: "/skills/write",
			body: func(string) any {
				b := map[string]any{}
				for k, v := range writeSkill {
					b[k] = v
				}
				b["overwrite"] = false
				return b
			}, status: 409},
		{name: "test_write_skill_on_semantic_vault_returns_400", method: "POST", path: "/skills/write",
			body: body(map[string]any{"vault_name": "test_vault", "skill_name": "My Skill", "description": "desc", "instructions": "do stuff", "overwrite": true}), status: 400},
	}
	for _, mode := range []CtxVaultAuth{CtxVaultToken, CtxVaultHeader} {
		for _, tc := range cases {
			t.Run(mode.String()+"/"+tc.name, func(t *testing.T) {
				// The fixtures, fresh for each test as CtxVault's are.
				fs := newCVServer(t, mode)
				fs.v.Vault(t, vault.CreateVaultRequest{Name: "test_vault", Scope: vault.Global})
				fs.v.Vault(t, vault.CreateVaultRequest{Name: "test_skill_vault", Type: vault.Skill, Scope: vault.Global})
				dir := filepath.Join(fs.v.Home, "vaults", "test_vault")
				if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
					t.Fatal(err)
				}
				for i := 1; i <= 2; i++ {
					if err := os.WriteFile(filepath.Join(dir, "docs", fmt.Sprintf("file%d.txt", i)), fmt.Appendf(nil, "Content of file %d", i), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				c := fs.client("")
				c.t = t
				c.ok("PUT", "/index", nil, map[string]any{"vault_name": "test_vault"})
				c.ok("POST", "/skills/write", nil, map[string]any{"vault_name": "test_skill_vault", "skill_name": "Write Tests",
					"description": "How to write unit tests", "instructions": "Always use pytest."})
				// What the test itself sent first.
				switch tc.name {
				case "test_write_doc_no_overwrite_conflict":
					c.ok("POST", "/docs/write", nil, map[string]any{"vault_name": "test_vault", "file_path": "dup.md", "content": "first", "overwrite": true})
				case "test_write_skill_no_overwrite_conflict":
					c.ok("POST", "/skills/write", nil, writeSkill)
				}
				params := tc.params
				if tc.name == "test_delete_success" {
					params = vp("test_vault", "file_path", docs(dir))
				}
				var b any
				if tc.body != nil {
					b = tc.body(dir)
				}
				a := c.send(tc.method, tc.path, params, b)
				if a.status != tc.status {
					t.Fatalf("status %d, want %d (%s): %s", a.status, tc.status, tc.deviates, a.body)
				}
				if tc.check != nil {
					tc.check(t, a.obj(t), dir)
				}
			})
		}
	}
}
