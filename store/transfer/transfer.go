// Package transfer copies everything one store.Backend holds into another
// (a SQLite setup into PostgreSQL, and back): offload workspaces, key-value
// entries, the registry (agents, revoked names, vaults with their grants,
// pins, document metadata and audit logs) and, per vault, its document
// files, its index (documents, chunks and vectors) and its episodes with
// their whole history.
//
// A copy is resumable: every unit (a workspace, a key, an agent, a vault
// record, a file, an indexed document with its chunks, an episode with its
// history, ...) is looked up in the destination first and skipped when it
// is there and identical, so a copy run again after an interruption
// completes it without duplicating anything. A unit that is there but
// different is an error naming it ([ErrDiffers]); nothing is overwritten.
//
// Units are compared in a canonical form ([Each]) that leaves out what
// legitimately differs between backends: vault ids (vaults are matched by
// scope and name), chunk ids, the sequence numbers of episode versions, a
// vault's folder, file times. After the copy, both backends are read again
// and summarized kind by kind ([Summarize]: a count and a checksum of the
// canonical forms), so that the report proves the copy from what the
// destination holds.
package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/index"
)

// ErrDiffers means a unit is in the destination already, different from
// the source's; the copy stops there and changes nothing of it.
var ErrDiffers = errors.New("is in the destination already, different")

// Options tune a copy.
type Options struct {
	// Folder chooses the folder of a vault copied to a backend that keeps
	// vault files in folders (not hosted); it is given the source's record
	// (whose Dir is empty for a hosted vault) and "" keeps the source's
	// folder. A hosted vault with no folder chosen cannot be copied there.
	// Folders are created (0700 for global vaults, 0755 for local ones).
	Folder func(v store.VaultRecord) string
	// Now is the time key-value entries are read at (those expired then
	// are not copied); zero means time.Now().
	Now time.Time
	// Progress, when set, is called after each unit is copied, or found in
	// the destination as it is in the source.
	Progress func(kind Kind, key string, copied bool)
	// EpisodeBatch is how many episodes are imported in one transaction
	// (more when their disputes and successors tie them together); 0
	// means 500.
	EpisodeBatch int
}

// Line is the report of one kind.
type Line struct {
	Kind         Kind
	Source, Dest Side
	// Copied counts the units this copy wrote; Present those it found in
	// the destination already, identical.
	Copied, Present int
}

// Report is what a copy did and found, by kind, in the order of Kinds.
type Report struct {
	Lines []Line
}

// Mismatched returns the kinds whose count or checksum differs between
// the source and the destination.
func (r *Report) Mismatched() []Kind {
	var out []Kind
	for _, l := range r.Lines {
		if l.Source != l.Dest {
			out = append(out, l.Kind)
		}
	}
	return out
}

// Copy copies everything src holds into dst and reports, per kind, what it
// wrote and what both hold after it. The destination should be empty, or
// hold an earlier, interrupted copy of the same source: what it holds
// besides shows as a mismatch in the report. On an error the report has
// the counts of what was copied until then, and no summaries.
func Copy(ctx context.Context, src, dst store.Backend, opts Options) (*Report, error) {
	c := &copier{src: src, dst: dst, opts: opts, now: opts.Now, copied: map[Kind]int{}, present: map[Kind]int{}}
	if c.now.IsZero() {
		c.now = time.Now()
	}
	if c.opts.EpisodeBatch <= 0 {
		c.opts.EpisodeBatch = 500
	}
	err := c.run(ctx)
	r := &Report{}
	for _, k := range Kinds {
		r.Lines = append(r.Lines, Line{Kind: k, Copied: c.copied[k], Present: c.present[k]})
	}
	if err != nil {
		return r, err
	}
	ss, err := Summarize(ctx, src, c.now)
	if err != nil {
		return r, fmt.Errorf("summarize the source: %w", err)
	}
	ds, err := Summarize(ctx, dst, c.now)
	if err != nil {
		return r, fmt.Errorf("summarize the destination: %w", err)
	}
	for i := range r.Lines {
		r.Lines[i].Source, r.Lines[i].Dest = ss[r.Lines[i].Kind], ds[r.Lines[i].Kind]
	}
	return r, nil
}

