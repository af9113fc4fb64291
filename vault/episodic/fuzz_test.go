package episodic_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

// FuzzParseTime: any time ParseTime accepts is UTC, at microsecond
// precision, and reads back the same from FormatTime and RFC 3339.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{
		"2026-03-01", "2026-03-01T09:30:00Z", "2026-03-01 09:30:00.123456789+02:00", "2026-03-01T09:30",
		"2026-03-01T09:30+05:30", " 2026-03-01T09:30:00.5 ", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z",
		"0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00", "2026-02-30", "yesterday", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := episodic.ParseTime(s)
		if err != nil {
			if !errors.Is(err, episodic.ErrInvalid) {
				t.Fatalf("ParseTime(%q): %v, not ErrInvalid", s, err)
			}
			return
		}
		if tm.Location() != time.UTC || tm.Nanosecond()%1000 != 0 {
			t.Fatalf("ParseTime(%q) = %v: not UTC at microsecond precision", s, tm)
		}
		out := episodic.FormatTime(tm)
		back, err := episodic.ParseTime(out)
		if err != nil || !back.Equal(tm) || episodic.FormatTime(back) != out {
			t.Fatalf("ParseTime(%q) = %s, which reads back as %v, %v", s, out, back, err)
		}
		if back, err := episodic.ParseTime(tm.Format(time.RFC3339Nano)); err != nil || !back.Equal(tm) {
			t.Fatalf("ParseTime(%q) = %v, whose RFC 3339 form reads back as %v, %v", s, tm, back, err)
		}
	})
}

