package episodic_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// The reference model of the property test: the rules of the issue over
// plain lists, with no indexes and no cleverness, to compare Memory over
// SQLite with.

// mVersion is one version: a valid interval, a transaction interval and
// a state.
type mVersion struct {
	id     string
	from   time.Time
	to     *time.Time
	txFrom time.Time
	txTo   *time.Time
	state  episodic.State
}

type mAttestation struct {
	id     string
	tx, at time.Time
}

type mDispute struct {
	a, b string
	tx   time.Time
}

type mStatement struct {
	id         string
	recorded   time.Time
	supersedes string
}

type model struct {
	versions     []*mVersion
	statements   []mStatement
	attestations []mAttestation
	disputes     []mDispute
	last         time.Time // the last transaction time
}

// tx is the transaction time of the next change made at now.
func (m *model) tx(now time.Time) time.Time {
	if !now.After(m.last) {
		return m.last.Add(time.Microsecond)
	}
	return now
}

// held is the version of id held at known (nil: now), or nil.
func (m *model) held(id string, known *time.Time) *mVersion {
	for _, v := range m.versions {
		if v.id != id {
			continue
		}
		if known == nil {
			if v.txTo == nil {
				return v
			}
		} else if !v.txFrom.After(*known) && (v.txTo == nil || v.txTo.After(*known)) {
			return v
		}
	}
	return nil
}

func before(t time.Time, known *time.Time) bool { return known == nil || !t.After(*known) }

// disputedWith lists the statements id is disputed with at known.
func (m *model) disputedWith(id string, known *time.Time) []string {
	if v := m.held(id, known); v == nil || v.state != episodic.Open {
		return nil
	}
	var out []string
	for _, d := range m.disputes {
		other := ""
		switch id {
		case d.a:
			other = d.b
		case d.b:
			other = d.a
		}
		if other == "" || !before(d.tx, known) {
			continue
		}
		if ov := m.held(other, known); ov != nil && ov.state == episodic.Open && !slices.Contains(out, other) {
			out = append(out, other)
		}
	}
	slices.Sort(out)
	return out
}

func (m *model) confirmed(id string, known *time.Time) int {
	n := 0
	for _, a := range m.attestations {
		if a.id == id && before(a.tx, known) {
			n++
		}
	}
	return n
}

func (m *model) supersededBy(id string, known *time.Time) string {
	for _, s := range m.statements {
		if s.supersedes == id && before(s.recorded, known) {
			return s.id
		}
	}
	return ""
}

// expected is what a query at valid (nil: any) and known returns, one
// line per episode, sorted.
func (m *model) expected(valid, known *time.Time) []string {
	var out []string
	for _, s := range m.statements {
		v := m.held(s.id, known)
		if v == nil {
			continue
		}
		if valid != nil && (v.from.After(*valid) || (v.to != nil && !v.to.After(*valid))) {
			continue
		}
		out = append(out, describe(s.id, v.state, v.from, v.to, m.confirmed(s.id, known), m.disputedWith(s.id, known), m.supersededBy(s.id, known)))
	}
	slices.Sort(out)
	return out
}

func describe(id string, state episodic.State, from time.Time, to *time.Time, confirmed int, disputed []string, succ string) string {
	end := "∞"
	if to != nil {
		end = episodic.FormatTime(*to)
	}
	return fmt.Sprintf("%s %s [%s, %s) confirmed=%d disputed=%v superseded_by=%s", id[len(id)-6:], state, episodic.FormatTime(from), end, confirmed, short(disputed), short([]string{succ}))
}

func short(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if len(id) > 6 {
			id = id[len(id)-6:]
		}
		out = append(out, id)
	}
	return out
}

// current is the open version of id now, or the error Memory gives.
func (m *model) current(id string) (*mVersion, error) {
	v := m.held(id, nil)
	if v == nil || v.state != episodic.Open {
		return v, episodic.ErrConflict
	}
	return v, nil
}

// boundary checks a time where a statement stops holding, as Memory does.
func boundary(v *mVersion, b time.Time) error {
	if b.Before(v.from) || (v.to != nil && b.After(*v.to)) {
		return episodic.ErrInvalid
	}
	return nil
}

func (m *model) close(v *mVersion, tx time.Time) { v.txTo = &tx }

func (m *model) add(v mVersion) { m.versions = append(m.versions, &v) }

// propClock is the fake clock of the property test.
type propClock struct{ t time.Time }

func (c *propClock) now() time.Time { return c.t }

