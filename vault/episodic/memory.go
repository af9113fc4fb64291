package episodic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// Memory applies the rules of an episodic vault to a Store. It is safe for
// concurrent use; the store arbitrates between processes.
type Memory struct {
	store Store
	embed embed.Embedder
	now   func() time.Time
	o     Options
}

// Options configures a Memory.
type Options struct {
	// Embedder, when set, embeds every new statement and adds vector
	// similarity to relevance.
	Embedder embed.Embedder
	// Now is the clock (tests); time.Now by default.
	Now func() time.Time
}

// New returns the rules over s.
func New(s Store, o Options) *Memory {
	m := &Memory{store: s, embed: o.Embedder, now: o.Now, o: o}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Store is the store the memory writes to.
func (m *Memory) Store() Store { return m.store }

func (m *Memory) clock() time.Time { return Normalize(m.now()) }

// NewID returns a fresh statement id: 32 hex digits, the first twelve the
// time in milliseconds so ids sort by creation.
func NewID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// NormalizeEntities trims entities, drops empty ones, de-duplicates them
// case-insensitively (the first spelling wins) and sorts them. A nil input
// stays nil, an empty one empty: the difference means "inherit" versus
// "clear" to Supersede and Revise.
func NormalizeEntities(in []string) []string {
	if in == nil {
		return nil
	}
	out := []string{}
	seen := map[string]bool{}
	for _, e := range in {
		e = strings.TrimSpace(e)
		k := EntityKey(e)
		if e == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(EntityKey(a), EntityKey(b)) })
	return out
}

// EntityKey is the case-folded form entities are matched by.
func EntityKey(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

// Write is a new statement.
type Write struct {
	Content string
	// Entities: see NormalizeEntities.
	Entities []string
	Source   string
	// Confidence and Salience are in [0, 1]; nil means 1 and 0.5.
	Confidence *float64
	Salience   *float64
	OccurredAt *time.Time
	// ValidFrom falls back to OccurredAt, then to now; ValidTo nil means
	// no known end.
	ValidFrom *time.Time
	ValidTo   *time.Time
	Metadata  map[string]any
	// DryRun checks the write and returns its hints without writing.
	DryRun bool
}

// Hint is an open statement a new one resembles, with what to do about it.
type Hint struct {
	Episode    Episode
	Similarity float64
	// Action is "confirm", "supersede", "revise" or "dispute".
	Action string
	Why    string
}

// WriteResult is a written statement and the hints its write raised.
type WriteResult struct {
	Episode Episode
	Hints   []Hint
}

func (w *Write) check() error {
	if strings.TrimSpace(w.Content) == "" {
		return fmt.Errorf("%w: content is empty", ErrInvalid)
	}
	for name, p := range map[string]*float64{"confidence": w.Confidence, "salience": w.Salience} {
		if p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
			return fmt.Errorf("%w: %s %v is outside 0..1", ErrInvalid, name, *p)
		}
	}
	return nil
}

func orDefault(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func normPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := Normalize(*t)
	return &n
}

// statement builds a new statement from w.
func (m *Memory) statement(ctx context.Context, w *Write, now time.Time) (Statement, error) {
	s := Statement{
		ID:         NewID(now),
		Content:    strings.TrimSpace(w.Content),
		Entities:   NormalizeEntities(w.Entities),
		Source:     w.Source,
		Confidence: orDefault(w.Confidence, 1),
		Salience:   orDefault(w.Salience, 0.5),
		OccurredAt: normPtr(w.OccurredAt),
		Metadata:   w.Metadata,
	}
	if s.Entities == nil {
		s.Entities = []string{}
	}
	if m.embed != nil {
		vs, err := m.embed.Embed(ctx, []string{s.Content})
		if err != nil {
			return s, fmt.Errorf("embed the statement: %w", err)
		}
		s.Embedding = vs[0]
	}
	return s, nil
}

