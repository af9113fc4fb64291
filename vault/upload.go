package vault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/ctxkit/ctxkit/internal/extract"
	"github.com/ctxkit/ctxkit/store"
)

// UploadReport says what an upload did: the files copied into the vault,
// the files of the folder that were not (and why), and then the index run
// of a semantic vault or the skills of a skill vault.
type UploadReport struct {
	Uploaded int         `json:"uploaded"`
	Failed   []FileError `json:"failed"`
	// Index is the index run that followed (semantic vaults).
	Index *IndexReport `json:"index,omitempty"`
	// Skills are the vault's skills after the upload (skill vaults).
	Skills *SkillReport `json:"skills,omitempty"`
}

// UploadDocs copies the files of a local folder, from, into a hosted
// vault, then indexes a semantic vault (incrementally, progress told of
// each file) or checks a skill vault's skills. It is authorized as a
// document write. The files taken are those an index run would take from
// a folder vault: hidden files and folders are skipped, and so are files
// of other kinds than the vault keeps (a semantic vault's document types;
// a skill vault's top-level *.md and NAME/SKILL.md). A file over the size
// limit of its kind (MaxDocBytes, or a skill's 1 MiB), or whose path the
// vault refuses, is reported and skipped. Files replace the vault's files
// of the same path (their metadata, if written with some, stays); the
// vault's other files stay.
//
// A folder vault is refused: its documents are the files of its folder.
// from is the front end's to open (the CLI gives an os.Root's FS, which no
// link leaves).
func (s *Service) UploadDocs(ctx context.Context, c Caller, name string, from fs.FS, progress func(done, total int, path string)) (*UploadReport, error) {
	v, err := s.open(ctx, c, name, Write, "upload", "", Semantic, Skill)
	if err != nil {
		return nil, err
	}
	if !v.Hosted() {
		return nil, &Error{Kind: ErrInvalid, Field: "from",
			Msg: fmt.Sprintf("vault %q is a folder on this machine: its documents are the files in its folder, not uploads", v.Name),
			Fix: "copy the files into the vault's folder, then index it (ctxkit vault index " + v.Name + ", without --from)"}
	}
	var x *indexer
	if v.Type == Semantic {
		// The embedder is checked before anything is written.
		if x, err = s.indexerFor(ctx, v, false); err != nil {
			return nil, err
		}
	}
	limit, take := int64(MaxDocBytes), extract.Supported
	if v.Type == Skill {
		limit, take = maxSkillBytes, isSkillFile
	}
	rep := &UploadReport{Failed: []FileError{}}
	paths, err := folderFiles(from, take, &rep.Failed)
	if err != nil {
		return nil, err
	}
	if rep.Uploaded, _, err = s.copyFiles(ctx, v, from, paths, limit, true, &rep.Failed); err != nil {
		return rep, err
	}
	s.audit(ctx, v, c, "upload", "", fmt.Sprintf("uploaded=%d failed=%d", rep.Uploaded, len(rep.Failed)))
	if v.Type == Skill {
		rep.Skills, err = s.skills(ctx, v)
		return rep, err
	}
	rep.Index, err = x.run(ctx, c, ".", false, "index", progress)
	return rep, err
}

// copyFiles copies the files paths of from into v, each of at most limit
// bytes. A file of a path v has is replaced when overwrite is set, and
// otherwise left alone and counted in present. A file that cannot be read,
// or whose path the vault refuses, is reported in failed; any other error
// stops the copy.
func (s *Service) copyFiles(ctx context.Context, v *Vault, from fs.FS, paths []string, limit int64, overwrite bool, failed *[]FileError) (copied, present int, err error) {
	files, err := s.files(ctx, v)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return copied, present, err
		}
		data, err := readUpload(from, p, limit)
		if errors.Is(err, errSkip) {
			continue
		}
		if err == nil {
			var rel string
			if _, rel, err = s.resolve(v, p); err == nil {
				if err = files.Write(ctx, rel, data, overwrite); err != nil && !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrInvalidPath) {
					return copied, present, fmt.Errorf("copy %s into vault %q: %w", p, v.Name, err)
				}
			}
		}
		switch {
		case err == nil:
			copied++
		case errors.Is(err, store.ErrExists) && !overwrite:
			present++
		default:
			*failed = append(*failed, FileError{Path: p, Error: hidePaths(err)})
		}
	}
	return copied, present, nil
}

// errSkip marks a path of the folder to upload that is not a file (a link
// to a folder): skipped, as a walk of the vault would.
var errSkip = errors.New("not a file")

// readUpload reads the file p of from, refusing one over limit bytes
// without reading it whole.
func readUpload(from fs.FS, p string, limit int64) ([]byte, error) {
	f, err := from.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errSkip
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit", fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("over the %d-byte limit", limit)
	}
	return data, nil
}

// isSkillFile reports whether p (slash-separated, relative) is where a
// skill vault keeps a skill: *.md at the top level, or NAME/SKILL.md.
func isSkillFile(p string) bool {
	folder, rest, nested := strings.Cut(p, "/")
	if !nested {
		return strings.EqualFold(path.Ext(p), ".md")
	}
	return folder != "" && rest == SkillFile
}
