package fileregistry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/fileregistry"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// project is a ctxkit home (not created yet) and a project root.
type project struct {
	home, root string
	r          *fileregistry.Registry
}

func newProject(t *testing.T) project {
	t.Helper()
	dir := t.TempDir()
	p := project{home: filepath.Join(dir, "home"), root: filepath.Join(dir, "proj")}
	if err := os.MkdirAll(p.root, 0o755); err != nil {
		t.Fatal(err)
	}
	p.r = fileregistry.New(p.home, p.root)
	return p
}

// vault records a vault in dir (created, private, as ctxkit creates the
// folders of global vaults) and returns it.
func (p project) vault(t *testing.T, name, scope, dir string) store.VaultRecord {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	v, err := p.r.CreateVault(t.Context(), store.VaultRecord{Name: name, Type: "semantic", Scope: scope, Dir: dir}, nil)
	if err != nil {
		t.Fatalf("CreateVault(%s %s): %v", scope, name, err)
	}
	return v
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readJSON parses the JSON file at path.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return m
}

// entryOf returns the entry of a vault in a parsed config.
func entryOf(t *testing.T, config map[string]any, name string) map[string]any {
	t.Helper()
	vaults, _ := config["vaults"].(map[string]any)
	e, ok := vaults[name].(map[string]any)
	if !ok {
		t.Fatalf("no vault %q in %v", name, config)
	}
	return e
}

func TestConformance(t *testing.T) {
	storetest.RunRegistry(t, func(t *testing.T) store.Registry { return newProject(t).r })
}