type copier struct {
	src, dst store.Backend
	opts     Options
	now      time.Time
	copied   map[Kind]int
	present  map[Kind]int
}

// done records a unit settled.
func (c *copier) done(k Kind, key string, copied bool) {
	if copied {
		c.copied[k]++
	} else {
		c.present[k]++
	}
	if c.opts.Progress != nil {
		c.opts.Progress(k, key, copied)
	}
}

// differs is the error of a unit that is in the destination, different.
func differs(k Kind, key, why string) error {
	if why != "" {
		why = " (" + why + ")"
	}
	return fmt.Errorf("%s %q%s %w", k, strings.ReplaceAll(key, "\x00", ": "), why, ErrDiffers)
}

func (c *copier) run(ctx context.Context) error {
	if err := c.workspaces(ctx); err != nil {
		return fmt.Errorf("copy workspaces: %w", err)
	}
	if err := c.kv(ctx); err != nil {
		return fmt.Errorf("copy key-value entries: %w", err)
	}
	if err := c.agents(ctx); err != nil {
		return fmt.Errorf("copy agents: %w", err)
	}
	return c.vaults(ctx)
}

func (c *copier) workspaces(ctx context.Context) error {
	from, to := c.src.Workspaces(), c.dst.Workspaces()
	list, err := from.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	slices.Reverse(list) // oldest first
	for _, w := range list {
		raw, err := from.Raw(ctx, w.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("workspace %s: %w", w.ID, err)
		}
		content, err := readContent(ctx, from, w)
		if err != nil {
			return err
		}
		if dw, err := to.Stat(ctx, w.ID); err == nil {
			there, err := canonWorkspace(ctx, to, dw)
			if err != nil {
				return err
			}
			if !bytes.Equal(there, []byte(mustJSON(workspaceForm(w, raw, content)))) {
				return differs(Workspaces, w.ID, "")
			}
			c.done(Workspaces, w.ID, false)
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("workspace %s in the destination: %w", w.ID, err)
		}
		content.Raw = raw
		ws := *w
		if err := to.Put(ctx, &ws, content); err != nil {
			return fmt.Errorf("workspace %s: %w", w.ID, err)
		}
		c.done(Workspaces, w.ID, true)
	}
	return nil
}

func (c *copier) kv(ctx context.Context) error {
	type entry struct {
		value   []byte
		expires time.Time
	}
	there := map[string]entry{}
	to := c.dst.KV()
	if err := to.Each(ctx, c.now, func(key string, value []byte, expires time.Time) error {
		there[key] = entry{bytes.Clone(value), expires}
		return nil
	}); err != nil {
		return fmt.Errorf("read the destination: %w", err)
	}
	return c.src.KV().Each(ctx, c.now, func(key string, value []byte, expires time.Time) error {
		if e, ok := there[key]; ok {
			if !bytes.Equal(canonKV(e.value, e.expires), canonKV(value, expires)) {
				return differs(KV, key, "")
			}
			c.done(KV, key, false)
			return nil
		}
		var ttl time.Duration
		if !expires.IsZero() {
			ttl = expires.Sub(c.now)
		}
		if err := to.Put(ctx, key, value, c.now, ttl); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		c.done(KV, key, true)
		return nil
	})
}

// placeholderHash is the token hash of the agent created in the
// destination to be revoked at once: no token hashes to it (a token's
// hash is hex), and it names the agent, so that it is unique.
func placeholderHash(name string) string { return "revoked:" + name }

