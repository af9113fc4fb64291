package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/unicode/norm"

	"github.com/ctxkit/ctxkit/store"
)

// SkillFile is the file that holds a skill in the Agent Skills layout (a
// folder named after the skill, with its resources beside it).
const SkillFile = "SKILL.md"

// Limits of the Agent Skills specification.
const (
	maxSkillName        = 64
	maxSkillDescription = 1024
	maxSkillBytes       = 1 << 20
)

// SkillDoc is one procedure of a skill vault: a markdown file whose YAML
// frontmatter names and describes it, followed by its instructions.
type SkillDoc struct {
	// Name is the skill's name under the Agent Skills rules (a slug).
	Name string `json:"name"`
	// DisplayName is the name as people wrote it, when that is not Name
	// ("Weekly Engineering Update" for weekly-engineering-update); the
	// file keeps it in its frontmatter's metadata under DisplayNameKey,
	// which Metadata leaves out.
	DisplayName  string            `json:"display_name,omitempty"`
	Description  string            `json:"description"`
	License      string            `json:"license,omitempty"`
	AllowedTools []string          `json:"allowed_tools,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	// Path is the skill's file inside the vault; Size and Modified are the
	// file's.
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	// Instructions is the body, after the frontmatter (from Skill and
	// WriteSkill; listings leave it out).
	Instructions string `json:"instructions,omitempty"`
}

// Title is the skill's name as people wrote it: DisplayName when set,
// else Name.
func (d *SkillDoc) Title() string {
	if d.DisplayName != "" {
		return d.DisplayName
	}
	return d.Name
}

// SkillReport is what Skills found: the valid skills by name, and the files
// that are not, with why (duplicates included: none is dropped silently).
type SkillReport struct {
	Skills   []SkillDoc  `json:"skills"`
	Problems []FileError `json:"problems"`
}

var skillName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// DisplayNameKey is the frontmatter metadata key that keeps a skill's name
// as people wrote it, when that is not a valid skill name.
const DisplayNameKey = "display-name"

// SkillSlug is the name a skill is stored under for a name as people write
// it: "Weekly Engineering Update" is weekly-engineering-update. Letters are
// lowercased and stripped of accents, every run of other characters is one
// hyphen, and none is left at either end. The result may still break the
// rules (empty, over 64 characters), which WriteSkill reports.
func SkillSlug(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFKD.String(strings.TrimSpace(name)) {
		r = unicode.ToLower(r)
		switch {
		case unicode.Is(unicode.Mn, r):
			// an accent, decomposed from its letter
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
		default:
			hyphen = true
		}
	}
	return b.String()
}

// skillSlug is the stored name of a skill written as name, and its
// display name when that differs: a name that looks like a path is
// refused rather than turned into another one.
func skillSlug(name string) (slug, display string, err error) {
	display = strings.TrimSpace(name)
	if strings.ContainsAny(display, "/\\") || strings.HasPrefix(display, ".") {
		return "", "", fmt.Errorf("skill name %q looks like a path: name the skill, like weekly-report or \"Weekly Report\"", display)
	}
	slug = SkillSlug(display)
	if slug == "" && display != "" {
		return "", "", fmt.Errorf("skill name %q has no letter or digit", display)
	}
	if slug == display {
		display = ""
	}
	return slug, display, nil
}

// frontmatter is a skill file's header as written.
type frontmatter struct {
	Name         string            `yaml:"name"`
	Description  string            `yaml:"description"`
	License      string            `yaml:"license,omitempty"`
	AllowedTools yaml.Node         `yaml:"allowed-tools,omitempty"`
	Metadata     map[string]string `yaml:"metadata,omitempty"`
}

// ParseSkill reads a skill file: YAML frontmatter between "---" lines, then
// the instructions. It checks the Agent Skills rules: a name of lowercase
// letters, digits and single hyphens, at most 64 characters (defaultName
// when the frontmatter has none), and a description of at most 1,024.
func ParseSkill(data []byte, defaultName string) (*SkillDoc, error) {
	var fm frontmatter
	body, err := SplitFrontmatter(data, &fm)
	if err != nil {
		return nil, err
	}
	s := &SkillDoc{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description), License: fm.License, Metadata: fm.Metadata,
		DisplayName: strings.TrimSpace(fm.Metadata[DisplayNameKey]), Instructions: strings.TrimSpace(body)}
	// The display name is a field of its own, not other metadata.
	delete(s.Metadata, DisplayNameKey)
	if len(s.Metadata) == 0 {
		s.Metadata = nil
	}
	if s.Name == "" {
		s.Name = defaultName
	}
	tools, err := allowedTools(fm.AllowedTools)
	if err != nil {
		return nil, err
	}
	s.AllowedTools = tools
	if err := checkSkill(s.Name, s.Description); err != nil {
		return nil, err
	}
	return s, nil
}

// SplitFrontmatter reads a markdown file with YAML frontmatter (between
// "---" lines; a BOM and CRLF line ends are accepted): the header is
// decoded into fm, and the body after it returned. A file over the size
// limit of a skill, or not UTF-8, is refused.
func SplitFrontmatter(data []byte, fm any) (body string, err error) {
	if len(data) > maxSkillBytes {
		return "", fmt.Errorf("over %d bytes", maxSkillBytes)
	}
	if !utf8.Valid(data) {
		return "", errors.New("not UTF-8 text")
	}
	text := strings.ReplaceAll(strings.TrimPrefix(string(data), "\ufeff"), "\r\n", "\n")
	lines := strings.SplitAfter(text, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return "", errors.New("no frontmatter: the file must start with a '---' line, then name and description, then '---'")
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return "", errors.New("the frontmatter has no closing '---' line")
	}
	if err := yaml.Unmarshal([]byte(strings.Join(lines[1:end], "")), fm); err != nil {
		return "", fmt.Errorf("frontmatter: %w", err)
	}
	return strings.Join(lines[end+1:], ""), nil
}

// allowedTools reads allowed-tools, a space-separated string or a list.
func allowedTools(n yaml.Node) ([]string, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		return strings.Fields(n.Value), nil
	case yaml.SequenceNode:
		var out []string
		if err := n.Decode(&out); err != nil {
			return nil, fmt.Errorf("allowed-tools: %w", err)
		}
		return out, nil
	}
	return nil, errors.New("allowed-tools: want a string or a list of strings")
}

func checkSkill(name, description string) error {
	switch {
	case name == "":
		return errors.New("the skill has no name")
	case len(name) > maxSkillName:
		return fmt.Errorf("name %q is longer than %d characters", name, maxSkillName)
	case !skillName.MatchString(name):
		return fmt.Errorf("name %q: use lowercase letters, digits and single hyphens", name)
	case description == "":
		return fmt.Errorf("skill %q has no description: say what it does and when to use it", name)
	case utf8.RuneCountInString(description) > maxSkillDescription:
		return fmt.Errorf("skill %q: the description is longer than %d characters", name, maxSkillDescription)
	}
	return nil
}

// skillFiles lists v's skill files: *.md at the top level, and SKILL.md
// in each top-level folder, hidden ones left out (files never lists them).
func skillFiles(ctx context.Context, v *Vault, files store.Files) ([]string, error) {
	var out []string
	err := files.Walk(ctx, "", func(fi store.FileInfo) error {
		if isSkillFile(fi.Path) {
			out = append(out, fi.Path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read vault %q: %w", v.Name, err)
	}
	sort.Strings(out)
	return out, nil
}

// Skills reads and validates every skill of a skill vault. A file that is
// not a valid skill, or a second skill of a name already taken, is
// reported in Problems rather than dropped.
func (s *Service) Skills(ctx context.Context, c Caller, name string) (*SkillReport, error) {
	v, err := s.open(ctx, c, name, Read, "list-skills", "", Skill)
	if err != nil {
		return nil, err
	}
	return s.skills(ctx, v)
}

func (s *Service) skills(ctx context.Context, v *Vault) (*SkillReport, error) {
	vf, err := s.files(ctx, v)
	if err != nil {
		return nil, err
	}
	files, err := skillFiles(ctx, v, vf)
	if err != nil {
		return nil, err
	}
	rep := &SkillReport{Skills: []SkillDoc{}, Problems: []FileError{}}
	byName := map[string]string{}
	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sk, err := s.readSkill(ctx, v, vf, rel)
		if err != nil {
			rep.Problems = append(rep.Problems, FileError{Path: rel, Error: hidePaths(err)})
			continue
		}
		if first, dup := byName[sk.Name]; dup {
			rep.Problems = append(rep.Problems, FileError{Path: rel, Error: fmt.Sprintf("skill %q is already defined in %s", sk.Name, first)})
			continue
		}
		byName[sk.Name] = rel
		sk.Instructions = ""
		rep.Skills = append(rep.Skills, *sk)
	}
	sort.Slice(rep.Skills, func(i, j int) bool { return rep.Skills[i].Name < rep.Skills[j].Name })
	return rep, nil
}

func (s *Service) readSkill(ctx context.Context, v *Vault, files store.Files, rel string) (*SkillDoc, error) {
	_, rel, err := s.resolve(v, rel)
	if err != nil {
		return nil, err
	}
	data, err := files.Read(ctx, rel)
	if err != nil {
		return nil, err
	}
	fi, err := files.Stat(ctx, rel)
	if err != nil {
		return nil, err
	}
	def := strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	folder, isFolder := strings.CutSuffix(rel, "/"+SkillFile)
	if isFolder {
		def = folder
	}
	sk, err := ParseSkill(data, def)
	if err != nil {
		return nil, err
	}
	if isFolder && sk.Name != folder {
		return nil, fmt.Errorf("skill %q is in folder %q: the folder must be named after the skill", sk.Name, folder)
	}
	sk.Path, sk.Size, sk.Modified = rel, fi.Size, fi.ModTime.UTC()
	return sk, nil
}

// Skill returns one skill of a skill vault with its instructions, found
// by its name or by its display name as people write it ("Weekly
// Engineering Update" finds weekly-engineering-update), case-insensitively.
func (s *Service) Skill(ctx context.Context, c Caller, name, skill string) (*SkillDoc, error) {
	v, err := s.open(ctx, c, name, Read, "read-skill", skill, Skill)
	if err != nil {
		return nil, err
	}
	rep, err := s.skills(ctx, v)
	if err != nil {
		return nil, err
	}
	if sk := findSkill(rep.Skills, skill); sk != nil {
		files, err := s.files(ctx, v)
		if err != nil {
			return nil, err
		}
		return s.readSkill(ctx, v, files, sk.Path)
	}
	return nil, &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("no skill %q in vault %q", skill, v.Name), Field: "name",
		Fix: "list the vault's skills to see their names"}
}

// findSkill is the skill named want: by its name, as SkillSlug makes it
// of want, else by its display name, case-insensitively.
func findSkill(skills []SkillDoc, want string) *SkillDoc {
	want = strings.TrimSpace(want)
	slug := SkillSlug(want)
	for i := range skills {
		if skills[i].Name == slug {
			return &skills[i]
		}
	}
	for i := range skills {
		if skills[i].DisplayName != "" && strings.EqualFold(skills[i].DisplayName, want) {
			return &skills[i]
		}
	}
	return nil
}

// WriteSkillRequest is a skill written into a skill vault, under a name
// the operation gives: a name under the Agent Skills rules (lowercase
// letters, digits and single hyphens, at most 64 characters, like
// review-pull-request), or a name as people write it ("Review Pull
// Request"), stored under its slug (SkillSlug) with the name as written
// kept as its display name.
type WriteSkillRequest struct {
	Description  string `json:"description" jsonschema:"what the skill does and when to use it, at most 1024 characters"`
	Instructions string `json:"instructions" jsonschema:"the procedure, in Markdown"`
	Overwrite    bool   `json:"overwrite,omitempty" jsonschema:"replace an existing skill of that name; without it an existing one is refused"`
}

// WriteSkill writes a skill in the Agent Skills layout (SLUG/SKILL.md),
// atomically; an existing skill of that name is refused (ErrExists) unless
// Overwrite is set.
func (s *Service) WriteSkill(ctx context.Context, c Caller, name, skillName string, req WriteSkillRequest) (*SkillDoc, error) {
	v, err := s.open(ctx, c, name, Write, "write-skill", skillName, Skill)
	if err != nil {
		return nil, err
	}
	return s.writeSkill(ctx, c, v, skillName, req)
}

// writeSkill is WriteSkill on the skill vault v, once opened.
func (s *Service) writeSkill(ctx context.Context, c Caller, v *Vault, skillName string, req WriteSkillRequest) (*SkillDoc, error) {
	skill, display, err := skillSlug(skillName)
	if err != nil {
		return nil, invalid("name", "%v", err)
	}
	desc := strings.TrimSpace(req.Description)
	if err := checkSkill(skill, desc); err != nil {
		field := "name"
		if checkSkill(skill, "x") == nil {
			field = "description"
		}
		return nil, invalid(field, "%v", err)
	}
	if strings.TrimSpace(req.Instructions) == "" {
		return nil, invalid("instructions", "skill %q has no instructions", skill)
	}
	_, rel, err := s.resolve(v, skill+"/"+SkillFile)
	if err != nil {
		return nil, err
	}
	files, err := s.files(ctx, v)
	if err != nil {
		return nil, err
	}
	exists := func(where string) *Error {
		return &Error{Kind: ErrExists, Msg: fmt.Sprintf("skill %q exists in %s", skill, where), Field: "name",
			Fix: "set overwrite to replace it (read it first), or choose another name"}
	}
	if !req.Overwrite {
		if _, err := files.Stat(ctx, rel); err == nil {
			return nil, exists(rel) // even one that does not parse
		}
		rep, err := s.skills(ctx, v)
		if err != nil {
			return nil, err
		}
		for _, sk := range rep.Skills {
			if sk.Name == skill {
				return nil, exists(sk.Path)
			}
		}
	}
	fm := frontmatter{Name: skill, Description: desc}
	if display != "" {
		fm.Metadata = map[string]string{DisplayNameKey: display}
	}
	header, err := yaml.Marshal(fm)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(header)
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimSpace(req.Instructions))
	b.WriteString("\n")
	if b.Len() > maxSkillBytes {
		return nil, invalid("instructions", "skill %q would be %d bytes, over the %d-byte limit of a skill file", skill, b.Len(), maxSkillBytes)
	}
	if err := files.Write(ctx, rel, b.Bytes(), req.Overwrite); err != nil {
		return nil, s.writeErr(v, skill, rel, exists(rel), err)
	}
	s.audit(ctx, v, c, "write-skill", rel, "")
	return s.readSkill(ctx, v, files, rel)
}
