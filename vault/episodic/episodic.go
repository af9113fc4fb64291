// Package episodic is the memory of an episodic vault: statements with a
// lifetime in the world (valid time) and in the vault's belief
// (transaction time), kept append-only so that any past belief can be
// reconstructed exactly.
//
// A statement is written once and never changed: its content, entities,
// source, salience, confidence and metadata are fixed. What changes is its
// versions. Each version carries a valid interval [ValidFrom, ValidTo) and
// a transaction interval [RecordedAt, ClosedAt): invalidating a statement
// closes its current version in transaction time and appends a copy with
// the new ValidTo; nothing is updated in place except that closing, and
// nothing is deleted. A query at valid time T and known time K picks, for
// each statement, the version the vault held at K and keeps it if it held
// at T, which is exact for any order of corrections (the flaw of
// overwriting ValidTo in place, where a late correction hides what the
// vault believed before it, cannot happen).
//
// The rules (what may be closed, what is inherited, conflicts, ranking,
// write-time hints) live in Memory; the rows live in a Store, one interface
// with one conformance suite (episodictest), so that a PostgreSQL backend
// plugs in next to SQLite (sqliteepisodic) without touching the rules.
//
// Times are UTC with microsecond precision. An input time with an offset is
// converted to UTC; an input time without one is read as UTC (ParseTime),
// everywhere: CLI flags, API fields and imports.
package episodic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotFound: no episode with that id.
	ErrNotFound = errors.New("episode not found")
	// ErrConflict: the episode is not in the state the operation needs
	// (already closed, superseded, revised, disputed), possibly because
	// another writer changed it first.
	ErrConflict = errors.New("episode conflict")
	// ErrInvalid: bad input (empty content, a value out of range, an
	// interval that ends before it starts, a malformed time).
	ErrInvalid = errors.New("invalid episode input")
)

// State is how a version of a statement stands.
type State string

// The states of a version.
const (
	// Open: the statement holds from ValidFrom (until ValidTo, when the
	// writer gave an end) and nothing has closed it.
	Open State = "open"
	// Invalidated: the vault learned that it stopped holding at ValidTo.
	Invalidated State = "invalidated"
	// Superseded: a newer statement replaced it from ValidTo on.
	Superseded State = "superseded"
	// Revised: a better wording replaced it; the world did not change.
	// No version has this state in a store; it is derived for views of a
	// statement whose last version was closed by a revision.
	Revised State = "revised"
)

// Statement is what a writer said, fixed once written.
type Statement struct {
	// ID is stable across the statement's versions.
	ID      string
	Content string
	// Entities are trimmed, de-duplicated case-insensitively and sorted.
	Entities   []string
	Source     string
	Confidence float64
	Salience   float64
	// OccurredAt is when the event happened, when the writer said so.
	OccurredAt *time.Time
	Metadata   map[string]any
	// Supersedes and Revises name the statement this one replaced, if any.
	Supersedes string
	Revises    string
	// Embedding is set when the vault has an embedder.
	Embedding []float32
}

// Version is one row of a statement's history.
type Version struct {
	// Seq orders all versions of a store; it is assigned by Apply.
	Seq       int64
	Statement string
	ValidFrom time.Time
	ValidTo   *time.Time // nil: no known end
	// RecordedAt and ClosedAt bound when the vault held this version;
	// both are assigned by the store (ClosedAt nil: still held).
	RecordedAt time.Time
	ClosedAt   *time.Time
	State      State
	// Note is the reason given for an invalidation.
	Note string
}

// Attestation is one more time a statement was heard.
type Attestation struct {
	Statement string
	At        time.Time
	Source    string
	// RecordedAt is assigned by Apply, unless set (revisions carry their
	// original's attestations with their times).
	RecordedAt time.Time
}

// Dispute records that two open statements cannot both hold. It lasts
// while both stay open.
type Dispute struct {
	A, B       string
	Note       string
	RecordedAt time.Time // assigned by Apply
}

