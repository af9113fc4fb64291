package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/internal/extract"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// ImportRequest is a vault brought over from another system (package
// vault/ctxvault builds them from CtxVault's data), created and filled in
// one step by ImportVault.
type ImportRequest struct {
	// Vault is the vault to create; Scope must be set. For a semantic vault
	// whose documents stay where they are, Path is their folder.
	Vault CreateVaultRequest
	// Agents are attached to a restricted vault, read-write. An agent need
	// not exist yet: its grant applies once it is created.
	Agents []string
	// Origin names where the vault comes from. The vault is marked with
	// it, so that a later import of the same origin adds only what the
	// vault lacks, and a vault of the same name made otherwise is left
	// alone (a conflict).
	Origin string
	// Docs, for a semantic vault, is a folder whose documents are copied
	// into the vault; nil leaves them where they are, in Vault.Path.
	Docs fs.FS
	// Skills are written into a skill vault.
	Skills []ImportSkill
	// Episodes are imported into an episodic vault, history included. A
	// record follows (supersedes, revises) only records before it.
	Episodes []*episodic.Record
	// DryRun says what would be done and writes nothing.
	DryRun bool
}

// ImportSkill is a skill to import; Name is as people write it (see
// WriteSkillRequest).
type ImportSkill struct {
	Name, Description, Instructions string
}

// The actions of an import.
const (
	ImportCreate = "create" // a new vault
	ImportUpdate = "update" // a vault imported before: what it lacks is added
	ImportSkip   = "skip"   // left alone; Reason says why
)