// Write appends a new statement, open from its valid_from, and lists the
// open statements it resembles.
func (m *Memory) Write(ctx context.Context, w Write) (*WriteResult, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	now := m.clock()
	from := now
	switch {
	case w.ValidFrom != nil:
		from = Normalize(*w.ValidFrom)
	case w.OccurredAt != nil:
		from = Normalize(*w.OccurredAt)
	}
	to := normPtr(w.ValidTo)
	if to != nil && !to.After(from) {
		return nil, fmt.Errorf("%w: valid_to %s is not after valid_from %s", ErrInvalid, FormatTime(*to), FormatTime(from))
	}
	s, err := m.statement(ctx, &w, now)
	if err != nil {
		return nil, err
	}
	hints, err := m.hints(ctx, s)
	if err != nil {
		return nil, err
	}
	res := &WriteResult{Hints: hints}
	v := Version{Statement: s.ID, ValidFrom: from, ValidTo: to, State: Open}
	if w.DryRun {
		res.Episode = Episode{Statement: s, Version: v}
		return res, nil
	}
	if _, err := m.store.Apply(ctx, &Change{Statements: []Statement{s}, Versions: []Version{v}}, now); err != nil {
		return nil, err
	}
	if res.Episode, err = m.Get(ctx, s.ID); err != nil {
		return nil, err
	}
	return res, nil
}

// WriteMany appends many statements in one transaction, without hints:
// for imports of known statements and for throughput.
func (m *Memory) WriteMany(ctx context.Context, ws []Write) ([]string, error) {
	now := m.clock()
	c := &Change{}
	ids := make([]string, len(ws))
	for i := range ws {
		w := &ws[i]
		if err := w.check(); err != nil {
			return nil, fmt.Errorf("statement %d: %w", i+1, err)
		}
		from := now
		switch {
		case w.ValidFrom != nil:
			from = Normalize(*w.ValidFrom)
		case w.OccurredAt != nil:
			from = Normalize(*w.OccurredAt)
		}
		to := normPtr(w.ValidTo)
		if to != nil && !to.After(from) {
			return nil, fmt.Errorf("statement %d: %w: valid_to is not after valid_from", i+1, ErrInvalid)
		}
		s, err := m.statement(ctx, w, now)
		if err != nil {
			return nil, err
		}
		ids[i] = s.ID
		c.Statements = append(c.Statements, s)
		c.Versions = append(c.Versions, Version{Statement: s.ID, ValidFrom: from, ValidTo: to, State: Open})
	}
	if _, err := m.store.Apply(ctx, c, now); err != nil {
		return nil, err
	}
	return ids, nil
}

// Get returns an episode as the vault holds it now; a revised statement,
// which the vault no longer holds, comes back as it was last held.
func (m *Memory) Get(ctx context.Context, id string) (Episode, error) {
	e, ok, err := m.store.Get(ctx, id, nil)
	if err != nil || ok {
		return e, err
	}
	r, err := m.store.Record(ctx, id)
	if err != nil {
		return Episode{}, err
	}
	last := r.Versions[len(r.Versions)-1]
	e, ok, err = m.store.Get(ctx, id, &last.RecordedAt)
	if err != nil {
		return e, err
	}
	if !ok {
		return e, fmt.Errorf("episode %s: no version held at %s: %w", id, FormatTime(last.RecordedAt), ErrNotFound)
	}
	e.State = Revised
	e.ClosedAt = last.ClosedAt
	e.InvalidatedAt = last.ClosedAt
	e.DisputedWith = nil
	if succ, err := m.store.Successors(ctx, id); err == nil && len(succ) > 0 {
		e.RevisedBy = succ[0]
	}
	return e, nil
}

// open returns the current version of id, or an ErrConflict that says why
// it is closed and what to do instead (action names the operation).
func (m *Memory) open(ctx context.Context, id, action string) (Episode, error) {
	e, err := m.Get(ctx, id)
	if err != nil {
		return e, err
	}
	switch e.State {
	case Open:
		return e, nil
	case Superseded:
		return e, fmt.Errorf("%w: episode %s was superseded by %s on %s; %s %s instead", ErrConflict, id, e.SupersededBy, FormatTime(*e.InvalidatedAt), action, e.SupersededBy)
	case Revised:
		return e, fmt.Errorf("%w: episode %s was revised as %s on %s; %s %s instead", ErrConflict, id, e.RevisedBy, FormatTime(*e.InvalidatedAt), action, e.RevisedBy)
	default:
		return e, fmt.Errorf("%w: episode %s is already closed (invalidated on %s, valid until %s)", ErrConflict, id, FormatTime(*e.InvalidatedAt), FormatTime(*e.ValidTo))
	}
}

// apply commits c; a conflict (another writer got there first) is
// explained from the episode's state after the fact.
func (m *Memory) apply(ctx context.Context, c *Change, now time.Time, action string, ids ...string) error {
	_, err := m.store.Apply(ctx, c, now)
	if !errors.Is(err, ErrConflict) {
		return err
	}
	for _, id := range ids {
		if _, oerr := m.open(ctx, id, action); oerr != nil {
			return fmt.Errorf("changed by another writer: %w", oerr)
		}
	}
	return err
}

