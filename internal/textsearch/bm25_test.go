package textsearch

import (
	"database/sql"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestBM25MatchesFTS5 scores a few rows with IDF, Norm and Weight and
// compares with FTS5's bm25().
func TestBM25MatchesFTS5(t *testing.T) {
	rows := []string{"a b", "a a c", "b c d e", "f", "a c c c c c c", "g h i j k l m n o p"}
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE p USING fts5(t, tokenize='porter unicode61')`); err != nil {
		t.Fatal(err)
	}
	tokens := 0
	for i, r := range rows {
		if _, err := db.Exec(`INSERT INTO p(rowid, t) VALUES (?, ?)`, i, r); err != nil {
			t.Fatal(err)
		}
		tokens += len(strings.Fields(r))
	}
	avg := float64(tokens) / float64(len(rows))
	for _, query := range []string{"a", "c", "a c", "c a f", "b"} {
		res, err := db.Query(`SELECT rowid, -bm25(p) FROM p WHERE p MATCH ? ORDER BY rowid`, MatchAny(query))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for res.Next() {
			var row int
			var want float64
			if err := res.Scan(&row, &want); err != nil {
				t.Fatal(err)
			}
			words := strings.Fields(rows[row])
			norm := Norm(float64(len(words)), avg)
			got := 0.0
			for _, term := range strings.Fields(query) {
				freq, hits := 0, 0
				for _, w := range words {
					if w == term {
						freq++
					}
				}
				for _, r := range rows {
					if strings.Contains(" "+r+" ", " "+term+" ") {
						hits++
					}
				}
				if freq > 0 {
					got += Weight(IDF(int64(len(rows)), int64(hits)), float64(freq), norm)
				}
			}
			if math.Abs(got-want) > 1e-12*math.Abs(want) {
				t.Errorf("%q, row %q: score %v, FTS5 %v", query, rows[row], got, want)
			}
			n++
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		res.Close()
		if n == 0 {
			t.Errorf("%q matched nothing", query)
		}
	}
}

func TestIDF(t *testing.T) {
	if got, want := IDF(10, 1), math.Log(9.5/1.5); got != want {
		t.Errorf("IDF(10, 1) = %v, want %v", got, want)
	}
	// Half the documents or more: FTS5's floor.
	for _, hits := range []int64{5, 9, 10} {
		if got := IDF(10, hits); got != 1e-6 {
			t.Errorf("IDF(10, %d) = %v, want 1e-6", hits, got)
		}
	}
}

// TestRank checks the order of a small search worked out by hand.
func TestRank(t *testing.T) {
	set := func(terms ...int) (s TermSet) {
		for _, i := range terms {
			s.Add(i)
		}
		return s
	}
	// Three terms over 10 documents. 5 and 7 match terms 0 and 1, 7 more
	// often; 1 and 2 match one term each, 1 and 2 of the same IDF (both
	// terms are in three candidates) and the same length: the lower Doc
	// first. 9 matches term 2 only, which is rarer, but once in a long
	// document.
	cands := []Candidate{
		{Doc: 5, Terms: set(0, 1)},
		{Doc: 2, Terms: set(0)},
		{Doc: 7, Terms: set(0, 1)},
		{Doc: 1, Terms: set(1)},
		{Doc: 9, Terms: set(2)},
	}
	measures := map[int64]Measure{
		5: {Len: 10, Freq: []int{1, 1, 0}},
		7: {Len: 10, Freq: []int{2, 1, 0}},
		2: {Len: 10, Freq: []int{1, 0, 0}},
		1: {Len: 10, Freq: []int{0, 1, 0}},
		9: {Len: 1000, Freq: []int{0, 0, 1}},
	}
	measured := 0
	measure := func(cs []Candidate) ([]Measure, error) {
		measured = len(cs)
		out := make([]Measure, len(cs))
		for i, c := range cs {
			out[i] = measures[c.Doc]
		}
		return out, nil
	}
	stats := Stats{Terms: 3, Docs: 10, AvgLen: 10}
	docs := func(cs []Candidate) (out []int64) {
		for _, c := range cs {
			out = append(out, c.Doc)
		}
		return out
	}
	// Term 2's IDF, log(9.5/1.5) ≈ 1.85, weighs a single occurrence in a
	// document 100 times the average length at 1.85·2.2/(1+1.2·(0.25+75))
	// ≈ 0.045; terms 0 and 1, log(7.5/3.5) ≈ 0.76, weigh 0.76 in a
	// document of average length: 9 ranks last.
	got, err := Rank(append([]Candidate(nil), cands...), stats, 10, measure)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{7, 5, 1, 2, 9}; !slices.Equal(docs(got), want) || measured != 5 {
		t.Errorf("Rank = %v (%d measured), want %v (5)", docs(got), measured, want)
	}
	// With room for two, only the two-term candidates compete.
	got, _ = Rank(append([]Candidate(nil), cands...), stats, 2, measure)
	if want := []int64{7, 5}; !slices.Equal(docs(got), want) || measured != 2 {
		t.Errorf("Rank, limit 2 = %v (%d measured), want %v (2)", docs(got), measured, want)
	}

	// Past ScoreCap nothing is measured: the IDF of the terms decides.
	var many []Candidate
	for i := range ScoreCap {
		many = append(many, Candidate{Doc: int64(i), Terms: set(0)})
	}
	many = append(many, Candidate{Doc: ScoreCap, Terms: set(1)})
	measured = 0
	got, _ = Rank(many, Stats{Terms: 2, Docs: 2 * ScoreCap, AvgLen: 10}, 3, measure)
	if want := []int64{ScoreCap, 0, 1}; !slices.Equal(docs(got), want) || measured != 0 {
		t.Errorf("Rank past the cap = %v (%d measured), want %v (none)", docs(got), measured, want)
	}
	if got, _ := Rank(nil, stats, 10, measure); got != nil {
		t.Errorf("Rank of nothing = %v", got)
	}
}
