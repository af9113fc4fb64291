package memstore

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// lines returns the newline-separated parts of s, sorted.
func lines(s string) []string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return l
}

func FuzzScalarText(f *testing.F) {
	for _, s := range []string{
		`{"a":"Héllo","b":[1,-2.5e+3,true,false,null],"c":{"d":"x\"y\\z"}}`,
		`"bare \u00e9 string"`,
		`{"key" : "value" , "n" : 0}`,
		`[{"a":{}}, [], "", "\ud83d\ude00", "\u0041"]`,
		`{"bad":"caf` + "\xe9" + `"}`,
		`42`,
		`{"x":"a\nb","y":"tab\tand\u2028"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, item string) {
		if !json.Valid([]byte(item)) {
			return
		}
		got := searchText(json.RawMessage(item))
		want := store.SearchableText(json.RawMessage(item), nil)
		if !slices.Equal(lines(got), lines(want)) {
			t.Fatalf("searchText(%s) = %q, want the values of %q", item, got, want)
		}
		// A scanner reused after other items must give the same text.
		var sc scanner
		for _, other := range []string{`{"a":{"b":{"c":"X"}},"d":[{"e":2},{"a":1}]}`, item, `[{"k":1},{"k":2}]`} {
			sc.searchText(json.RawMessage(other))
		}
		if again := sc.searchText(json.RawMessage(item)); again != got {
			t.Fatalf("searchText(%s) with a reused scanner = %q, want %q", item, again, got)
		}
	})
}
