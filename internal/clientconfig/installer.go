package clientconfig

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tailscale/hujson"

	"github.com/ctxkit/ctxkit/internal/english"
)

// Options configure an Installer.
type Options struct {
	// Executable is the command written into entries. Empty means
	// ResolveExecutable().
	Executable string
	// Env locates the configuration files.
	Env Env
	// DataDir is $CTXKIT_HOME: the manifest and the backups live there.
	DataDir string
	// Now stamps backups and records; nil means time.Now.
	Now func() time.Time
}

// Installer edits AI clients' MCP configuration files.
type Installer struct {
	opts Options
	// beforeReplace, when set (tests), runs after a file is read and edited
	// and just before it is replaced: where another program's write would
	// race with ctxkit's.
	beforeReplace func(path string)
}

// New returns an Installer.
func New(opts Options) (*Installer, error) {
	if opts.Executable == "" {
		exe, err := ResolveExecutable()
		if err != nil {
			return nil, err
		}
		opts.Executable = exe
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DataDir == "" {
		return nil, fmt.Errorf("clientconfig: no data directory")
	}
	return &Installer{opts: opts}, nil
}

// ResolveExecutable returns the command that starts this ctxkit: "ctxkit"
// when the ctxkit found on PATH is this very binary, otherwise the absolute,
// symlink-resolved path of the running executable (clients start servers
// with a reduced PATH, so a bare name that points elsewhere would be wrong).
func ResolveExecutable() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the ctxkit executable: %w", err)
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	if onPath, err := exec.LookPath("ctxkit"); err == nil {
		a, err1 := os.Stat(onPath)
		b, err2 := os.Stat(self)
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			return "ctxkit", nil
		}
	}
	return self, nil
}

// Request selects what Install and Uninstall act on.
type Request struct {
	Client  string
	Scope   Scope
	Servers []string // empty: every server
	DryRun  bool     // compute the change and its diff, write nothing
	Force   bool     // Uninstall: restore originals over drifted entries
}

// Change says what happened, or would happen, to one server.
type Change struct {
	Server string `json:"server"`
	Action string `json:"action"` // wrapped, already wrapped, skipped, restored, removed, added, replaced, drift, unchanged, forgotten
	Detail string `json:"detail,omitempty"`
}

// Result is the outcome of an operation on one configuration file.
type Result struct {
	Client  string   `json:"client"`
	Scope   Scope    `json:"scope"`
	Path    string   `json:"path"`
	Changes []Change `json:"changes"`
	Diff    string   `json:"diff,omitempty"`
	Backup  string   `json:"backup,omitempty"`
	Wrote   bool     `json:"wrote"`
}

// loc is one opened configuration file and the servers object in it.
type loc struct {
	c      *Client
	scope  Scope
	path   string // the path the client uses: the manifest's key
	real   string // the file path stands for, symlinks followed: read and replaced
	keys   []string
	orig   []byte // the bytes on disk (nil when missing)
	src    []byte // the bytes edits apply to ({} for a blank JSON file)
	blank  bool
	exists bool
	mode   fs.FileMode
	jd     *jsonDoc
	td     *tomlDoc
	exe    string // the command this installer writes: also recognised as wrapped
	crlf   bool   // the file ends its lines with CR LF: generated text does too
}

// eol gives generated text the file's line endings.
func (l *loc) eol(text string) string {
	if !l.crlf {
		return text
	}
	return strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
}

// entry is a server entry of either format.
type entry struct {
	name        string
	start, end  int
	server      Server
	wrapped     bool
	unsupported string
	j           jsonEntry
	t           tomlEntry
}

func (in *Installer) open(client string, scope Scope) (*loc, error) {
	c, err := Lookup(client)
	if err != nil {
		return nil, err
	}
	if scope == "" {
		scope = ScopeUser
	}
	path, err := c.Path(scope, in.opts.Env)
	if err != nil {
		return nil, err
	}
	l := &loc{c: c, scope: scope, path: path, keys: c.serversPath(scope, in.opts.Env), exe: in.opts.Executable}
	if l.real, err = resolveLink(path); err != nil {
		return nil, err
	}
	l.orig, l.mode, l.exists, err = readConfig(l.real)
	if err != nil {
		return nil, err
	}
	if err := l.parse(l.orig); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *loc) parse(b []byte) error {
	l.blank = len(bytes.TrimSpace(b)) == 0
	l.crlf = bytes.Contains(b, []byte("\r\n"))
	if l.c.Format == FormatTOML {
		d, err := parseTOML(l.path, b)
		if err != nil {
			return err
		}
		l.td, l.src = d, b
		return nil
	}
	d, err := parseJSON(l.path, b)
	if err != nil {
		return err
	}
	l.jd, l.src = d, d.src
	return nil
}

