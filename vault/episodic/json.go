package episodic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// EpisodeJSON is the wire shape of an episode, the one every front end
// sends: the reference system's field names, then what the append-only
// model adds. Times are in TimeFormat; a nil one is null.
type EpisodeJSON struct {
	ID             string         `json:"id" jsonschema:"the statement's id, stable across its versions"`
	Content        string         `json:"content"`
	Entities       []string       `json:"entities"`
	Source         string         `json:"source"`
	Confidence     float64        `json:"confidence"`
	Salience       float64        `json:"salience"`
	OccurredAt     *string        `json:"occurred_at"`
	ValidFrom      string         `json:"valid_from" jsonschema:"when it started to hold in the world"`
	ValidTo        *string        `json:"valid_to" jsonschema:"when it stopped holding; null while no end is known"`
	RecordedAt     string         `json:"recorded_at" jsonschema:"when the vault first recorded it"`
	InvalidatedAt  *string        `json:"invalidated_at" jsonschema:"when the vault stopped holding it open; null while open"`
	SupersededBy   *string        `json:"superseded_by"`
	RecallCount    int            `json:"recall_count"`
	LastRecalledAt *string        `json:"last_recalled_at"`
	Metadata       map[string]any `json:"metadata"`

	State             State    `json:"state" jsonschema:"open, invalidated, superseded or revised"`
	InvalidationNote  string   `json:"invalidation_reason,omitempty"`
	Supersedes        string   `json:"supersedes,omitempty"`
	Revises           string   `json:"revises,omitempty"`
	RevisedBy         string   `json:"revised_by,omitempty"`
	ConfirmedCount    int      `json:"confirmed_count"`
	LastConfirmedAt   *string  `json:"last_confirmed_at"`
	DisputedWith      []string `json:"disputed_with" jsonschema:"open statements this one is disputed with"`
	Version           int64    `json:"version"`
	VersionRecordedAt string   `json:"version_recorded_at"`
}

// JSON returns the episode's wire shape (empty lists and objects, not
// null).
func (e *Episode) JSON() EpisodeJSON {
	w := EpisodeJSON{
		ID: e.ID, Content: e.Content, Entities: e.Entities, Source: e.Source, Confidence: e.Confidence, Salience: e.Salience,
		OccurredAt: FormatTimePtr(e.OccurredAt), ValidFrom: FormatTime(e.ValidFrom), ValidTo: FormatTimePtr(e.ValidTo),
		RecordedAt: FormatTime(e.FirstRecordedAt), InvalidatedAt: FormatTimePtr(e.InvalidatedAt), RecallCount: e.RecallCount,
		LastRecalledAt: FormatTimePtr(e.LastRecalledAt), Metadata: e.Metadata, State: e.State, InvalidationNote: e.Note,
		Supersedes: e.Supersedes, Revises: e.Revises, RevisedBy: e.RevisedBy, ConfirmedCount: e.ConfirmedCount,
		LastConfirmedAt: FormatTimePtr(e.LastConfirmedAt), DisputedWith: e.DisputedWith, Version: e.Seq,
		VersionRecordedAt: FormatTime(e.RecordedAt),
	}
	if e.SupersededBy != "" {
		w.SupersededBy = &e.SupersededBy
	}
	if w.Entities == nil {
		w.Entities = []string{}
	}
	if w.Metadata == nil {
		w.Metadata = map[string]any{}
	}
	if w.DisputedWith == nil {
		w.DisputedWith = []string{}
	}
	return w
}

// MarshalJSON writes the episode in its wire shape.
func (e Episode) MarshalJSON() ([]byte, error) { return json.Marshal(e.JSON()) }

// MatchJSON is the wire shape of a match: the episode's fields and its
// score parts.
type MatchJSON struct {
	EpisodeJSON
	Score      float64 `json:"score"`
	Relevance  float64 `json:"relevance"`
	BM25       float64 `json:"bm25"`
	Similarity float64 `json:"similarity"`
	Recency    float64 `json:"recency"`
}

// JSON returns the match's wire shape.
func (m *Match) JSON() MatchJSON {
	return MatchJSON{m.Episode.JSON(), m.Score, m.Relevance, m.BM25, m.Similarity, m.Recency}
}