func (c *copier) agents(ctx context.Context) error {
	from, to := c.src.Registry(), c.dst.Registry()
	agents, err := from.Agents(ctx)
	if err != nil {
		return err
	}
	revoked, err := from.RevokedAgents(ctx)
	if err != nil {
		return err
	}
	live, err := to.Agents(ctx)
	if err != nil {
		return fmt.Errorf("read the destination: %w", err)
	}
	there := map[string]store.AgentRecord{}
	for _, a := range live {
		there[a.Name] = a
	}
	gone, err := to.RevokedAgents(ctx)
	if err != nil {
		return fmt.Errorf("read the destination: %w", err)
	}
	for _, a := range agents {
		if _, ok := gone[a.Name]; ok {
			return differs(Agents, a.Name, "revoked in the destination")
		}
		d, ok := there[a.Name]
		switch {
		case ok && bytes.Equal(canonAgent(d), canonAgent(a)):
			c.done(Agents, a.Name, false)
			continue
		case ok && d.LastUsed.IsZero() && d.TokenHash == a.TokenHash && ts(d.Created) == ts(a.Created):
			// created by an interrupted copy, not yet touched
		case ok:
			return differs(Agents, a.Name, "")
		default:
			rec := a
			rec.LastUsed = time.Time{}
			if err := to.CreateAgent(ctx, rec); err != nil {
				return fmt.Errorf("agent %q: %w", a.Name, err)
			}
		}
		if !a.LastUsed.IsZero() {
			if err := to.TouchAgent(ctx, a.Name, a.LastUsed); err != nil {
				return fmt.Errorf("agent %q: %w", a.Name, err)
			}
		}
		c.done(Agents, a.Name, true)
	}
	for _, name := range slices.Sorted(maps.Keys(revoked)) {
		at := revoked[name]
		if when, ok := gone[name]; ok {
			if ts(when) != ts(at) {
				return differs(Revoked, name, fmt.Sprintf("revoked at %s there, at %s here", ts(when), ts(at)))
			}
			c.done(Revoked, name, false)
			continue
		}
		if d, ok := there[name]; ok {
			if d.TokenHash != placeholderHash(name) {
				return differs(Revoked, name, "a live agent in the destination")
			}
			// created by an interrupted copy, not yet revoked
		} else if err := to.CreateAgent(ctx, store.AgentRecord{Name: name, TokenHash: placeholderHash(name), Created: at}); err != nil {
			return fmt.Errorf("revoked agent %q: %w", name, err)
		}
		if err := to.RevokeAgent(ctx, name, at); err != nil {
			return fmt.Errorf("revoked agent %q: %w", name, err)
		}
		c.done(Revoked, name, true)
	}
	return nil
}

func (c *copier) vaults(ctx context.Context) error {
	from, to := c.src.Registry(), c.dst.Registry()
	vaults, err := from.Vaults(ctx)
	if err != nil {
		return fmt.Errorf("list vaults: %w", err)
	}
	existing, err := to.Vaults(ctx)
	if err != nil {
		return fmt.Errorf("list the destination's vaults: %w", err)
	}
	there := map[string]store.VaultRecord{}
	for _, v := range existing {
		there[vaultKey(v)] = v
	}
	for _, v := range vaults {
		key := vaultKey(v)
		d, ok := there[key]
		if ok {
			if !bytes.Equal(canonVault(d), canonVault(v)) {
				return differs(Vaults, key, "")
			}
			c.done(Vaults, key, false)
		} else {
			rec := v
			rec.ID = ""
			if rec.Dir, err = c.folder(v); err != nil {
				return err
			}
			rec.Grants = maps.Clone(v.Grants)
			if d, err = to.CreateVault(ctx, rec, nil); err != nil {
				return fmt.Errorf("vault %s: %w", key, err)
			}
			c.done(Vaults, key, true)
		}
		if !c.dst.Hosted() && d.Dir != "" {
			mode := os.FileMode(0o755)
			if d.Scope == store.ScopeGlobal {
				mode = 0o700
			}
			if err := os.MkdirAll(d.Dir, mode); err != nil {
				return fmt.Errorf("vault %s: create its folder: %w", key, err)
			}
		}
		if err := c.vault(ctx, v, d); err != nil {
			return fmt.Errorf("vault %s: %w", key, err)
		}
	}
	return nil
}

// folder is the Dir of the destination's record of vault v.
func (c *copier) folder(v store.VaultRecord) (string, error) {
	if c.dst.Hosted() {
		return "", nil
	}
	if c.opts.Folder != nil {
		if dir := c.opts.Folder(v); dir != "" {
			return dir, nil
		}
	}
	if v.Dir == "" {
		return "", fmt.Errorf("vault %s is hosted by the source, and no folder was chosen for it in the destination", vaultKey(v))
	}
	return v.Dir, nil
}

