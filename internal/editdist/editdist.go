// Package editdist measures how far apart two names are (the Levenshtein
// distance) and finds the names nearest a misspelt one, for "did you mean"
// suggestions.
package editdist

import (
	"cmp"
	"slices"
)

// maxLen caps the inputs compared: only near misses of short names matter,
// and the cost grows with the product of the lengths.
const maxLen = 64

// Distance is the Levenshtein distance between a and b, in bytes; maxLen
// when either is longer than maxLen.
func Distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return maxLen
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Nearest returns the candidates within distance within of name, nearest
// first; candidates at the same distance keep their order.
func Nearest(name string, candidates []string, within int) []string {
	type near struct {
		name string
		dist int
	}
	var found []near
	for _, c := range candidates {
		if d := Distance(name, c); d <= within {
			found = append(found, near{c, d})
		}
	}
	slices.SortStableFunc(found, func(a, b near) int { return cmp.Compare(a.dist, b.dist) })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.name
	}
	return out
}
