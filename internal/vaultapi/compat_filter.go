package vaultapi

// Helpers of the /ctxvault semantic routes: CtxVault's chunk ids, its
// Chroma where filters over a passage's metadata, and its list shapes.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/vault"
)

// chunkID is the reference's id of a document's chunk: the doc_id, "::"
// and the hex SHA-256 of the chunk's index as 8 bytes big-endian.
func chunkID(doc string, i int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	h := sha256.Sum256(b[:])
	return doc + "::" + hex.EncodeToString(h[:])
}

// chunkFilter is a compiled Chroma where filter over a passage's
// metadata.
type chunkFilter func(meta map[string]string) bool

// compileFilter compiles a where filter: {key: value}, {key: {$op:
// value}} with $eq, $ne, $in or $nin, and {$and: [...]}, {$or: [...]};
// the clauses of one object must all hold.
func compileFilter(where map[string]any) (chunkFilter, error) {
	var all []chunkFilter
	for _, k := range slices.Sorted(maps.Keys(where)) {
		v := where[k]
		switch k {
		case "$and", "$or":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil, errBad("filters: %s takes a non-empty list of filters", k)
			}
			var subs []chunkFilter
			for _, s := range list {
				m, ok := s.(map[string]any)
				if !ok {
					return nil, errBad("filters: %s takes a list of filter objects", k)
				}
				f, err := compileFilter(m)
				if err != nil {
					return nil, err
				}
				subs = append(subs, f)
			}
			and := k == "$and"
			all = append(all, func(meta map[string]string) bool {
				for _, f := range subs {
					if f(meta) != and {
						return !and
					}
				}
				return and
			})
			continue
		}
		if strings.HasPrefix(k, "$") {
			return nil, errBad("filters: unknown operator %s (supported: $and, $or, and per key $eq, $ne, $in, $nin)", k)
		}
		op, arg := "$eq", v
		if m, ok := v.(map[string]any); ok {
			if len(m) != 1 {
				return nil, errBad("filters: %q takes one operator", k)
			}
			for op, arg = range m {
			}
		}
		f, err := compileClause(k, op, arg)
		if err != nil {
			return nil, err
		}
		all = append(all, f)
	}
	return func(meta map[string]string) bool {
		for _, f := range all {
			if !f(meta) {
				return false
			}
		}
		return true
	}, nil
}

// compileClause compiles one key's operator.
func compileClause(key, op string, arg any) (chunkFilter, error) {
	var want []string
	switch op {
	case "$eq", "$ne":
		s, ok := filterValue(arg)
		if !ok {
			return nil, errBad("filters: %q %s takes a string, number or boolean", key, op)
		}
		want = []string{s}
	case "$in", "$nin":
		list, ok := arg.([]any)
		if !ok {
			return nil, errBad("filters: %q %s takes a list", key, op)
		}
		for _, x := range list {
			s, ok := filterValue(x)
			if !ok {
				return nil, errBad("filters: %q %s takes a list of strings, numbers or booleans", key, op)
			}
			want = append(want, s)
		}
	default:
		return nil, errBad("filters: unknown operator %s on %q (supported: $eq, $ne, $in, $nin)", op, key)
	}
	in := op == "$eq" || op == "$in"
	return func(meta map[string]string) bool {
		got, ok := meta[key]
		return ok && slices.Contains(want, got) == in
	}, nil
}

// filterValue is a filter's scalar as metadata holds it: a string.
func filterValue(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// metaString turns agent_metadata values into the strings a document's
// metadata holds: strings as they are, anything else as JSON.
func metaString(m map[string]any) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, errBad("agent_metadata %q: %v", k, err)
		}
		out[k] = string(j)
	}
	return out, nil
}

// optMeta is a metadata value, nil when absent.
func optMeta(meta map[string]string, keys ...string) *string {
	for _, k := range keys {
		if v, ok := meta[k]; ok {
			return &v
		}
	}
	return nil
}

// docInfo describes d in the reference's shape.
func docInfo(d vault.DocInfo) compatDocInfo {
	return compatDocInfo{Source: d.Path, Filetype: path.Ext(d.Path), DocID: d.ID, ChunksCount: d.Chunks}
}

// indexed splits an index run's files into the reference's lists.
func indexed(done []string, rep *vault.IndexReport) (ok, skipped []string) {
	failed := map[string]bool{}
	skipped = []string{}
	for _, f := range rep.Failed {
		failed[f.Path] = true
		skipped = append(skipped, fmt.Sprintf("%s (%s)", f.Path, f.Error))
	}
	ok = []string{}
	for _, p := range done {
		if !failed[p] {
			ok = append(ok, p)
		}
	}
	return ok, skipped
}

// chunkMeta is the metadata a filter sees of a passage: its document's,
// and what the reference adds to every chunk.
func chunkMeta(p, id string, chunk int, doc map[string]string) map[string]string {
	m := make(map[string]string, len(doc)+5)
	maps.Copy(m, doc)
	m["source"], m["filetype"], m["doc_id"] = p, path.Ext(p), id
	m["chunk_id"], m["chunk_index"] = chunkID(id, chunk), strconv.Itoa(chunk)
	return m
}