// TestUnknownFieldsKept checks that every edit keeps the fields of the
// config files it does not know, at the top and in each vault's entry.
func TestUnknownFieldsKept(t *testing.T) {
	p := newProject(t)
	ctx := t.Context()
	local, global := p.r.ConfigPath(store.ScopeLocal), p.r.ConfigPath(store.ScopeGlobal)
	writeFile(t, local, `{"comment": "mine", "version": 3, "vaults": {
		"kept": {"id": "vkept", "type": "episodic", "path": "k", "restricted": false, "color": "blue", "nested": {"a": [1, 2.5, null]}}}}`)
	writeFile(t, global, `{"theme": {"dark": true}, "vaults": {}}`)
	check := func(when string) {
		t.Helper()
		c := readJSON(t, local)
		want := map[string]any{"color": "blue", "nested": map[string]any{"a": []any{1.0, 2.5, nil}}, "type": "episodic", "path": "k", "id": "vkept"}
		e := entryOf(t, c, "kept")
		for k, v := range want {
			if !reflect.DeepEqual(e[k], v) {
				t.Errorf("%s: kept.%s = %#v, want %#v", when, k, e[k], v)
			}
		}
		if c["comment"] != "mine" || c["version"] != 3.0 {
			t.Errorf("%s: local config's top level = %v", when, c)
		}
		if g := readJSON(t, global); !reflect.DeepEqual(g["theme"], map[string]any{"dark": true}) {
			t.Errorf("%s: global config's top level = %v", when, g)
		}
	}
	dir := filepath.Join(p.root, "new")
	n := p.vault(t, "new", store.ScopeLocal, dir)
	check("after a local create")
	p.vault(t, "g", store.ScopeGlobal, filepath.Join(p.home, "vaults", "g"))
	check("after a global create")
	if _, err := p.r.UpdateVault(ctx, "vkept", func(v *store.VaultRecord) error {
		v.Restricted, v.Grants = true, map[string]store.Grant{"bot": {ReadOnly: true}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("after an update")
	e := entryOf(t, readJSON(t, local), "kept")
	if e["restricted"] != true || !reflect.DeepEqual(e["agents"], map[string]any{"bot": map[string]any{"read_only": true}}) {
		t.Errorf("the update is not in the file: %v", e)
	}
	if _, err := p.r.DeleteVault(ctx, n.ID); err != nil {
		t.Fatal(err)
	}
	check("after a delete")
	v, err := p.r.Vault(ctx, "vkept")
	if err != nil || v.Type != "episodic" || v.Dir != filepath.Join(p.root, "k") || !v.Restricted {
		t.Errorf("Vault(vkept) = %+v, %v", v, err)
	}
}

// tree describes the files under dir, lock files aside (taking a lock
// creates its file), to tell whether anything was written.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == dir {
			return nil
		}
		if err != nil || strings.HasSuffix(path, ".lock") {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b := []byte{}
		if !d.IsDir() {
			if b, err = os.ReadFile(path); err != nil {
				return err
			}
		}
		out[path] = fmt.Sprintf("%v %q", fi.Mode(), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCorruptFiles checks that a file that does not parse is refused with
// store.ErrCorrupt naming it, with the line and column when the JSON
// itself is broken, and that nothing is written.
func TestCorruptFiles(t *testing.T) {
	type op struct {
		name string
		call func(p project, v store.VaultRecord) error
	}
	create := func(scope string) op {
		return op{"create " + scope, func(p project, _ store.VaultRecord) error {
			_, err := p.r.CreateVault(t.Context(), store.VaultRecord{Name: "later", Type: "semantic", Scope: scope, Dir: filepath.Join(p.root, "later")}, nil)
			return err
		}}
	}
	registryOps := []op{
		{"Vaults", func(p project, _ store.VaultRecord) error { _, err := p.r.Vaults(t.Context()); return err }},
		{"Vault", func(p project, v store.VaultRecord) error { _, err := p.r.Vault(t.Context(), v.ID); return err }},
		create(store.ScopeLocal), create(store.ScopeGlobal),
		{"UpdateVault", func(p project, v store.VaultRecord) error {
			_, err := p.r.UpdateVault(t.Context(), v.ID, func(r *store.VaultRecord) error { r.Restricted = true; return nil })
			return err
		}},
		{"DeleteVault", func(p project, v store.VaultRecord) error { _, err := p.r.DeleteVault(t.Context(), v.ID); return err }},
	}
	agentOps := []op{
		{"CreateAgent", func(p project, _ store.VaultRecord) error {
			return p.r.CreateAgent(t.Context(), store.AgentRecord{Name: "new", TokenHash: "h"})
		}},
		{"Agents", func(p project, _ store.VaultRecord) error { _, err := p.r.Agents(t.Context()); return err }},
		{"AgentByToken", func(p project, _ store.VaultRecord) error { _, err := p.r.AgentByToken(t.Context(), "h"); return err }},
		{"TouchAgent", func(p project, _ store.VaultRecord) error { return p.r.TouchAgent(t.Context(), "bot", time.Now()) }},
		{"RevokeAgent", func(p project, _ store.VaultRecord) error { return p.r.RevokeAgent(t.Context(), "bot", time.Now()) }},
	}
	metaOps := []op{
		{"DocMeta", func(p project, v store.VaultRecord) error { _, err := p.r.DocMeta(t.Context(), v.ID); return err }},
		{"SetDocMeta", func(p project, v store.VaultRecord) error {
			return p.r.SetDocMeta(t.Context(), v.ID, map[string]map[string]string{"a.md": {"k": "v"}})
		}},
	}
	pinOps := []op{{"Pin", func(p project, v store.VaultRecord) error { _, _, err := p.r.Pin(t.Context(), v.ID); return err }}}

	for _, tc := range []struct {
		name string
		file func(p project, v store.VaultRecord) string
		text string
		want string // in the message, after the file's path
		ops  []op
	}{
		{"local syntax", localConfig, "{\n  \"vaults\": {\n    \"x\": {,}\n  }\n}\n", ":3:11: ", registryOps},
		{"global syntax", globalConfig, "{\"vaults\": {}} trailing\n", ":1:16: ", registryOps},
		{"local truncated", localConfig, "{\"vaults\": {\"x\": {\"path\": \"x\"", ":1:29: unexpected end of JSON input", registryOps},
		{"top level not an object", localConfig, "\n\n  [1, 2]", ":3:", registryOps},
		{"vaults not an object", globalConfig, `{"vaults": []}`, `: "vaults" must be an object`, registryOps},
		{"a path not a string", localConfig, `{"vaults": {"x": {"path": 3}}}`, `: vault "x": `, registryOps},
		{"no path", localConfig, `{"vaults": {"x": {"type": "semantic"}}}`, `: vault "x" has no path`, registryOps},
		{"agents syntax", agentsFile, "{\"agents\": {\n\"bot\": {\"sha256\": \"h\",}}}", ":2:23: ", agentOps},
		{"agents wrong type", agentsFile, `{"agents": {"bot": {"sha256": 5}}}`, ":1:", agentOps},
		{"documents syntax", docsFile, `{"a.md": {"k": v}}`, ":1:16: ", metaOps},
		{"pin syntax", pinFile, `{"model": "m", "dim": }`, ":1:23: ", pinOps},
	} {
		for _, o := range tc.ops {
			t.Run(tc.name+"/"+o.name, func(t *testing.T) {
				p := newProject(t)
				v := p.vault(t, "team", store.ScopeLocal, filepath.Join(p.root, "team"))
				if err := p.r.CreateAgent(t.Context(), store.AgentRecord{Name: "bot", TokenHash: "h0"}); err != nil {
					t.Fatal(err)
				}
				if err := p.r.AppendAudit(t.Context(), v.ID, store.AuditEvent{Time: time.Now(), Agent: "owner", Action: "create", Outcome: "ok"}); err != nil {
					t.Fatal(err)
				}
				path := tc.file(p, v)
				writeFile(t, path, tc.text)
				before := [2]map[string]string{tree(t, p.home), tree(t, p.root)}
				err := o.call(p, v)
				if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(fmt.Sprint(err), path+tc.want) {
					t.Errorf("%v\nwant store.ErrCorrupt naming %s%s", err, path, tc.want)
				}
				if after := [2]map[string]string{tree(t, p.home), tree(t, p.root)}; !reflect.DeepEqual(after, before) {
					t.Errorf("files changed after a refusal:\n%v\nwere\n%v", after, before)
				}
			})
		}
	}
}

func localConfig(p project, _ store.VaultRecord) string  { return p.r.ConfigPath(store.ScopeLocal) }
func globalConfig(p project, _ store.VaultRecord) string { return p.r.ConfigPath(store.ScopeGlobal) }
func agentsFile(p project, _ store.VaultRecord) string   { return filepath.Join(p.home, "agents.json") }
func docsFile(_ project, v store.VaultRecord) string {
	return filepath.Join(v.Dir, fileregistry.DataDirName, "documents.json")
}
func pinFile(_ project, v store.VaultRecord) string {
	return filepath.Join(v.Dir, fileregistry.DataDirName, "embedding.json")
}

// TestFileModes checks the modes of what the registry writes: what holds
// agents or a vault's data stays private; the local config, meant to be
// committed, is readable. A mode changed by hand is kept.
func TestFileModes(t *testing.T) {
	p := newProject(t)
	ctx := t.Context()
	g := p.vault(t, "g", store.ScopeGlobal, filepath.Join(p.home, "vaults", "g"))
	l := p.vault(t, "l", store.ScopeLocal, filepath.Join(p.root, ".ctxkit", "vaults", "l"))
	if err := p.r.CreateAgent(ctx, store.AgentRecord{Name: "bot", TokenHash: "h"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []store.VaultRecord{g, l} {
		if err := p.r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: time.Now(), Agent: "owner", Action: "create", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
		if err := p.r.SetDocMeta(ctx, v.ID, map[string]map[string]string{"a.md": {"k": "v"}}); err != nil {
			t.Fatal(err)
		}
		if err := p.r.SetPin(ctx, v.ID, &store.Pin{Model: "m", Dim: 2}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]fs.FileMode{
		p.home:                                         0o700 | fs.ModeDir,
		p.r.ConfigPath(store.ScopeGlobal):              0o600,
		p.r.ConfigPath(store.ScopeLocal):               0o644,
		filepath.Join(p.root, ".ctxkit", ".gitignore"): 0o644,
		filepath.Join(p.home, "agents.json"):           0o600,
	}
	for _, v := range []store.VaultRecord{g, l} {
		data := filepath.Join(v.Dir, fileregistry.DataDirName)
		want[data] = 0o700 | fs.ModeDir
		for _, f := range []string{"audit.jsonl", "documents.json", "embedding.json"} {
			want[filepath.Join(data, f)] = 0o600
		}
		want[filepath.Join(data, ".gitignore")] = 0o644
	}
	checkModes := func(when string) {
		t.Helper()
		for _, path := range slices.Sorted(maps.Keys(want)) {
			fi, err := os.Stat(path)
			if err != nil || fi.Mode() != want[path] {
				t.Errorf("%s: %s: mode %v, %v; want %v", when, path, fi.Mode(), err, want[path])
			}
		}
	}
	checkModes("after creating")
	if err := os.Chmod(p.r.ConfigPath(store.ScopeLocal), 0o600); err != nil {
		t.Fatal(err)
	}
	want[p.r.ConfigPath(store.ScopeLocal)] = 0o600
	p.vault(t, "l2", store.ScopeLocal, filepath.Join(p.root, "l2"))
	p.vault(t, "g2", store.ScopeGlobal, filepath.Join(p.home, "vaults", "g2"))
	if err := p.r.TouchAgent(ctx, "bot", time.Now()); err != nil {
		t.Fatal(err)
	}
	checkModes("after editing")
}

// TestStoredPaths checks how vault folders are written: relative to the
// project root (slash-separated) for a local vault inside it, so that
// the config can be committed and the project moved; absolute otherwise.
func TestStoredPaths(t *testing.T) {
	p := newProject(t)
	outside := filepath.Join(t.TempDir(), "elsewhere")
	vaults := []struct {
		name, scope, dir, stored string
	}{
		{"notes", store.ScopeLocal, filepath.Join(p.root, ".ctxkit", "vaults", "notes"), ".ctxkit/vaults/notes"},
		{"docs", store.ScopeLocal, filepath.Join(p.root, "a", "b", "docs"), "a/b/docs"},
		{"far", store.ScopeLocal, outside, outside},
		{"root", store.ScopeLocal, p.root, "."},
		{"g", store.ScopeGlobal, filepath.Join(p.home, "vaults", "g"), filepath.Join(p.home, "vaults", "g")},
	}
	ids := map[string]string{}
	for _, v := range vaults {
		rec := p.vault(t, v.name, v.scope, v.dir)
		ids[v.name] = rec.ID
		if got, err := p.r.Vault(t.Context(), rec.ID); err != nil || got.Dir != v.dir {
			t.Errorf("%s: Dir %q, %v; want %q", v.name, got.Dir, err, v.dir)
		}
		if got := entryOf(t, readJSON(t, p.r.ConfigPath(v.scope)), v.name)["path"]; got != v.stored {
			t.Errorf("%s: stored path %q, want %q", v.name, got, v.stored)
		}
	}

	// Moved, the project's vaults inside it move along and keep their ids.
	moved := filepath.Join(filepath.Dir(p.root), "moved")
	if err := os.Rename(p.root, moved); err != nil {
		t.Fatal(err)
	}
	r := fileregistry.New(p.home, moved)
	for _, v := range vaults {
		want := v.dir
		if rel, err := filepath.Rel(p.root, v.dir); err == nil && filepath.IsLocal(rel) {
			want = filepath.Join(moved, rel)
		}
		if got, err := r.Vault(t.Context(), ids[v.name]); err != nil || got.Dir != want {
			t.Errorf("%s after moving the project: Dir %q, %v; want %q", v.name, got.Dir, err, want)
		}
	}

	// A relative path written by hand in the global config is relative to
	// the ctxkit home.
	writeFile(t, p.r.ConfigPath(store.ScopeGlobal), `{"vaults": {"hand": {"id": "vhand", "path": "vaults/hand"}}}`)
	if got, err := r.Vault(t.Context(), "vhand"); err != nil || got.Dir != filepath.Join(p.home, "vaults", "hand") {
		t.Errorf("a relative global path: Dir %q, %v", got.Dir, err)
	}
}

// TestLegacyIDs checks the vaults recorded before vaults had ids: each
// gets one derived from what identified it, the same for every registry
// of the same files, written into the entry once the entry is updated,
// and kept from then on.
func TestLegacyIDs(t *testing.T) {
	p := newProject(t)
	ctx := t.Context()
	abs := filepath.Join(t.TempDir(), "abs")
	writeFile(t, p.r.ConfigPath(store.ScopeLocal), `{"vaults": {"old": {"type": "semantic", "path": "old"}, "other": {"path": "other"}}}`)
	writeFile(t, p.r.ConfigPath(store.ScopeGlobal), fmt.Sprintf(`{"vaults": {"old": {"type": "skill", "path": %q}}}`, abs))
	for _, dir := range []string{abs, filepath.Join(p.root, "old"), filepath.Join(p.root, "other")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first := mustVaults(t, p.r)
	again := mustVaults(t, fileregistry.New(p.home, p.root))
	ids := map[string]bool{}
	for i, v := range first {
		if v.ID == "" || ids[v.ID] {
			t.Errorf("%s %s: id %q (empty or given twice)", v.Scope, v.Name, v.ID)
		}
		ids[v.ID] = true
		if again[i].ID != v.ID {
			t.Errorf("%s %s: id %q, and %q from another registry of the same files", v.Scope, v.Name, v.ID, again[i].ID)
		}
	}
	old, other := first[0], first[1]
	if old.Name != "old" || old.Scope != store.ScopeLocal || other.Name != "other" {
		t.Fatalf("vaults: %+v", first)
	}

	// The per-vault files work by the derived id.
	if err := p.r.SetDocMeta(ctx, old.ID, map[string]map[string]string{"a.md": {"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.r.AppendAudit(ctx, old.ID, store.AuditEvent{Time: time.Now(), Agent: "owner", Action: "attach", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}

	// Updated, the entry keeps the id it was known by, in the file.
	up, err := p.r.UpdateVault(ctx, old.ID, func(v *store.VaultRecord) error {
		v.Restricted, v.Grants = true, map[string]store.Grant{"bot": {}}
		return nil
	})
	if err != nil || up.ID != old.ID {
		t.Fatalf("UpdateVault = %+v, %v; want id %s", up, err, old.ID)
	}
	if got := entryOf(t, readJSON(t, p.r.ConfigPath(store.ScopeLocal)), "old")["id"]; got != old.ID {
		t.Errorf("the updated entry's id in the file: %v, want %s", got, old.ID)
	}
	if _, ok := entryOf(t, readJSON(t, p.r.ConfigPath(store.ScopeLocal)), "other")["id"]; ok {
		t.Error("an entry that was not updated got an id")
	}
	if m, err := p.r.DocMeta(ctx, old.ID); err != nil || m["a.md"]["k"] != "v" {
		t.Errorf("DocMeta after the update: %v, %v", m, err)
	}
	// Moved, the project keeps the written id.
	moved := filepath.Join(filepath.Dir(p.root), "moved")
	if err := os.Rename(p.root, moved); err != nil {
		t.Fatal(err)
	}
	if got, err := fileregistry.New(p.home, moved).Vault(ctx, old.ID); err != nil || !got.Restricted {
		t.Errorf("Vault(%s) after moving the project: %+v, %v", old.ID, got, err)
	}
	// A legacy entry can be deleted by its derived id.
	r := fileregistry.New(p.home, moved)
	all := mustVaults(t, r)
	if _, err := r.DeleteVault(ctx, all[1].ID); err != nil || all[1].Name != "other" {
		t.Errorf("DeleteVault(%s %s): %v", all[1].Name, all[1].ID, err)
	}
	if got := vaultNames(mustVaults(t, r)); !slices.Equal(got, []string{"local:old", "global:old"}) {
		t.Errorf("after deleting a legacy entry: %v", got)
	}
}

func mustVaults(t *testing.T, r store.Registry) []store.VaultRecord {
	t.Helper()
	vs, err := r.Vaults(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func vaultNames(vs []store.VaultRecord) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Scope+":"+v.Name)
	}
	return out
}

// TestNoProject checks the registries that have no local config of their
// own: no project root, or a root whose .ctxkit is the ctxkit home.
func TestNoProject(t *testing.T) {
	dir := t.TempDir()
	for name, r := range map[string]*fileregistry.Registry{
		"no root":               fileregistry.New(filepath.Join(dir, "home1"), ""),
		"the home's parent dir": fileregistry.New(filepath.Join(dir, ".ctxkit"), dir),
	} {
		t.Run(name, func(t *testing.T) {
			if l, g := r.ConfigPath(store.ScopeLocal), r.ConfigPath(store.ScopeGlobal); l != g {
				t.Errorf("local config %s, global %s; want the global one for both", l, g)
			}
			for _, scope := range []string{store.ScopeLocal, "team"} {
				_, err := r.CreateVault(t.Context(), store.VaultRecord{Name: "v", Type: "semantic", Scope: scope, Dir: filepath.Join(dir, "v")}, nil)
				if !errors.Is(err, store.ErrNoScope) {
					t.Errorf("CreateVault(%s): %v, want ErrNoScope", scope, err)
				}
			}
			if _, err := r.CreateVault(t.Context(), store.VaultRecord{Name: "v", Type: "semantic", Scope: store.ScopeGlobal, Dir: filepath.Join(dir, "v")}, nil); err != nil {
				t.Fatal(err)
			}
			if got := vaultNames(mustVaults(t, r)); !slices.Equal(got, []string{"global:v"}) {
				t.Errorf("Vaults = %v", got)
			}
		})
	}
}

// TestAuditFile checks the audit log's lines: JSON with the time first,
// in UTC with microseconds; a torn last line (a crash mid-write) is
// skipped.
func TestAuditFile(t *testing.T) {
	p := newProject(t)
	ctx := t.Context()
	v := p.vault(t, "v", store.ScopeLocal, filepath.Join(p.root, "v"))
	when := time.Date(2026, 5, 1, 12, 30, 0, 123456789, time.FixedZone("CEST", 2*3600))
	for i := range 3 {
		if err := p.r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: when.Add(time.Duration(i) * time.Second), Agent: "bot", Action: "query", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(v.Dir, fileregistry.DataDirName, "audit.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), b)
	}
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	var key, value any
	if _, err := dec.Token(); err == nil {
		key, _ = dec.Token()
		value, _ = dec.Token()
	}
	if key != "time" || value != "2026-05-01T10:30:00.123456Z" {
		t.Errorf("first line %s: starts with %v: %v, want time: 2026-05-01T10:30:00.123456Z", lines[0], key, value)
	}

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"time":"2026-`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	evs, err := p.r.Audit(ctx, v.ID, 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("Audit after a torn line = %d events, %v; want 3", len(evs), err)
	}
	if !evs[0].Time.Equal(when.Truncate(time.Microsecond)) || evs[0].Time.Location() != time.UTC {
		t.Errorf("first event's time %v, want %v in UTC", evs[0].Time, when.Truncate(time.Microsecond))
	}
	// An event appended after the torn line is on a line of its own.
	if err := p.r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: when, Agent: "bot", Action: "last", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if evs, err := p.r.Audit(ctx, v.ID, 1); err != nil || len(evs) != 1 || evs[0].Action != "last" {
		t.Errorf("Audit after appending past a torn line = %+v, %v", evs, err)
	}
	// A line no ctxkit wrote, of 2 MiB, is skipped like a torn one (before,
	// it failed the whole log).
	long := `{"time":"2026-05-01T10:30:00Z","action":"` + strings.Repeat("x", 2<<20) + "\"}\n"
	if f, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(long); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := p.r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: when, Agent: "bot", Action: "after", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if evs, err := p.r.Audit(ctx, v.ID, 0); err != nil || len(evs) != 5 || evs[4].Action != "after" {
		t.Errorf("Audit past a 2 MiB line = %d events, %v; want 5, the last one after", len(evs), err)
	}
}

// TestConcurrentCreates creates local and global vaults from many
// goroutines at once: none is lost.
func TestConcurrentCreates(t *testing.T) {
	p := newProject(t)
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		for _, scope := range []string{store.ScopeLocal, store.ScopeGlobal} {
			wg.Go(func() {
				v := store.VaultRecord{Name: fmt.Sprintf("%s%d", scope, i), Type: "semantic", Scope: scope, Dir: filepath.Join(p.root, scope, fmt.Sprint(i))}
				if _, err := p.r.CreateVault(t.Context(), v, nil); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if got := mustVaults(t, p.r); len(got) != 2*n {
		t.Errorf("%d vaults after %d concurrent creates: %v", len(got), 2*n, vaultNames(got))
	}
}

// TestDuplicateIDs checks that two entries with one id (an entry copied
// by hand, within a config or from one to the other) are refused: the
// stores of both vaults would be the same, and an edit of one would go
// to the other.
func TestDuplicateIDs(t *testing.T) {
	for name, tc := range map[string]struct{ local, global string }{
		"one config": {local: `{"vaults": {"a": {"id": "vsame", "path": "a"}, "b": {"id": "vsame", "path": "b"}}}`},
		"two configs": {local: `{"vaults": {"a": {"id": "vsame", "path": "a"}}}`,
			global: `{"vaults": {"b": {"id": "vsame", "path": "/b"}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			p := newProject(t)
			writeFile(t, p.r.ConfigPath(store.ScopeLocal), tc.local)
			if tc.global != "" {
				writeFile(t, p.r.ConfigPath(store.ScopeGlobal), tc.global)
			}
			_, err := p.r.Vaults(t.Context())
			if msg := fmt.Sprint(err); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(msg, `"a"`) || !strings.Contains(msg, `"b"`) ||
				!strings.Contains(msg, "vsame") || !strings.Contains(msg, p.r.ConfigPath(store.ScopeLocal)) {
				t.Errorf("Vaults: %v; want store.ErrCorrupt naming both vaults, the id and the config", err)
			}
			_, err = p.r.UpdateVault(t.Context(), "vsame", func(v *store.VaultRecord) error { v.Restricted = true; return nil })
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("UpdateVault: %v, want store.ErrCorrupt", err)
			}
		})
	}
}

// TestEditsSeenAtOnce checks that a lookup sees every change of a config
// file at once, even one by hand that keeps the file's size.
func TestEditsSeenAtOnce(t *testing.T) {
	p := newProject(t)
	path := p.r.ConfigPath(store.ScopeLocal)
	for i, text := range []string{
		`{"vaults": {"a": {"id": "va", "path": "a", "restricted": false}}}`,
		`{"vaults": {"a": {"id": "va", "path": "b", "restricted": false}}}`,
		`{"vaults": {"a": {"id": "va", "path": "b", "restricted": true }}}`,
		`{"vaults": {"b": {"id": "va", "path": "b", "restricted": true }}}`,
	} {
		writeFile(t, path, text)
		v, err := p.r.Vault(t.Context(), "va")
		var want struct {
			Vaults map[string]struct {
				Path       string
				Restricted bool
			}
		}
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatal(err)
		}
		e, ok := want.Vaults[v.Name]
		if err != nil || !ok || v.Dir != filepath.Join(p.root, e.Path) || v.Restricted != e.Restricted {
			t.Errorf("edit %d: Vault = %+v, %v; want what %s says", i, v, err, text)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err := p.r.Vault(t.Context(), "va")
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Vault after the config was removed: %v, want ErrNotFound", err)
	}
}

// TestDataFolderIsNotFollowed: a vault folder from elsewhere (a clone) whose
// data folder is a link does not get ctxkit's writes sent through it.
func TestDataFolderIsNotFollowed(t *testing.T) {
	p := newProject(t)
	ctx := t.Context()
	dir := filepath.Join(p.root, "v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(dir, fileregistry.DataDirName)); err != nil {
		t.Skip("no symlinks here:", err)
	}
	v := p.vault(t, "v", store.ScopeLocal, dir)
	err := p.r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: time.Now(), Agent: "bot", Action: "query", Outcome: "ok"})
	if !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("AppendAudit through a linked data folder: %v, want store.ErrCorrupt", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the link's target got %d files", len(entries))
	}
}