func (m *Memory) boundary(e Episode, at *time.Time, now time.Time, what string) (time.Time, error) {
	b := now
	if at != nil {
		b = Normalize(*at)
	}
	if b.Before(e.ValidFrom) {
		return b, fmt.Errorf("%w: %s %s is before the episode's valid_from %s: an episode cannot stop holding before it starts", ErrInvalid, what, FormatTime(b), FormatTime(e.ValidFrom))
	}
	if e.ValidTo != nil && b.After(*e.ValidTo) {
		return b, fmt.Errorf("%w: %s %s is after the episode's end %s", ErrInvalid, what, FormatTime(b), FormatTime(*e.ValidTo))
	}
	return b, nil
}

// Invalidate closes an open episode: it stopped holding at validTo (now
// when nil), never before its valid_from. Closing a closed episode is a
// conflict.
func (m *Memory) Invalidate(ctx context.Context, id string, validTo *time.Time, reason string) (Episode, error) {
	e, err := m.open(ctx, id, "invalidate")
	if err != nil {
		return e, err
	}
	now := m.clock()
	b, err := m.boundary(e, validTo, now, "valid_to")
	if err != nil {
		return e, err
	}
	c := &Change{
		Close:    []Expect{{id, e.Seq}},
		Versions: []Version{{Statement: id, ValidFrom: e.ValidFrom, ValidTo: &b, State: Invalidated, Note: reason}},
	}
	if err := m.apply(ctx, c, now, "invalidate", id); err != nil {
		return e, err
	}
	return m.Get(ctx, id)
}

// Successor is the new statement of Supersede and Revise; nil fields are
// inherited (Entities: an empty, non-nil list clears them).
type Successor struct {
	Content    string
	Entities   []string
	Source     string
	Salience   *float64
	Confidence *float64
	OccurredAt *time.Time
	// ValidFrom is where Supersede closes the old statement and opens the
	// new one (OccurredAt, then now, when nil); Revise ignores it.
	ValidFrom *time.Time
	Metadata  map[string]any
}

// Supersede replaces an open statement by a new one in one transaction:
// the old one closes exactly where the new one opens, and they are linked.
// Entities and salience are inherited unless given; confidence defaults to
// 1 and metadata starts fresh.
func (m *Memory) Supersede(ctx context.Context, id string, n Successor) (Episode, error) {
	old, err := m.open(ctx, id, "supersede")
	if err != nil {
		return old, err
	}
	now := m.clock()
	at := n.ValidFrom
	if at == nil {
		at = n.OccurredAt
	}
	b, err := m.boundary(old, at, now, "valid_from")
	if err != nil {
		return old, err
	}
	w := Write{Content: n.Content, Entities: n.Entities, Source: n.Source, Confidence: n.Confidence, Salience: n.Salience, OccurredAt: n.OccurredAt, Metadata: n.Metadata}
	if w.Entities == nil {
		w.Entities = old.Entities
	}
	if w.Salience == nil {
		w.Salience = &old.Salience
	}
	if err := w.check(); err != nil {
		return old, err
	}
	s, err := m.statement(ctx, &w, now)
	if err != nil {
		return old, err
	}
	s.Supersedes = id
	c := &Change{
		Close:      []Expect{{id, old.Seq}},
		Statements: []Statement{s},
		Versions: []Version{
			{Statement: id, ValidFrom: old.ValidFrom, ValidTo: &b, State: Superseded},
			{Statement: s.ID, ValidFrom: b, State: Open},
		},
	}
	if err := m.apply(ctx, c, now, "supersede", id); err != nil {
		return old, err
	}
	return m.Get(ctx, s.ID)
}

