package fileregistry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
	"github.com/ctxkit/ctxkit/store"
)

// The files of a vault's data folder.
const (
	auditFile = "audit.jsonl"
	metaFile  = "documents.json"
	pinFile   = "embedding.json"
)

// timeFormat is the audit log's timestamp format: UTC, RFC 3339 with
// microseconds.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// DataDir returns the data folder of the vault with this id, creating it
// (0700, with a .gitignore that keeps its contents out of a repository
// holding the vault's documents) when create is set.
func (r *Registry) DataDir(ctx context.Context, id string, create bool) (string, error) {
	v, err := r.Vault(ctx, id)
	if err != nil {
		return "", err
	}
	dir := dataDir(v.Dir)
	// A vault folder comes from anywhere (a clone): its data folder must
	// be a folder, not a link that sends ctxkit's writes elsewhere.
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return "", fmt.Errorf("vault %q: %s is not a folder (a link?), which ctxkit does not follow: %w", v.Name, dir, store.ErrCorrupt)
	}
	if !create {
		return dir, nil
	}
	if _, err := os.Stat(v.Dir); err != nil {
		return "", fmt.Errorf("vault %q folder %s: %w", v.Name, v.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create vault data folder %s: %w", dir, err)
	}
	if err := writeIfMissing(filepath.Join(dir, ".gitignore"), "# written by ctxkit: this folder is derived or per-machine data\n*\n"); err != nil {
		return "", err
	}
	return dir, nil
}

// Pin reads embedding.json.
func (r *Registry) Pin(ctx context.Context, id string) (store.Pin, bool, error) {
	dir, err := r.DataDir(ctx, id, false)
	if err != nil {
		return store.Pin{}, false, err
	}
	var p *store.Pin
	if err := readJSON(filepath.Join(dir, pinFile), &p); err != nil {
		return store.Pin{}, false, err
	}
	if p == nil {
		return store.Pin{}, false, nil
	}
	return *p, true, nil
}

// SetPin writes or removes embedding.json.
func (r *Registry) SetPin(ctx context.Context, id string, p *store.Pin) error {
	dir, err := r.DataDir(ctx, id, true)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, pinFile)
	if p == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the embedder pin: %w", err)
		}
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600, 0o700, nil)
}

// DocMeta reads documents.json.
func (r *Registry) DocMeta(ctx context.Context, id string) (map[string]map[string]string, error) {
	dir, err := r.DataDir(ctx, id, false)
	if err != nil {
		return nil, err
	}
	m := map[string]map[string]string{}
	if err := readJSON(filepath.Join(dir, metaFile), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// SetDocMeta edits documents.json under its lock.
func (r *Registry) SetDocMeta(ctx context.Context, id string, meta map[string]map[string]string) error {
	dir, err := r.DataDir(ctx, id, true)
	if err != nil {
		return err
	}
	m := map[string]map[string]string{}
	return editJSON(ctx, filepath.Join(dir, metaFile), &m, func() (bool, error) {
		for path, md := range meta {
			if md == nil {
				delete(m, path)
			} else {
				m[path] = md
			}
		}
		return true, nil
	})
}

// auditLine is one line of audit.jsonl.
type auditLine struct {
	Time     string `json:"time"`
	Agent    string `json:"agent"`
	Action   string `json:"action"`
	Path     string `json:"path,omitempty"`
	Outcome  string `json:"outcome"`
	Reason   string `json:"reason,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Repeated int    `json:"repeated,omitempty"`
}

// AppendAudit appends one line to audit.jsonl (0600). Each event is one
// write of one line to a file opened for appending, so lines of concurrent
// writers do not interleave.
func (r *Registry) AppendAudit(ctx context.Context, id string, e store.AuditEvent) error {
	dir, err := r.DataDir(ctx, id, true)
	if err != nil {
		return err
	}
	line, err := json.Marshal(auditLine{Time: e.Time.UTC().Format(timeFormat), Agent: e.Agent, Action: e.Action, Path: e.Path,
		Outcome: e.Outcome, Reason: e.Reason, Detail: e.Detail, Repeated: e.Repeated})
	if err != nil {
		return fmt.Errorf("encode audit event: %w", err)
	}
	path := filepath.Join(dir, auditFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log %s: %w", path, err)
	}
	// A last line torn by a crash would swallow this one: start a line.
	var last [1]byte
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		if _, err := f.ReadAt(last[:], fi.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write audit log %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close audit log %s: %w", path, err)
	}
	return nil
}

// maxAuditLine bounds a line of audit.jsonl that Audit reads: the service
// writes lines of a few hundred bytes; a longer one is not its.
const maxAuditLine = 64 << 10

// Audit returns the last n events of audit.jsonl. A line that does not
// parse (a torn write after a crash) or is too long is skipped.
func (r *Registry) Audit(ctx context.Context, id string, n int) ([]store.AuditEvent, error) {
	dir, err := r.DataDir(ctx, id, false)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, auditFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open audit log %s: %w", path, err)
	}
	defer f.Close()
	var out []store.AuditEvent
	br := bufio.NewReaderSize(f, maxAuditLine)
	for long := false; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true // skipped up to its end
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read audit log %s: %w", path, err)
		}
		if len(line) == 0 && err != nil {
			break
		}
		skip := long
		long = false
		var l auditLine
		if skip || json.Unmarshal(line, &l) != nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, l.Time)
		if err != nil {
			continue
		}
		out = append(out, store.AuditEvent{Time: t, Agent: l.Agent, Action: l.Action, Path: l.Path, Outcome: l.Outcome,
			Reason: l.Reason, Detail: l.Detail, Repeated: l.Repeated})
		if n > 0 && len(out) > 2*n {
			out = append(out[:0], out[len(out)-n:]...)
		}
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}
