package episodic_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func (c *clock) set(s string) {
	t, err := episodic.ParseTime(s)
	if err != nil {
		panic(err)
	}
	c.t = t
}

func at(s string) *time.Time {
	t, err := episodic.ParseTime(s)
	if err != nil {
		panic(err)
	}
	return &t
}

func newMemory(t *testing.T) (*episodic.Memory, *clock) {
	t.Helper()
	s, err := sqliteepisodic.Open(t.Context(), filepath.Join(t.TempDir(), "episodes.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &clock{}
	c.set("2026-01-01")
	return episodic.New(s, episodic.Options{Now: c.now}), c
}

func write(t *testing.T, m *episodic.Memory, w episodic.Write) episodic.Episode {
	t.Helper()
	res, err := m.Write(t.Context(), w)
	if err != nil {
		t.Fatalf("write %q: %v", w.Content, err)
	}
	return res.Episode
}

func ids(ms []episodic.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func query(t *testing.T, m *episodic.Memory, q episodic.Query) []string {
	t.Helper()
	res, err := m.Query(t.Context(), q)
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	return ids(res)
}

// The case a vault that overwrites valid_to gets wrong: on July 20 the
// vault believed the statement, so a query at valid = known = July 20
// returns it, although on August 1 it learned the statement ended on July
// 12.
func TestLateCorrection(t *testing.T) {
	m, c := newMemory(t)
	c.set("2026-03-01")
	e := write(t, m, episodic.Write{Content: "Acme uses Postgres 15", Entities: []string{"Acme"}})
	c.set("2026-08-01")
	if _, err := m.Invalidate(t.Context(), e.ID, at("2026-07-12"), "migrated"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		valid, known string
		want         bool
	}{
		{"2026-07-20", "2026-07-20", true},  // what we believed then
		{"2026-07-20", "2026-08-02", false}, // what we know now about then
		{"2026-07-01", "2026-08-02", true},  // before the end, known now
		{"2026-02-01", "2026-07-20", false}, // before it started
		{"2026-07-20", "2026-02-01", false}, // before it was recorded
	} {
		got := query(t, m, episodic.Query{Filter: episodic.Filter{ValidAt: at(tc.valid), KnownAt: at(tc.known)}})
		if (len(got) == 1) != tc.want {
			t.Errorf("valid %s known %s: %v, want found=%v", tc.valid, tc.known, got, tc.want)
		}
	}
	if got := query(t, m, episodic.Query{}); len(got) != 0 {
		t.Errorf("now: %v", got)
	}
	if got := query(t, m, episodic.Query{Filter: episodic.Filter{All: true}}); len(got) != 1 {
		t.Errorf("all: %v", got)
	}
}

func TestWriteRules(t *testing.T) {
	m, c := newMemory(t)
	c.set("2026-05-05T10:00:00Z")
	ctx := t.Context()
	if _, err := m.Write(ctx, episodic.Write{Content: "  \n"}); !errors.Is(err, episodic.ErrInvalid) {
		t.Errorf("empty content: %v", err)
	}
	bad := 1.5
	if _, err := m.Write(ctx, episodic.Write{Content: "x", Salience: &bad}); !errors.Is(err, episodic.ErrInvalid) {
		t.Errorf("salience 1.5: %v", err)
	}
	if _, err := m.Write(ctx, episodic.Write{Content: "x", ValidFrom: at("2026-02-01"), ValidTo: at("2026-01-01")}); !errors.Is(err, episodic.ErrInvalid) {
		t.Errorf("ends before it starts: %v", err)
	}
	e := write(t, m, episodic.Write{Content: " Bob leads the team ", Entities: []string{" bob", "Team", "BOB", ""}})
	if e.Content != "Bob leads the team" || strings.Join(e.Entities, ",") != "bob,Team" || e.Salience != 0.5 || e.Confidence != 1 {
		t.Errorf("defaults: %+v", e.Statement)
	}
	if !e.ValidFrom.Equal(c.t) || e.ValidTo != nil || e.State != episodic.Open {
		t.Errorf("valid from now, open: %+v", e.Version)
	}
	e = write(t, m, episodic.Write{Content: "met", OccurredAt: at("2026-04-01T08:00:00+02:00")})
	if got := episodic.FormatTime(e.ValidFrom); got != "2026-04-01T06:00:00.000000Z" {
		t.Errorf("valid_from falls back to occurred_at, in UTC: %s", got)
	}
}

func TestInvalidateSupersedeRevise(t *testing.T) {
	m, c := newMemory(t)
	ctx := t.Context()
	c.set("2026-03-01")
	a := write(t, m, episodic.Write{Content: "Alice is on team red", Entities: []string{"Alice"}, Salience: ptr(0.9)})
	c.set("2026-04-01")
	if _, err := m.Invalidate(ctx, a.ID, at("2026-02-01"), ""); !errors.Is(err, episodic.ErrInvalid) {
		t.Errorf("invalidate before valid_from: %v", err)
	}
	b, err := m.Supersede(ctx, a.ID, episodic.Successor{Content: "Alice is on team blue", ValidFrom: at("2026-03-15")})
	if err != nil {
		t.Fatal(err)
	}
	if b.Supersedes != a.ID || b.Salience != 0.9 || strings.Join(b.Entities, ",") != "Alice" || !b.ValidFrom.Equal(*at("2026-03-15")) {
		t.Errorf("successor inherits entities and salience: %+v", b)
	}
	old, _ := m.Get(ctx, a.ID)
	if old.State != episodic.Superseded || old.SupersededBy != b.ID || !old.ValidTo.Equal(b.ValidFrom) {
		t.Errorf("old closes where the new opens: %+v", old)
	}
	if _, err := m.Supersede(ctx, a.ID, episodic.Successor{Content: "again"}); !errors.Is(err, episodic.ErrConflict) || !strings.Contains(err.Error(), b.ID) {
		t.Errorf("superseding a superseded episode names its successor: %v", err)
	}
	if _, err := m.Invalidate(ctx, a.ID, nil, ""); !errors.Is(err, episodic.ErrConflict) {
		t.Errorf("invalidating a closed episode: %v", err)
	}
	if got := query(t, m, episodic.Query{Filter: episodic.Filter{ValidAt: at("2026-03-10")}}); !slices.Equal(got, []string{"Alice is on team red"}) {
		t.Errorf("March 10: %v", got)
	}
	c.set("2026-05-01")
	r, err := m.Revise(ctx, b.ID, episodic.Successor{Content: "Alice works in team blue", Entities: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Revises != b.ID || !r.ValidFrom.Equal(b.ValidFrom) || len(r.Entities) != 0 || r.Salience != 0.9 {
		t.Errorf("revision: %+v", r)
	}
	if got := query(t, m, episodic.Query{}); !slices.Equal(got, []string{"Alice works in team blue"}) {
		t.Errorf("now only the revision: %v", got)
	}
	if got := query(t, m, episodic.Query{Filter: episodic.Filter{KnownAt: at("2026-04-15")}}); !slices.Equal(got, []string{"Alice is on team blue"}) {
		t.Errorf("known before the revision: %v", got)
	}
	orig, err := m.Get(ctx, b.ID)
	if err != nil || orig.State != episodic.Revised || orig.RevisedBy != r.ID {
		t.Errorf("revised original: %+v %v", orig, err)
	}
	chain, err := m.History(ctx, b.ID)
	if err != nil || len(chain) != 3 || chain[0].Statement.ID != a.ID || chain[2].Statement.ID != r.ID {
		t.Fatalf("history from the middle: %v %v", len(chain), err)
	}
	if len(chain[0].Versions) != 2 || chain[0].Versions[0].ClosedAt == nil || chain[0].Versions[1].State != episodic.Superseded {
		t.Errorf("versions of the first: %+v", chain[0].Versions)
	}
}

func TestConfirmAndDispute(t *testing.T) {
	m, c := newMemory(t)
	ctx := t.Context()
	c.set("2026-03-01")
	a := write(t, m, episodic.Write{Content: "the deploy window is Friday", Entities: []string{"deploy"}})
	b := write(t, m, episodic.Write{Content: "the deploy window is Monday", Entities: []string{"deploy"}})
	c.set("2026-03-05")
	if _, err := m.Confirm(ctx, a.ID, at("2026-02-01"), ""); !errors.Is(err, episodic.ErrInvalid) {
		t.Errorf("confirm before valid_from: %v", err)
	}
	e, err := m.Confirm(ctx, a.ID, nil, "ops")
	if err != nil || e.ConfirmedCount != 1 || !e.LastConfirmedAt.Equal(c.t) {
		t.Fatalf("confirm: %+v %v", e, err)
	}
	c.set("2026-03-06")
	ea, eb, err := m.Dispute(ctx, a.ID, b.ID, "which day?")
	if err != nil || !slices.Equal(ea.DisputedWith, []string{b.ID}) || !slices.Equal(eb.DisputedWith, []string{a.ID}) {
		t.Fatalf("dispute: %v %v %v", ea.DisputedWith, eb.DisputedWith, err)
	}
	if _, _, err := m.Dispute(ctx, b.ID, a.ID, ""); !errors.Is(err, episodic.ErrConflict) {
		t.Errorf("disputing twice: %v", err)
	}
	if got := query(t, m, episodic.Query{Filter: episodic.Filter{Disputed: true}}); len(got) != 2 {
		t.Errorf("disputed: %v", got)
	}
	c.set("2026-03-07")
	r, err := m.Revise(ctx, a.ID, episodic.Successor{Content: "deploys happen on Fridays"})
	if err != nil || r.ConfirmedCount != 1 || !slices.Equal(r.DisputedWith, []string{b.ID}) {
		t.Fatalf("revision inherits attestations and the dispute: %+v %v", r, err)
	}
	c.set("2026-03-08")
	if _, err := m.Invalidate(ctx, b.ID, nil, "it is Friday"); err != nil {
		t.Fatal(err)
	}
	if got := query(t, m, episodic.Query{Filter: episodic.Filter{Disputed: true}}); len(got) != 0 {
		t.Errorf("the dispute ends with an invalidation: %v", got)
	}
	if got := query(t, m, episodic.Query{Filter: episodic.Filter{Disputed: true, KnownAt: at("2026-03-06T12:00:00")}}); len(got) != 2 {
		t.Errorf("disputed as known on March 6: %v", got)
	}
	st, err := m.Stats(ctx, nil)
	if err != nil || st != (episodic.Stats{Total: 2, Open: 1, Closed: 1}) {
		t.Errorf("stats: %+v %v", st, err)
	}
}

func TestRanking(t *testing.T) {
	m, c := newMemory(t)
	c.set("2026-06-01")
	write(t, m, episodic.Write{Content: "old budget cut of 15% for cloud costs", ValidFrom: at("2026-04-02"), Salience: ptr(0.2)})
	write(t, m, episodic.Write{Content: "team offsite in Lisbon", ValidFrom: at("2026-05-31"), Salience: ptr(0.1)})
	write(t, m, episodic.Write{Content: "cloud provider renewal", ValidFrom: at("2026-05-01"), Salience: ptr(1)})
	for _, tc := range []struct {
		q    episodic.Query
		want []string
	}{
		{episodic.Query{Limit: 2}, []string{"team offsite in Lisbon", "cloud provider renewal"}},
		{episodic.Query{OrderBy: "salience", Limit: 1}, []string{"cloud provider renewal"}},
		{episodic.Query{Text: "cloud costs"}, []string{"old budget cut of 15% for cloud costs", "cloud provider renewal"}},
		{episodic.Query{Text: "cloud", OrderBy: "recency"}, []string{"cloud provider renewal", "old budget cut of 15% for cloud costs"}},
		{episodic.Query{OrderBy: "composite", Limit: 1}, []string{"cloud provider renewal"}},
	} {
		if got := query(t, m, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.q, got, tc.want)
		}
	}
	res, err := m.Query(t.Context(), episodic.Query{Text: "cloud costs", OrderBy: "composite"})
	if err != nil || len(res) != 2 {
		t.Fatal(res, err)
	}
	for _, r := range res {
		if want := r.Relevance + r.Recency + r.Salience; r.Score != want || r.Recency <= 0 || r.Recency > 1 {
			t.Errorf("score components of %q: %+v", r.Content, r)
		}
	}
	if half := res[1].Recency; res[1].Content == "old budget cut of 15% for cloud costs" && (half < 0.24 || half > 0.26) {
		t.Errorf("60 days old halves twice: %v", half)
	}
	for _, q := range []episodic.Query{{OrderBy: "relevance"}, {OrderBy: "random"}, {Limit: 500}} {
		if _, err := m.Query(t.Context(), q); !errors.Is(err, episodic.ErrInvalid) {
			t.Errorf("%+v: %v", q, err)
		}
	}
}

func TestWriteHints(t *testing.T) {
	m, _ := newMemory(t)
	ctx := t.Context()
	write(t, m, episodic.Write{Content: "the API rate limit is 100 requests per minute", Entities: []string{"api"}})
	for _, tc := range []struct{ content, action string }{
		{"the API rate limit is 100 requests per minute", "confirm"},
		{"the API rate limit is 200 requests per minute", "supersede"},
		{"the API rate limit is not 100 requests per minute", "dispute"},
		{"API rate limit: 100 requests per minute, per key", "revise"},
	} {
		res, err := m.Write(ctx, episodic.Write{Content: tc.content, Entities: []string{"API"}, DryRun: true})
		if err != nil || len(res.Hints) != 1 || res.Hints[0].Action != tc.action {
			t.Errorf("%q: %+v %v, want %s", tc.content, res.Hints, err, tc.action)
		}
	}
	res, _ := m.Write(ctx, episodic.Write{Content: "lunch is at noon", Entities: []string{"api"}})
	if len(res.Hints) != 0 {
		t.Errorf("unrelated: %+v", res.Hints)
	}
}

func TestConcurrentSupersedeOneWins(t *testing.T) {
	m, _ := newMemory(t)
	e := write(t, m, episodic.Write{Content: "v1"})
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := m.Supersede(context.Background(), e.ID, episodic.Successor{Content: "v" + string(rune('2'+i))})
			errs <- err
		}()
	}
	var ok, conflicts int
	for range 2 {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case errors.Is(err, episodic.ErrConflict) && strings.Contains(err.Error(), "superseded by"):
			conflicts++
		default:
			t.Errorf("unexpected: %v", err)
		}
	}
	if ok != 1 || conflicts != 1 {
		t.Errorf("ok %d conflicts %d", ok, conflicts)
	}
}

func ptr(f float64) *float64 { return &f }

// topicEmbedder embeds a text as the unit vector of its topic: texts that
// name the same topic are identical to it, whatever their words.
type topicEmbedder map[string][]float32

func (topicEmbedder) Spec() string { return "test:topics" }

func (e topicEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{0, 0, 1}
		for topic, v := range e {
			if strings.Contains(t, topic) {
				out[i] = v
			}
		}
	}
	return out, nil
}