// Revise replaces an open statement by a better wording, the world
// unchanged: the revision holds over the same valid interval and inherits
// the original's attestations, entities, salience, confidence, metadata,
// occurrence time, source and open disputes; the original is closed in
// transaction time only, so a query known at a time before the revision
// still finds it.
func (m *Memory) Revise(ctx context.Context, id string, n Successor) (Episode, error) {
	old, err := m.open(ctx, id, "revise")
	if err != nil {
		return old, err
	}
	now := m.clock()
	w := Write{Content: n.Content, Entities: n.Entities, Source: n.Source, Salience: n.Salience, Confidence: n.Confidence,
		OccurredAt: old.OccurredAt, Metadata: old.Metadata}
	if w.Entities == nil {
		w.Entities = old.Entities
	}
	if w.Salience == nil {
		w.Salience = &old.Salience
	}
	if w.Confidence == nil {
		w.Confidence = &old.Confidence
	}
	if w.Source == "" {
		w.Source = old.Source
	}
	if err := w.check(); err != nil {
		return old, err
	}
	s, err := m.statement(ctx, &w, now)
	if err != nil {
		return old, err
	}
	s.Revises = id
	rec, err := m.store.Record(ctx, id)
	if err != nil {
		return old, err
	}
	c := &Change{
		Close:      []Expect{{id, old.Seq}},
		Statements: []Statement{s},
		Versions:   []Version{{Statement: s.ID, ValidFrom: old.ValidFrom, ValidTo: old.ValidTo, State: Open}},
	}
	for _, a := range rec.Attestations {
		a.Statement = s.ID
		c.Attestations = append(c.Attestations, a)
	}
	for _, other := range old.DisputedWith {
		note := ""
		for _, d := range rec.Disputes {
			if d.A == other || d.B == other {
				note = d.Note
			}
		}
		c.Expect = append(c.Expect, Expect{Statement: other, Seq: m.seqOf(ctx, other)})
		c.Disputes = append(c.Disputes, Dispute{A: s.ID, B: other, Note: note})
	}
	if err := m.apply(ctx, c, now, "revise", append([]string{id}, old.DisputedWith...)...); err != nil {
		return old, err
	}
	return m.Get(ctx, s.ID)
}

// seqOf is the current version of an open statement, 0 when there is none
// (which makes Apply fail with a conflict).
func (m *Memory) seqOf(ctx context.Context, id string) int64 {
	e, ok, err := m.store.Get(ctx, id, nil)
	if err != nil || !ok {
		return 0
	}
	return e.Seq
}

// Confirm records one more attestation of an open statement, at at (now
// when nil), never before its valid_from. The statement is unchanged;
// its confirmed_count and last_confirmed_at follow.
func (m *Memory) Confirm(ctx context.Context, id string, at *time.Time, source string) (Episode, error) {
	e, err := m.open(ctx, id, "confirm")
	if err != nil {
		return e, err
	}
	now := m.clock()
	t := now
	if at != nil {
		t = Normalize(*at)
	}
	if t.Before(e.ValidFrom) {
		return e, fmt.Errorf("%w: confirmation time %s is before the episode's valid_from %s", ErrInvalid, FormatTime(t), FormatTime(e.ValidFrom))
	}
	c := &Change{Expect: []Expect{{id, e.Seq}}, Attestations: []Attestation{{Statement: id, At: t, Source: source}}}
	if err := m.apply(ctx, c, now, "confirm", id); err != nil {
		return e, err
	}
	return m.Get(ctx, id)
}

// Dispute records that two open statements cannot both hold. Neither is
// closed; the dispute lasts while both stay open.
func (m *Memory) Dispute(ctx context.Context, a, b, note string) (Episode, Episode, error) {
	if a == b {
		return Episode{}, Episode{}, fmt.Errorf("%w: an episode cannot dispute itself", ErrInvalid)
	}
	ea, err := m.open(ctx, a, "dispute")
	if err != nil {
		return ea, Episode{}, err
	}
	eb, err := m.open(ctx, b, "dispute")
	if err != nil {
		return ea, eb, err
	}
	if slices.Contains(ea.DisputedWith, b) {
		return ea, eb, fmt.Errorf("%w: episodes %s and %s are already disputed", ErrConflict, a, b)
	}
	now := m.clock()
	c := &Change{Expect: []Expect{{a, ea.Seq}, {b, eb.Seq}}, Disputes: []Dispute{{A: a, B: b, Note: note}}}
	if err := m.apply(ctx, c, now, "dispute", a, b); err != nil {
		return ea, eb, err
	}
	if ea, err = m.Get(ctx, a); err != nil {
		return ea, eb, err
	}
	eb, err = m.Get(ctx, b)
	return ea, eb, err
}

// History returns the chain of statements id belongs to (through
// supersessions and revisions), oldest first, with all their versions.
func (m *Memory) History(ctx context.Context, id string) ([]*Record, error) {
	head := id
	seen := map[string]bool{}
	for {
		seen[head] = true
		r, err := m.store.Record(ctx, head)
		if err != nil {
			return nil, err
		}
		prev := r.Statement.Supersedes
		if prev == "" {
			prev = r.Statement.Revises
		}
		if prev == "" || seen[prev] {
			break
		}
		head = prev
	}
	var chain []*Record
	seen = map[string]bool{}
	for cur := head; cur != "" && !seen[cur]; {
		seen[cur] = true
		r, err := m.store.Record(ctx, cur)
		if err != nil {
			return nil, err
		}
		chain = append(chain, r)
		succ, err := m.store.Successors(ctx, cur)
		if err != nil {
			return nil, err
		}
		cur = ""
		if len(succ) > 0 {
			cur = succ[0]
		}
	}
	return chain, nil
}

