package ctxvault

import (
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// A config.json is read or refused, never a panic; every vault it names
// comes out with a type ctxkit has or an error saying why not.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"vaults": {"account-memory": {"type": "episodic", "vault_path": ".ctxvault/vaults/account-memory", "db_path": ".ctxvault/vaults/account-memory/episodes.db", "restricted": false, "allowed_agents": []}}}`))
	f.Add([]byte(`{"active_vault": null}`))
	f.Add([]byte(`{"vaults": {"x": {"type": 3}, "y": []}}`))
	f.Add([]byte(`{"vaults": {"../x": {"vault_path": "/tmp/x", "restricted": true, "allowed_agents": ["a", "a"]}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		for name, e := range c.Vaults {
			v := entry(name, vault.Local, "/project", e)
			switch {
			case v.Err != nil:
			case v.Type != vault.Semantic && v.Type != vault.Skill && v.Type != vault.Episodic:
				t.Fatalf("vault %q of type %q without an error", name, v.Type)
			case vault.ValidName(name) != nil:
				t.Fatalf("vault %q with an invalid name and no error", name)
			case v.Dir == "" || !inside("/project", v.Dir):
				t.Fatalf("local vault %q with folder %q", name, v.Dir)
			}
		}
	})
}

// A skill file is read or refused, never a panic; a skill read keeps a
// name.
func FuzzParseSkillFile(f *testing.F) {
	f.Add([]byte("---\nname: Weekly Engineering Update\ndescription: Write it.\n---\n\nCollect, then summarise.\n"), "weekly-engineering-update")
	f.Add([]byte("---\ndescription: d\n---\n"), "deploy")
	f.Add([]byte("\ufeff---\r\nname: [x\r\n---\r\n"), "")
	f.Add([]byte("# no frontmatter"), "x")
	f.Fuzz(func(t *testing.T, data []byte, stem string) {
		sk, err := ParseSkillFile(data, stem)
		if err == nil && sk.Name == "" && stem != "" {
			t.Fatalf("a skill without its name: %+v", sk)
		}
	})
}

// Rows in any state make records that a store takes, or an error; never a
// panic, and never a record that fails its own check.
func FuzzRecords(f *testing.F) {
	f.Add("2026-03-01T00:00:00+00:00", "2026-07-12T00:00:00+00:00", "2026-03-01T09:00:00+00:00", "2026-08-01T10:00:00.123456+00:00", `{"invalidation_reason": "churned"}`, int64(2), true)
	f.Add("2026-03-01", "", "2026-03-01T09:00:00", "", `{}`, int64(0), false)
	f.Add("2026-03-01", "2026-02-01", "2026-03-01", "2026-03-02", `null`, int64(-1), true)
	f.Fuzz(func(t *testing.T, from, to, recorded, invalidated, meta string, recalls int64, link bool) {
		a := Row{ID: "a", Content: "a", Confidence: 1, Salience: 0.5, ValidFrom: from, ValidTo: to, RecordedAt: recorded,
			InvalidatedAt: invalidated, Metadata: meta, RecallCount: recalls % 1000}
		b := Row{ID: "b", Content: "b", Confidence: 1, Salience: 0.5, ValidFrom: to, RecordedAt: invalidated, Metadata: "{}"}
		rows := []Row{a}
		if link {
			rows[0].SupersededBy = "b"
			rows = append(rows, b)
		}
		recs, _, err := Records(&DB{Rows: rows})
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if err := r.Check(); err != nil {
				t.Fatalf("a record that fails its check: %v", err)
			}
			if p := r.Statement.Supersedes; p != "" && !seen[p] {
				t.Fatalf("%s comes before %s, which it follows", r.Statement.ID, p)
			}
			seen[r.Statement.ID] = true
		}
	})
}
