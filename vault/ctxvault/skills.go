package ctxvault

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/vault"
)

// maxSkillBytes bounds a skill file (the limit of ctxkit's skills).
const maxSkillBytes = 1 << 20

// ParseSkillFile reads a CtxVault skill file: YAML frontmatter with name
// (default stem, the file's name without .md) and description, then the
// instructions. The name is as people wrote it ("Weekly Engineering
// Update"): ctxkit stores it under its slug.
func ParseSkillFile(data []byte, stem string) (vault.ImportSkill, error) {
	var fm struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	body, err := vault.SplitFrontmatter(data, &fm)
	if err != nil {
		return vault.ImportSkill{}, err
	}
	sk := vault.ImportSkill{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description), Instructions: strings.TrimSpace(body)}
	if sk.Name == "" {
		sk.Name = stem
	}
	return sk, nil
}

// ReadSkills reads the skills of a CtxVault skill vault: the *.md files at
// the top of dir, in name order. A file that is not a skill, or a second
// skill of a name taken already (case-insensitively, the first file
// keeping it, as CtxVault's index does), is reported in problems.
func ReadSkills(dir string) (skills []vault.ImportSkill, problems []vault.FileError, err error) {
	root, err := os.OpenRoot(dir) // no link in it leads out of it
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	taken := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.EqualFold(path.Ext(name), ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		sk, err := readSkill(root, name)
		if err != nil {
			problems = append(problems, vault.FileError{Path: name, Error: err.Error()})
			continue
		}
		key := strings.ToLower(sk.Name)
		if first, dup := taken[key]; dup {
			problems = append(problems, vault.FileError{Path: name, Error: fmt.Sprintf("skill %q is in %s already", sk.Name, first)})
			continue
		}
		taken[key] = name
		skills = append(skills, sk)
	}
	return skills, problems, nil
}

func readSkill(root *os.Root, name string) (vault.ImportSkill, error) {
	f, err := root.Open(name)
	if err != nil {
		return vault.ImportSkill{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return vault.ImportSkill{}, err
	}
	if !fi.Mode().IsRegular() {
		return vault.ImportSkill{}, errors.New("not a file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSkillBytes+1))
	if err != nil {
		return vault.ImportSkill{}, err
	}
	return ParseSkillFile(data, strings.TrimSuffix(name, path.Ext(name)))
}