// TestQueryMatchesModel runs random operations against Memory over SQLite
// and against the model, and after each step compares every query over a
// grid of interesting valid and known times.
//
// Under the race detector the driver is some twenty times slower, so the
// test runs 8 cases of at most 4 steps instead of rapid's 100 of at most
// 6, unless -rapid.checks (or RAPID_CHECKS) sets the number of cases.
func TestQueryMatchesModel(t *testing.T) {
	maxSteps := 6
	if raceEnabled {
		defaultChecks(t, 8)
		maxSteps = 4
	}
	rapid.Check(t, func(rt *rapid.T) {
		store, err := sqliteepisodic.Open(t.Context(), filepath.Join(t.TempDir(), "episodes.db"))
		if err != nil {
			rt.Fatal(err)
		}
		defer store.Close()
		clk := &propClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		mem := episodic.New(store, episodic.Options{Now: clk.now})
		p := &prop{rt: rt, t: t, mem: mem, clk: clk, m: &model{}}
		steps := rapid.IntRange(1, maxSteps).Draw(rt, "steps")
		for range steps {
			p.step()
			p.checkGrid(false)
		}
		p.checkGrid(true)
	})
}

// defaultChecks sets rapid's number of checks to n unless the command
// line or the environment chose one.
func defaultChecks(t *testing.T, n int) {
	set := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
			t.Fatal(err)
		}
	}
}

type prop struct {
	rt  *rapid.T
	t   *testing.T
	mem *episodic.Memory
	clk *propClock
	m   *model
	ids []string
	// known are the known times already checked against the whole grid
	// of valid times; a later step can only add versions after them, so
	// they are checked again only at the end.
	known []time.Time
}

const us = time.Microsecond

// advance moves the clock by a random amount, sometimes by none.
func (p *prop) advance() {
	d := rapid.SampledFrom([]time.Duration{0, 0, us, time.Hour, 24 * time.Hour, 17 * 24 * time.Hour}).Draw(p.rt, "advance")
	p.clk.t = p.clk.t.Add(d)
}

// someTime is a time near ref: the interesting boundaries, now, or
// random days around them.
func (p *prop) someTime(label string, refs ...time.Time) time.Time {
	refs = append(refs, p.clk.t)
	ref := rapid.SampledFrom(refs).Draw(p.rt, label+" ref")
	delta := rapid.SampledFrom([]time.Duration{0, 0, -us, us, -48 * time.Hour, 48 * time.Hour, -40 * 24 * time.Hour, 10 * 24 * time.Hour}).Draw(p.rt, label+" delta")
	return ref.Add(delta)
}

func (p *prop) pick(label string) (string, bool) {
	if len(p.ids) == 0 {
		return "", false
	}
	return p.ids[rapid.IntRange(0, len(p.ids)-1).Draw(p.rt, label)], true
}

// errorKind says which sentinel err wraps.
func errorKind(err error) error {
	for _, e := range []error{episodic.ErrConflict, episodic.ErrInvalid, episodic.ErrNotFound} {
		if errors.Is(err, e) {
			return e
		}
	}
	return err
}

func (p *prop) expectErr(op string, got, want error) bool {
	if errorKind(got) != want {
		p.rt.Fatalf("%s: error %v, model says %v", op, got, want)
	}
	return want == nil
}

var words = []string{"alice", "bob", "deploy", "friday", "budget", "team", "red", "blue", "cloud", "lunch"}

