// Package episodictest is the conformance suite of episodic stores: every
// backend of episodic.Store passes Run unchanged, so that the rules in
// episodic.Memory hold over any of them.
//
// The suite drives a store directly, with hand-built changes, the way
// Memory does: it checks the store's own contract (transaction times,
// conflicts, the selection of versions by valid and known time, the
// derived fields, export and import), not the rules above it.
package episodictest

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault/episodic"
)

// Run runs the suite against stores made by open: a new, empty store each
// time, closed by open's own cleanup.
func Run(t *testing.T, open func(t *testing.T) episodic.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, episodic.Store)
	}{
		{"ApplyClock", applyClock},
		{"Conflicts", conflicts},
		{"Get", get},
		{"Scan", scan},
		{"Search", search},
		{"Episodes", episodes},
		{"Annotate", annotate},
		{"EntitiesAndStats", entitiesAndStats},
		{"RecordAndSuccessors", recordAndSuccessors},
		{"ExportImport", func(t *testing.T, s episodic.Store) { exportImport(t, s, open(t)) }},
		{"ImportConflict", func(t *testing.T, s episodic.Store) { importConflict(t, s, open(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// base is the suite's epoch; day(n) is n days after it.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func day(n int) time.Time { return base.AddDate(0, 0, n) }

// mid is noon of day n: between the transactions the suite makes at
// midnight.
func mid(n int) time.Time { return day(n).Add(12 * time.Hour) }

func ptr[T any](v T) *T { return &v }

// st is a statement with the defaults Memory gives.
func st(id, content string, entities ...string) episodic.Statement {
	return episodic.Statement{ID: id, Content: content, Entities: episodic.NormalizeEntities(append([]string{}, entities...)), Confidence: 1, Salience: 0.5}
}

func openVersion(id string, from time.Time, to *time.Time) episodic.Version {
	return episodic.Version{Statement: id, ValidFrom: from, ValidTo: to, State: episodic.Open}
}

func apply(t *testing.T, s episodic.Store, c *episodic.Change, now time.Time) time.Time {
	t.Helper()
	at, err := s.Apply(t.Context(), c, now)
	if err != nil {
		t.Fatalf("apply at %s: %v", episodic.FormatTime(now), err)
	}
	return at
}

// write appends one open statement at now.
func write(t *testing.T, s episodic.Store, stmt episodic.Statement, from time.Time, to *time.Time, now time.Time) time.Time {
	t.Helper()
	return apply(t, s, &episodic.Change{Statements: []episodic.Statement{stmt}, Versions: []episodic.Version{openVersion(stmt.ID, from, to)}}, now)
}

func current(t *testing.T, s episodic.Store, id string) episodic.Episode {
	t.Helper()
	e, ok, err := s.Get(t.Context(), id, nil)
	if err != nil || !ok {
		t.Fatalf("get %s: ok=%v %v", id, ok, err)
	}
	return e
}

// closeAs closes the current version of id at now and appends a copy
// with the given end and state.
func closeAs(t *testing.T, s episodic.Store, id string, to time.Time, state episodic.State, note string, now time.Time) time.Time {
	t.Helper()
	e := current(t, s, id)
	return apply(t, s, &episodic.Change{
		Close:    []episodic.Expect{{Statement: id, Seq: e.Seq}},
		Versions: []episodic.Version{{Statement: id, ValidFrom: e.ValidFrom, ValidTo: &to, State: state, Note: note}},
	}, now)
}

func dispute(t *testing.T, s episodic.Store, a, b string, now time.Time) time.Time {
	t.Helper()
	ea, eb := current(t, s, a), current(t, s, b)
	return apply(t, s, &episodic.Change{
		Expect:   []episodic.Expect{{Statement: a, Seq: ea.Seq}, {Statement: b, Seq: eb.Seq}},
		Disputes: []episodic.Dispute{{A: a, B: b, Note: "cannot both hold"}},
	}, now)
}

func scanIDs(t *testing.T, s episodic.Store, f episodic.Filter, order episodic.Order) []string {
	t.Helper()
	var out []string
	if err := s.Scan(t.Context(), f, order, func(e *episodic.Episode) bool {
		out = append(out, e.ID)
		return true
	}); err != nil {
		t.Fatalf("scan %+v: %v", f, err)
	}
	return out
}

func episodeIDs(eps []episodic.Episode) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.ID
	}
	slices.Sort(out)
	return out
}

func samePtr(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func applyClock(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	// A now with nanoseconds is truncated to microseconds, in UTC.
	t1 := write(t, s, st("a", "first statement"), day(1), nil, day(10).Add(1500*time.Nanosecond).In(time.FixedZone("X", 3600)))
	if !t1.Equal(day(10).Add(time.Microsecond)) || t1.Location() != time.UTC {
		t.Errorf("first transaction at %v, want %v in UTC", t1, day(10).Add(time.Microsecond))
	}
	// The same now, a now in the past, and the time just returned all
	// move the clock forward.
	t2 := write(t, s, st("b", "second statement"), day(1), nil, day(10))
	t3 := apply(t, s, &episodic.Change{Recalls: []episodic.Recall{{Statement: "a"}}}, day(2))
	t4 := apply(t, s, &episodic.Change{Recalls: []episodic.Recall{{Statement: "a"}}}, t3)
	t5 := apply(t, s, &episodic.Change{Attestations: []episodic.Attestation{{Statement: "a", At: day(1)}}}, time.Time{})
	for i, pair := range [][2]time.Time{{t1, t2}, {t2, t3}, {t3, t4}, {t4, t5}} {
		if !pair[1].After(pair[0]) {
			t.Errorf("transaction %d at %v is not after %v", i+2, pair[1], pair[0])
		}
	}
	// A later now is taken as it is.
	if t6 := write(t, s, st("c", "third statement"), day(1), nil, day(20)); !t6.Equal(day(20)) {
		t.Errorf("a now after the clock: %v, want %v", t6, day(20))
	}
	if e := current(t, s, "a"); !e.RecordedAt.Equal(t1) || !e.FirstRecordedAt.Equal(t1) || e.ClosedAt != nil {
		t.Errorf("a recorded at %v (first %v), closed %v; want %v", e.RecordedAt, e.FirstRecordedAt, e.ClosedAt, t1)
	}
	rec, err := s.Record(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Recalls) != 2 || !rec.Recalls[0].RecordedAt.Equal(t3) || !rec.Recalls[1].RecordedAt.Equal(t4) {
		t.Errorf("recalls: %+v, want at %v and %v", rec.Recalls, t3, t4)
	}
	if len(rec.Attestations) != 1 || !rec.Attestations[0].RecordedAt.Equal(t5) {
		t.Errorf("attestations: %+v, want recorded at %v", rec.Attestations, t5)
	}
	if rec, err := s.Record(ctx, "b"); err != nil || !rec.Versions[0].RecordedAt.Equal(t2) {
		t.Errorf("b: %+v %v, want recorded at %v", rec, err, t2)
	}
}

func conflicts(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	write(t, s, st("a", "Alice is on team red"), day(1), nil, day(1))
	write(t, s, st("b", "Bob is on team blue"), day(1), nil, day(1))
	sa := current(t, s, "a").Seq
	sb := current(t, s, "b").Seq

	unchanged := func(what string, versions int, closedAt *time.Time) {
		t.Helper()
		if _, _, err := s.Get(ctx, "x", nil); !errors.Is(err, episodic.ErrNotFound) {
			t.Errorf("%s: the new statement of a failed change exists: %v", what, err)
		}
		rec, err := s.Record(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Versions) != versions || len(rec.Attestations) != 0 || len(rec.Recalls) != 0 || len(rec.Disputes) != 0 {
			t.Errorf("%s: a has %d versions, %d attestations, %d recalls, %d disputes; want %d versions and nothing else",
				what, len(rec.Versions), len(rec.Attestations), len(rec.Recalls), len(rec.Disputes), versions)
		}
		if !samePtr(rec.Versions[0].ClosedAt, closedAt) {
			t.Errorf("%s: a's first version closed at %v, want %v", what, rec.Versions[0].ClosedAt, closedAt)
		}
		if rec, _ := s.Record(ctx, "b"); rec == nil || len(rec.Versions) != 1 || rec.Versions[0].ClosedAt != nil {
			t.Errorf("%s: b changed: %+v", what, rec)
		}
	}
	everything := func(c episodic.Change) *episodic.Change {
		c.Statements = []episodic.Statement{st("x", "new")}
		c.Versions = append(c.Versions, openVersion("x", day(2), nil))
		c.Attestations = []episodic.Attestation{{Statement: "a", At: day(2)}}
		c.Recalls = []episodic.Recall{{Statement: "a"}}
		c.Disputes = []episodic.Dispute{{A: "a", B: "x"}}
		return &c
	}
	for _, tc := range []struct {
		name string
		c    episodic.Change
	}{
		{"expect a wrong seq", episodic.Change{Expect: []episodic.Expect{{Statement: "a", Seq: sa + 1000}}}},
		{"expect another statement's seq", episodic.Change{Expect: []episodic.Expect{{Statement: "a", Seq: sb}}}},
		{"close a wrong seq", episodic.Change{Close: []episodic.Expect{{Statement: "a", Seq: sb}}}},
		{"close one right, expect one wrong", episodic.Change{
			Close:  []episodic.Expect{{Statement: "a", Seq: sa}},
			Expect: []episodic.Expect{{Statement: "b", Seq: sa}},
		}},
		{"close one right, close one wrong", episodic.Change{Close: []episodic.Expect{{Statement: "a", Seq: sa}, {Statement: "b", Seq: sa}}}},
		{"close the same version twice", episodic.Change{Close: []episodic.Expect{{Statement: "a", Seq: sa}, {Statement: "a", Seq: sa}}}},
	} {
		if _, err := s.Apply(ctx, everything(tc.c), day(2)); !errors.Is(err, episodic.ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", tc.name, err)
		}
		unchanged(tc.name, 1, nil)
	}

	tc := closeAs(t, s, "a", day(3), episodic.Invalidated, "ended", day(3))
	rec, err := s.Record(ctx, "a")
	if err != nil || len(rec.Versions) != 2 {
		t.Fatalf("after closing: %+v %v", rec, err)
	}
	if v := rec.Versions; !samePtr(v[0].ClosedAt, &tc) || !v[1].RecordedAt.Equal(tc) || v[1].ClosedAt != nil ||
		v[1].State != episodic.Invalidated || v[1].Note != "ended" || v[1].Seq <= v[0].Seq {
		t.Errorf("versions after closing at %v: %+v", tc, v)
	}
	// The closed version cannot be closed or relied on again.
	for _, c := range []episodic.Change{
		{Close: []episodic.Expect{{Statement: "a", Seq: sa}}, Versions: []episodic.Version{{Statement: "a", ValidFrom: day(1), ValidTo: ptr(day(4)), State: episodic.Invalidated}}},
		{Expect: []episodic.Expect{{Statement: "a", Seq: sa}}},
	} {
		if _, err := s.Apply(ctx, everything(c), day(4)); !errors.Is(err, episodic.ErrConflict) {
			t.Errorf("relying on a closed version: %v, want ErrConflict", err)
		}
		unchanged("relying on a closed version", 2, &tc)
	}
	// Expect leaves the version current.
	cur := current(t, s, "a").Seq
	apply(t, s, &episodic.Change{Expect: []episodic.Expect{{Statement: "a", Seq: cur}}, Attestations: []episodic.Attestation{{Statement: "a", At: day(2)}}}, day(5))
	if e := current(t, s, "a"); e.Seq != cur || e.ClosedAt != nil || e.ConfirmedCount != 1 {
		t.Errorf("after an expect: %+v", e)
	}
}

func get(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	ta := write(t, s, st("a", "the office is in Lyon", "office"), day(1), nil, day(5))
	for _, k := range []time.Time{day(4), ta.Add(-time.Microsecond)} {
		if e, ok, err := s.Get(ctx, "a", &k); ok || err != nil {
			t.Errorf("known at %v, before it was recorded: %+v ok=%v %v", k, e, ok, err)
		}
	}
	for _, k := range []*time.Time{nil, ptr(day(0)), &ta} {
		if _, _, err := s.Get(ctx, "nope", k); !errors.Is(err, episodic.ErrNotFound) {
			t.Errorf("unknown id known at %v: %v, want ErrNotFound", k, err)
		}
	}
	e, ok, err := s.Get(ctx, "a", &ta)
	if err != nil || !ok || e.ID != "a" || e.Content != "the office is in Lyon" || e.State != episodic.Open ||
		!e.ValidFrom.Equal(day(1)) || e.ValidTo != nil || !e.RecordedAt.Equal(ta) || e.InvalidatedAt != nil {
		t.Errorf("known when recorded: %+v ok=%v %v", e, ok, err)
	}
	tc := closeAs(t, s, "a", day(3), episodic.Invalidated, "moved", day(8))
	for _, tt := range []struct {
		known *time.Time
		state episodic.State
		to    *time.Time
	}{
		{ptr(mid(7)), episodic.Open, nil},
		{ptr(tc.Add(-time.Microsecond)), episodic.Open, nil},
		{&tc, episodic.Invalidated, ptr(day(3))},
		{nil, episodic.Invalidated, ptr(day(3))},
	} {
		e, ok, err := s.Get(ctx, "a", tt.known)
		if err != nil || !ok || e.State != tt.state || !samePtr(e.ValidTo, tt.to) {
			t.Errorf("known at %v: %s to %v ok=%v %v; want %s to %v", tt.known, e.State, e.ValidTo, ok, err, tt.state, tt.to)
			continue
		}
		if tt.state == episodic.Invalidated && (e.Note != "moved" || !samePtr(e.InvalidatedAt, &tc) || !e.RecordedAt.Equal(tc) || !e.FirstRecordedAt.Equal(ta)) {
			t.Errorf("invalidated: %+v", e)
		}
	}
}

// people writes the statements the filter tests read:
//
//	a  Alice joined team red    [Alice Red]   hr   0.9 0.8 {team:red level:3 lead:true}   valid [1, ∞)   at 1
//	b  Bob joined team blue     [bob Blue]    chat 0.5 0.2 {team:blue level:3.5 lead:false} [2, 10) at 2; invalidated at 7 to 9
//	c  Carol left the company   []            hr   0.7 0.5 -                               [3, ∞)  at 3; invalidated at 5 to 4
//	d  Dave meets Alice         [ALICE Dave]  -    1   0.9 {level:"3"}                    [0, ∞)  at 4
//
// with a dispute between a and b at 6 (days).
func people(t *testing.T, s episodic.Store) {
	a := st("a", "Alice joined team red", "Alice", "Red")
	a.Source, a.Confidence, a.Salience, a.Metadata = "hr", 0.9, 0.8, map[string]any{"team": "red", "level": 3, "lead": true}
	write(t, s, a, day(1), nil, day(1))
	b := st("b", "Bob joined team blue", "bob", "Blue")
	b.Source, b.Confidence, b.Salience, b.Metadata = "chat", 0.5, 0.2, map[string]any{"team": "blue", "level": 3.5, "lead": false}
	write(t, s, b, day(2), ptr(day(10)), day(2))
	c := st("c", "Carol left the company")
	c.Source, c.Confidence, c.Salience = "hr", 0.7, 0.5
	write(t, s, c, day(3), nil, day(3))
	d := st("d", "Dave meets Alice", "ALICE", "Dave")
	d.Salience, d.Metadata = 0.9, map[string]any{"level": "3"}
	write(t, s, d, day(0), nil, day(4))
	closeAs(t, s, "c", day(4), episodic.Invalidated, "", day(5))
	dispute(t, s, "a", "b", day(6))
	closeAs(t, s, "b", day(9), episodic.Invalidated, "", day(7))
}

func scan(t *testing.T, s episodic.Store) {
	people(t, s)
	for _, tc := range []struct {
		name string
		f    episodic.Filter
		want []string
	}{
		{"current versions, any valid time", episodic.Filter{}, []string{"c", "b", "a", "d"}},
		{"All is ignored by stores", episodic.Filter{All: true}, []string{"c", "b", "a", "d"}},
		{"valid on day 3", episodic.Filter{ValidAt: ptr(mid(3))}, []string{"c", "b", "a", "d"}},
		{"valid_to is exclusive", episodic.Filter{ValidAt: ptr(day(4))}, []string{"b", "a", "d"}},
		{"valid_from is inclusive", episodic.Filter{ValidAt: ptr(day(2))}, []string{"b", "a", "d"}},
		{"before anything held", episodic.Filter{ValidAt: ptr(day(-1))}, nil},
		{"valid day 4, known now", episodic.Filter{ValidAt: ptr(mid(4))}, []string{"b", "a", "d"}},
		{"valid day 4, known day 4 (before the correction)", episodic.Filter{ValidAt: ptr(mid(4)), KnownAt: ptr(mid(4))}, []string{"c", "b", "a", "d"}},
		{"valid day 9, known now", episodic.Filter{ValidAt: ptr(mid(9))}, []string{"a", "d"}},
		{"valid day 9, known day 6", episodic.Filter{ValidAt: ptr(mid(9)), KnownAt: ptr(mid(6))}, []string{"b", "a", "d"}},
		{"known day 3, any valid time", episodic.Filter{KnownAt: ptr(mid(3))}, []string{"c", "b", "a"}},
		{"known exactly when d was recorded", episodic.Filter{KnownAt: ptr(day(4))}, []string{"c", "b", "a", "d"}},
		{"known before anything", episodic.Filter{KnownAt: ptr(day(0))}, nil},
		{"entity, any case", episodic.Filter{Entities: []string{"alice"}}, []string{"a", "d"}},
		{"entities are any-of", episodic.Filter{Entities: []string{"BOB", "dave"}}, []string{"b", "d"}},
		{"entity with spaces", episodic.Filter{Entities: []string{" RED "}}, []string{"a"}},
		{"unknown entity", episodic.Filter{Entities: []string{"nobody"}}, nil},
		{"entity and valid time", episodic.Filter{Entities: []string{"alice", "bob"}, ValidAt: ptr(mid(9))}, []string{"a", "d"}},
		{"source", episodic.Filter{Source: "hr"}, []string{"c", "a"}},
		{"source and entity", episodic.Filter{Source: "hr", Entities: []string{"ALICE"}}, []string{"a"}},
		{"source no one has", episodic.Filter{Source: "HR"}, nil},
		{"min confidence, inclusive", episodic.Filter{MinConfidence: 0.7}, []string{"c", "a", "d"}},
		{"high min confidence", episodic.Filter{MinConfidence: 0.95}, []string{"d"}},
		{"meta string", episodic.Filter{Meta: map[string]any{"team": "red"}}, []string{"a"}},
		{"meta integer", episodic.Filter{Meta: map[string]any{"level": 3}}, []string{"a"}},
		{"meta float", episodic.Filter{Meta: map[string]any{"level": 3.0}}, []string{"a"}},
		{"meta fraction", episodic.Filter{Meta: map[string]any{"level": 3.5}}, []string{"b"}},
		{"meta number as a string", episodic.Filter{Meta: map[string]any{"level": "3"}}, []string{"d"}},
		{"meta true", episodic.Filter{Meta: map[string]any{"lead": true}}, []string{"a"}},
		{"meta false", episodic.Filter{Meta: map[string]any{"lead": false}}, []string{"b"}},
		{"meta bool is not a string", episodic.Filter{Meta: map[string]any{"lead": "true"}}, nil},
		{"meta all must match", episodic.Filter{Meta: map[string]any{"team": "red", "level": 3}}, []string{"a"}},
		{"meta one differs", episodic.Filter{Meta: map[string]any{"team": "blue", "level": 3}}, nil},
		{"meta key no one has", episodic.Filter{Meta: map[string]any{"x": "red"}}, nil},
		{"disputed now (b closed since)", episodic.Filter{Disputed: true}, nil},
		{"disputed known day 6", episodic.Filter{Disputed: true, KnownAt: ptr(mid(6))}, []string{"b", "a"}},
		{"disputed known when the dispute was recorded", episodic.Filter{Disputed: true, KnownAt: ptr(day(6))}, []string{"b", "a"}},
		{"disputed known before the dispute", episodic.Filter{Disputed: true, KnownAt: ptr(mid(5))}, nil},
		{"disputed known when b was invalidated", episodic.Filter{Disputed: true, KnownAt: ptr(day(7))}, nil},
		{"disputed, the other one not valid then", episodic.Filter{Disputed: true, KnownAt: ptr(mid(6)), ValidAt: ptr(mid(10))}, []string{"a"}},
	} {
		if got := scanIDs(t, s, tc.f, episodic.ByValidFrom); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := scanIDs(t, s, episodic.Filter{}, episodic.BySalience); !slices.Equal(got, []string{"d", "a", "c", "b"}) {
		t.Errorf("by salience: %v", got)
	}
	if got := scanIDs(t, s, episodic.Filter{Entities: []string{"alice", "blue"}, ValidAt: ptr(mid(6))}, episodic.BySalience); !slices.Equal(got, []string{"d", "a", "b"}) {
		t.Errorf("by salience with entities: %v", got)
	}
	calls := 0
	if err := s.Scan(t.Context(), episodic.Filter{}, episodic.ByValidFrom, func(*episodic.Episode) bool { calls++; return false }); err != nil || calls != 1 {
		t.Errorf("a scan told to stop: %d calls, %v", calls, err)
	}
	// Scanned episodes carry the statement and the version held.
	var got []episodic.Episode
	s.Scan(t.Context(), episodic.Filter{KnownAt: ptr(mid(6)), Entities: []string{"bob"}}, episodic.ByValidFrom, func(e *episodic.Episode) bool {
		got = append(got, *e)
		return true
	})
	if len(got) != 1 || got[0].Content != "Bob joined team blue" || got[0].Source != "chat" || got[0].Confidence != 0.5 ||
		!slices.Equal(got[0].Entities, []string{"Blue", "bob"}) || got[0].Metadata["team"] != "blue" ||
		!samePtr(got[0].ValidTo, ptr(day(10))) || got[0].State != episodic.Open || !got[0].RecordedAt.Equal(day(2)) {
		t.Errorf("bob known on day 6: %+v", got)
	}
}

func search(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	s1 := st("s1", "cloud cloud cloud costs")
	s1.Source = "x"
	s2 := st("s2", "the cloud provider renewal contract is due", "Vendor")
	s2.Source = "y"
	write(t, s, s1, day(1), nil, day(1))
	write(t, s, s2, day(1), nil, day(1))
	write(t, s, st("s3", "lunch at noon"), day(1), nil, day(1))
	write(t, s, st("s4", "the cloud migration is done"), day(1), nil, day(3))
	closeAs(t, s, "s4", day(4), episodic.Invalidated, "", day(5))

	find := func(f episodic.Filter, text string, limit int) []string {
		t.Helper()
		res, err := s.Search(ctx, f, text, limit)
		if err != nil {
			t.Fatalf("search %q: %v", text, err)
		}
		var out []string
		for i, r := range res {
			if r.BM25 <= 0 || (i > 0 && r.BM25 > res[i-1].BM25) {
				t.Errorf("search %q: scores not positive and best first: %+v", text, res)
			}
			out = append(out, r.ID)
		}
		return out
	}
	got := find(episodic.Filter{}, "cloud", 10)
	if len(got) != 3 || got[0] != "s1" || !slices.Contains(got, "s2") || !slices.Contains(got, "s4") {
		t.Errorf("cloud: %v, want s1 first, then s2 and s4", got)
	}
	for _, tc := range []struct {
		name, text string
		f          episodic.Filter
		limit      int
		want       []string
	}{
		{"limit", "cloud", episodic.Filter{}, 1, []string{"s1"}},
		{"case", "CLOUD Costs", episodic.Filter{}, 1, []string{"s1"}},
		{"valid time", "cloud", episodic.Filter{ValidAt: ptr(mid(4))}, 10, []string{"s1", "s2"}},
		{"known time", "migration", episodic.Filter{KnownAt: ptr(mid(2))}, 10, nil},
		{"known time, before the correction", "migration", episodic.Filter{KnownAt: ptr(mid(3)), ValidAt: ptr(mid(4))}, 10, []string{"s4"}},
		{"source", "cloud", episodic.Filter{Source: "y"}, 10, []string{"s2"}},
		{"entity", "cloud", episodic.Filter{Entities: []string{"vendor"}}, 10, []string{"s2"}},
		{"min confidence", "lunch", episodic.Filter{MinConfidence: 1}, 10, []string{"s3"}},
		{"any word", "lunch renewal", episodic.Filter{}, 10, []string{"s2", "s3"}},
		{"no match", "zebra", episodic.Filter{}, 10, nil},
		{"no words", "  ,.;!? ", episodic.Filter{}, 10, nil},
		{"empty", "", episodic.Filter{}, 10, nil},
		{"query syntax is text", `cloud" OR NEAR(lunch) -*`, episodic.Filter{ValidAt: ptr(mid(4))}, 10, []string{"s1", "s2", "s3"}},
	} {
		got := find(tc.f, tc.text, tc.limit)
		if tc.name == "any word" || tc.name == "query syntax is text" {
			slices.Sort(got)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	res, err := s.Search(ctx, episodic.Filter{}, "renewal", 10)
	if err != nil || len(res) != 1 || res[0].Content != s2.Content || res[0].Source != "y" || res[0].State != episodic.Open {
		t.Errorf("a search result carries its episode: %+v %v", res, err)
	}
}

func episodes(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	write(t, s, st("a", "alpha", "one"), day(1), nil, day(1))
	write(t, s, st("b", "beta", "two"), day(1), nil, day(3))
	closeAs(t, s, "b", day(2), episodic.Invalidated, "", day(4))
	for _, tc := range []struct {
		name string
		f    episodic.Filter
		ids  []string
		want []string
	}{
		{"current, unknown ids ignored", episodic.Filter{}, []string{"a", "b", "nope"}, []string{"a", "b"}},
		{"valid time", episodic.Filter{ValidAt: ptr(mid(2))}, []string{"a", "b"}, []string{"a"}},
		{"known time", episodic.Filter{KnownAt: ptr(mid(2))}, []string{"a", "b"}, []string{"a"}},
		{"known and valid", episodic.Filter{KnownAt: ptr(mid(3)), ValidAt: ptr(mid(2))}, []string{"a", "b"}, []string{"a", "b"}},
		{"entity", episodic.Filter{Entities: []string{"TWO"}}, []string{"a", "b"}, []string{"b"}},
		{"only those asked", episodic.Filter{}, []string{"b"}, []string{"b"}},
		{"none asked", episodic.Filter{}, nil, []string{}},
	} {
		eps, err := s.Episodes(ctx, tc.f, tc.ids)
		if got := episodeIDs(eps); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	// Many ids at once.
	c := &episodic.Change{}
	var ids []string
	for i := range 1200 {
		id := fmt.Sprintf("m%04d", i)
		ids = append(ids, id)
		c.Statements = append(c.Statements, st(id, "statement "+id))
		c.Versions = append(c.Versions, openVersion(id, day(1), nil))
	}
	apply(t, s, c, day(5))
	eps, err := s.Episodes(ctx, episodic.Filter{}, ids)
	if got := episodeIDs(eps); err != nil || !slices.Equal(got, ids) {
		t.Errorf("1200 ids: %d episodes, %v", len(got), err)
	}
}

// chain writes a, b; confirms a twice, recalls it twice, disputes a and b,
// supersedes a by c, and revises c as r (days 1 to 9).
func chain(t *testing.T, s episodic.Store) {
	a := st("a", "the release is on Friday", "release")
	a.OccurredAt = ptr(day(1).Add(90 * time.Minute))
	a.Metadata = map[string]any{"ticket": "REL-1", "n": 2.5, "ok": true, "tags": []any{"x", "y"}}
	a.Embedding = []float32{0.5, -0.25, 1}
	write(t, s, a, day(1), nil, day(1))
	write(t, s, st("b", "the release is on Monday", "release"), day(2), nil, day(2))
	e := current(t, s, "a")
	apply(t, s, &episodic.Change{Expect: []episodic.Expect{{Statement: "a", Seq: e.Seq}}, Attestations: []episodic.Attestation{{Statement: "a", At: day(1), Source: "chat"}}}, day(3))
	apply(t, s, &episodic.Change{Expect: []episodic.Expect{{Statement: "a", Seq: e.Seq}}, Attestations: []episodic.Attestation{{Statement: "a", At: day(2), Source: "ops"}}}, day(4))
	apply(t, s, &episodic.Change{Recalls: []episodic.Recall{{Statement: "a"}}}, day(5))
	apply(t, s, &episodic.Change{Recalls: []episodic.Recall{{Statement: "a"}, {Statement: "b"}}}, day(6))
	dispute(t, s, "a", "b", day(7))
	c := st("c", "the release moved to Tuesday", "release")
	c.Supersedes = "a"
	apply(t, s, &episodic.Change{
		Close:      []episodic.Expect{{Statement: "a", Seq: e.Seq}},
		Statements: []episodic.Statement{c},
		Versions: []episodic.Version{
			{Statement: "a", ValidFrom: day(1), ValidTo: ptr(day(8)), State: episodic.Superseded},
			openVersion("c", day(8), nil),
		},
	}, day(8))
	r := st("r", "the release is on Tuesday", "release")
	r.Revises = "c"
	ec := current(t, s, "c")
	apply(t, s, &episodic.Change{
		Close:      []episodic.Expect{{Statement: "c", Seq: ec.Seq}},
		Statements: []episodic.Statement{r},
		Versions:   []episodic.Version{openVersion("r", day(8), nil)},
	}, day(9))
}

func annotate(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	chain(t, s)
	type want struct {
		id         string
		confirmed  int
		lastConf   *time.Time
		recalls    int
		lastRecall *time.Time
		disputed   []string
		succ       string
	}
	for _, tc := range []struct {
		known *time.Time
		want  []want
	}{
		{ptr(mid(2)), []want{{id: "a"}, {id: "b"}}},
		{ptr(mid(3)), []want{{id: "a", confirmed: 1, lastConf: ptr(day(1))}, {id: "b"}}},
		{ptr(mid(6)), []want{{id: "a", confirmed: 2, lastConf: ptr(day(2)), recalls: 2, lastRecall: ptr(day(6))}, {id: "b", recalls: 1, lastRecall: ptr(day(6))}}},
		{ptr(day(7)), []want{{"a", 2, ptr(day(2)), 2, ptr(day(6)), []string{"b"}, ""}, {"b", 0, nil, 1, ptr(day(6)), []string{"a"}, ""}}},
		{ptr(mid(8)), []want{{"a", 2, ptr(day(2)), 2, ptr(day(6)), nil, "c"}, {"b", 0, nil, 1, ptr(day(6)), nil, ""}, {id: "c"}}},
		{nil, []want{{"a", 2, ptr(day(2)), 2, ptr(day(6)), nil, "c"}, {"b", 0, nil, 1, ptr(day(6)), nil, ""}, {id: "r"}}},
	} {
		var eps []episodic.Episode
		if err := s.Scan(ctx, episodic.Filter{KnownAt: tc.known}, episodic.ByValidFrom, func(e *episodic.Episode) bool {
			eps = append(eps, *e)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Annotate(ctx, eps, tc.known); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(eps, func(a, b episodic.Episode) int { return strings.Compare(a.ID, b.ID) })
		if len(eps) != len(tc.want) {
			t.Errorf("known at %v: %v, want %d episodes", tc.known, episodeIDs(eps), len(tc.want))
			continue
		}
		for i, w := range tc.want {
			e := eps[i]
			if e.ID != w.id || e.ConfirmedCount != w.confirmed || !samePtr(e.LastConfirmedAt, w.lastConf) || e.RecallCount != w.recalls ||
				!samePtr(e.LastRecalledAt, w.lastRecall) || !slices.Equal(e.DisputedWith, w.disputed) || e.SupersededBy != w.succ {
				t.Errorf("known at %v: %s confirmed %d (last %v) recalled %d (last %v) disputed %v superseded by %q; want %+v",
					tc.known, e.ID, e.ConfirmedCount, e.LastConfirmedAt, e.RecallCount, e.LastRecalledAt, e.DisputedWith, e.SupersededBy, w)
			}
			// Get fills the same fields.
			g, ok, err := s.Get(ctx, e.ID, tc.known)
			if err != nil || !ok || g.ConfirmedCount != e.ConfirmedCount || g.RecallCount != e.RecallCount ||
				!slices.Equal(g.DisputedWith, e.DisputedWith) || g.SupersededBy != e.SupersededBy || g.Seq != e.Seq {
				t.Errorf("known at %v: Get(%s) = %+v ok=%v %v, Annotate gave %+v", tc.known, e.ID, g, ok, err, e)
			}
		}
	}
	// An unknown id is refused or left as it is (the interface leaves it
	// open); it never borrows another statement's annotations.
	eps := []episodic.Episode{{Statement: episodic.Statement{ID: "nope"}}}
	if err := s.Annotate(ctx, eps, nil); err != nil && !errors.Is(err, episodic.ErrNotFound) {
		t.Errorf("annotate an unknown id: %v, want nil or ErrNotFound", err)
	} else if err == nil && (eps[0].ConfirmedCount != 0 || eps[0].RecallCount != 0 || eps[0].DisputedWith != nil || eps[0].SupersededBy != "") {
		t.Errorf("annotate an unknown id: %+v", eps[0])
	}
	if err := s.Annotate(ctx, nil, nil); err != nil {
		t.Errorf("annotate nothing: %v", err)
	}
}

func entitiesAndStats(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	people(t, s)
	for _, tc := range []struct {
		name string
		f    episodic.Filter
		want map[string]int
	}{
		{"current", episodic.Filter{}, map[string]int{"alice": 2, "red": 1, "bob": 1, "blue": 1, "dave": 1}},
		{"valid day 9", episodic.Filter{ValidAt: ptr(mid(9))}, map[string]int{"alice": 2, "red": 1, "dave": 1}},
		{"known day 3", episodic.Filter{KnownAt: ptr(mid(3))}, map[string]int{"alice": 1, "red": 1, "bob": 1, "blue": 1}},
		{"source", episodic.Filter{Source: "hr"}, map[string]int{"alice": 1, "red": 1}},
		{"meta", episodic.Filter{Meta: map[string]any{"lead": false}}, map[string]int{"bob": 1, "blue": 1}},
		{"nothing", episodic.Filter{KnownAt: ptr(day(0))}, map[string]int{}},
	} {
		res, err := s.Entities(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, e := range res {
			k := episodic.EntityKey(e.Entity)
			if _, dup := got[k]; dup {
				t.Errorf("%s: %q counted twice: %+v", tc.name, k, res)
			}
			got[k] = e.Episodes
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		known *time.Time
		want  episodic.Stats
	}{
		{nil, episodic.Stats{Total: 4, Open: 2, Closed: 2}},
		{ptr(day(0)), episodic.Stats{}},
		{ptr(mid(3)), episodic.Stats{Total: 3, Open: 3}},
		{ptr(mid(5)), episodic.Stats{Total: 4, Open: 3, Closed: 1}},
		{ptr(mid(6)), episodic.Stats{Total: 4, Open: 3, Closed: 1, Disputed: 2}},
		{ptr(day(7)), episodic.Stats{Total: 4, Open: 2, Closed: 2}},
	} {
		if got, err := s.Stats(ctx, tc.known); err != nil || got != tc.want {
			t.Errorf("stats known at %v: %+v %v, want %+v", tc.known, got, err, tc.want)
		}
	}
}

func recordAndSuccessors(t *testing.T, s episodic.Store) {
	ctx := t.Context()
	chain(t, s)
	rec, err := s.Record(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Statement
	if a.ID != "a" || a.Content != "the release is on Friday" || !slices.Equal(a.Entities, []string{"release"}) ||
		!samePtr(a.OccurredAt, ptr(day(1).Add(90*time.Minute))) || a.Metadata["ticket"] != "REL-1" || a.Metadata["n"] != 2.5 ||
		a.Metadata["ok"] != true || !reflect.DeepEqual(a.Metadata["tags"], []any{"x", "y"}) || !slices.Equal(a.Embedding, []float32{0.5, -0.25, 1}) {
		t.Errorf("statement a: %+v", a)
	}
	if v := rec.Versions; len(v) != 2 || v[0].Seq >= v[1].Seq || v[0].State != episodic.Open || !samePtr(v[0].ClosedAt, ptr(day(8))) ||
		v[1].State != episodic.Superseded || !samePtr(v[1].ValidTo, ptr(day(8))) || !v[1].RecordedAt.Equal(day(8)) || v[1].ClosedAt != nil {
		t.Errorf("versions of a: %+v", v)
	}
	if at := rec.Attestations; len(at) != 2 || !at[0].At.Equal(day(1)) || at[0].Source != "chat" || !at[0].RecordedAt.Equal(day(3)) ||
		!at[1].At.Equal(day(2)) || at[1].Source != "ops" || !at[1].RecordedAt.Equal(day(4)) || at[0].Statement != "a" {
		t.Errorf("attestations of a: %+v", at)
	}
	if d := rec.Disputes; len(d) != 1 || d[0].A != "a" || d[0].B != "b" || d[0].Note != "cannot both hold" || !d[0].RecordedAt.Equal(day(7)) {
		t.Errorf("disputes of a: %+v", d)
	}
	if r := rec.Recalls; len(r) != 2 || !r[0].RecordedAt.Equal(day(5)) || !r[1].RecordedAt.Equal(day(6)) || r[0].Statement != "a" {
		t.Errorf("recalls of a: %+v", r)
	}
	if rb, err := s.Record(ctx, "b"); err != nil || len(rb.Disputes) != 1 || rb.Disputes[0].A != "a" || rb.Disputes[0].B != "b" {
		t.Errorf("b's record holds the dispute too: %+v %v", rb, err)
	}
	if rc, err := s.Record(ctx, "c"); err != nil || rc.Statement.Supersedes != "a" || rc.Statement.Revises != "" ||
		len(rc.Versions) != 1 || !samePtr(rc.Versions[0].ClosedAt, ptr(day(9))) {
		t.Errorf("c: %+v %v", rc, err)
	}
	if rr, err := s.Record(ctx, "r"); err != nil || rr.Statement.Revises != "c" || rr.Statement.Supersedes != "" || rr.Statement.Embedding != nil {
		t.Errorf("r: %+v %v", rr, err)
	}
	if _, err := s.Record(ctx, "nope"); !errors.Is(err, episodic.ErrNotFound) {
		t.Errorf("record of an unknown id: %v", err)
	}
	for id, want := range map[string][]string{"a": {"c"}, "b": nil, "c": {"r"}, "r": nil} {
		if got, err := s.Successors(ctx, id); err != nil || !slices.Equal(got, want) {
			t.Errorf("successors of %s: %v %v, want %v", id, got, err, want)
		}
	}
	if _, err := s.Successors(ctx, "nope"); !errors.Is(err, episodic.ErrNotFound) {
		t.Errorf("successors of an unknown id: %v", err)
	}
	var vecs []string
	if err := s.EachVector(ctx, func(id string, v []float32) error {
		vecs = append(vecs, fmt.Sprintf("%s %v", id, v))
		return nil
	}); err != nil || !slices.Equal(vecs, []string{"a [0.5 -0.25 1]"}) {
		t.Errorf("vectors: %v %v", vecs, err)
	}
}

func exportAll(t *testing.T, s episodic.Store) []*episodic.Record {
	t.Helper()
	var out []*episodic.Record
	if err := s.Export(t.Context(), func(r *episodic.Record) error {
		out = append(out, canon(r))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// canon makes empty lists and maps nil, so that records compare by
// content.
func canon(r *episodic.Record) *episodic.Record {
	c := *r
	if len(c.Statement.Entities) == 0 {
		c.Statement.Entities = nil
	}
	if len(c.Statement.Metadata) == 0 {
		c.Statement.Metadata = nil
	}
	if len(c.Attestations) == 0 {
		c.Attestations = nil
	}
	if len(c.Disputes) == 0 {
		c.Disputes = nil
	}
	if len(c.Recalls) == 0 {
		c.Recalls = nil
	}
	return &c
}

func diffRecords(t *testing.T, what string, got, want []*episodic.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d records, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s: record %d\n got %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
}

func exportImport(t *testing.T, src, dst episodic.Store) {
	ctx := t.Context()
	chain(t, src)
	people2 := st("z", "a late statement", "Zed")
	write(t, src, people2, day(0), ptr(day(30)), day(10))
	recs := exportAll(t, src)
	var order []string
	for _, r := range recs {
		order = append(order, r.Statement.ID)
	}
	if !slices.Equal(order, []string{"a", "b", "c", "r", "z"}) {
		t.Errorf("export order %v, want oldest statement first", order)
	}
	if err := dst.Import(ctx, recs); err != nil {
		t.Fatal(err)
	}
	diffRecords(t, "export of the import", exportAll(t, dst), recs)
	// The imported store answers as the original did.
	for _, k := range []*time.Time{nil, ptr(mid(3)), ptr(day(7)), ptr(mid(8))} {
		for _, f := range []episodic.Filter{{KnownAt: k}, {KnownAt: k, ValidAt: ptr(mid(8))}, {KnownAt: k, Disputed: true}} {
			if a, b := scanIDs(t, src, f, episodic.ByValidFrom), scanIDs(t, dst, f, episodic.ByValidFrom); !slices.Equal(a, b) {
				t.Errorf("scan %+v: imported %v, original %v", f, b, a)
			}
		}
		sa, _ := src.Stats(ctx, k)
		sb, _ := dst.Stats(ctx, k)
		if sa != sb {
			t.Errorf("stats known at %v: imported %+v, original %+v", k, sb, sa)
		}
	}
	if got, _, err := dst.Get(ctx, "a", ptr(mid(7))); err != nil || got.ConfirmedCount != 2 || !slices.Equal(got.DisputedWith, []string{"b"}) {
		t.Errorf("a known day 7 after import: %+v %v", got, err)
	}
	// The clock continues after the newest imported time.
	if at := write(t, dst, st("n", "after the import"), day(0), nil, day(0)); !at.After(day(10)) {
		t.Errorf("first change after the import at %v, not after the imported %v", at, day(10))
	}
}

func importConflict(t *testing.T, src, dst episodic.Store) {
	ctx := t.Context()
	chain(t, src)
	recs := exportAll(t, src)
	if err := dst.Import(ctx, recs); err != nil {
		t.Fatal(err)
	}
	before := exportAll(t, dst)
	fresh := &episodic.Record{
		Statement:    st("new", "a new statement"),
		Versions:     []episodic.Version{{Statement: "new", ValidFrom: day(1), RecordedAt: day(20), State: episodic.Open}},
		Attestations: []episodic.Attestation{{Statement: "new", At: day(2), RecordedAt: day(20)}},
	}
	for _, batch := range [][]*episodic.Record{{fresh, recs[1]}, {recs[0]}, recs} {
		if err := dst.Import(ctx, batch); !errors.Is(err, episodic.ErrConflict) {
			t.Errorf("import of an existing id: %v, want ErrConflict", err)
		}
		if _, _, err := dst.Get(ctx, "new", nil); !errors.Is(err, episodic.ErrNotFound) {
			t.Errorf("a failed import left a statement behind: %v", err)
		}
		diffRecords(t, "after a failed import", exportAll(t, dst), before)
	}
}
