package transfer

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/index"
)

// Kind is one kind of unit a backend holds.
type Kind string

// The kinds, in the order they are copied and reported.
const (
	Workspaces  Kind = "workspaces"
	KV          Kind = "kv"
	Agents      Kind = "agents"
	Revoked     Kind = "revoked agents"
	Vaults      Kind = "vaults"
	Pins        Kind = "pins"
	DocMeta     Kind = "document metadata"
	Audit       Kind = "audit events"
	Files       Kind = "files"
	IndexDocs   Kind = "index documents"
	IndexChunks Kind = "index chunks"
	Episodes    Kind = "episodes"
)

// Kinds are every kind, in order.
var Kinds = []Kind{Workspaces, KV, Agents, Revoked, Vaults, Pins, DocMeta, Audit, Files, IndexDocs, IndexChunks, Episodes}

// Unit is one unit of a backend in its canonical form: what the copy
// keeps, without what legitimately differs between backends (vault ids,
// chunk ids, episode version sequence numbers, a vault's folder, file
// times), times in UTC at microsecond precision.
type Unit struct {
	Kind Kind
	// Key names the unit within its kind: a workspace id, an agent's name,
	// "scope/vault" and, for what is inside a vault, a path, a position or
	// an episode id after it, separated by NUL bytes.
	Key string
	// Data is the canonical form (JSON), which equals on both sides when
	// the unit was copied whole.
	Data []byte
}

// Side is what one backend holds of one kind.
type Side struct {
	Count int
	// Sum is the SHA-256, in hex, of the kind's units in key order (each
	// unit's key and canonical form, length-prefixed).
	Sum string
}

// Summary is what a backend holds, by kind.
type Summary map[Kind]Side