// vault copies what the source holds for vault s into the destination's
// vault d.
func (c *copier) vault(ctx context.Context, s, d store.VaultRecord) error {
	from, to := c.src.Registry(), c.dst.Registry()
	key := vaultKey(s)
	if p, ok, err := from.Pin(ctx, s.ID); err != nil {
		return fmt.Errorf("pin: %w", err)
	} else if ok {
		dp, dok, err := to.Pin(ctx, d.ID)
		switch {
		case err != nil:
			return fmt.Errorf("pin in the destination: %w", err)
		case dok && dp != p:
			return differs(Pins, key, "")
		case dok:
			c.done(Pins, key, false)
		default:
			if err := to.SetPin(ctx, d.ID, &p); err != nil {
				return fmt.Errorf("pin: %w", err)
			}
			c.done(Pins, key, true)
		}
	}
	if err := c.docMeta(ctx, s, d); err != nil {
		return err
	}
	if err := c.audit(ctx, s, d); err != nil {
		return err
	}
	if err := c.files(ctx, s, d); err != nil {
		return err
	}
	if err := c.index(ctx, s, d); err != nil {
		return err
	}
	return c.episodes(ctx, s, d)
}

func (c *copier) docMeta(ctx context.Context, s, d store.VaultRecord) error {
	key := vaultKey(s)
	meta, err := c.src.Registry().DocMeta(ctx, s.ID)
	if err != nil {
		return fmt.Errorf("document metadata: %w", err)
	}
	there, err := c.dst.Registry().DocMeta(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("document metadata in the destination: %w", err)
	}
	missing := map[string]map[string]string{}
	var present []string
	for _, p := range slices.Sorted(maps.Keys(meta)) {
		m := meta[p]
		if m == nil {
			m = map[string]string{} // a nil map would remove it
		}
		if dm, ok := there[p]; ok {
			if !bytes.Equal(canonMeta(dm), canonMeta(m)) {
				return differs(DocMeta, subKey(key, p), "")
			}
			present = append(present, p)
			continue
		}
		missing[p] = m
	}
	if len(missing) > 0 {
		if err := c.dst.Registry().SetDocMeta(ctx, d.ID, missing); err != nil {
			return fmt.Errorf("document metadata: %w", err)
		}
	}
	for _, p := range present {
		c.done(DocMeta, subKey(key, p), false)
	}
	for _, p := range slices.Sorted(maps.Keys(missing)) {
		c.done(DocMeta, subKey(key, p), true)
	}
	return nil
}

// audit appends the source's events the destination's log lacks: its log
// must be a beginning of the source's.
func (c *copier) audit(ctx context.Context, s, d store.VaultRecord) error {
	key := vaultKey(s)
	events, err := c.src.Registry().Audit(ctx, s.ID, 0)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	there, err := c.dst.Registry().Audit(ctx, d.ID, 0)
	if err != nil {
		return fmt.Errorf("audit log in the destination: %w", err)
	}
	if len(there) > len(events) {
		return differs(Audit, key, fmt.Sprintf("the destination's log has %d events, the source's %d", len(there), len(events)))
	}
	for i, e := range there {
		if !bytes.Equal(canonAudit(e), canonAudit(events[i])) {
			return differs(Audit, auditKey(key, i), fmt.Sprintf("event %d of the log", i+1))
		}
		c.done(Audit, auditKey(key, i), false)
	}
	for i := len(there); i < len(events); i++ {
		if err := c.dst.Registry().AppendAudit(ctx, d.ID, events[i]); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		c.done(Audit, auditKey(key, i), true)
	}
	return nil
}

func (c *copier) files(ctx context.Context, s, d store.VaultRecord) error {
	key := vaultKey(s)
	from, err := c.src.Files(ctx, s)
	if err != nil {
		return err
	}
	to, err := c.dst.Files(ctx, d)
	if err != nil {
		return err
	}
	return from.Walk(ctx, "", func(fi store.FileInfo) error {
		data, err := from.Read(ctx, fi.Path)
		if err != nil {
			return fmt.Errorf("read %s: %w", fi.Path, err)
		}
		fk := subKey(key, fi.Path)
		there, err := to.Read(ctx, fi.Path)
		switch {
		case err == nil && bytes.Equal(there, data):
			c.done(Files, fk, false)
			return nil
		case err == nil:
			return differs(Files, fk, "")
		case !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("read %s in the destination: %w", fi.Path, err)
		}
		if err := to.Write(ctx, fi.Path, data, false); err != nil {
			return fmt.Errorf("write %s: %w", fi.Path, err)
		}
		c.done(Files, fk, true)
		return nil
	})
}

