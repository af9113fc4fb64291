// Package rank finds and ranks a workspace's list items and text passages
// from term postings, for the stores that keep internal/textsearch's index
// terms in a database (store/sqlitestore, store/pgstore): a store says
// which rows may hold each query term and reads rows; rank merges the
// postings, matches substrings and fields in Go, and scores and orders
// hits exactly as textsearch.Rank and textsearch.Passages define, so that
// every such store finds and ranks alike.
package rank

// Postings gives the rows that may hold query term i, sorted: for a plain
// word (textsearch.Term.Plain), exactly the rows that match it; for another
// term, a superset of them, or known false when the index cannot narrow
// the term down (any row may hold it). For text, rows are chunk numbers
// from 0.
type Postings func(term int) (rows []int64, known bool, err error)

// Limit returns the number of hits a search with limit n returns at most:
// 10 when n is not positive, and never more than 10000.
func Limit(n int) int {
	if n <= 0 {
		return 10
	}
	return min(n, 10000)
}