// Recall records that a query returned a statement (reinforcement).
type Recall struct {
	Statement  string
	RecordedAt time.Time // assigned by Apply
}

// Expect names the version a change relies on: Apply fails with
// ErrConflict unless it is still the statement's current version.
type Expect struct {
	Statement string
	Seq       int64
}

// Change is everything one operation appends, applied atomically: the
// expected versions are checked, the closed ones get their ClosedAt, and
// the rest is inserted, all with one transaction time.
type Change struct {
	Expect       []Expect
	Close        []Expect // checked like Expect, then closed
	Statements   []Statement
	Versions     []Version
	Attestations []Attestation
	Disputes     []Dispute
	Recalls      []Recall
}

// Episode is a statement as the vault held it at some known time: the
// statement, the version current then, and what is derived from the rest
// of the store at that time.
type Episode struct {
	Statement
	Version
	// InvalidatedAt is when the vault stopped holding the statement open
	// (invalidation, supersession or revision), nil while it is open.
	InvalidatedAt *time.Time
	// SupersededBy and RevisedBy name the successor, if any.
	SupersededBy string
	RevisedBy    string
	// ConfirmedCount and LastConfirmedAt come from attestations.
	ConfirmedCount  int
	LastConfirmedAt *time.Time
	// DisputedWith lists the open statements this one is disputed with.
	DisputedWith []string
	// RecallCount and LastRecalledAt come from reinforcing queries.
	RecallCount    int
	LastRecalledAt *time.Time
	// FirstRecordedAt is when the statement was first written.
	FirstRecordedAt time.Time
}

// IsOpen reports whether nothing has closed the episode.
func (e *Episode) IsOpen() bool { return e.State == Open }

// Filter selects episodes. The zero Filter selects what holds now and is
// believed now.
type Filter struct {
	// ValidAt is the world time. In a Query, nil means now unless All is
	// set; a Store reads nil as "no valid-time test".
	ValidAt *time.Time
	// KnownAt is the belief time; nil means now (the current belief).
	KnownAt *time.Time
	// All drops the valid-time test of a Query (when ValidAt is nil):
	// closed statements come back too. Stores ignore it.
	All bool
	// Entities match any of them, case-insensitively.
	Entities []string
	Source   string
	// MinConfidence keeps statements at least this confident.
	MinConfidence float64
	// Meta keeps statements whose metadata has exactly these values.
	Meta map[string]any
	// Disputed keeps statements in a dispute open at KnownAt.
	Disputed bool
	// WithEmbeddings asks Scan for the statements' embeddings too.
	WithEmbeddings bool
}

// Order is the order Store.Scan returns episodes in.
type Order int

// The scan orders.
const (
	ByValidFrom Order = iota // newest valid_from first (recency)
	BySalience               // most salient first
)

// Scored is an episode found by a text search with its BM25 score.
type Scored struct {
	Episode
	BM25 float64
}

// EntityCount is an entity with the number of episodes naming it.
type EntityCount struct {
	Entity   string `json:"entity"`
	Episodes int    `json:"episodes"`
}

// EntityCounter counts episodes per entity, matched by EntityKey, each
// entity spelt as first met; stores use it for Store.Entities. Its zero
// value is ready.
type EntityCounter struct {
	counts map[string]*EntityCount
	order  []string
}

// AddJSON counts one episode naming the entities of raw, a JSON array of
// strings as stores keep them.
func (c *EntityCounter) AddJSON(raw string) error {
	var ents []string
	if err := json.Unmarshal([]byte(raw), &ents); err != nil {
		return err
	}
	if c.counts == nil {
		c.counts = map[string]*EntityCount{}
	}
	for _, e := range ents {
		k := EntityKey(e)
		n := c.counts[k]
		if n == nil {
			n = &EntityCount{Entity: e}
			c.counts[k] = n
			c.order = append(c.order, k)
		}
		n.Episodes++
	}
	return nil
}

// Counts returns the counts, in the order the entities were first met.
func (c *EntityCounter) Counts() []EntityCount {
	out := make([]EntityCount, 0, len(c.order))
	for _, k := range c.order {
		out = append(out, *c.counts[k])
	}
	return out
}