// Entities counts the episodes f selects per entity, keeping entities
// named by at least min of them, most named first.
func (m *Memory) Entities(ctx context.Context, f Filter, min int) ([]EntityCount, error) {
	f.Entities = nil
	m.resolve(&f)
	out, err := m.store.Entities(ctx, f)
	if err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(e EntityCount) bool { return e.Episodes < min })
	slices.SortStableFunc(out, func(a, b EntityCount) int {
		if a.Episodes != b.Episodes {
			return b.Episodes - a.Episodes
		}
		return strings.Compare(EntityKey(a.Entity), EntityKey(b.Entity))
	})
	return out, nil
}

// Stats counts the statements held at known (nil: now).
func (m *Memory) Stats(ctx context.Context, known *time.Time) (Stats, error) {
	return m.store.Stats(ctx, normPtr(known))
}

// words are the lower-cased letter-and-digit runs of s, for the
// similarity of write-time hints.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		out[w] = true
	}
	return out
}

// jaccard is |a ∩ b| / |a ∪ b|.
func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// Hint thresholds: lexical similarity (Jaccard of words) or cosine.
const (
	hintLexical = 0.5
	hintCosine  = 0.85
	sameLexical = 0.9
	maxHints    = 5
	hintScan    = 500
)

var negations = map[string]bool{"not": true, "no": true, "never": true, "none": true, "isn't": true, "doesn't": true, "don't": true, "won't": true, "can't": true, "cannot": true, "wasn't": true, "aren't": true}

// hints lists the open statements sharing an entity with s that are very
// similar to it, with the action that fits: the same words again
// (confirm), a negation on one side only (dispute), different numbers (the
// world changed: supersede), otherwise a rewording (revise).
func (m *Memory) hints(ctx context.Context, s Statement) ([]Hint, error) {
	if len(s.Entities) == 0 {
		return nil, nil
	}
	sw := words(s.Content)
	var out []Hint
	scanned := 0
	f := Filter{All: true, Entities: s.Entities, WithEmbeddings: s.Embedding != nil}
	err := m.store.Scan(ctx, f, ByValidFrom, func(e *Episode) bool {
		scanned++
		if !e.IsOpen() {
			return scanned < hintScan
		}
		ew := words(e.Content)
		lexical := jaccard(sw, ew)
		sim := lexical
		if s.Embedding != nil && e.Embedding != nil {
			sim = max(sim, float64(embed.Dot(s.Embedding, e.Embedding)))
		}
		if lexical >= hintLexical || sim >= hintCosine {
			out = append(out, hintFor(*e, sim, lexical, sw, ew))
		}
		return scanned < hintScan
	})
	slices.SortStableFunc(out, func(a, b Hint) int { return cmpDesc(a.Similarity, b.Similarity) })
	if len(out) > maxHints {
		out = out[:maxHints]
	}
	return out, err
}

// hintFor picks the action; sim is the best similarity (words or
// embedding), lexical the words' alone: only the same words are a repeat.
func hintFor(e Episode, sim, lexical float64, nw, ew map[string]bool) Hint {
	h := Hint{Episode: e, Similarity: math.Round(sim*1000) / 1000}
	neg := func(ws map[string]bool) bool {
		for w := range ws {
			if negations[w] || strings.HasSuffix(w, "n't") {
				return true
			}
		}
		return false
	}
	numbers := func(ws map[string]bool) []string {
		var out []string
		for w := range ws {
			if strings.ContainsAny(w, "0123456789") {
				out = append(out, w)
			}
		}
		slices.Sort(out)
		return out
	}
	switch {
	case neg(nw) != neg(ew):
		h.Action, h.Why = "dispute", fmt.Sprintf("one of the two is negated: if both cannot hold, dispute %s", e.ID)
	case lexical >= sameLexical:
		h.Action, h.Why = "confirm", fmt.Sprintf("the same statement again: confirm %s rather than keeping two", e.ID)
	case !slices.Equal(numbers(nw), numbers(ew)):
		h.Action, h.Why = "supersede", fmt.Sprintf("different figures about the same thing: if the world changed, supersede %s", e.ID)
	default:
		h.Action, h.Why = "revise", fmt.Sprintf("a rewording: if it says the same better, revise %s", e.ID)
	}
	return h
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
