package memstore

import (
	"encoding/json"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// searchText returns the text SearchItems matches in an item when no
// fields are given: its scalar values as [jsonscan.AppendScalars] lists
// them (the text [store.SearchableText] gives). item must be valid JSON, as
// every stored item is.
func searchText(item json.RawMessage) string {
	var sc scanner
	return sc.searchText(item)
}

// scanner holds the memory that searchText reuses from one item to the
// next.
type scanner struct {
	buf     []byte
	scalars jsonscan.Scalars
}

// searchText is the function searchText, reusing sc's memory.
func (sc *scanner) searchText(item json.RawMessage) string {
	sc.buf, _ = sc.scalars.Append(sc.buf[:0], item)
	return string(sc.buf)
}