func (c *copier) index(ctx context.Context, s, d store.VaultRecord) error {
	key := vaultKey(s)
	from, err := c.src.Index(ctx, s.ID)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	to, err := c.dst.Index(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("index in the destination: %w", err)
	}
	return eachDoc(ctx, from, func(doc index.Doc, chunks []index.Chunk) error {
		dk := subKey(key, doc.Path)
		copied := false
		if dd, err := to.Doc(ctx, doc.Path); err == nil {
			dchunks, err := to.Chunks(ctx, doc.Path)
			if err != nil {
				return fmt.Errorf("index document %s in the destination: %w", doc.Path, err)
			}
			if !bytes.Equal(canonDocChunks(dd, dchunks), canonDocChunks(doc, chunks)) {
				return differs(IndexDocs, dk, "")
			}
		} else if !errors.Is(err, index.ErrNotFound) {
			return fmt.Errorf("index document %s in the destination: %w", doc.Path, err)
		} else {
			put := make([]index.Chunk, len(chunks))
			for i, ch := range chunks {
				ch.ID, ch.Doc = 0, doc.Path
				put[i] = ch
			}
			if err := to.Put(ctx, doc, put); err != nil {
				return fmt.Errorf("index document %s: %w", doc.Path, err)
			}
			copied = true
		}
		for _, ch := range chunks {
			c.done(IndexChunks, chunkKey(key, doc.Path, ch.Index), copied)
		}
		c.done(IndexDocs, dk, copied)
		return nil
	})
}

func (c *copier) episodes(ctx context.Context, s, d store.VaultRecord) error {
	key := vaultKey(s)
	from, err := c.src.Episodes(ctx, s.ID)
	if err != nil {
		return fmt.Errorf("episodes: %w", err)
	}
	to, err := c.dst.Episodes(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("episodes in the destination: %w", err)
	}
	there := map[string][sha256.Size]byte{}
	if err := to.Export(ctx, func(r *episodic.Record) error {
		there[r.Statement.ID] = sha256.Sum256(canonRecord(r))
		return nil
	}); err != nil {
		return fmt.Errorf("episodes in the destination: %w", err)
	}
	var pending []*episodic.Record
	if err := from.Export(ctx, func(r *episodic.Record) error {
		ek := subKey(key, r.Statement.ID)
		if h, ok := there[r.Statement.ID]; ok {
			if h != sha256.Sum256(canonRecord(r)) {
				return differs(Episodes, ek, "")
			}
			c.done(Episodes, ek, false)
			return nil
		}
		pending = append(pending, r)
		return nil
	}); err != nil {
		return fmt.Errorf("episodes: %w", err)
	}
	for _, batch := range batches(pending, c.opts.EpisodeBatch) {
		if err := to.Import(ctx, batch); err != nil {
			return fmt.Errorf("import episodes: %w", err)
		}
		for _, r := range batch {
			c.done(Episodes, subKey(key, r.Statement.ID), true)
		}
	}
	return nil
}

// batches cuts recs into batches of about size records, never between two
// records that name each other (a dispute, a successor): an import must
// find every statement a record names in the store or in its own batch.
func batches(recs []*episodic.Record, size int) [][]*episodic.Record {
	pos := make(map[string]int, len(recs))
	for i, r := range recs {
		pos[r.Statement.ID] = i
	}
	var out [][]*episodic.Record
	start, reach := 0, -1
	for i, r := range recs {
		refs := []string{r.Statement.Supersedes, r.Statement.Revises}
		for _, d := range r.Disputes {
			refs = append(refs, d.A, d.B)
		}
		for _, id := range refs {
			if j, ok := pos[id]; ok && j > reach {
				reach = j
			}
		}
		if i == len(recs)-1 || (i >= reach && i+1-start >= size) {
			out = append(out, recs[start:i+1])
			start = i + 1
		}
	}
	return out
}