// Summarize counts and checksums everything b holds, kind by kind.
func Summarize(ctx context.Context, b store.Backend, now time.Time) (Summary, error) {
	units := map[Kind][]keySum{}
	err := Each(ctx, b, now, func(u Unit) error {
		units[u.Kind] = append(units[u.Kind], keySum{u.Key, sha256.Sum256(u.Data)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := Summary{}
	for _, k := range Kinds {
		us := units[k]
		slices.SortFunc(us, func(a, b keySum) int { return strings.Compare(a.key, b.key) })
		h := sha256.New()
		for _, u := range us {
			writeField(h, []byte(u.key))
			h.Write(u.sum[:])
		}
		out[k] = Side{Count: len(us), Sum: hex.EncodeToString(h.Sum(nil))}
	}
	return out, nil
}

type keySum struct {
	key string
	sum [sha256.Size]byte
}

// writeField writes b to h with its length first, so that fields cannot
// run into each other.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	for i := range n {
		n[i] = byte(uint64(len(b)) >> (8 * i))
	}
	h.Write(n[:])
	h.Write(b)
}

// Each calls fn with every unit b holds in its canonical form: KV entries
// live at now; per vault, its files, index and episodes.
func Each(ctx context.Context, b store.Backend, now time.Time, fn func(Unit) error) error {
	ws := b.Workspaces()
	list, err := ws.List(ctx, store.ListOptions{})
	if err != nil {
		return fmt.Errorf("list workspaces: %w", err)
	}
	for _, w := range list {
		data, err := canonWorkspace(ctx, ws, w)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if err := fn(Unit{Workspaces, w.ID, data}); err != nil {
			return err
		}
	}
	err = b.KV().Each(ctx, now, func(key string, value []byte, expires time.Time) error {
		return fn(Unit{KV, key, canonKV(value, expires)})
	})
	if err != nil {
		return fmt.Errorf("list keys: %w", err)
	}
	reg := b.Registry()
	agents, err := reg.Agents(ctx)
	if err != nil {
		return fmt.Errorf("list agents: %w", err)
	}
	for _, a := range agents {
		if err := fn(Unit{Agents, a.Name, canonAgent(a)}); err != nil {
			return err
		}
	}
	revoked, err := reg.RevokedAgents(ctx)
	if err != nil {
		return fmt.Errorf("list revoked agents: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(revoked)) {
		if err := fn(Unit{Revoked, name, canonRevoked(revoked[name])}); err != nil {
			return err
		}
	}
	vaults, err := reg.Vaults(ctx)
	if err != nil {
		return fmt.Errorf("list vaults: %w", err)
	}
	for _, v := range vaults {
		if err := eachOfVault(ctx, b, v, fn); err != nil {
			return fmt.Errorf("vault %s: %w", vaultKey(v), err)
		}
	}
	return nil
}

// eachOfVault calls fn with the units of one vault.
func eachOfVault(ctx context.Context, b store.Backend, v store.VaultRecord, fn func(Unit) error) error {
	reg := b.Registry()
	vk := vaultKey(v)
	if err := fn(Unit{Vaults, vk, canonVault(v)}); err != nil {
		return err
	}
	if p, ok, err := reg.Pin(ctx, v.ID); err != nil {
		return fmt.Errorf("pin: %w", err)
	} else if ok {
		if err := fn(Unit{Pins, vk, canonPin(p)}); err != nil {
			return err
		}
	}
	meta, err := reg.DocMeta(ctx, v.ID)
	if err != nil {
		return fmt.Errorf("document metadata: %w", err)
	}
	for _, p := range slices.Sorted(maps.Keys(meta)) {
		if err := fn(Unit{DocMeta, subKey(vk, p), canonMeta(meta[p])}); err != nil {
			return err
		}
	}
	events, err := reg.Audit(ctx, v.ID, 0)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	for i, e := range events {
		if err := fn(Unit{Audit, auditKey(vk, i), canonAudit(e)}); err != nil {
			return err
		}
	}
	files, err := b.Files(ctx, v)
	if err != nil {
		return err
	}
	err = files.Walk(ctx, "", func(fi store.FileInfo) error {
		data, err := files.Read(ctx, fi.Path)
		if err != nil {
			return fmt.Errorf("read %s: %w", fi.Path, err)
		}
		return fn(Unit{Files, subKey(vk, fi.Path), canonFile(data)})
	})
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	x, err := b.Index(ctx, v.ID)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	err = eachDoc(ctx, x, func(d index.Doc, chunks []index.Chunk) error {
		if err := fn(Unit{IndexDocs, subKey(vk, d.Path), canonDoc(d)}); err != nil {
			return err
		}
		for _, c := range chunks {
			if err := fn(Unit{IndexChunks, chunkKey(vk, d.Path, c.Index), canonChunk(c)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	eps, err := b.Episodes(ctx, v.ID)
	if err != nil {
		return fmt.Errorf("episodes: %w", err)
	}
	return eps.Export(ctx, func(r *episodic.Record) error {
		return fn(Unit{Episodes, subKey(vk, r.Statement.ID), canonRecord(r)})
	})
}

// vaultKey names a vault on every backend: its scope and name.
func vaultKey(v store.VaultRecord) string { return v.Scope + "/" + v.Name }

func subKey(vault, sub string) string { return vault + "\x00" + sub }

func auditKey(vault string, i int) string { return fmt.Sprintf("%s\x00%09d", vault, i) }

func chunkKey(vault, doc string, i int) string { return fmt.Sprintf("%s\x00%s\x00%06d", vault, doc, i) }

// ts is a time in canonical form: UTC, microseconds; "" for the zero time.
func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z")
}

func tsp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return ts(*t)
}

// sum is the hex SHA-256 of b.
func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// canonJSON is a JSON text with its object keys sorted and insignificant
// space removed (numbers kept as written), so that a backend that keeps
// JSON in another form (PostgreSQL's jsonb) gives the same; "" for none.
func canonJSON(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "invalid:" + sum(b)
	}
	return mustJSON(v)
}

// canonAny is a Go value decoded from JSON in canonical form ("" for nil
// or an empty map).
func canonAny(v any) string {
	if m, ok := v.(map[string]any); v == nil || (ok && len(m) == 0) {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "invalid"
	}
	return canonJSON(b)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("transfer: canonical form: %v", err)) // only plain data is encoded
	}
	return string(b)
}

// vector is a vector in canonical form: its floats' bits (nil for none).
func vector(v []float32) []uint32 {
	if len(v) == 0 {
		return nil
	}
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

func canonWorkspace(ctx context.Context, s store.Store, w *store.Workspace) ([]byte, error) {
	raw, err := s.Raw(ctx, w.ID)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", w.ID, err)
	}
	c, err := readContent(ctx, s, w)
	if err != nil {
		return nil, err
	}
	return []byte(mustJSON(workspaceForm(w, raw, c))), nil
}

// workspaceForm is a workspace's canonical form, given its content.
func workspaceForm(w *store.Workspace, raw []byte, c *store.Content) any {
	h := sha256.New()
	switch w.Shape {
	case store.ShapeList:
		for _, it := range c.Items {
			writeField(h, it)
		}
	case store.ShapeDict:
		writeField(h, c.Value)
	default:
		writeField(h, []byte(c.Text))
	}
	return struct {
		ID, Type, Shape, Format      string
		Items                        int
		Chars                        int64
		Tokens                       int
		Schema, Producer, Args, Meta string
		Session, Created, Accessed   string
		TTL                          int64
		Expires, RawSum, Content     string
	}{w.ID, w.Type, string(w.Shape), w.Format, w.Items, w.Chars, w.Tokens,
		canonJSON(w.Schema), w.Producer, canonJSON(w.Args), canonAny(w.Meta),
		w.Session, ts(w.CreatedAt), ts(w.AccessedAt), int64(w.TTL.Truncate(time.Microsecond)),
		ts(w.ExpiresAt), sum(raw), hex.EncodeToString(h.Sum(nil))}
}

// textWindow is how many characters of a text workspace are read at once.
const textWindow = 1 << 20

// readContent reads a workspace's content (without Raw).
func readContent(ctx context.Context, s store.Store, w *store.Workspace) (*store.Content, error) {
	c := &store.Content{}
	switch w.Shape {
	case store.ShapeList:
		for it, err := range s.ScanItems(ctx, w.ID) {
			if err != nil {
				return nil, fmt.Errorf("workspace %s: items: %w", w.ID, err)
			}
			c.Items = append(c.Items, bytes.Clone(it))
		}
		if c.Items == nil {
			c.Items = []json.RawMessage{}
		}
	case store.ShapeDict:
		v, err := s.Value(ctx, w.ID)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: value: %w", w.ID, err)
		}
		c.Value = v
	default:
		var sb strings.Builder
		for off := int64(0); ; {
			part, err := s.TextSlice(ctx, w.ID, off, textWindow)
			if err != nil {
				return nil, fmt.Errorf("workspace %s: text: %w", w.ID, err)
			}
			sb.WriteString(part)
			n := int64(len([]rune(part)))
			off += n
			if n < textWindow {
				break
			}
		}
		c.Text = sb.String()
	}
	return c, nil
}

func canonKV(value []byte, expires time.Time) []byte {
	return []byte(mustJSON(struct{ Value, Expires string }{sum(value), ts(expires)}))
}

func canonAgent(a store.AgentRecord) []byte {
	return []byte(mustJSON(struct{ Name, TokenHash, Created, LastUsed string }{a.Name, a.TokenHash, ts(a.Created), ts(a.LastUsed)}))
}

func canonRevoked(at time.Time) []byte {
	return []byte(mustJSON(struct{ Revoked string }{ts(at)}))
}

func canonVault(v store.VaultRecord) []byte {
	grants := map[string]store.Grant{}
	maps.Copy(grants, v.Grants)
	return []byte(mustJSON(struct {
		Name, Type, Scope string
		Restricted        bool
		Grants            map[string]store.Grant
		EmbeddingModel    string
	}{v.Name, v.Type, v.Scope, v.Restricted, grants, v.EmbeddingModel}))
}

func canonPin(p store.Pin) []byte { return []byte(mustJSON(p)) }

func canonMeta(m map[string]string) []byte {
	if m == nil {
		m = map[string]string{}
	}
	return []byte(mustJSON(m))
}

func canonAudit(e store.AuditEvent) []byte {
	return []byte(mustJSON(struct {
		Time, Agent, Action, Path, Outcome, Reason, Detail string
		Repeated                                           int
	}{ts(e.Time), e.Agent, e.Action, e.Path, e.Outcome, e.Reason, e.Detail, e.Repeated}))
}

func canonFile(data []byte) []byte {
	return []byte(mustJSON(struct {
		Size int
		Sum  string
	}{len(data), sum(data)}))
}

func canonDoc(d index.Doc) []byte {
	meta := map[string]string{}
	maps.Copy(meta, d.Meta)
	return []byte(mustJSON(struct {
		Hash    string
		Meta    map[string]string
		Chunks  int
		Indexed string
	}{d.Hash, meta, d.Chunks, ts(d.Indexed)}))
}

func canonChunk(c index.Chunk) []byte {
	return []byte(mustJSON(struct {
		Heading string
		Loc     index.Locator
		Text    string
		Vector  []uint32
	}{c.Heading, c.Loc, c.Text, vector(c.Vector)}))
}

// eachDoc calls fn with every document of x and its chunks; a document
// deleted while the index is read is passed over.
func eachDoc(ctx context.Context, x index.Index, fn func(index.Doc, []index.Chunk) error) error {
	docs, err := x.Docs(ctx)
	if err != nil {
		return fmt.Errorf("index documents: %w", err)
	}
	for _, d := range docs {
		chunks, err := x.Chunks(ctx, d.Path)
		if errors.Is(err, index.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("index document %s: %w", d.Path, err)
		}
		if err := fn(d, chunks); err != nil {
			return err
		}
	}
	return nil
}

// canonDocChunks is a document with its chunks, as the copy compares them.
func canonDocChunks(d index.Doc, cs []index.Chunk) []byte {
	b := append(canonDoc(d), '\n')
	for _, c := range cs {
		b = append(b, canonChunk(c)...)
		b = append(b, '\n')
	}
	return b
}

// canonRecord is an episode record without its versions' sequence numbers
// (which order them, and which each store assigns), its parts in an order
// of their own.
func canonRecord(r *episodic.Record) []byte {
	st := r.Statement
	entities := st.Entities
	if len(entities) == 0 {
		entities = nil
	}
	type version struct{ ValidFrom, ValidTo, RecordedAt, ClosedAt, State, Note string }
	type att struct{ At, Source, RecordedAt string }
	type dispute struct{ A, B, Note, RecordedAt string }
	vs := slices.Clone(r.Versions)
	slices.SortStableFunc(vs, func(a, b episodic.Version) int { return cmp.Compare(a.Seq, b.Seq) })
	var versions []version
	for _, v := range vs {
		versions = append(versions, version{ts(v.ValidFrom), tsp(v.ValidTo), ts(v.RecordedAt), tsp(v.ClosedAt), string(v.State), v.Note})
	}
	var atts []att
	for _, a := range r.Attestations {
		atts = append(atts, att{ts(a.At), a.Source, ts(a.RecordedAt)})
	}
	slices.SortFunc(atts, func(a, b att) int { return cmp.Compare(mustJSON(a), mustJSON(b)) })
	var disputes []dispute
	for _, d := range r.Disputes {
		disputes = append(disputes, dispute{d.A, d.B, d.Note, ts(d.RecordedAt)})
	}
	slices.SortFunc(disputes, func(a, b dispute) int { return cmp.Compare(mustJSON(a), mustJSON(b)) })
	var recalls []string
	for _, rc := range r.Recalls {
		recalls = append(recalls, ts(rc.RecordedAt))
	}
	slices.Sort(recalls)
	return []byte(mustJSON(struct {
		ID, Content          string
		Entities             []string
		Source               string
		Confidence, Salience float64
		OccurredAt, Metadata string
		Supersedes, Revises  string
		Embedding            []uint32
		Versions             []version
		Attestations         []att
		Disputes             []dispute
		Recalls              []string
	}{st.ID, st.Content, entities, st.Source, st.Confidence, st.Salience, tsp(st.OccurredAt), canonAny(st.Metadata),
		st.Supersedes, st.Revises, vector(st.Embedding), versions, atts, disputes, recalls}))
}
