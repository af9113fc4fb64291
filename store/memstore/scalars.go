package memstore

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// searchText returns the text SearchItems matches in an item when no
// fields are given: its scalar values as [jsonscan.AppendScalars] lists
// them (the text [store.SearchableText] gives), lower-cased. item must be
// valid JSON, as every stored item is.
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
	return lowerString(sc.buf)
}

// lowerString returns b lower-cased as a new string, converting only once
// when b has no upper case, which is the common case.
func lowerString(b []byte) string {
	for _, c := range b {
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return strings.ToLower(string(b))
		}
	}
	return string(b)
}
