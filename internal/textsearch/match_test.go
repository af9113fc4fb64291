package textsearch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery(`  Running RUNS "quoted" 'x' C++ c++ École ecole e-mail "" running`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Term{
		{Text: "running", Plain: true, Stem: "run"},
		{Text: "quoted", Plain: true, Stem: "quot"},
		{Text: "x", Plain: true, Stem: "x"},
		{Text: "c++"},
		{Text: "ecole", Plain: true, Stem: "ecol"},
		{Text: "e-mail"},
	}
	if !slices.Equal(q.Terms, want) {
		t.Errorf("terms = %+v, want %+v", q.Terms, want)
	}
	if q := mustQuery(t, "\xaa x\xffy"); len(q.Terms) != 2 || q.Terms[0].Text != "\uFFFD" || q.Terms[1].Text != "x\uFFFDy" {
		t.Errorf("terms of invalid UTF-8 = %+v, want U+FFFD in its place", q.Terms)
	}
	for _, text := range []string{"", "  \t\n ", `"" ''`} {
		if q, err := ParseQuery(text); err != nil || len(q.Terms) != 0 {
			t.Errorf("ParseQuery(%q) = %+v, %v; want no terms", text, q, err)
		}
	}
	var many []string
	for i := range MaxTerms + 1 {
		many = append(many, fmt.Sprintf("w%d", i))
	}
	if _, err := ParseQuery(strings.Join(many[:MaxTerms], " ")); err != nil {
		t.Errorf("%d terms: %v", MaxTerms, err)
	}
	if _, err := ParseQuery(strings.Join(many, " ")); !errors.Is(err, ErrTooManyTerms) {
		t.Errorf("%d terms: %v, want ErrTooManyTerms", MaxTerms+1, err)
	}
}