// finish turns edited src bytes into the file's new bytes.
func (l *loc) finish(out []byte) []byte {
	if l.c.Format == FormatJSON && l.blank {
		return append(out, '\n')
	}
	return out
}

// entries returns the file's server entries. Besides IsWrapped, an entry
// running this installer's own executable with "wrap" counts as wrapped
// (a binary not named ctxkit).
func (l *loc) entries() ([]entry, error) {
	es, err := l.rawEntries()
	for i := range es {
		s := es[i].server
		if !es[i].wrapped && s.Command != "" && s.Command == l.exe && len(s.Args) > 0 && s.Args[0] == "wrap" {
			es[i].wrapped = true
		}
	}
	return es, err
}

func (l *loc) rawEntries() ([]entry, error) {
	var out []entry
	if l.td != nil {
		ts, err := l.td.servers(l.c.RootKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.path, err)
		}
		for _, t := range ts {
			out = append(out, entry{name: t.name, start: t.start, end: t.end, server: t.server, wrapped: t.wrapped, unsupported: t.unsupported, t: t})
		}
		return out, nil
	}
	obj, err := l.jd.servers(l.keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.path, err)
	}
	if obj == nil {
		return nil, nil
	}
	for i := range obj.Members {
		m := &obj.Members[i]
		name := m.Name.Value.(hujson.Literal).String()
		if _, dup := find(out, name); dup {
			return nil, fmt.Errorf("%w: %s: server %q appears twice; fix the file first", ErrShape, l.path, name)
		}
		j := l.c.readJSONEntry(name, &m.Value)
		out = append(out, entry{name: name, start: m.Value.StartOffset, end: m.Value.EndOffset, server: j.server, wrapped: j.wrapped, unsupported: j.unsupported, j: j})
	}
	return out, nil
}

func find(es []entry, name string) (entry, bool) {
	for _, e := range es {
		if e.name == name {
			return e, true
		}
	}
	return entry{}, false
}

func (l *loc) text(e entry) string { return string(l.src[e.start:e.end]) }

func (l *loc) equal(a, b string) bool {
	if l.c.Format == FormatTOML {
		return tomlEqual(a, b)
	}
	return jsonEqual(a, b)
}

func (l *loc) wrapText(e entry, exe string) string {
	if l.td != nil {
		return wrapTOML(l.td, e.t, exe)
	}
	return l.c.wrapJSON(l.jd, e.j, exe)
}

// insertEdit adds an entry: members rendered in the file's layout (JSON)
// or a block appended (TOML); raw, when set, is inserted as is.
func (l *loc) insertEdit(name string, members []rawMember, raw string) edit {
	e := l.insertEditLF(name, members, raw)
	e.text = l.eol(e.text)
	return e
}

func (l *loc) insertEditLF(name string, members []rawMember, raw string) edit {
	if l.td != nil {
		return appendEdit(l.src, raw)
	}
	v, n, _ := l.jd.lookup(l.keys)
	m := rawMember{name: name, raw: raw, kids: members}
	for i := len(l.keys) - 1; i >= n; i-- {
		m = rawMember{name: l.keys[i], kids: []rawMember{m}}
	}
	return l.jd.insertEdit(v, m)
}

