package ctxvault

import (
	"context"
	"fmt"
	"os"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// Options configure Import.
type Options struct {
	// Copy copies the documents of semantic vaults into ctxkit's vault
	// folders; by default a semantic vault's folder stays CtxVault's
	// vault_path and its documents are indexed where they are. Skill and
	// episodic vaults are always converted into a folder of ctxkit's: their
	// files are CtxVault's formats, not ctxkit's. A store that hosts its
	// vaults (PostgreSQL) always copies.
	Copy bool
	// EmbeddingModel is the embedder of the new semantic and episodic
	// vaults ("" takes ctxkit's default).
	EmbeddingModel string
	// DryRun reads everything and says what an import would do, writing
	// nothing.
	DryRun bool
	// Progress, when set, is told of each document indexed.
	Progress func(vault string, done, total int, path string)
}

// VaultReport is what became of one CtxVault vault.
type VaultReport struct {
	// Config is the config.json that names the vault.
	Config string `json:"config"`
	*vault.ImportReport
	// Problems are what could not be read of the vault (skill files);
	// Notes what was not carried over exactly.
	Problems []vault.FileError `json:"problems,omitempty"`
	Notes    []string          `json:"notes,omitempty"`
	// Error says why the vault was not imported: it could not be read, or
	// its import failed and was undone.
	Error string `json:"error,omitempty"`
}

// NotImported reports whether the vault was not imported: an error, or a
// conflict with a vault of ctxkit's.
func (r VaultReport) NotImported() bool {
	return r.Error != "" || r.Action == vault.ImportSkip
}

// Report is what an import did to every vault found.
type Report struct {
	DryRun bool          `json:"dry_run,omitempty"`
	Vaults []VaultReport `json:"vaults"`
}

// NotImported counts the vaults not imported.
func (r *Report) NotImported() int {
	n := 0
	for i := range r.Vaults {
		if r.Vaults[i].NotImported() {
			n++
		}
	}
	return n
}

// Import imports every vault of sources into svc as c (the owner), one
// after the other. A vault that cannot be read, or whose import fails, is
// reported and skipped (the service leaves nothing of it behind); the
// others go on. Importing again adds only what is new.
func Import(ctx context.Context, svc *vault.Service, c vault.Caller, sources []*Source, o Options) (*Report, error) {
	rep := &Report{DryRun: o.DryRun, Vaults: []VaultReport{}}
	for _, src := range sources {
		for _, v := range src.Vaults {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			vr := VaultReport{Config: src.Config, ImportReport: &vault.ImportReport{Vault: v.Name, Type: v.Type, Scope: v.Scope, DryRun: o.DryRun}}
			req, done, err := request(ctx, svc, src, &v, o, &vr)
			if err == nil {
				var progress func(int, int, string)
				if o.Progress != nil {
					name := v.Name
					progress = func(done, total int, path string) { o.Progress(name, done, total, path) }
				}
				var ir *vault.ImportReport
				ir, err = svc.ImportVault(ctx, c, *req, progress)
				if ir != nil {
					vr.ImportReport = ir
				}
				done()
			}
			if err != nil {
				vr.Error = describe(err)
			}
			rep.Vaults = append(rep.Vaults, vr)
		}
	}
	return rep, nil
}

// describe is an error as the report gives it: a service error with its
// fix, anything else (a file CtxVault's data could not be read from) as it
// is: the report is the owner's, who holds the files.
func describe(err error) string {
	d := vault.Describe(err)
	if d.Class == vault.ClassInternal {
		return err.Error()
	}
	if d.Fix != "" {
		return d.Message + " (" + d.Fix + ")"
	}
	return d.Message
}

// request reads vault v of src into an import request; done releases
// what it holds open.
func request(ctx context.Context, svc *vault.Service, src *Source, v *Vault, o Options, vr *VaultReport) (req *vault.ImportRequest, done func(), err error) {
	done = func() {}
	if v.Err != nil {
		return nil, done, v.Err
	}
	req = &vault.ImportRequest{
		Vault:  vault.CreateVaultRequest{Name: v.Name, Type: v.Type, Scope: v.Scope, Restricted: v.Restricted},
		Agents: v.Agents,
		Origin: "ctxvault:" + src.Config + "#" + v.Name,
		DryRun: o.DryRun,
	}
	if v.Type != vault.Skill {
		req.Vault.EmbeddingModel = o.EmbeddingModel
	}
	if svc.Hosted() && v.Scope == vault.Local {
		// Such a store keeps one set of vaults for every machine.
		req.Vault.Scope, vr.Scope = vault.Global, vault.Global
		vr.Notes = append(vr.Notes, "the store hosts its vaults for every machine: the project's vault is imported as a global one")
	}
	switch v.Type {
	case vault.Semantic:
		fi, err := os.Stat(v.Dir)
		if err != nil {
			return nil, done, fmt.Errorf("its folder: %w", err)
		}
		if !fi.IsDir() {
			return nil, done, fmt.Errorf("its vault_path %s is not a folder", v.Dir)
		}
		if !o.Copy && !svc.Hosted() {
			req.Vault.Path = v.Dir
			break
		}
		root, err := os.OpenRoot(v.Dir) // no link in it leads the copy out of it
		if err != nil {
			return nil, done, err
		}
		req.Docs, done = root.FS(), func() { root.Close() }
	case vault.Skill:
		skills, problems, err := ReadSkills(v.Dir)
		if err != nil {
			return nil, done, fmt.Errorf("its skills: %w", err)
		}
		req.Skills, vr.Problems = skills, problems
	case vault.Episodic:
		db, err := ReadDB(ctx, v.DB)
		if err != nil {
			return nil, done, err
		}
		var recs []*episodic.Record
		if recs, vr.Notes, err = Records(db); err != nil {
			return nil, done, err
		}
		req.Episodes = recs
	}
	return req, done, nil
}