func TestWriteHintsByEmbedding(t *testing.T) {
	s, err := sqliteepisodic.Open(t.Context(), filepath.Join(t.TempDir(), "episodes.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := episodic.New(s, episodic.Options{Embedder: topicEmbedder{"salary": {1, 0, 0}, "pay": {1, 0, 0}}})
	write(t, m, episodic.Write{Content: "Dana's salary is 90k", Entities: []string{"dana"}})
	res, err := m.Write(t.Context(), episodic.Write{Content: "Dana gets paid 95 thousand a year (pay)", Entities: []string{"Dana"}, DryRun: true})
	if err != nil || len(res.Hints) != 1 || res.Hints[0].Action != "supersede" || res.Hints[0].Similarity != 1 {
		t.Errorf("a paraphrase found by embedding: %+v %v", res.Hints, err)
	}
	res, _ = m.Write(t.Context(), episodic.Write{Content: "Dana likes tea", Entities: []string{"Dana"}, DryRun: true})
	if len(res.Hints) != 0 {
		t.Errorf("another topic: %+v", res.Hints)
	}
}

// An episode invalidated at its own valid_from (it never held) is allowed
// by Invalidate, so its export must import back: ReadExport once refused
// a valid_to equal to valid_from.
func TestExportOfEpisodeClosedAtItsStartImports(t *testing.T) {
	m, c := newMemory(t)
	e := write(t, m, episodic.Write{Content: "Dana leads the audit", ValidFrom: at("2026-01-01")})
	c.set("2026-02-01")
	if _, err := m.Invalidate(t.Context(), e.ID, at("2026-01-01"), "never held"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Export(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	dst, _ := newMemory(t)
	if n, err := dst.Import(t.Context(), &buf); err != nil || n != 1 {
		t.Fatalf("import: %d, %v", n, err)
	}
	got, err := dst.Get(t.Context(), e.ID)
	if err != nil || got.ValidTo == nil || !got.ValidTo.Equal(got.ValidFrom) {
		t.Fatalf("imported %+v, %v", got, err)
	}
}
