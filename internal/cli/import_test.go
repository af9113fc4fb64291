package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ctxvaultProject writes a CtxVault project's .ctxvault in project: a
// semantic vault, a restricted skill vault and an episodic vault not
// written to yet (CtxVault makes its episodes.db on the first write).
func ctxvaultProject(t *testing.T, project string, extra map[string]any) {
	t.Helper()
	vaults := map[string]any{
		"notes":  map[string]any{"type": "semantic", "vault_path": ".ctxvault/vaults/notes", "db_path": ".ctxvault/vaults/notes/chroma", "restricted": false, "allowed_agents": []string{}},
		"howto":  map[string]any{"type": "skill", "vault_path": ".ctxvault/vaults/howto", "db_path": nil, "restricted": true, "allowed_agents": []string{"bob"}},
		"memory": map[string]any{"type": "episodic", "vault_path": ".ctxvault/vaults/memory", "db_path": ".ctxvault/vaults/memory/episodes.db", "restricted": false, "allowed_agents": []string{}},
	}
	for k, v := range extra {
		vaults[k] = v
	}
	b, err := json.Marshal(map[string]any{"vaults": vaults})
	if err != nil {
		t.Fatal(err)
	}
	for path, text := range map[string]string{
		".ctxvault/config.json":                               string(b),
		".ctxvault/vaults/notes/costs.md":                     "# Cloud costs\n\nThe cloud bill rose by forty percent.\n",
		".ctxvault/vaults/howto/weekly-engineering-update.md": "---\nname: Weekly Engineering Update\ndescription: Write the weekly update.\n---\nCollect, then summarise.\n",
		".ctxvault/vaults/memory/.keep":                       "",
	} {
		p := filepath.Join(project, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImportCtxVault(t *testing.T) {
	_, project := vaultEnv(t)
	ctxvaultProject(t, project, nil)
	t.Chdir(filepath.Join(project, "sub")) // found walking up

	out := mustRun(t, "import", "ctxvault", "--dry-run")
	for _, want := range []string{"dry run: nothing is written", `would create local vault "notes" (semantic`, "1 document\n", `would create local vault "howto"`, "1 skill\n",
		"agent bob does not exist yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run: no %q in\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(project, ".ctxkit")); !os.IsNotExist(err) {
		t.Errorf("a dry run made .ctxkit: %v", err)
	}

	out = mustRun(t, "import", "ctxvault")
	for _, want := range []string{`create local vault "notes"`, "folder (documents in place): " + filepath.Join(project, ".ctxvault", "vaults", "notes"),
		"indexed 1 file (1 chunk), ", "agents: bob", "3 of 3 vaults imported"} {
		if !strings.Contains(out, want) {
			t.Errorf("import: no %q in\n%s", want, out)
		}
	}
	if out := mustRun(t, "vault", "skill", "howto", "Weekly Engineering Update"); !strings.Contains(out, "Collect, then summarise.") {
		t.Errorf("the skill by its name: %s", out)
	}
	if out := mustRun(t, "vault", "query", "notes", "cloud bill"); !strings.Contains(out, "costs.md") {
		t.Errorf("query: %s", out)
	}
	// From elsewhere in the project, the vaults are the project's.
	t.Chdir(project)
	if out := mustRun(t, "vault", "list"); !strings.Contains(out, "memory") {
		t.Errorf("list: %s", out)
	}

	// Again: nothing new.
	code, out, errOut := ctxkit(t, "import", "ctxvault", "--json")
	var rep struct {
		Vaults []struct {
			Vault, Action string
			Docs          int `json:"docs"`
			DocsPresent   int `json:"docs_present"`
		} `json:"vaults"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Vaults) != 3 {
		t.Fatalf("again: %d %s %s", code, out, errOut)
	}
	for _, v := range rep.Vaults {
		if v.Action != "update" {
			t.Errorf("again: %+v", v)
		}
	}
}

// A vault that cannot be imported makes the exit status 1; the others are
// imported.
func TestImportCtxVaultFailure(t *testing.T) {
	_, project := vaultEnv(t)
	ctxvaultProject(t, project, map[string]any{"gone": map[string]any{"type": "semantic", "vault_path": ".ctxvault/vaults/gone"}})
	code, out, _ := ctxkit(t, "import", "ctxvault", project)
	if code != 1 || !strings.Contains(out, `failed local vault "gone"`) || !strings.Contains(out, "3 of 4 vaults imported") {
		t.Errorf("%d\n%s", code, out)
	}
	empty := t.TempDir()
	code, _, errOut := ctxkit(t, "import", "ctxvault", empty)
	if code != 1 || !strings.Contains(errOut, "no CtxVault data") {
		t.Errorf("no data: %d %s", code, errOut)
	}
}