func (p *prop) step() {
	p.advance()
	ctx := p.t.Context()
	now := episodic.Normalize(p.clk.t)
	m := p.m
	op := rapid.SampledFrom([]string{"write", "write", "invalidate", "supersede", "revise", "confirm", "dispute"}).Draw(p.rt, "op")
	if len(p.ids) == 0 {
		op = "write"
	}
	content := strings.Join(rapid.SliceOfN(rapid.SampledFrom(words), 1, 4).Draw(p.rt, "words"), " ")
	var bounds []time.Time
	for _, v := range m.versions {
		bounds = append(bounds, v.from)
		if v.to != nil {
			bounds = append(bounds, *v.to)
		}
	}
	switch op {
	case "write":
		w := episodic.Write{Content: content, Entities: []string{rapid.SampledFrom(words).Draw(p.rt, "entity")}}
		from := now
		if rapid.Bool().Draw(p.rt, "has valid_from") {
			from = p.someTime("valid_from", bounds...)
			w.ValidFrom = &from
		}
		var to *time.Time
		if rapid.Bool().Draw(p.rt, "has valid_to") {
			end := p.someTime("valid_to", append(bounds, from)...)
			w.ValidTo, to = &end, &end
		}
		res, err := p.mem.Write(ctx, w)
		var want error
		if to != nil && !to.After(from) {
			want = episodic.ErrInvalid
		}
		if !p.expectErr("write", err, want) {
			return
		}
		tx := m.tx(now)
		id := res.Episode.ID
		m.last = tx
		m.statements = append(m.statements, mStatement{id: id, recorded: tx})
		m.add(mVersion{id: id, from: from, to: to, txFrom: tx, state: episodic.Open})
		p.ids = append(p.ids, id)
		if !res.Episode.RecordedAt.Equal(tx) {
			p.rt.Fatalf("write recorded at %v, model says %v", res.Episode.RecordedAt, tx)
		}
	case "invalidate", "supersede":
		id, _ := p.pick("target")
		cur, want := m.current(id)
		var at *time.Time
		b := now
		if rapid.Bool().Draw(p.rt, "has boundary") {
			var refs []time.Time
			if cur != nil {
				refs = append(refs, cur.from)
				if cur.to != nil {
					refs = append(refs, *cur.to)
				}
			}
			b = p.someTime("boundary", refs...)
			at = &b
		}
		if want == nil {
			want = boundary(cur, b)
		}
		var err error
		var e episodic.Episode
		if op == "invalidate" {
			e, err = p.mem.Invalidate(ctx, id, at, "test")
		} else {
			e, err = p.mem.Supersede(ctx, id, episodic.Successor{Content: content, ValidFrom: at})
		}
		if !p.expectErr(op+" "+id, err, want) {
			return
		}
		tx := m.tx(now)
		m.last = tx
		m.close(cur, tx)
		state := episodic.Invalidated
		if op == "supersede" {
			state = episodic.Superseded
			m.statements = append(m.statements, mStatement{id: e.ID, recorded: tx, supersedes: id})
			m.add(mVersion{id: e.ID, from: b, txFrom: tx, state: episodic.Open})
			p.ids = append(p.ids, e.ID)
		}
		m.add(mVersion{id: id, from: cur.from, to: &b, txFrom: tx, state: state})
		if !e.RecordedAt.Equal(tx) {
			p.rt.Fatalf("%s recorded at %v, model says %v", op, e.RecordedAt, tx)
		}
	case "revise":
		id, _ := p.pick("target")
		cur, want := m.current(id)
		e, err := p.mem.Revise(ctx, id, episodic.Successor{Content: content})
		if !p.expectErr("revise "+id, err, want) {
			return
		}
		tx := m.tx(now)
		others := m.disputedWith(id, nil)
		m.last = tx
		m.close(cur, tx)
		m.statements = append(m.statements, mStatement{id: e.ID, recorded: tx})
		m.add(mVersion{id: e.ID, from: cur.from, to: cur.to, txFrom: tx, state: episodic.Open})
		for _, a := range slices.Clone(m.attestations) {
			if a.id == id {
				m.attestations = append(m.attestations, mAttestation{id: e.ID, tx: a.tx, at: a.at})
			}
		}
		for _, o := range others {
			m.disputes = append(m.disputes, mDispute{a: e.ID, b: o, tx: tx})
		}
		p.ids = append(p.ids, e.ID)
	case "confirm":
		id, _ := p.pick("target")
		cur, want := m.current(id)
		var at *time.Time
		c := now
		if rapid.Bool().Draw(p.rt, "has at") {
			refs := []time.Time{}
			if cur != nil {
				refs = append(refs, cur.from)
			}
			c = p.someTime("at", refs...)
			at = &c
		}
		if want == nil && c.Before(cur.from) {
			want = episodic.ErrInvalid
		}
		_, err := p.mem.Confirm(ctx, id, at, "")
		if !p.expectErr("confirm "+id, err, want) {
			return
		}
		tx := m.tx(now)
		m.last = tx
		m.attestations = append(m.attestations, mAttestation{id: id, tx: tx, at: c})
	case "dispute":
		a, _ := p.pick("a")
		b, _ := p.pick("b")
		var want error
		_, ea := m.current(a)
		_, eb := m.current(b)
		switch {
		case a == b:
			want = episodic.ErrInvalid
		case ea != nil:
			want = ea
		case eb != nil:
			want = eb
		case slices.Contains(m.disputedWith(a, nil), b):
			want = episodic.ErrConflict
		}
		_, _, err := p.mem.Dispute(ctx, a, b, "")
		if !p.expectErr("dispute", err, want) {
			return
		}
		tx := m.tx(now)
		m.last = tx
		m.disputes = append(m.disputes, mDispute{a: a, b: b, tx: tx})
	}
}

