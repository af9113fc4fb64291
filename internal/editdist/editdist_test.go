package editdist

import (
	"slices"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"sort", "sort", 0},
		{"", "abc", 3},
		{"srot", "sort", 2},
		{"notes", "nodes", 1},
		{"kitten", "sitting", 3},
		{"$gtee", "$gte", 1},
		{strings.Repeat("a", 65), "a", maxLen},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	names := []string{"notes", "nodes", "docs", "node"}
	for _, tt := range []struct {
		name   string
		within int
		want   []string
	}{
		{"node", 2, []string{"node", "nodes", "notes"}},
		{"doc", 1, []string{"docs"}},
		{"node", 1, []string{"node", "nodes"}},
		{"nodez", 1, []string{"nodes", "node"}},
		{"zzzz", 2, []string{}},
		{"node", -1, []string{}},
	} {
		if got := Nearest(tt.name, names, tt.within); !slices.Equal(got, tt.want) {
			t.Errorf("Nearest(%q, %d) = %q, want %q", tt.name, tt.within, got, tt.want)
		}
	}
}