// removeEdit removes an entry ctxkit add created, undoing what add did
// around it: the separator before a TOML block (r.Lead), or the servers
// object's text when add filled an empty one (r.Empty).
func (l *loc) removeEdit(e entry, r manifestRecord) edit {
	if l.td != nil {
		start := e.start
		if strings.HasSuffix(string(l.src[:start]), r.Lead) {
			start -= len(r.Lead)
		}
		return edit{start, e.end, ""}
	}
	v, _, _ := l.jd.lookup(l.keys)
	obj := v.Value.(*hujson.Object)
	if r.Empty != "" && len(obj.Members) == 1 && obj.Members[0].Value.StartOffset == e.start {
		return edit{v.StartOffset, v.EndOffset, r.Empty}
	}
	for i := range obj.Members {
		if obj.Members[i].Value.StartOffset == e.start {
			return l.jd.removeEdit(v, i)
		}
	}
	return edit{e.start, e.start, ""}
}

func (l *loc) newEntryText(s Server, exe string) ([]rawMember, string) {
	if l.c.Format == FormatTOML {
		return nil, newTOMLEntry(l.c.RootKey, s, exe)
	}
	return l.c.newJSONEntry(s, exe), ""
}

// check parses the new bytes and confirms every named entry is wrapped and,
// when its text is given, spans exactly that text (what the manifest
// records), so a bug never reaches the disk.
func (l *loc) check(out []byte, want map[string]string) error {
	nl := &loc{c: l.c, scope: l.scope, path: l.path, keys: l.keys, exe: l.exe}
	if err := nl.parse(out); err != nil {
		return fmt.Errorf("internal error: the edited %s would not parse (%v); nothing written", l.path, err)
	}
	es, err := nl.entries()
	if err != nil {
		return fmt.Errorf("internal error: %v; nothing written", err)
	}
	for name, text := range want {
		e, ok := find(es, name)
		if !ok || !e.wrapped {
			return fmt.Errorf("internal error: %s in the edited %s is not wrapped; nothing written", name, l.path)
		}
		if text != "" && nl.text(e) != text {
			return fmt.Errorf("internal error: %s in the edited %s is not where it was written, so uninstall could not restore it exactly; nothing written", name, l.path)
		}
	}
	return nil
}

// write backs up the file and replaces it (the symlink's target when it is
// one), unless the file changed on disk since it was read: then
// ErrConcurrentEdit, and nothing is written.
func (in *Installer) write(l *loc, out []byte, res *Result) error {
	mode, dirMode := fs.FileMode(0o600), fs.FileMode(0o700)
	if l.scope == ScopeProject {
		mode, dirMode = 0o644, 0o755
	}
	if l.exists {
		mode = l.mode
		b, err := backup(in.opts.DataDir, l.c.Name, l.path, l.orig, in.opts.Now())
		if err != nil {
			return err
		}
		res.Backup = b
	}
	if in.beforeReplace != nil {
		in.beforeReplace(l.path)
	}
	if err := writeAtomic(l.real, out, mode, dirMode, unchanged(l.real, l.orig, l.exists)); err != nil {
		if res.Backup != "" && errors.Is(err, ErrConcurrentEdit) {
			os.Remove(res.Backup)
			res.Backup = ""
		}
		return err
	}
	res.Wrote = true
	return nil
}