func mustQuery(t testing.TB, text string) *Query {
	t.Helper()
	q, err := ParseQuery(text)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// all is the set of every term.
func all() *TermSet {
	var s TermSet
	for i := range MaxTerms {
		s.Add(i)
	}
	return &s
}

func TestMatcherCount(t *testing.T) {
	q := mustQuery(t, "parse c++ running naive")
	m := NewMatcher(q)
	freq := make([]int, len(q.Terms))
	text := "The Parser parses C++ and c++; runs RUNNING runner. Naïve NAÏVETÉ"
	m.Count(text, all(), freq)
	// parse: parser, parses; c++: twice; running (stem run): runs,
	// running, runner; naive (stem naiv): naïve, naïveté.
	if want := []int{2, 2, 3, 2}; !slices.Equal(freq, want) {
		t.Errorf("Count = %v, want %v", freq, want)
	}
	var some TermSet
	some.Add(0)
	some.Add(3)
	m.Count(text, &some, freq)
	if want := []int{2, 0, 0, 2}; !slices.Equal(freq, want) {
		t.Errorf("Count of terms 0 and 3 = %v, want %v", freq, want)
	}
}

func TestMatcherLocate(t *testing.T) {
	q := mustQuery(t, "ecole c++ parse")
	m := NewMatcher(q)
	text := "École: parse C++x, the parsers"
	got := m.Locate(nil, text, all())
	want := []Occurrence{
		{Term: 0, Offset: 0, Runes: 5},
		{Term: 2, Offset: 7, Runes: 5},
		{Term: 1, Offset: 13, Runes: 3},
		{Term: 2, Offset: 23, Runes: 7},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Locate = %+v, want %+v", got, want)
	}
	for _, o := range got {
		s := string([]rune(text)[o.Offset : o.Offset+o.Runes])
		if !q.Terms[o.Term].Is(s) {
			t.Errorf("term %+v: Is(%q) = false", q.Terms[o.Term], s)
		}
		for i := range q.Terms {
			if i != o.Term && q.Terms[i].Is(s) {
				t.Errorf("term %+v: Is(%q) = true", q.Terms[i], s)
			}
		}
	}
	var freq [3]int
	m.Count(text, all(), freq[:])
	for _, o := range got {
		freq[o.Term]--
	}
	if freq != [3]int{} {
		t.Errorf("Count and Locate disagree by %v", freq)
	}
}

// TestDocsCount checks Docs.Count against Matcher.Count, text by text.
func TestDocsCount(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	texts := randomTexts(scaled(3000, 500))
	texts = append(texts, "", "   ", "c++c++c++", "ecole École ECOLE")
	var tz Tokenizer
	docs := make([]Doc, len(texts))
	for i, s := range texts {
		docs[i] = tz.NewDoc(s)
	}
	joined := NewDocs(docs)
	if joined.Len() != len(texts) {
		t.Fatalf("Len = %d, want %d", joined.Len(), len(texts))
	}
	// Docs rebuilt from Doc gives the same.
	again := make([]Doc, joined.Len())
	for i := range again {
		again[i] = joined.Doc(i)
	}
	words := strings.Fields("the run running connect Café cafe naive ÉCOLE e-mail c++ x@example.com 3.14 1,000 a 😀 日本語 ΣΊΣΥΦΟΣ don't")
	for range 50 {
		var qs []string
		for range 1 + r.IntN(4) {
			qs = append(qs, words[r.IntN(len(words))])
		}
		q := mustQuery(t, strings.Join(qs, " "))
		for _, d := range []*Docs{joined, NewDocs(again)} {
			got := make([][]int, len(texts))
			for i := range got {
				got[i] = make([]int, len(q.Terms))
			}
			if err := d.Count(t.Context(), q, func(doc, term, n int) { got[doc][term] = n }); err != nil {
				t.Fatal(err)
			}
			m := NewMatcher(q)
			want := make([]int, len(q.Terms))
			for i, s := range texts {
				m.Count(s, all(), want)
				if !slices.Equal(got[i], want) {
					t.Fatalf("query %q, text %q: Docs.Count %v, Matcher.Count %v", qs, s, got[i], want)
				}
			}
		}
	}
}

func TestInnerTerms(t *testing.T) {
	for _, tc := range []struct {
		term string
		want []string
	}{
		{"c++", nil},
		{"e-mail", nil},
		{"x@example.com", []string{"exampl"}},
		{"2025-03-04", []string{"03"}},
		{"a-b-c-b-d", []string{"b", "c"}},
		{"-running-", []string{"run"}},
		{"-ÉCOLE-", []string{"ecol"}},
		{"%", nil},
		// After a diacritic the text may continue a token: "x\u0301ab-"
		// holds the term and its token is "xab".
		{"-\u0301ab-", nil},
		{"\u0301ab-", nil},
	} {
		if got := InnerTerms(tc.term); !slices.Equal(got, tc.want) {
			t.Errorf("InnerTerms(%q) = %q, want %q", tc.term, got, tc.want)
		}
	}
}

func TestPassages(t *testing.T) {
	// Matches at 0, 150 and 199 are one passage; 200 is PassageRunes
	// after 0, so starts the next, which 399 ends; 400 starts a third.
	var g Passages
	var got []Passage
	for _, m := range []struct {
		term   int
		offset int64
	}{{0, 0}, {1, 150}, {0, 199}, {2, 200}, {2, 399}, {1, 400}} {
		if p, ok := g.Add(Occurrence{Term: m.term, Runes: 3}, m.offset); ok {
			got = append(got, p)
		}
	}
	if p, ok := g.Close(); ok {
		got = append(got, p)
	}
	if _, ok := g.Close(); ok {
		t.Error("Close twice gave two passages")
	}
	set := func(terms ...int) (s TermSet) {
		for _, i := range terms {
			s.Add(i)
		}
		return s
	}
	want := []Passage{
		{Offset: 0, Runes: 3, Terms: set(0, 1), Matches: 3},
		{Offset: 200, Runes: 3, Terms: set(2), Matches: 2},
		{Offset: 400, Runes: 3, Terms: set(1), Matches: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("passages %+v, want %+v", got, want)
	}
}