// MarshalJSON writes the match in its wire shape.
func (m Match) MarshalJSON() ([]byte, error) { return json.Marshal(m.JSON()) }

// HintJSON is the wire shape of a hint.
type HintJSON struct {
	Episode    EpisodeJSON `json:"episode"`
	Similarity float64     `json:"similarity"`
	Action     string      `json:"action" jsonschema:"confirm, supersede, revise or dispute: what to do instead of or after writing"`
	Why        string      `json:"why"`
}

// JSON returns the hint's wire shape.
func (h *Hint) JSON() HintJSON {
	return HintJSON{h.Episode.JSON(), h.Similarity, h.Action, h.Why}
}

// MarshalJSON writes the hint in its wire shape.
func (h Hint) MarshalJSON() ([]byte, error) { return json.Marshal(h.JSON()) }

// line is one line of an export: a statement, then its versions,
// attestations, recalls and the disputes it opened, each tagged by type.
type line struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// statement
	Content    string         `json:"content,omitempty"`
	Entities   []string       `json:"entities,omitempty"`
	Source     string         `json:"source,omitempty"`
	Confidence *float64       `json:"confidence,omitempty"`
	Salience   *float64       `json:"salience,omitempty"`
	OccurredAt string         `json:"occurred_at,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Supersedes string         `json:"supersedes,omitempty"`
	Revises    string         `json:"revises,omitempty"`
	Embedding  string         `json:"embedding,omitempty"` // little-endian float32, base64
	// version
	Seq        int64  `json:"seq,omitempty"`
	ValidFrom  string `json:"valid_from,omitempty"`
	ValidTo    string `json:"valid_to,omitempty"`
	RecordedAt string `json:"recorded_at,omitempty"`
	ClosedAt   string `json:"closed_at,omitempty"`
	State      State  `json:"state,omitempty"`
	Note       string `json:"note,omitempty"`
	// attestation (At, Source), dispute (Other, Note)
	At    string `json:"at,omitempty"`
	Other string `json:"other,omitempty"`
}

func fmtPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return FormatTime(*t)
}

// Export writes every statement with its versions, attestations,
// disputes and recalls as JSON lines, oldest statement first: a lossless
// copy that Import reads back, and that diffs well (new statements add
// lines at the end; a correction changes one line and adds one).
func (m *Memory) Export(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := m.store.Export(ctx, func(r *Record) error {
		s := r.Statement
		conf, sal := s.Confidence, s.Salience
		lines := []line{{Type: "statement", ID: s.ID, Content: s.Content, Entities: s.Entities, Source: s.Source, Confidence: &conf, Salience: &sal,
			OccurredAt: fmtPtr(s.OccurredAt), Metadata: s.Metadata, Supersedes: s.Supersedes, Revises: s.Revises, Embedding: encodeEmbedding(s.Embedding)}}
		for _, v := range r.Versions {
			lines = append(lines, line{Type: "version", ID: s.ID, Seq: v.Seq, ValidFrom: FormatTime(v.ValidFrom), ValidTo: fmtPtr(v.ValidTo),
				RecordedAt: FormatTime(v.RecordedAt), ClosedAt: fmtPtr(v.ClosedAt), State: v.State, Note: v.Note})
		}
		for _, a := range r.Attestations {
			lines = append(lines, line{Type: "attestation", ID: s.ID, At: FormatTime(a.At), Source: a.Source, RecordedAt: FormatTime(a.RecordedAt)})
		}
		for _, d := range r.Disputes {
			if d.A == s.ID {
				lines = append(lines, line{Type: "dispute", ID: s.ID, Other: d.B, Note: d.Note, RecordedAt: FormatTime(d.RecordedAt)})
			}
		}
		for _, rc := range r.Recalls {
			lines = append(lines, line{Type: "recall", ID: s.ID, RecordedAt: FormatTime(rc.RecordedAt)})
		}
		for i := range lines {
			if err := enc.Encode(&lines[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return bw.Flush()
}

// MaxImportLine bounds one line of an import.
const MaxImportLine = 16 << 20

// ReadExport parses an export; every problem is reported with its line
// number, and nothing is returned unless the whole file is valid.
func ReadExport(r io.Reader) ([]*Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxImportLine)
	var recs []*Record
	byID := map[string]*Record{}
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := readLine(b, &recs, byID); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrInvalid, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrInvalid, n+1, err)
	}
	pos := make(map[string]int, len(recs))
	for i, rec := range recs {
		pos[rec.Statement.ID] = i
	}
	for i, rec := range recs {
		if len(rec.Versions) == 0 {
			return nil, fmt.Errorf("%w: statement %s has no version", ErrInvalid, rec.Statement.ID)
		}
		for _, d := range rec.Disputes {
			if byID[d.B] == nil {
				return nil, fmt.Errorf("%w: statement %s disputes %s, which the file does not hold", ErrInvalid, d.A, d.B)
			}
		}
		for _, ref := range []string{rec.Statement.Supersedes, rec.Statement.Revises} {
			if ref == "" {
				continue
			}
			if byID[ref] == nil {
				return nil, fmt.Errorf("%w: statement %s follows %s, which the file does not hold", ErrInvalid, rec.Statement.ID, ref)
			}
			// An export lists statements oldest first; Import inserts
			// them in that order and links each to the one it follows.
			if pos[ref] >= i {
				return nil, fmt.Errorf("%w: statement %s follows %s, which the file holds after it (an export lists statements oldest first)", ErrInvalid, rec.Statement.ID, ref)
			}
		}
	}
	return recs, nil
}

func readLine(b []byte, recs *[]*Record, byID map[string]*Record) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l line
	if err := dec.Decode(&l); err != nil {
		return err
	}
	if l.ID == "" {
		return errors.New("no id")
	}
	rec := byID[l.ID]
	if l.Type == "statement" {
		if rec != nil {
			return fmt.Errorf("statement %s appears twice", l.ID)
		}
		if l.Content == "" || l.Confidence == nil || l.Salience == nil {
			return errors.New("a statement needs content, confidence and salience")
		}
		if *l.Confidence < 0 || *l.Confidence > 1 || *l.Salience < 0 || *l.Salience > 1 {
			return errors.New("confidence and salience are in 0..1")
		}
		occ, err := optTime(l.OccurredAt)
		if err != nil {
			return err
		}
		emb, err := decodeEmbedding(l.Embedding)
		if err != nil {
			return err
		}
		rec = &Record{Statement: Statement{ID: l.ID, Content: l.Content, Entities: NormalizeEntities(l.Entities), Source: l.Source,
			Confidence: *l.Confidence, Salience: *l.Salience, OccurredAt: occ, Metadata: l.Metadata, Supersedes: l.Supersedes, Revises: l.Revises, Embedding: emb}}
		if rec.Statement.Entities == nil {
			rec.Statement.Entities = []string{}
		}
		byID[l.ID] = rec
		*recs = append(*recs, rec)
		return nil
	}
	if rec == nil {
		return fmt.Errorf("%s of statement %s comes before the statement", l.Type, l.ID)
	}
	recorded, err := ParseTime(l.RecordedAt)
	if err != nil {
		return fmt.Errorf("recorded_at: %w", err)
	}
	switch l.Type {
	case "version":
		from, err := ParseTime(l.ValidFrom)
		if err != nil {
			return fmt.Errorf("valid_from: %w", err)
		}
		to, err := optTime(l.ValidTo)
		if err != nil {
			return err
		}
		closed, err := optTime(l.ClosedAt)
		if err != nil {
			return err
		}
		switch l.State {
		case Open, Invalidated, Superseded:
		default:
			return fmt.Errorf("unknown state %q", l.State)
		}
		if to != nil && to.Before(from) {
			return errors.New("valid_to is before valid_from")
		}
		if closed != nil && closed.Before(recorded) {
			return errors.New("closed_at is before recorded_at")
		}
		rec.Versions = append(rec.Versions, Version{Seq: l.Seq, Statement: l.ID, ValidFrom: from, ValidTo: to, RecordedAt: recorded, ClosedAt: closed, State: l.State, Note: l.Note})
	case "attestation":
		a, err := ParseTime(l.At)
		if err != nil {
			return fmt.Errorf("at: %w", err)
		}
		rec.Attestations = append(rec.Attestations, Attestation{Statement: l.ID, At: a, Source: l.Source, RecordedAt: recorded})
	case "dispute":
		if l.Other == "" || l.Other == l.ID {
			return errors.New("a dispute needs another statement")
		}
		d := Dispute{A: l.ID, B: l.Other, Note: l.Note, RecordedAt: recorded}
		rec.Disputes = append(rec.Disputes, d)
	case "recall":
		rec.Recalls = append(rec.Recalls, Recall{Statement: l.ID, RecordedAt: recorded})
	default:
		return fmt.Errorf("unknown line type %q", l.Type)
	}
	return nil
}

func optTime(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := ParseTime(s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

func encodeEmbedding(v []float32) string {
	if v == nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(embed.VectorBytes(v))
}

func decodeEmbedding(s string) ([]float32, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil, errors.New("embedding is not base64 of float32s")
	}
	return embed.VectorFromBytes(b), nil
}

// Import reads an export into the store, in one transaction: all or
// nothing, and a conflict if any statement exists already.
func (m *Memory) Import(ctx context.Context, r io.Reader) (int, error) {
	recs, err := ReadExport(r)
	if err != nil {
		return 0, err
	}
	if err := m.store.Import(ctx, recs); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	return len(recs), nil
}

// RecordJSON is the wire shape of a Record, as a history shows it: the
// statement with every version, attestation and dispute. It is a plain
// struct (not a MarshalJSON) so that the servers can derive its JSON
// Schema.
type RecordJSON struct {
	ID           string            `json:"id"`
	Content      string            `json:"content"`
	Entities     []string          `json:"entities"`
	Source       string            `json:"source"`
	Confidence   float64           `json:"confidence"`
	Salience     float64           `json:"salience"`
	OccurredAt   *string           `json:"occurred_at"`
	Metadata     map[string]any    `json:"metadata"`
	Supersedes   string            `json:"supersedes,omitempty"`
	Revises      string            `json:"revises,omitempty"`
	Versions     []VersionJSON     `json:"versions"`
	Attestations []AttestationJSON `json:"attestations"`
	Disputes     []DisputeJSON     `json:"disputes"`
}

// VersionJSON is one version of a statement: what the vault held from
// recorded_at until closed_at.
type VersionJSON struct {
	Version    int64   `json:"version"`
	ValidFrom  string  `json:"valid_from"`
	ValidTo    *string `json:"valid_to"`
	RecordedAt string  `json:"recorded_at"`
	ClosedAt   *string `json:"closed_at"`
	State      State   `json:"state"`
	Note       string  `json:"note,omitempty"`
}

// AttestationJSON is one confirmation of a statement.
type AttestationJSON struct {
	At         string `json:"at"`
	Source     string `json:"source"`
	RecordedAt string `json:"recorded_at"`
}

// DisputeJSON records that statements a and b cannot both hold.
type DisputeJSON struct {
	A          string `json:"a"`
	B          string `json:"b"`
	Note       string `json:"note,omitempty"`
	RecordedAt string `json:"recorded_at"`
}

// FormatTimePtr is FormatTime of t, nil for nil.
func FormatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := FormatTime(*t)
	return &s
}

// JSON returns the record's wire shape (empty lists, not null).
func (r *Record) JSON() RecordJSON {
	s := &r.Statement
	out := RecordJSON{ID: s.ID, Content: s.Content, Entities: s.Entities, Source: s.Source, Confidence: s.Confidence,
		Salience: s.Salience, OccurredAt: FormatTimePtr(s.OccurredAt), Metadata: s.Metadata, Supersedes: s.Supersedes,
		Revises: s.Revises, Versions: []VersionJSON{}, Attestations: []AttestationJSON{}, Disputes: []DisputeJSON{}}
	if out.Entities == nil {
		out.Entities = []string{}
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	for _, v := range r.Versions {
		out.Versions = append(out.Versions, VersionJSON{Version: v.Seq, ValidFrom: FormatTime(v.ValidFrom),
			ValidTo: FormatTimePtr(v.ValidTo), RecordedAt: FormatTime(v.RecordedAt), ClosedAt: FormatTimePtr(v.ClosedAt),
			State: v.State, Note: v.Note})
	}
	for _, a := range r.Attestations {
		out.Attestations = append(out.Attestations, AttestationJSON{At: FormatTime(a.At), Source: a.Source, RecordedAt: FormatTime(a.RecordedAt)})
	}
	for _, d := range r.Disputes {
		out.Disputes = append(out.Disputes, DisputeJSON{A: d.A, B: d.B, Note: d.Note, RecordedAt: FormatTime(d.RecordedAt)})
	}
	return out
}

// importBatch is how many statements ImportRecords embeds per call.
const importBatch = 64

// ImportRecords inserts records that an importer built from another
// system's data (an export is read by Import): each is checked first
// (Check), the statements that carry no embedding are embedded when the
// memory has an embedder, and the store inserts them in one transaction,
// all or nothing, a conflict if any statement exists. A record may follow
// a statement the store holds already or one earlier in recs.
func (m *Memory) ImportRecords(ctx context.Context, recs []*Record) error {
	pos := make(map[string]int, len(recs))
	for i, r := range recs {
		if err := r.Check(); err != nil {
			return err
		}
		if _, dup := pos[r.Statement.ID]; dup {
			return fmt.Errorf("%w: statement %s appears twice", ErrInvalid, r.Statement.ID)
		}
		pos[r.Statement.ID] = i
	}
	for i, r := range recs {
		for _, ref := range []string{r.Statement.Supersedes, r.Statement.Revises} {
			if j, ok := pos[ref]; ok && j >= i {
				return fmt.Errorf("%w: statement %s follows %s, which comes after it", ErrInvalid, r.Statement.ID, ref)
			}
		}
	}
	if m.embed != nil {
		var todo []*Statement
		for _, r := range recs {
			if r.Statement.Embedding == nil {
				todo = append(todo, &r.Statement)
			}
		}
		for len(todo) > 0 {
			n := min(len(todo), importBatch)
			texts := make([]string, n)
			for i, s := range todo[:n] {
				texts[i] = s.Content
			}
			vs, err := m.embed.Embed(ctx, texts)
			if err != nil {
				return fmt.Errorf("embed the statements: %w", err)
			}
			for i, s := range todo[:n] {
				s.Embedding = vs[i]
			}
			todo = todo[n:]
		}
	}
	if err := m.store.Import(ctx, recs); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// Check reports what makes r unfit for a store: no content or version,
// confidence or salience outside 0..1, a version that ends before it
// starts (in valid or transaction time), an unknown state, or an
// attestation, dispute or recall of another statement.
func (r *Record) Check() error {
	s := &r.Statement
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: statement %s: %s", ErrInvalid, s.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case strings.TrimSpace(s.ID) == "":
		return fmt.Errorf("%w: a statement without an id", ErrInvalid)
	case strings.TrimSpace(s.Content) == "":
		return bad("no content")
	case !(s.Confidence >= 0 && s.Confidence <= 1), !(s.Salience >= 0 && s.Salience <= 1):
		return bad("confidence %v and salience %v must be in 0..1", s.Confidence, s.Salience)
	case s.Supersedes == s.ID || s.Revises == s.ID:
		return bad("follows itself")
	case len(r.Versions) == 0:
		return bad("no version")
	}
	for _, v := range r.Versions {
		switch {
		case v.Statement != "" && v.Statement != s.ID:
			return bad("holds a version of %s", v.Statement)
		case v.State != Open && v.State != Invalidated && v.State != Superseded:
			return bad("unknown state %q", v.State)
		case v.ValidTo != nil && v.ValidTo.Before(v.ValidFrom):
			return bad("valid_to %s is before valid_from %s", FormatTime(*v.ValidTo), FormatTime(v.ValidFrom))
		case v.ClosedAt != nil && v.ClosedAt.Before(v.RecordedAt):
			return bad("closed_at %s is before recorded_at %s", FormatTime(*v.ClosedAt), FormatTime(v.RecordedAt))
		}
	}
	for _, a := range r.Attestations {
		if a.Statement != "" && a.Statement != s.ID {
			return bad("holds an attestation of %s", a.Statement)
		}
	}
	for _, d := range r.Disputes {
		if d.A != s.ID && d.B != s.ID || d.A == d.B {
			return bad("holds a dispute of %s and %s", d.A, d.B)
		}
	}
	for _, rc := range r.Recalls {
		if rc.Statement != "" && rc.Statement != s.ID {
			return bad("holds a recall of %s", rc.Statement)
		}
	}
	return nil
}