// ImportReport says what an import did, or with DryRun would do.
type ImportReport struct {
	Vault  string `json:"vault"`
	Type   Type   `json:"type"`
	Scope  Scope  `json:"scope"`
	Action string `json:"action" jsonschema:"create, update (imported before: what it lacks is added) or skip"`
	Reason string `json:"reason,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
	// Path is the vault's folder; InPlace says its documents were left
	// where they are.
	Path    string `json:"path,omitempty"`
	InPlace bool   `json:"in_place,omitempty"`
	// Agents are the agents attached; MissingAgents those of them that do
	// not exist yet (ctxkit agent create NAME gives each its token).
	Agents        []string `json:"agents,omitempty"`
	MissingAgents []string `json:"missing_agents,omitempty"`
	// Docs counts the documents copied (or, in place or in a dry run,
	// found); DocsPresent those already in the vault; Index is the
	// index run that followed.
	Docs        int          `json:"docs,omitempty"`
	DocsPresent int          `json:"docs_present,omitempty"`
	Index       *IndexReport `json:"index,omitempty"`
	// Skills counts the skills written, SkillsPresent those the vault
	// had already (by name).
	Skills        int `json:"skills,omitempty"`
	SkillsPresent int `json:"skills_present,omitempty"`
	// Episodes counts the statements imported, EpisodesPresent those the
	// vault had already (by id), Versions the versions imported.
	Episodes        int `json:"episodes,omitempty"`
	EpisodesPresent int `json:"episodes_present,omitempty"`
	Versions        int `json:"versions,omitempty"`
	// Failed lists the documents and skills that were not imported, and
	// why; the rest of the vault was.
	Failed []FileError `json:"failed,omitempty"`
}

// importMark is what the KV keeps about an imported vault.
type importMark struct {
	Origin string `json:"origin"`
	// Complete is false while the first import runs: an interrupted
	// import is taken up again by the next.
	Complete bool `json:"complete"`
}

// markKey is the KV key of the mark of the vault id.
func markKey(id string) string { return "vault/import/" + id }

// ImportVault creates a vault from another system's data and fills it:
// agents attached, documents copied or left in place and indexed (their
// vectors made again with the vault's embedder), skills written under
// their names, episodes imported with their whole history. A vault of the
// same name and scope imported before from the same origin gets only what
// it lacks (statements by id, skills by name, documents by path); one of
// another origin is skipped, and so is one of another type. If anything
// fails, a vault created by this call is forgotten again with everything
// written into it (its folder too, unless the folder was there before),
// and the error returned. With DryRun nothing is written and the report
// says what would be done. The owner only.
func (s *Service) ImportVault(ctx context.Context, c Caller, req ImportRequest, progress func(done, total int, path string)) (*ImportReport, error) {
	if err := s.ownerOnly(ctx, c, nil, "import"); err != nil {
		return nil, err
	}
	t, err := ParseType(string(req.Vault.Type))
	if err != nil {
		return nil, err
	}
	rep := &ImportReport{Vault: req.Vault.Name, Type: t, Scope: req.Vault.Scope, DryRun: req.DryRun,
		InPlace: t == Semantic && req.Docs == nil}
	if rep.InPlace && s.b.Hosted() {
		return rep, invalid("docs", "this store keeps its vaults' documents itself: an import copies them (give the folder to copy)")
	}
	if err := ValidName(req.Vault.Name); err != nil {
		return rep, err
	}
	if req.Vault.Scope != Local && req.Vault.Scope != Global {
		return rep, invalid("scope", "an import names the scope of its vault: local or global, not %q", req.Vault.Scope)
	}
	if strings.TrimSpace(req.Origin) == "" {
		return rep, invalid("origin", "an import names its origin")
	}
	v, err := s.existing(ctx, req.Vault.Name, req.Vault.Scope)
	if err != nil {
		return rep, err
	}
	if v != nil {
		rep.Action, rep.Path = ImportUpdate, v.Dir
		if reason, err := s.importable(ctx, v, t, req.Origin); err != nil || reason != "" {
			rep.Action, rep.Reason = ImportSkip, reason
			return rep, err
		}
		return rep, s.fill(ctx, c, v, &req, rep, progress)
	}
	rep.Action = ImportCreate
	dir := ""
	if !s.b.Hosted() {
		dir, _ = s.vaultDir(req.Vault.Scope, req.Vault.Name, req.Vault.Path)
	}
	if req.DryRun {
		rep.Path = dir
		return rep, s.fill(ctx, c, nil, &req, rep, progress)
	}
	// A folder that is there already is not this import's to delete.
	folderWas := true
	if dir != "" {
		_, serr := os.Stat(dir)
		folderWas = serr == nil
	}
	info, err := s.CreateVault(ctx, c, req.Vault)
	if err != nil {
		return rep, err
	}
	rep.Path = info.Path
	if v, err = s.existing(ctx, req.Vault.Name, req.Vault.Scope); err == nil && v == nil {
		err = fmt.Errorf("vault %q vanished as it was imported", req.Vault.Name)
	}
	if err == nil {
		err = s.mark(ctx, v, importMark{Origin: req.Origin})
	}
	if err == nil {
		err = s.fill(ctx, c, v, &req, rep, progress)
	}
	if err != nil {
		if v != nil {
			if derr := s.discard(context.WithoutCancel(ctx), v, !folderWas && !rep.InPlace); derr != nil {
				err = errors.Join(err, fmt.Errorf("forget the half-imported vault %q: %w", v.Name, derr))
			}
		}
		return rep, err
	}
	return rep, nil
}

// existing returns the vault called name in scope, or nil.
func (s *Service) existing(ctx context.Context, name string, scope Scope) (*Vault, error) {
	all, err := s.vaults(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range all {
		if v.Name == name && v.Scope == scope {
			return v, nil
		}
	}
	return nil, nil
}

// importable says why the existing vault v cannot take an import of type t
// from origin ("" when it can).
func (s *Service) importable(ctx context.Context, v *Vault, t Type, origin string) (string, error) {
	data, err := s.b.KV().Get(ctx, markKey(v.ID), s.now())
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Sprintf("a %s vault named %q exists already and was not imported from here: remove or rename it, then import again", v.Scope, v.Name), nil
	}
	if err != nil {
		return "", fmt.Errorf("read the import mark of vault %q: %w", v.Name, err)
	}
	var m importMark
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("read the import mark of vault %q: %w", v.Name, err)
	}
	switch {
	case m.Origin != origin:
		return fmt.Sprintf("vault %q was imported from %s, not from here: remove or rename it, then import again", v.Name, m.Origin), nil
	case v.Type != t:
		return fmt.Sprintf("vault %q is %s vault now, not %s", v.Name, english.A(string(v.Type)), t), nil
	}
	return "", nil
}

// mark records the import mark of v.
func (s *Service) mark(ctx context.Context, v *Vault, m importMark) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := s.b.KV().Put(ctx, markKey(v.ID), data, s.now(), 0); err != nil {
		return fmt.Errorf("mark vault %q as imported: %w", v.Name, err)
	}
	return nil
}

// discard forgets a vault an import created and failed to fill: its
// record, its stored data, its mark, and its folder when removeDir.
func (s *Service) discard(ctx context.Context, v *Vault, removeDir bool) error {
	rec, err := s.reg.DeleteVault(ctx, v.ID)
	if err != nil {
		return err
	}
	s.forgetSearcher(v.ID)
	err = s.b.DropVault(ctx, rec)
	err = errors.Join(err, s.b.KV().Delete(ctx, markKey(v.ID)))
	if removeDir && v.Dir != "" {
		err = errors.Join(err, os.RemoveAll(v.Dir))
	}
	return err
}

// fill imports req's content into v (nil in a dry run of a new vault) and
// marks the import complete.
func (s *Service) fill(ctx context.Context, c Caller, v *Vault, req *ImportRequest, rep *ImportReport, progress func(int, int, string)) error {
	if err := s.importAgents(ctx, c, v, req, rep); err != nil {
		return err
	}
	var err error
	switch rep.Type {
	case Semantic:
		err = s.importDocs(ctx, c, v, req, rep, progress)
	case Skill:
		err = s.importSkills(ctx, c, v, req, rep)
	case Episodic:
		err = s.importEpisodes(ctx, v, req, rep)
	}
	if err != nil || req.DryRun {
		return err
	}
	if err := s.mark(ctx, v, importMark{Origin: req.Origin, Complete: true}); err != nil {
		return err
	}
	if rep.Action == ImportCreate || rep.Docs+rep.Skills+rep.Episodes > 0 {
		s.audit(ctx, v, c, "import", "", fmt.Sprintf("origin=%s action=%s docs=%d skills=%d episodes=%d", req.Origin, rep.Action, rep.Docs, rep.Skills, rep.Episodes))
	}
	return nil
}

// importAgents attaches req's agents to the restricted vault v (never
// removing a grant, and leaving alone a vault made public since an earlier
// import), and names those that do not exist yet.
func (s *Service) importAgents(ctx context.Context, c Caller, v *Vault, req *ImportRequest, rep *ImportReport) error {
	if !req.Vault.Restricted {
		return nil
	}
	agents, err := s.reg.Agents(ctx)
	if err != nil {
		return err
	}
	var add []string
	for _, a := range req.Agents {
		if err := validAgentName(a); err != nil {
			// Left out: the vault stays closed to it, which is safe.
			rep.Failed = append(rep.Failed, FileError{Path: "agent " + a, Error: Describe(err).Message})
			continue
		}
		if slices.Contains(rep.Agents, a) {
			continue
		}
		rep.Agents = append(rep.Agents, a)
		if !slices.ContainsFunc(agents, func(r store.AgentRecord) bool { return r.Name == a }) {
			rep.MissingAgents = append(rep.MissingAgents, a)
		}
		if !v.granted(a) {
			add = append(add, a)
		}
	}
	if req.DryRun || v == nil || !v.Restricted || len(add) == 0 {
		return nil
	}
	_, err = s.updateVault(ctx, c, v, "attach", "agents="+strings.Join(add, ","), nil, func(r *store.VaultRecord) error {
		if r.Grants == nil {
			r.Grants = map[string]store.Grant{}
		}
		for _, a := range add {
			r.Grants[a] = Grant{}
		}
		return nil
	})
	return err
}

// granted reports whether agent has a grant on v (none when v is nil).
func (v *Vault) granted(agent string) bool {
	if v == nil {
		return false
	}
	_, ok := v.Agents[agent]
	return ok
}

// importDocs copies req's documents into the semantic vault v (or, in a
// dry run, counts them), then indexes it.
func (s *Service) importDocs(ctx context.Context, c Caller, v *Vault, req *ImportRequest, rep *ImportReport, progress func(int, int, string)) error {
	if req.DryRun {
		from := req.Docs
		switch {
		case from == nil && v != nil:
			from = os.DirFS(v.Dir)
		case from == nil:
			from = os.DirFS(req.Vault.Path)
		}
		paths, err := folderFiles(from, extract.Supported, &rep.Failed)
		rep.Docs = len(paths)
		return err
	}
	if req.Docs != nil {
		paths, err := folderFiles(req.Docs, extract.Supported, &rep.Failed)
		if err != nil {
			return err
		}
		if rep.Docs, rep.DocsPresent, err = s.copyFiles(ctx, v, req.Docs, paths, MaxDocBytes, false, &rep.Failed); err != nil {
			return err
		}
	}
	x, err := s.indexerFor(ctx, v, false)
	if err != nil {
		return err
	}
	rep.Index, err = x.run(ctx, c, ".", false, "index", progress)
	if err == nil && req.Docs == nil {
		rep.Docs = rep.Index.Indexed + rep.Index.Unchanged
	}
	return err
}

// folderFiles lists the files of from a vault takes (take): hidden files
// and folders left out, as an index run of a folder vault does. A folder
// that cannot be read is reported in failed.
func folderFiles(from fs.FS, take func(string) bool, failed *[]FileError) ([]string, error) {
	var paths []string
	err := fs.WalkDir(from, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p == ".":
			return err
		case err != nil:
			*failed = append(*failed, FileError{Path: p, Error: hidePaths(err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
		case p == ".":
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return fs.SkipDir
			}
		case !d.IsDir() && take(p):
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the folder: %s", hidePaths(err))
	}
	return paths, nil
}

// importSkills writes req's skills into the skill vault v, skipping those
// it has by name; a skill that is not valid is reported in Failed.
func (s *Service) importSkills(ctx context.Context, c Caller, v *Vault, req *ImportRequest, rep *ImportReport) error {
	var have []SkillDoc
	if v != nil {
		sr, err := s.skills(ctx, v)
		if err != nil {
			return err
		}
		have = sr.Skills
	}
	for _, sk := range req.Skills {
		if findSkill(have, sk.Name) != nil {
			rep.SkillsPresent++
			continue
		}
		if req.DryRun {
			slug, _, err := skillSlug(sk.Name)
			if err == nil {
				err = checkSkill(slug, strings.TrimSpace(sk.Description))
			}
			if err != nil {
				rep.Failed = append(rep.Failed, FileError{Path: sk.Name, Error: err.Error()})
				continue
			}
			have = append(have, SkillDoc{Name: slug})
			rep.Skills++
			continue
		}
		doc, err := s.writeSkill(ctx, c, v, sk.Name, WriteSkillRequest{Description: sk.Description, Instructions: sk.Instructions})
		var e *Error
		switch {
		case errors.As(err, &e) && (e.Kind == ErrInvalid || e.Kind == ErrExists):
			rep.Failed = append(rep.Failed, FileError{Path: sk.Name, Error: e.Msg})
		case err != nil:
			return err
		default:
			have = append(have, *doc)
			rep.Skills++
		}
	}
	return nil
}

// importEpisodes imports the records of req the episodic vault v does not
// hold yet, in one transaction.
func (s *Service) importEpisodes(ctx context.Context, v *Vault, req *ImportRequest, rep *ImportReport) error {
	recs := req.Episodes
	if v != nil {
		op := Write
		if req.DryRun {
			op = Read
		}
		m, err := s.memory(ctx, v, op)
		if err != nil {
			return err
		}
		if rep.Action == ImportUpdate {
			recs = recs[:0:0]
			for _, r := range req.Episodes {
				_, err := m.Store().Record(ctx, r.Statement.ID)
				switch {
				case err == nil:
					rep.EpisodesPresent++
				case errors.Is(err, episodic.ErrNotFound):
					recs = append(recs, r)
				default:
					return err
				}
			}
		}
		if !req.DryRun && len(recs) > 0 {
			if err := m.ImportRecords(ctx, recs); err != nil {
				return err
			}
		}
	}
	if req.DryRun {
		for _, r := range recs {
			if err := r.Check(); err != nil {
				return err
			}
		}
	}
	rep.Episodes = len(recs)
	for _, r := range recs {
		rep.Versions += len(r.Versions)
	}
	return nil
}
