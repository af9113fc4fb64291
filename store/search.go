package store

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SearchableText returns the text of an item that search matches against:
// every scalar value at any depth (strings as they are, numbers and booleans
// in their JSON form), separated by newlines. With fields, only the values
// under those dot paths count. Object keys never match.
func SearchableText(item json.RawMessage, fields []string) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(item))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return ""
	}
	var b strings.Builder
	if len(fields) == 0 {
		appendScalars(&b, v)
		return b.String()
	}
	for _, f := range fields {
		if fv, ok := Lookup(v, f); ok {
			appendScalars(&b, fv)
		}
	}
	return b.String()
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

func appendScalars(b *strings.Builder, v any) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			appendScalars(b, t[k])
		}
	case []any:
		for _, x := range t {
			appendScalars(b, x)
		}
	case string:
		b.WriteString(t)
		b.WriteByte('\n')
	case json.Number:
		b.WriteString(t.String())
		b.WriteByte('\n')
	case bool:
		b.WriteString(strconv.FormatBool(t))
		b.WriteByte('\n')
	}
}
