package sqlitestore

import (
	"fmt"
	"strings"
	"testing"
)

// TestIndexTerms checks that index terms are the distinct stems, in order.
func TestIndexTerms(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", ""},
		{"Running runs RUN ran", "run ran"},
		{"The parser parses; parsers parse.", "the parser pars"},
		{"x@example.com 2025-03-04", "x exampl com 2025 03 04"},
		{"École école ECOLE ecole", "ecol"},
		{"Naïve nai\u0308ve NAIVE", "naiv"},
	} {
		got := string((&termBuilder{}).indexTerms(nil, tc.text))
		if got != tc.want {
			t.Errorf("indexTerms(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	// Enough distinct words to make the dedup set grow several times.
	var words []string
	for i := range 1000 {
		words = append(words, fmt.Sprintf("w%d", i), fmt.Sprintf("w%d", i/2))
	}
	got := strings.Fields(string((&termBuilder{}).indexTerms(nil, strings.Join(words, " "))))
	if len(got) != 1000 {
		t.Errorf("indexTerms of 1000 distinct words in 2000 = %d terms", len(got))
	}
}

func TestSubstringFilter(t *testing.T) {
	for _, tc := range []struct{ term, want string }{
		{"c++", ""},
		{"x@example.com", `"k7qexampl"`},
		{"a-b-c-b-d", `"k7qb" AND "k7qc"`},
	} {
		if got := substringFilter(termPrefix(7), tc.term); got != tc.want {
			t.Errorf("substringFilter(%q) = %q, want %q", tc.term, got, tc.want)
		}
	}
}
