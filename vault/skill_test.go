package vault

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSkill(t *testing.T) {
	for _, tc := range []struct {
		name, text, def string
		want            string // the skill's name, or the error's text
		wantErr         bool
	}{
		{name: "full", text: "---\nname: pdf-forms\ndescription: Fill PDF forms. Use when a form must be filled.\nlicense: MIT\nallowed-tools: Read Bash\nmetadata:\n  version: \"1\"\n---\n\n# Steps\n\n1. Open it.\n", want: "pdf-forms"},
		{name: "name from the file", text: "---\ndescription: Deploy the site.\n---\nRun make deploy.\n", def: "deploy", want: "deploy"},
		{name: "CRLF and BOM", text: "\ufeff---\r\nname: crlf\r\ndescription: d\r\n---\r\nbody\r\n", want: "crlf"},
		{name: "no frontmatter", text: "# Just markdown\n", wantErr: true, want: "no frontmatter"},
		{name: "unclosed", text: "---\nname: x\ndescription: y\n", wantErr: true, want: "no closing"},
		{name: "empty frontmatter", text: "---\n---\nbody\n", def: "", wantErr: true, want: "no name"},
		{name: "bad name", text: "---\nname: Bad_Name\ndescription: d\n---\n", wantErr: true, want: "lowercase letters"},
		{name: "double hyphen", text: "---\nname: a--b\ndescription: d\n---\n", wantErr: true, want: "single hyphens"},
		{name: "long name", text: "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\n", wantErr: true, want: "longer than 64"},
		{name: "no description", text: "---\nname: x\n---\n", wantErr: true, want: "no description"},
		{name: "long description", text: "---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", wantErr: true, want: "longer than 1024"},
		{name: "bad YAML", text: "---\nname: [x\n---\n", wantErr: true, want: "frontmatter"},
		{name: "tools as a list", text: "---\nname: t\ndescription: d\nallowed-tools: [Read, Write]\n---\n", want: "t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSkill([]byte(tc.text), tc.def)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || s.Name != tc.want {
				t.Fatalf("%+v %v, want name %q", s, err, tc.want)
			}
		})
	}
	s, _ := ParseSkill([]byte("---\nname: pdf-forms\ndescription: Fill PDF forms.\nallowed-tools: Read Bash\nmetadata:\n  version: \"1\"\n---\n\n# Steps\n"), "")
	if len(s.AllowedTools) != 2 || s.Metadata["version"] != "1" || s.Instructions != "# Steps" {
		t.Errorf("fields: %+v", s)
	}
}

func FuzzParseSkill(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: b\n---\nbody"), "a")
	f.Add([]byte("---\n---\n"), "")
	f.Add([]byte("---\nname: &a [*a]\n---\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, def string) {
		s, err := ParseSkill(data, def)
		if err == nil && (s.Name == "" || s.Description == "" || !skillName.MatchString(s.Name)) {
			t.Fatalf("accepted an invalid skill: %+v", s)
		}
	})
}

func TestSkillVault(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	dir := e.vault(t, CreateVaultRequest{Name: "howto", Type: Skill}).Path
	for name, text := range map[string]string{
		"deploy.md":         "---\ndescription: Deploy the site.\n---\nRun make deploy.\n",
		"release/SKILL.md":  "---\nname: release\ndescription: Cut a release.\n---\nTag, build, publish.\n",
		"dup.md":            "---\nname: deploy\ndescription: Another deploy.\n---\nx\n",
		"broken.md":         "no frontmatter here\n",
		"wrongdir/SKILL.md": "---\nname: other\ndescription: d\n---\nx\n",
		"notes/readme.txt":  "not a skill",
		".hidden/SKILL.md":  "---\nname: hidden\ndescription: d\n---\nx\n",
	} {
		writeFile(t, dir, name, text)
	}
	rep, err := e.svc.Skills(ctx, Owner(), "howto")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Skills {
		names = append(names, s.Name+"@"+s.Path)
		if s.Size == 0 || s.Modified.IsZero() {
			t.Errorf("skill %s without its file's size and time: %+v", s.Name, s)
		}
	}
	if strings.Join(names, " ") != "deploy@deploy.md release@release/SKILL.md" {
		t.Errorf("skills: %v", names)
	}
	problems := map[string]string{}
	for _, p := range rep.Problems {
		problems[p.Path] = p.Error
	}
	if len(problems) != 3 || !strings.Contains(problems["dup.md"], "already defined in deploy.md") ||
		!strings.Contains(problems["broken.md"], "no frontmatter") || !strings.Contains(problems["wrongdir/SKILL.md"], "folder must be named after the skill") {
		t.Errorf("problems: %v", rep.Problems)
	}
	s, err := e.svc.Skill(ctx, Owner(), "howto", "Release")
	if err != nil || s.Instructions != "Tag, build, publish." {
		t.Errorf("skill: %+v %v", s, err)
	}
	_, err = e.svc.Skill(ctx, Owner(), "howto", "nope")
	wantErr(t, "missing skill", err, ErrNotFound)
	w, err := e.svc.WriteSkill(ctx, Owner(), "howto", "triage", WriteSkillRequest{Description: "Sort new issues.", Instructions: "Label, then assign."})
	if err != nil || w.Path != "triage/SKILL.md" || w.Instructions != "Label, then assign." {
		t.Fatalf("write-skill: %+v %v", w, err)
	}
	_, err = e.svc.WriteSkill(ctx, Owner(), "howto", "deploy", WriteSkillRequest{Description: "d", Instructions: "x"})
	wantErr(t, "write over an existing skill", err, ErrExists)
	for _, bad := range []string{"!!!", ".hidden", "../x", `a\b`, strings.Repeat("a", 65), strings.Repeat("Ab ", 30)} {
		_, err := e.svc.WriteSkill(ctx, Owner(), "howto", bad, WriteSkillRequest{Description: "d", Instructions: "x"})
		wantErr(t, "skill name "+bad, err, ErrInvalid)
	}
	if _, err := e.svc.WriteSkill(ctx, Owner(), "howto", "triage", WriteSkillRequest{Description: "Sort issues faster.", Instructions: "Label.", Overwrite: true}); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	// A read-only agent reads skills and writes none.
	e.agent(t, "reader")
	e.attach(t, "howto", "reader", true)
	reader, _ := e.svc.ActAs(ctx, Owner(), "reader")
	if _, err := e.svc.Skill(ctx, reader, "howto", "triage"); err != nil {
		t.Errorf("a reader reads a skill: %v", err)
	}
	_, err = e.svc.WriteSkill(ctx, reader, "howto", "other", WriteSkillRequest{Description: "d", Instructions: "x"})
	wantErr(t, "a reader writes a skill", err, ErrForbidden)
}

