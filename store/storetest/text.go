package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// testValue checks that a dict's object comes back as it was stored,
// including integers too large for a float64.
func testValue(t *testing.T, s store.Store) {
	cases := []struct{ name, value string }{
		{"flat", `{"a":1,"b":"two","c":true,"d":null}`},
		{"nested", `{"a":{"b":{"c":[1,{"d":[]}]}},"e":{}}`},
		{"empty", `{}`},
		{"unicode", `{"ключ":"значение","emoji":"😀","escaped":"tab\tnewline\nquote\"","日本":["語"]}`},
		{"big numbers", `{"id":9007199254740993,"neg":-12345678901234567890,"f":1.5e300,"small":0.000001}`},
		// Items counts distinct keys: a repeated key has one value.
		{"repeated key", `{"a":1,"b":2,"a":3,"\u0061":4}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws, c := dictWorkspace("dict_"+strings.ReplaceAll(tc.name, " ", "_"), tc.value)
			mustPut(t, s, ws, c)
			got, err := s.Value(t.Context(), ws.ID)
			if err != nil {
				t.Fatalf("Value: %v", err)
			}
			if !jsonEqualNumbers(got, c.Value) {
				t.Errorf("Value = %s, want %s", got, c.Value)
			}
			if st := mustStat(t, s, ws.ID); st.Items != ws.Items {
				t.Errorf("Stat().Items = %d, want %d keys", st.Items, ws.Items)
			}
		})
	}
}

// jsonEqualNumbers is jsonEqual with numbers compared by their digits, so a
// backend that passes integers through a float64 is caught.
func jsonEqualNumbers(a, b []byte) bool {
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	va, errA := decode(a)
	vb, errB := decode(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

// mixedText returns n runes cycling through one-, two-, three- and
// four-byte UTF-8 encodings, with some line breaks, so that rune and byte
// offsets differ everywhere.
func mixedText(n int) string {
	runes := []rune{'a', 'é', '日', '😀', 'b', 'ß', '\n', 'Ж', '€', '𝄞', ' ', 'z'}
	var b strings.Builder
	for i := range n {
		b.WriteRune(runes[(i*7+i/13)%len(runes)])
	}
	return b.String()
}

// testTextSlice checks that TextSlice addresses text by rune, returns short
// or empty results at the end, and keeps the text byte for byte.
func testTextSlice(t *testing.T, s store.Store) {
	ctx := t.Context()
	text := mixedText(20000)
	ref := []rune(text)
	ws, c := textWorkspace("sliced", text)
	mustPut(t, s, ws, c)

	slice := func(offset, n int64) string {
		l := int64(len(ref))
		start := min(offset, l)
		end := min(offset+min(n, l), l)
		return string(ref[start:end])
	}
	L := int64(len(ref))
	offsets := []int64{0, 1, 2, 3, 4095, 4096, 4097, 8191, 8192, 8193, 12288, 16383, 16384, L - 4097, L - 1, L, L + 1, L + 1000, 1 << 40}
	lengths := []int64{0, 1, 2, 7, 100, 4096, 5000, 1 << 40}
	for _, off := range offsets {
		for _, n := range lengths {
			got, err := s.TextSlice(ctx, ws.ID, off, n)
			if err != nil {
				t.Errorf("TextSlice(%d, %d): %v", off, n, err)
				continue
			}
			if want := slice(off, n); got != want {
				t.Errorf("TextSlice(%d, %d) = %d runes %.40q…, want %d runes %.40q…",
					off, n, utf8.RuneCountInString(got), got, utf8.RuneCountInString(want), want)
			}
		}
	}

	// Negative arguments are not in the contract, but must not panic or
	// return text (SQL's substr counts negative offsets from the end).
	for _, a := range [][2]int64{{-1, 5}, {-5, 3}, {0, -1}, {10, -3}, {-1 << 40, 1 << 40}} {
		got, err := s.TextSlice(ctx, ws.ID, a[0], a[1])
		if err == nil && got != "" {
			t.Errorf("TextSlice(%d, %d) = %q, want an error or nothing", a[0], a[1], got)
		}
	}

	small := []struct {
		text      string
		off, n    int64
		want      string
		wantWhole bool
	}{
		{text: "hello", off: 1, n: 3, want: "ell"},
		{text: "hello", off: 3, n: 10, want: "lo"},
		{text: "hello", off: 5, n: 1, want: ""},
		{text: "a\r\nb\tc  ", off: 1, n: 2, want: "\r\n"},
		{text: "a\r\nb\tc  ", off: 0, n: 100, want: "a\r\nb\tc  "},
		{text: "", off: 0, n: 10, want: ""},
		{text: "😀😀😀", off: 1, n: 1, want: "😀"},
		{text: "e\u0301t\u00e9", off: 1, n: 1, want: "\u0301"},
	}
	for i, tc := range small {
		ws, c := textWorkspace(fmt.Sprintf("sliced_%d", i), tc.text)
		mustPut(t, s, ws, c)
		got, err := s.TextSlice(ctx, ws.ID, tc.off, tc.n)
		if err != nil || got != tc.want {
			t.Errorf("TextSlice(%q, %d, %d) = %q, %v; want %q", tc.text, tc.off, tc.n, got, err, tc.want)
		}
	}
}

// textBuilder assembles a text and records the rune offsets of its parts.
type textBuilder struct {
	b strings.Builder
	n int64 // runes written
}

// filler contains none of the terms the text tests search for.
const filler = "Lorem ipsum dolor sit amet, ünïcödé 日本語のテキスト 😀 consectetur adipiscing elit. "

// add appends s and returns the rune offset it starts at.
func (tb *textBuilder) add(s string) int64 {
	off := tb.n
	tb.b.WriteString(s)
	tb.n += int64(utf8.RuneCountInString(s))
	return off
}

// fillTo appends filler until the text is at least n runes long.
func (tb *textBuilder) fillTo(n int64) {
	for tb.n < n {
		words := strings.Fields(filler)
		for _, w := range words {
			if tb.n >= n {
				break
			}
			tb.add(w + " ")
		}
	}
}

// checkTextHits fails the test unless every hit points at one of the terms
// and hits are ranked best first.
func checkTextHits(t *testing.T, s store.Store, id string, q store.TextQuery, hits []store.TextHit) {
	t.Helper()
	query, err := textsearch.ParseQuery(q.Text)
	if err != nil {
		t.Fatalf("SearchText(%q): %v", q.Text, err)
	}
	seen := map[int64]bool{}
	for i, h := range hits {
		if h.Length <= 0 || h.Terms < 1 {
			t.Errorf("SearchText(%q): hit %d has Length %d, Terms %d", q.Text, i, h.Length, h.Terms)
		}
		if seen[h.Offset] {
			t.Errorf("SearchText(%q): offset %d returned twice", q.Text, h.Offset)
		}
		seen[h.Offset] = true
		got, err := s.TextSlice(t.Context(), id, h.Offset, int64(h.Length))
		if err != nil {
			t.Errorf("TextSlice(%d, %d) of hit %d: %v", h.Offset, h.Length, i, err)
			continue
		}
		// A plain word's hit is the whole word ("Parser" for "parse").
		found := false
		for _, term := range query.Terms {
			found = found || term.Is(got)
		}
		if !found {
			t.Errorf("SearchText(%q): hit %d at %d+%d is %q, which is none of the terms %+v", q.Text, i, h.Offset, h.Length, got, query.Terms)
		}
		if i > 0 {
			prev := hits[i-1]
			if h.Terms > prev.Terms {
				t.Errorf("SearchText(%q): hit %d (%d terms) ranks below hit %d (%d terms)", q.Text, i, h.Terms, i-1, prev.Terms)
			} else if h.Terms == prev.Terms && h.Score > prev.Score {
				t.Errorf("SearchText(%q): hit %d (score %v) ranks below hit %d (score %v)", q.Text, i, h.Score, i-1, prev.Score)
			}
		}
	}
}

func mustSearchText(t *testing.T, s store.Store, id string, q store.TextQuery) []store.TextHit {
	t.Helper()
	hits, err := s.SearchText(t.Context(), id, q)
	if err != nil {
		t.Fatalf("SearchText(%q, %+v): %v", id, q, err)
	}
	checkTextHits(t, s, id, q, hits)
	return hits
}

// testSearchText checks that passages with more distinct terms close
// together rank first, that every hit locates a term, and Limit.
func testSearchText(t *testing.T, s store.Store) {
	ctx := t.Context()

	t.Run("ranking", func(t *testing.T) {
		// Places are tens of thousands of runes apart, so no reasonable
		// notion of "near" joins two of them.
		var tb textBuilder
		tb.fillTo(1000)
		aStart := tb.add("alpha one alpha two alpha three alpha four alpha five. ")
		tb.fillTo(25000)
		bStart := tb.add("Here Alpha, BETA and gamma meet. ")
		bEnd := tb.n
		tb.fillTo(50000)
		cStart := tb.add("beta then gamma. ")
		cEnd := tb.n
		tb.fillTo(75000)
		tb.add("gamma ")
		tb.fillTo(100000)
		tb.add("beta ")
		tb.fillTo(110000)
		ws, c := textWorkspace("text_ranked", tb.b.String())
		mustPut(t, s, ws, c)

		q := store.TextQuery{Text: "alpha beta gamma"}
		hits := mustSearchText(t, s, ws.ID, q)
		if len(hits) < 3 {
			t.Fatalf("SearchText(%q) = %d hits %+v, want at least 3", q.Text, len(hits), hits)
		}
		if h := hits[0]; h.Terms != 3 || h.Offset < bStart || h.Offset >= bEnd {
			t.Errorf("best hit = %+v, want 3 terms in [%d, %d)", h, bStart, bEnd)
		}
		if h := hits[1]; h.Terms != 2 || h.Offset < cStart || h.Offset >= cEnd {
			t.Errorf("second hit = %+v, want 2 terms in [%d, %d)", h, cStart, cEnd)
		}
		foundA := false
		for _, h := range hits[2:] {
			if h.Terms != 1 {
				t.Errorf("hit %+v: want 1 term", h)
			}
			if h.Offset >= aStart && h.Offset < aStart+60 {
				foundA = true
			}
		}
		if !foundA {
			t.Errorf("SearchText(%q) = %+v: no hit in the alpha-only passage at %d", q.Text, hits, aStart)
		}

		if hits := mustSearchText(t, s, ws.ID, store.TextQuery{Text: q.Text, Limit: 1}); len(hits) != 1 || hits[0].Terms != 3 {
			t.Errorf("SearchText(Limit 1) = %+v, want the 3-term passage", hits)
		}
		if hits := mustSearchText(t, s, ws.ID, store.TextQuery{Text: "GAMMA"}); len(hits) != 3 {
			t.Errorf("SearchText(GAMMA) = %+v, want 3 hits", hits)
		}
	})

	t.Run("limit", func(t *testing.T) {
		// 30 places, each far from the others.
		var tb textBuilder
		var places []int64
		for i := range 30 {
			tb.fillTo(int64(i+1) * 5000)
			places = append(places, tb.add("delta "))
		}
		tb.fillTo(tb.n + 100)
		ws, c := textWorkspace("text_limited", tb.b.String())
		mustPut(t, s, ws, c)
		for _, tc := range []struct{ limit, want int }{{0, 10}, {1, 1}, {7, 7}, {30, 30}, {1000, 30}} {
			hits := mustSearchText(t, s, ws.ID, store.TextQuery{Text: "delta", Limit: tc.limit})
			if len(hits) != tc.want {
				t.Errorf("SearchText(delta, Limit %d) = %d hits, want %d", tc.limit, len(hits), tc.want)
			}
			if tc.want == 30 {
				for _, h := range hits {
					if !slices.Contains(places, h.Offset) {
						t.Errorf("SearchText(delta) hit at %d, want one of %v", h.Offset, places)
					}
				}
			}
		}
	})

	t.Run("terms", func(t *testing.T) {
		var tb textBuilder
		zeta := tb.add("Zeta starts the text. ")
		tb.fillTo(300)
		cpp := tb.add("I write C++ daily; ")
		tb.fillTo(700)
		mail := tb.add("my E-Mail is x@example.com; ")
		tb.fillTo(1100)
		parser := tb.add("the Parser works. ")
		tb.fillTo(1500)
		naive := tb.add("Naïve approach. ")
		tb.fillTo(1700)
		ecole := tb.add("À l'ÉCOLE. ")
		tb.fillTo(1900)
		omega := tb.add("omega")
		ws, c := textWorkspace("text_terms", tb.b.String())
		mustPut(t, s, ws, c)

		cases := []struct {
			q    string
			near int64 // the hit must lie in [near, near+30)
		}{
			{"zeta", zeta},
			{"c++", cpp},
			{"e-mail", mail},
			{"x@example.com", mail},
			{"parse", parser},
			{"NAÏVE", naive},
			{"naive", naive},
			{"ecole", ecole},
			{"parsing", parser}, // stem pars
			{"omega", omega},
		}
		for _, tc := range cases {
			hits := mustSearchText(t, s, ws.ID, store.TextQuery{Text: tc.q})
			if len(hits) != 1 || hits[0].Offset < tc.near || hits[0].Offset >= tc.near+30 {
				t.Errorf("SearchText(%q) = %+v, want one hit in [%d, %d)", tc.q, hits, tc.near, tc.near+30)
			}
		}
		for _, q := range []string{"", "   ", `"" ''`, "xylophone"} {
			if hits := mustSearchText(t, s, ws.ID, store.TextQuery{Text: q}); len(hits) != 0 {
				t.Errorf("SearchText(%q) = %+v, want none", q, hits)
			}
		}
		for _, q := range []string{`"`, `'`, `*`, `foo*`, `(`, `)`, `a:b`, `^x`, `-`, `NEAR(zeta omega)`,
			`zeta OR`, `NOT zeta`, `' OR 1=1 --`, `%`, `_`, `\`, "\x00", "\xff\xfe"} {
			if _, err := s.SearchText(ctx, ws.ID, store.TextQuery{Text: q}); err != nil {
				t.Errorf("SearchText(%q): %v", q, err)
			}
		}
	})

	t.Run("empty text", func(t *testing.T) {
		ws, c := textWorkspace("text_empty", "")
		mustPut(t, s, ws, c)
		if hits := mustSearchText(t, s, ws.ID, store.TextQuery{Text: "anything"}); len(hits) != 0 {
			t.Errorf("SearchText on empty text = %+v", hits)
		}
	})
}