// grid is every recorded time and every valid boundary, with the
// microseconds either side.
func (p *prop) grid() (known, valid []time.Time) {
	add := func(set []time.Time, ts ...time.Time) []time.Time {
		for _, t := range ts {
			for _, d := range []time.Duration{-us, 0, us} {
				set = append(set, t.Add(d))
			}
		}
		return set
	}
	for _, v := range p.m.versions {
		known = add(known, v.txFrom)
		valid = add(valid, v.from)
		if v.to != nil {
			valid = add(valid, *v.to)
		}
		if v.txTo != nil {
			known = add(known, *v.txTo)
		}
	}
	for _, a := range p.m.attestations {
		known = add(known, a.tx)
	}
	for _, d := range p.m.disputes {
		known = add(known, d.tx)
	}
	less := func(a, b time.Time) int { return a.Compare(b) }
	slices.SortFunc(known, less)
	slices.SortFunc(valid, less)
	eq := func(a, b time.Time) bool { return a.Equal(b) }
	return slices.CompactFunc(known, eq), slices.CompactFunc(valid, eq)
}

// checkGrid compares queries at every valid time of the grid with the
// model: for the known times of the grid not checked yet (all of them
// when full), and for the current belief.
func (p *prop) checkGrid(full bool) {
	known, valid := p.grid()
	var ks []*time.Time
	for i := range known {
		if full || !slices.ContainsFunc(p.known, known[i].Equal) {
			ks = append(ks, &known[i])
		}
	}
	ks = append(ks, nil)
	for _, k := range ks {
		p.stats(k)
		p.query(nil, k, true)
		p.query(nil, k, false)
		for i := range valid {
			p.query(&valid[i], k, false)
		}
		if k != nil && !k.After(p.m.last) && !slices.ContainsFunc(p.known, k.Equal) {
			p.known = append(p.known, *k)
		}
	}
}

// stats compares the counts held at known with the model.
func (p *prop) stats(known *time.Time) {
	var want episodic.Stats
	for _, s := range p.m.statements {
		v := p.m.held(s.id, known)
		if v == nil {
			continue
		}
		want.Total++
		if v.state == episodic.Open {
			want.Open++
		} else {
			want.Closed++
		}
		if len(p.m.disputedWith(s.id, known)) > 0 {
			want.Disputed++
		}
	}
	got, err := p.mem.Stats(p.t.Context(), known)
	if err != nil || got != want {
		p.rt.Fatalf("stats known %s: %+v %v, model says %+v", fmtp(known), got, err, want)
	}
	// The disputed filter keeps what the counts call disputed.
	res, err := p.mem.Query(p.t.Context(), episodic.Query{Filter: episodic.Filter{KnownAt: known, All: true, Disputed: true}, Limit: episodic.MaxLimit})
	if err != nil {
		p.rt.Fatal(err)
	}
	var gotIDs, wantIDs []string
	for _, r := range res {
		gotIDs = append(gotIDs, r.ID)
	}
	for _, s := range p.m.statements {
		if len(p.m.disputedWith(s.id, known)) > 0 {
			wantIDs = append(wantIDs, s.id)
		}
	}
	slices.Sort(gotIDs)
	slices.Sort(wantIDs)
	if !slices.Equal(gotIDs, wantIDs) {
		p.rt.Fatalf("disputed known %s: %v, model says %v", fmtp(known), short(gotIDs), short(wantIDs))
	}
}

// query compares one query with the model. A nil valid with all false is
// valid now.
func (p *prop) query(valid, known *time.Time, all bool) {
	q := episodic.Query{Filter: episodic.Filter{ValidAt: valid, KnownAt: known, All: all}, Limit: episodic.MaxLimit}
	res, err := p.mem.Query(p.t.Context(), q)
	if err != nil {
		p.rt.Fatalf("query valid %v known %v all %v: %v", valid, known, all, err)
	}
	var got []string
	for _, r := range res {
		got = append(got, describe(r.ID, r.State, r.ValidFrom, r.ValidTo, r.ConfirmedCount, r.DisputedWith, r.SupersededBy))
	}
	slices.Sort(got)
	mv := valid
	if mv == nil && !all {
		now := episodic.Normalize(p.clk.t)
		mv = &now
	}
	if want := p.m.expected(mv, known); !slices.Equal(got, want) {
		p.rt.Fatalf("query valid %s known %s all %v:\n got %s\nwant %s", fmtp(valid), fmtp(known), all, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func fmtp(t *time.Time) string {
	if t == nil {
		return "nil"
	}
	return episodic.FormatTime(*t)
}