// Stats counts the statements the vault held at a known time.
type Stats struct {
	Total    int `json:"total"`
	Open     int `json:"open"`
	Closed   int `json:"closed"`
	Disputed int `json:"disputed"`
}

// Record is everything a store holds about one statement, for history,
// export and import.
type Record struct {
	Statement    Statement
	Versions     []Version // by Seq
	Attestations []Attestation
	Disputes     []Dispute
	Recalls      []Recall
}

// Store holds the rows of an episodic vault. Implementations are safe for
// concurrent use, and for use by several processes when the backend
// allows; the conformance suite is episodictest.
type Store interface {
	// Apply commits c atomically at a transaction time no earlier than
	// now and later than any earlier one, and returns that time. It fails
	// with ErrConflict when an expected version is no longer current.
	Apply(ctx context.Context, c *Change, now time.Time) (time.Time, error)
	// Get returns the episode id as held at known (nil: now); ok is false
	// when the store held no version of it then.
	Get(ctx context.Context, id string, known *time.Time) (e Episode, ok bool, err error)
	// Record returns everything about one statement, or ErrNotFound.
	Record(ctx context.Context, id string) (*Record, error)
	// Successors returns the ids of the statements that supersede or
	// revise id.
	Successors(ctx context.Context, id string) ([]string, error)
	// Scan calls fn with the episodes f selects, in order, until fn
	// returns false.
	Scan(ctx context.Context, f Filter, order Order, fn func(*Episode) bool) error
	// Search returns up to limit episodes f selects that match any word
	// of text, best BM25 first.
	Search(ctx context.Context, f Filter, text string, limit int) ([]Scored, error)
	// Episodes returns the episodes f selects among ids (for vector
	// candidates), in no particular order.
	Episodes(ctx context.Context, f Filter, ids []string) ([]Episode, error)
	// Annotate fills the fields of eps derived from the rest of the store
	// (successor, confirmations, disputes, recalls) as held at known.
	// Scan, Search and Episodes leave them empty; Get fills them. An
	// episode whose id the store does not hold is left as it is.
	Annotate(ctx context.Context, eps []Episode, known *time.Time) error
	// EachVector streams the statements' embeddings.
	EachVector(ctx context.Context, fn func(id string, v []float32) error) error
	// Entities counts the episodes f selects per entity.
	Entities(ctx context.Context, f Filter) ([]EntityCount, error)
	// Stats counts the statements held at known (nil: now).
	Stats(ctx context.Context, known *time.Time) (Stats, error)
	// Export calls fn with every record, oldest statement first.
	Export(ctx context.Context, fn func(*Record) error) error
	// Import inserts records exactly as given (their times included); it
	// fails with ErrConflict, changing nothing, if any id exists.
	Import(ctx context.Context, recs []*Record) error
	// Close releases the store.
	Close() error
}

// Precision is the resolution of every stored time.
const Precision = time.Microsecond

// TimeFormat is how times are written: UTC, RFC 3339 with microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// Normalize returns t in UTC, truncated to Precision.
func Normalize(t time.Time) time.Time { return t.UTC().Truncate(Precision) }

// inputLayouts are the accepted input forms; those without an offset are
// read as UTC.
var inputLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTime reads a time in RFC 3339 (a "T" or a space between date and
// time, seconds and fraction optional, or a bare date). A time without an
// offset is UTC. The result is normalised.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range inputLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			// The year is checked in UTC: an offset can move a time at
			// the edge of 0001..9999 out of what FormatTime writes.
			if t = Normalize(t); t.Year() < 1 || t.Year() > 9999 {
				break
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: time %q is not RFC 3339 (for example 2026-03-01T09:30:00Z, or 2026-03-01 for midnight UTC; no offset means UTC)", ErrInvalid, s)
}

// FormatTime writes t in TimeFormat.
func FormatTime(t time.Time) string { return Normalize(t).Format(TimeFormat) }