// locked runs op holding the lock (not for a dry run). When the file
// changed on disk between op's read and its write (a client rewriting its
// own file), op runs once more on the new content; a second change is
// refused with ErrConcurrentEdit.
func (in *Installer) locked(ctx context.Context, dry bool, op func() (*Result, error)) (*Result, error) {
	if !dry {
		unlock, err := lock(ctx, in.opts.DataDir)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	res, err := op()
	if errors.Is(err, ErrConcurrentEdit) {
		res, err = op()
	}
	if errors.Is(err, ErrConcurrentEdit) {
		return nil, fmt.Errorf("%w, twice; nothing written: run the command again (quit the client first if it keeps rewriting its file)", err)
	}
	return res, err
}

// begin opens the client's file and reads its entries.
func (in *Installer) begin(client string, scope Scope) (*loc, []entry, *Result, error) {
	l, err := in.open(client, scope)
	if err != nil {
		return nil, nil, nil, err
	}
	es, err := l.entries()
	if err != nil {
		return nil, nil, nil, err
	}
	return l, es, &Result{Client: l.c.Name, Scope: l.scope, Path: l.path}, nil
}

// record computes the diff and, unless dry, saves recs in the manifest and
// then writes out: a crash in between leaves records whose entries are
// still the originals, which uninstall recognises as such.
func (in *Installer) record(l *loc, out []byte, recs []manifestRecord, dry bool, res *Result) error {
	res.Diff = Diff(l.path, l.orig, out)
	if dry {
		return nil
	}
	m, err := loadManifest(in.opts.DataDir)
	if err != nil {
		return err
	}
	before := slices.Clone(m.Records)
	for _, r := range recs {
		m.put(r)
	}
	if err := m.save(in.opts.DataDir); err != nil {
		return err
	}
	if err := in.write(l, out, res); err != nil {
		if errors.Is(err, ErrConcurrentEdit) {
			// Nothing was written: the manifest goes back as it was.
			m.Records = before
			if serr := m.save(in.opts.DataDir); serr != nil {
				return fmt.Errorf("%w (and restoring the manifest: %v)", err, serr)
			}
		}
		return err
	}
	return nil
}

func selected(names []string, name string) bool {
	return len(names) == 0 || slices.Contains(names, name)
}

// Install rewrites the client's entries (or the named ones) so that they run
// through `ctxkit wrap`, recording each original entry in the manifest.
// Already wrapped entries are left alone, so installing twice is installing
// once.
func (in *Installer) Install(ctx context.Context, req Request) (*Result, error) {
	return in.locked(ctx, req.DryRun, func() (*Result, error) { return in.install(req) })
}

func (in *Installer) install(req Request) (*Result, error) {
	l, es, res, err := in.begin(req.Client, req.Scope)
	if err != nil {
		return nil, err
	}
	for _, n := range req.Servers {
		if _, ok := find(es, n); !ok {
			return nil, fmt.Errorf("%w %q in %s", ErrNoServer, n, l.path)
		}
	}
	var edits []edit
	var recs []manifestRecord
	want := map[string]string{}
	for _, e := range es {
		if !selected(req.Servers, e.name) {
			continue
		}
		switch {
		case e.wrapped:
			res.Changes = append(res.Changes, Change{e.name, "already wrapped", ""})
		case e.unsupported != "":
			res.Changes = append(res.Changes, Change{e.name, "skipped", e.unsupported})
		default:
			w := l.eol(l.wrapText(e, in.opts.Executable))
			edits = append(edits, edit{e.start, e.end, w})
			want[e.name] = w
			recs = append(recs, manifestRecord{Client: l.c.Name, Scope: l.scope, Path: l.path, Keys: l.keys, Server: e.name,
				Original: l.text(e), Wrapped: w, Time: in.opts.Now().UTC()})
			res.Changes = append(res.Changes, Change{e.name, "wrapped", ""})
		}
	}
	if len(edits) == 0 {
		return res, nil
	}
	out := l.finish(apply(l.src, edits))
	if err := l.check(out, want); err != nil {
		return nil, err
	}
	return res, in.record(l, out, recs, req.DryRun, res)
}

// Uninstall puts back the original entries recorded at install (or removes
// entries ctxkit add created). An entry that changed since (drift) is left
// alone and reported with ErrDrift unless req.Force.
func (in *Installer) Uninstall(ctx context.Context, req Request) (*Result, error) {
	return in.locked(ctx, req.DryRun, func() (*Result, error) { return in.uninstall(req) })
}

func (in *Installer) uninstall(req Request) (*Result, error) {
	l, _, res, err := in.begin(req.Client, req.Scope)
	if err != nil {
		return nil, err
	}
	m, err := loadManifest(in.opts.DataDir)
	if err != nil {
		return nil, err
	}
	recs := m.at(l.c.Name, l.path, l.keys)
	for _, n := range req.Servers {
		if !slices.ContainsFunc(recs, func(r manifestRecord) bool { return r.Server == n }) {
			return nil, fmt.Errorf("%w %q installed by ctxkit in %s", ErrNoServer, n, l.path)
		}
	}
	// Edits are applied one at a time, each on a fresh parse: removing two
	// neighbouring entries touches the same comma.
	w := &loc{c: l.c, scope: l.scope, path: l.path, keys: l.keys, exe: l.exe}
	work := l.src
	if err := w.parse(work); err != nil {
		return nil, err
	}
	changed := false
	do := func(e edit) error {
		work = apply(work, []edit{e})
		changed = true
		if err := w.parse(work); err != nil {
			return fmt.Errorf("internal error: the edited %s would not parse (%v); nothing written", l.path, err)
		}
		return nil
	}
	var done []manifestRecord
	drift := 0
	for _, r := range recs {
		if !selected(req.Servers, r.Server) {
			continue
		}
		es, err := w.entries()
		if err != nil {
			return nil, err
		}
		e, ok := find(es, r.Server)
		var cur string
		if ok {
			cur = w.text(e)
		}
		var ed *edit
		switch {
		case ok && (cur == r.Wrapped || w.equal(cur, r.Wrapped)):
			if r.Added {
				x := w.removeEdit(e, r)
				ed = &x
				res.Changes = append(res.Changes, Change{r.Server, "removed", "added by ctxkit add"})
			} else {
				ed = &edit{e.start, e.end, r.Original}
				res.Changes = append(res.Changes, Change{r.Server, "restored", ""})
			}
			done = append(done, r)
		case ok && !r.Added && (cur == r.Original || w.equal(cur, r.Original)):
			res.Changes = append(res.Changes, Change{r.Server, "unchanged", "already the original entry"})
			done = append(done, r)
		case !ok && r.Added:
			// An entry ctxkit add created that is gone: nothing to undo.
			res.Changes = append(res.Changes, Change{r.Server, "forgotten", "added by ctxkit add and since removed from the file"})
			done = append(done, r)
		case !req.Force:
			drift++
			why := "changed since install"
			if !ok {
				why = "gone from the file since install"
			}
			res.Changes = append(res.Changes, Change{r.Server, "drift", why + "; --force restores the original"})
		case !ok:
			x := w.insertEdit(r.Server, nil, r.Original)
			ed = &x
			res.Changes = append(res.Changes, Change{r.Server, "restored", "re-added (it was gone)"})
			done = append(done, r)
		case r.Added:
			x := w.removeEdit(e, r)
			ed = &x
			res.Changes = append(res.Changes, Change{r.Server, "removed", "forced over changes"})
			done = append(done, r)
		default:
			ed = &edit{e.start, e.end, r.Original}
			res.Changes = append(res.Changes, Change{r.Server, "restored", "forced over changes"})
			done = append(done, r)
		}
		if ed != nil {
			if err := do(*ed); err != nil {
				return nil, err
			}
		}
	}
	var driftErr error
	if drift > 0 {
		driftErr = fmt.Errorf("%w: %s in %s; nothing restored for %s (use --force)", ErrDrift, english.Count(drift, "entry", "entries"), l.path, english.Plural(drift, "it", "them"))
	}
	if changed {
		out := l.finish(work)
		if err := l.check(out, nil); err != nil {
			return nil, err
		}
		res.Diff = Diff(l.path, l.orig, out)
		if !req.DryRun {
			if err := in.write(l, out, res); err != nil {
				return nil, err
			}
		}
	}
	if !req.DryRun && len(done) > 0 {
		for _, r := range done {
			m.remove(r)
		}
		if err := m.save(in.opts.DataDir); err != nil {
			return res, err
		}
	}
	return res, driftErr
}

// AddRequest describes a new server for Add.
type AddRequest struct {
	Client string
	Scope  Scope
	// Server: Name and either URL (with Transport, Headers in ctxkit's
	// ${VAR} syntax) or Command, Args and Env (values written as given).
	Server Server
	Force  bool // replace an existing entry of that name (install records the old one)
	DryRun bool
}

// Add writes a new entry, already wrapped. The file is created when missing.
func (in *Installer) Add(ctx context.Context, req AddRequest) (*Result, error) {
	s := req.Server
	if s.Name == "" || (s.URL == "" && s.Command == "") {
		return nil, fmt.Errorf("add: a name and a URL or a command are needed")
	}
	return in.locked(ctx, req.DryRun, func() (*Result, error) { return in.add(req) })
}

func (in *Installer) add(req AddRequest) (*Result, error) {
	s := req.Server
	l, es, res, err := in.begin(req.Client, req.Scope)
	if err != nil {
		return nil, err
	}
	members, block := l.newEntryText(s, in.opts.Executable)
	rec := manifestRecord{Client: l.c.Name, Scope: l.scope, Path: l.path, Keys: l.keys, Server: s.Name, Time: in.opts.Now().UTC()}
	var ed edit
	if old, ok := find(es, s.Name); ok {
		if !req.Force {
			return nil, fmt.Errorf("%w: %q in %s (use --force to replace it)", ErrExists, s.Name, l.path)
		}
		text := block
		if l.c.Format == FormatJSON {
			indent, unit, _ := l.jd.layout(old.j.val)
			text = renderObject(members, true, indent, unit)
		}
		text = l.eol(text)
		ed = edit{old.start, old.end, text}
		rec.Original, rec.Wrapped = l.text(old), text
		// Replacing an entry ctxkit wrote (install or add) keeps what the
		// manifest knows of the user's entry: its original text, or that
		// ctxkit added it, so uninstall still gives back the user's file.
		m, err := loadManifest(in.opts.DataDir)
		if err != nil {
			return nil, err
		}
		cur := l.text(old)
		for _, r := range m.at(l.c.Name, l.path, l.keys) {
			if r.Server == s.Name && (cur == r.Wrapped || l.equal(cur, r.Wrapped)) {
				rec.Original, rec.Added, rec.Lead, rec.Empty = r.Original, r.Added, r.Lead, r.Empty
			}
		}
		res.Changes = append(res.Changes, Change{s.Name, "replaced", ""})
	} else {
		ed = l.insertEdit(s.Name, members, block)
		rec.Added = true
		if l.td != nil {
			rec.Lead = ed.text[:len(ed.text)-len(l.eol(block))]
		} else if v, n, _ := l.jd.lookup(l.keys); n == len(l.keys) && len(v.Value.(*hujson.Object).Members) == 0 {
			rec.Empty = l.jd.raw(v)
		}
		res.Changes = append(res.Changes, Change{s.Name, "added", ""})
	}
	out := l.finish(apply(l.src, []edit{ed}))
	if err := l.check(out, map[string]string{s.Name: rec.Wrapped}); err != nil {
		return nil, err
	}
	if rec.Added {
		// manifestRecord the entry's text as it sits in the new file.
		nl := &loc{c: l.c, scope: l.scope, path: l.path, keys: l.keys, exe: l.exe}
		if err := nl.parse(out); err == nil {
			if nes, err := nl.entries(); err == nil {
				if e, ok := find(nes, s.Name); ok {
					rec.Wrapped = nl.text(e)
				}
			}
		}
	}
	return res, in.record(l, out, []manifestRecord{rec}, req.DryRun, res)
}

// Snippet is what `ctxkit add --print` shows.
type Snippet struct {
	Text string `json:"text"`           // the configuration to paste (JSON with the root key, or a TOML block)
	Link string `json:"link,omitempty"` // one-click install link (Cursor, VS Code)
}

// Snippet renders a new wrapped entry for the client without touching any file.
func (in *Installer) Snippet(client string, s Server) (Snippet, error) {
	c, err := Lookup(client)
	if err != nil {
		return Snippet{}, err
	}
	if c.Format == FormatTOML {
		return Snippet{Text: newTOMLEntry(c.RootKey, s, in.opts.Executable)}, nil
	}
	members := c.newJSONEntry(s, in.opts.Executable)
	text := renderObject([]rawMember{{name: c.RootKey, kids: []rawMember{{name: s.Name, kids: members}}}}, true, "", "  ") + "\n"
	sn := Snippet{Text: text}
	entry := renderObject(members, false, "", "")
	switch c.Name {
	case "cursor":
		sn.Link = "cursor://anysphere.cursor-deeplink/mcp/install?name=" + uriComponent(s.Name) +
			"&config=" + uriComponent(base64.StdEncoding.EncodeToString([]byte(entry)))
	case "vscode":
		named := renderObject(append([]rawMember{{name: "name", raw: jsonQuote(s.Name)}}, members...), false, "", "")
		sn.Link = "vscode:mcp/install?" + uriComponent(named)
	}
	return sn, nil
}

// uriComponent escapes like JavaScript's encodeURIComponent, which is what
// the clients decode their links with.
func uriComponent(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
