package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// SearchableText returns the text of an item that search matches against:
// every scalar value at any depth (strings decoded, numbers as written,
// booleans true or false), each followed by a newline, as
// [jsonscan.AppendScalars] lists them. Object keys and nulls never match,
// and a key an object repeats counts with its last value only, the one a
// decoder keeps. With fields, only the values under those dot paths (see
// [Lookup]) count. Invalid JSON has no text.
func SearchableText(item json.RawMessage, fields []string) string {
	if len(fields) == 0 {
		text, err := jsonscan.AppendScalars(nil, item)
		if err != nil {
			return ""
		}
		return string(text)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(item))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return ""
	}
	var text []byte
	for _, f := range fields {
		fv, ok := Lookup(v, f)
		if !ok {
			continue
		}
		// The value found, encoded again, holds the same scalars.
		raw, err := json.Marshal(fv)
		if err != nil {
			continue
		}
		text, _ = jsonscan.AppendScalars(text, raw)
	}
	return string(text)
}

// Lookup follows a dot path ("author.name", "tags.0") through decoded JSON.
// A path that names a key holding a dot literally is found too.
func Lookup(v any, path string) (any, bool) {
	if m, ok := v.(map[string]any); ok {
		if x, ok := m[path]; ok {
			return x, true
		}
	}
	head, rest, more := strings.Cut(path, ".")
	var next any
	switch t := v.(type) {
	case map[string]any:
		x, ok := t[head]
		if !ok {
			return nil, false
		}
		next = x
	case []any:
		i, err := strconv.Atoi(head)
		if err != nil || i < 0 || i >= len(t) {
			return nil, false
		}
		next = t[i]
	default:
		return nil, false
	}
	if !more {
		return next, true
	}
	return Lookup(next, rest)
}