// exportOf writes a small vault with every kind of line and returns its
// export.
func exportOf(f *testing.F) []byte {
	f.Helper()
	s, err := sqliteepisodic.Open(f.Context(), filepath.Join(f.TempDir(), "seed.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	clk := &propClock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	m := episodic.New(s, episodic.Options{Now: clk.now})
	ctx := f.Context()
	must := func(err error) {
		f.Helper()
		if err != nil {
			f.Fatal(err)
		}
	}
	a, err := m.Write(ctx, episodic.Write{Content: "the release is on Friday", Entities: []string{"release", "Ops"}, Source: "chat",
		OccurredAt: ptrTime(clk.t.Add(-time.Hour)), Metadata: map[string]any{"ticket": "REL-1", "n": 2, "ok": true}})
	must(err)
	b, err := m.Write(ctx, episodic.Write{Content: "the release is on Monday", Entities: []string{"release"}, ValidTo: ptrTime(clk.t.AddDate(0, 2, 0))})
	must(err)
	clk.t = clk.t.Add(time.Hour)
	_, err = m.Confirm(ctx, a.Episode.ID, nil, "ops")
	must(err)
	_, _, err = m.Dispute(ctx, a.Episode.ID, b.Episode.ID, "which day?")
	must(err)
	_, err = m.Query(ctx, episodic.Query{Reinforce: true})
	must(err)
	clk.t = clk.t.Add(time.Hour)
	r, err := m.Revise(ctx, a.Episode.ID, episodic.Successor{Content: "releases happen on Fridays"})
	must(err)
	_, err = m.Supersede(ctx, r.ID, episodic.Successor{Content: "releases happen on Tuesdays", ValidFrom: ptrTime(clk.t)})
	must(err)
	_, err = m.Invalidate(ctx, b.Episode.ID, nil, "wrong")
	must(err)
	var buf bytes.Buffer
	must(m.Export(ctx, &buf))
	return buf.Bytes()
}

func ptrTime(t time.Time) *time.Time { return &t }

// exportImport imports recs into a new store and exports it.
func exportImport(t *testing.T, recs []*episodic.Record, name string) []byte {
	t.Helper()
	s, err := sqliteepisodic.Open(t.Context(), filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Import(t.Context(), recs); err != nil {
		t.Fatalf("an export ReadExport accepted does not import into an empty store: %v", err)
	}
	var buf bytes.Buffer
	if err := episodic.New(s, episodic.Options{}).Export(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzReadExport: ReadExport never panics, rejects with ErrInvalid, and
// what it accepts imports into an empty store and exports stably (the
// export of that import imports and exports again to the same bytes).
func FuzzReadExport(f *testing.F) {
	full := exportOf(f)
	f.Add(full)
	lines := strings.SplitAfter(string(full), "\n")
	f.Add([]byte(lines[0] + lines[1]))
	f.Add([]byte(strings.Join(lines[:len(lines)/2], "")))
	f.Add([]byte(`{"type":"statement","id":"a","content":"x","confidence":1,"salience":0.5}` + "\n" +
		`{"type":"version","id":"a","seq":7,"valid_from":"2026-01-01","recorded_at":"2026-01-02T00:00:00+01:00","state":"open"}`))
	f.Add([]byte(`{"type":"statement","id":"b","content":"x","confidence":1,"salience":0.5,"supersedes":"a"}` + "\n" +
		`{"type":"statement","id":"a","content":"y","confidence":1,"salience":0.5}` + "\n" +
		`{"type":"version","id":"a","valid_from":"2026-01-01","recorded_at":"2026-01-01","state":"open"}` + "\n" +
		`{"type":"version","id":"b","valid_from":"2026-01-01","recorded_at":"2026-01-01","state":"open"}`))
	f.Add([]byte(`{"type":"statement","id":"a","content":"x","confidence":1,"salience":0.5,"metadata":{"k":[1,{"x":null}]},"embedding":"AACAPw=="}` + "\n" +
		`{"type":"version","id":"a","valid_from":"0001-01-01T00:30:00+01:00","recorded_at":"2026-01-01","state":"open"}`))
	f.Add([]byte("{}\n"))
	f.Add([]byte("not json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := episodic.ReadExport(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, episodic.ErrInvalid) {
				t.Fatalf("rejected without ErrInvalid: %v", err)
			}
			return
		}
		first := exportImport(t, recs, "first.db")
		again, err := episodic.ReadExport(bytes.NewReader(first))
		if err != nil {
			t.Fatalf("the export of an import does not read back: %v\n%s", err, first)
		}
		if second := exportImport(t, again, "second.db"); !bytes.Equal(first, second) {
			t.Fatalf("the export is not stable:\n%s\nthen\n%s", first, second)
		}
	})
}

// An offset can move a time at the edge of years 0001..9999 out of them in
// UTC; ParseTime refuses such a time rather than return one FormatTime
// writes and ParseTime then refuses.
func TestParseTimeYearsInUTC(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" for refused
	}{
		{"0001-01-01T00:30:00+01:00", ""},
		{"9999-12-31T23:30:00-01:00", ""},
		{"0001-01-01T00:30:00-01:00", "0001-01-01T01:30:00.000000Z"},
		{"9999-12-31T23:30:00+01:00", "9999-12-31T22:30:00.000000Z"},
		{"0001-01-01", "0001-01-01T00:00:00.000000Z"},
	} {
		got, err := episodic.ParseTime(tc.in)
		switch {
		case tc.want == "" && !errors.Is(err, episodic.ErrInvalid):
			t.Errorf("ParseTime(%q) = %v, %v; want ErrInvalid", tc.in, got, err)
		case tc.want != "" && (err != nil || episodic.FormatTime(got) != tc.want):
			t.Errorf("ParseTime(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// Import inserts statements in the order of the file and links each to
// the one it follows, so ReadExport refuses a statement that follows one
// later in the file (or itself), as no export writes.
func TestReadExportFollowsEarlierStatements(t *testing.T) {
	stmt := func(id, follows, ref string) string {
		s := `{"type":"statement","id":"` + id + `","content":"x","confidence":1,"salience":0.5`
		if ref != "" {
			s += `,"` + follows + `":"` + ref + `"`
		}
		return s + "}\n" + `{"type":"version","id":"` + id + `","valid_from":"2026-01-01","recorded_at":"2026-01-01","state":"open"}` + "\n"
	}
	for _, tc := range []struct {
		name, file string
		ok         bool
	}{
		{"supersedes an earlier one", stmt("a", "", "") + stmt("b", "supersedes", "a"), true},
		{"revises an earlier one", stmt("a", "", "") + stmt("b", "revises", "a"), true},
		{"supersedes a later one", stmt("b", "supersedes", "a") + stmt("a", "", ""), false},
		{"revises a later one", stmt("b", "revises", "a") + stmt("a", "", ""), false},
		{"supersedes itself", stmt("a", "supersedes", "a"), false},
		{"a cycle", stmt("a", "supersedes", "b") + stmt("b", "supersedes", "a"), false},
	} {
		recs, err := episodic.ReadExport(strings.NewReader(tc.file))
		if !tc.ok {
			if !errors.Is(err, episodic.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		s, err := sqliteepisodic.Open(t.Context(), filepath.Join(t.TempDir(), "episodes.db"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Import(t.Context(), recs); err != nil {
			t.Errorf("%s: import: %v", tc.name, err)
		}
		s.Close()
	}
}