// TestWriteSkillRefusesBeforeWriting: a skill over the size limit, and one
// whose file exists but does not parse, are refused without a byte
// written; a bad description is blamed on the description. Before, the
// oversized skill was written and then failed as an internal error, and an
// unparsable one was overwritten without overwrite.
func TestWriteSkillRefusesBeforeWriting(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	dir := e.vault(t, CreateVaultRequest{Name: "howto", Type: Skill}).Path
	_, err := e.svc.WriteSkill(ctx, Owner(), "howto", "huge", WriteSkillRequest{Description: "d", Instructions: strings.Repeat("x", maxSkillBytes)})
	wantErr(t, "an oversized skill", err, ErrInvalid)
	if _, statErr := os.Stat(filepath.Join(dir, "huge")); statErr == nil {
		t.Error("the oversized skill was written")
	}
	writeFile(t, dir, "broken/SKILL.md", "no frontmatter\n")
	_, err = e.svc.WriteSkill(ctx, Owner(), "howto", "broken", WriteSkillRequest{Description: "d", Instructions: "x"})
	wantErr(t, "over an unparsable skill", err, ErrExists)
	if b, _ := os.ReadFile(filepath.Join(dir, "broken", "SKILL.md")); string(b) != "no frontmatter\n" {
		t.Errorf("the unparsable skill was overwritten: %q", b)
	}
	_, err = e.svc.WriteSkill(ctx, Owner(), "howto", "fine", WriteSkillRequest{Description: strings.Repeat("d", 2000), Instructions: "x"})
	if d := Describe(err); d.Class != ClassInvalid || d.Field != "description" {
		t.Errorf("a long description: %+v", d)
	}
}

// A skill named as people write it is stored under its slug, keeps the
// name as written, and is found by either, case-insensitively.
func TestSkillDisplayName(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.vault(t, CreateVaultRequest{Name: "howto", Type: Skill})
	w, err := e.svc.WriteSkill(ctx, Owner(), "howto", "  Weekly Engineering Update ", WriteSkillRequest{Description: "Write the weekly update.", Instructions: "Collect, then summarise."})
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "weekly-engineering-update" || w.DisplayName != "Weekly Engineering Update" || w.Path != "weekly-engineering-update/SKILL.md" ||
		w.Metadata != nil {
		t.Fatalf("written: %+v", w)
	}
	for _, name := range []string{"weekly-engineering-update", "Weekly Engineering Update", "weekly engineering update", "WEEKLY-ENGINEERING-UPDATE"} {
		sk, err := e.svc.Skill(ctx, Owner(), "howto", name)
		if err != nil || sk.Name != "weekly-engineering-update" || sk.Instructions != "Collect, then summarise." {
			t.Errorf("read as %q: %+v %v", name, sk, err)
		}
	}
	_, err = e.svc.WriteSkill(ctx, Owner(), "howto", "weekly engineering update", WriteSkillRequest{Description: "d", Instructions: "x"})
	wantErr(t, "the same slug again", err, ErrExists)
	data, err := os.ReadFile(filepath.Join(e.root, ".ctxkit", "vaults", "howto", w.Path))
	if err != nil || !strings.Contains(string(data), "metadata:\n    display-name: Weekly Engineering Update\n") {
		t.Errorf("the file keeps the display name in its metadata: %q %v", data, err)
	}
	// A valid name keeps no display name.
	if w, err := e.svc.WriteSkill(ctx, Owner(), "howto", "triage", WriteSkillRequest{Description: "d", Instructions: "x"}); err != nil || w.DisplayName != "" || w.Metadata != nil {
		t.Errorf("a valid name: %+v %v", w, err)
	}
}

func TestSkillSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Weekly Engineering Update": "weekly-engineering-update",
		"deploy":                    "deploy",
		"  Café  Notes (v2) ":       "cafe-notes-v2",
		"Über_straße--plan":         "uber-stra-e-plan",
		"--x--":                     "x",
		"!!!":                       "",
		"日本語":                       "",
	} {
		if got := SkillSlug(in); got != want {
			t.Errorf("SkillSlug(%q) = %q, want %q", in, got, want)
		}
	}
}
