package ingest

import (
	"encoding/json"
	"strings"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// Bounds on schema inference, so that a hostile or merely huge result yields
// a schema of bounded size in bounded time.
const (
	// SchemaSample is how many list items InferSchema looks at.
	SchemaSample = 100
	// schemaMaxDepth is the nesting depth below which values are typed but
	// not described further.
	schemaMaxDepth = 32
	// schemaMaxProps is how many distinct keys an object may have before its
	// values are described together as additionalProperties, as for a map
	// from ids to records.
	schemaMaxProps = 200
	// schemaMaxNodes bounds the subschemas of one schema; keys first seen
	// after it is reached are left out.
	schemaMaxNodes = 2000
	// schemaMaxElems is how many elements of each array are looked at.
	schemaMaxElems = 1000
)

// InferSchema returns a JSON Schema (draft 2020-12 keywords) that the first
// SchemaSample items satisfy; items that are not valid JSON are skipped.
//
// The schema uses "type" (one name, or an array of names when items differ,
// so a nullable string is ["string","null"]; "integer" when every number seen
// was written without a fraction or exponent), "properties" for objects, in
// the order keys were first seen, "required" for the keys present in every
// object seen at that place, and "items" for arrays, describing all their
// elements merged. An object with more than 200 distinct keys is described by
// "additionalProperties" instead, since its keys are data (ids, names) rather
// than fields. With no valid items the schema is {}.
func InferSchema(items []json.RawMessage) json.RawMessage {
	var in inferrer
	root := in.alloc()
	for _, it := range items[:min(len(items), SchemaSample)] {
		if jsonscan.Valid(it) {
			in.walk(it, 0, root, 0)
		}
	}
	return root.appendSchema(nil)
}

// InferValueSchema returns the JSON Schema of one value, such as a dict, in
// the terms of InferSchema. An invalid value yields {}.
func InferValueSchema(v json.RawMessage) json.RawMessage {
	return InferSchema([]json.RawMessage{v})
}

// typeSet is a set of JSON Schema type names.
type typeSet uint8

const (
	tObject typeSet = 1 << iota
	tArray
	tString
	tInteger
	tNumber
	tBoolean
	tNull
)

// names returns the type names in a fixed order, null last; integer is
// folded into number when both were seen.
func (t typeSet) names() []string {
	var out []string
	for _, n := range [...]struct {
		t    typeSet
		name string
	}{
		{tObject, "object"}, {tArray, "array"}, {tString, "string"},
		{tInteger, "integer"}, {tNumber, "number"}, {tBoolean, "boolean"}, {tNull, "null"},
	} {
		if t&n.t == 0 || (n.t == tInteger && t&tNumber != 0) {
			continue
		}
		out = append(out, n.name)
	}
	return out
}

// node is the schema of the values seen at one place.
type node struct {
	types   typeSet
	objects int // objects seen here, to decide which keys are required
	keys    []string
	props   map[string]*prop
	mapped  *node // set instead of props once an object has too many keys
	items   *node
}

// prop is one property of an object node.
type prop struct {
	n    *node
	seen int // objects holding the key
	last int // the object (by count) that last held it, to count duplicates once
}

type inferrer struct {
	nodes int
}

// alloc returns a new node, or nil when the schema is at its size bound.
func (in *inferrer) alloc() *node {
	if in.nodes >= schemaMaxNodes {
		return nil
	}
	in.nodes++
	return &node{}
}

// child returns the node for key in the object node n, or nil when the key
// is left out.
func (in *inferrer) child(n *node, key string) *node {
	if n.mapped != nil {
		return n.mapped
	}
	if p, ok := n.props[key]; ok {
		if p.last != n.objects {
			p.seen++
			p.last = n.objects
		}
		return p.n
	}
	if len(n.keys) >= schemaMaxProps {
		// Too many keys to be fields: describe every value together.
		n.mapped = n.props[n.keys[0]].n
		for _, k := range n.keys[1:] {
			merge(n.mapped, n.props[k].n)
		}
		n.keys, n.props = nil, nil
		return n.mapped
	}
	c := in.alloc()
	if c == nil {
		return nil
	}
	if n.props == nil {
		n.props = make(map[string]*prop)
	}
	n.keys = append(n.keys, key)
	n.props[key] = &prop{n: c, seen: 1, last: n.objects}
	return c
}

// merge adds what src describes to dst. It moves src's subtrees rather than
// copying them, so it allocates no nodes; src must not be used afterwards.
func merge(dst, src *node) {
	dst.types |= src.types
	dst.objects += src.objects
	if src.items != nil {
		if dst.items == nil {
			dst.items = src.items
		} else {
			merge(dst.items, src.items)
		}
	}
	if src.mapped != nil && dst.mapped == nil {
		// dst turns into a map too: its own properties join src's values.
		for _, k := range dst.keys {
			merge(src.mapped, dst.props[k].n)
		}
		dst.keys, dst.props, dst.mapped = nil, nil, src.mapped
		return
	}
	if src.mapped != nil {
		merge(dst.mapped, src.mapped)
	}
	for _, k := range src.keys {
		sp := src.props[k]
		switch {
		case dst.mapped != nil:
			merge(dst.mapped, sp.n)
		case dst.props[k] != nil:
			dp := dst.props[k]
			dp.seen += sp.seen
			merge(dp.n, sp.n)
		default:
			if dst.props == nil {
				dst.props = make(map[string]*prop)
			}
			dst.keys = append(dst.keys, k)
			dst.props[k] = sp
		}
	}
}

// walk records the value at data[i] (data is valid JSON) in n and returns
// the index just past it.
func (in *inferrer) walk(data []byte, i int, n *node, depth int) int {
	i = jsonscan.SkipSpace(data, i)
	if i >= len(data) {
		return i
	}
	switch c := data[i]; c {
	case '{':
		n.types |= tObject
		n.objects++
		if depth >= schemaMaxDepth {
			return skipValue(data, i)
		}
		for i = jsonscan.SkipSpace(data, i+1); i < len(data) && data[i] != '}'; {
			end := skipValue(data, i)
			key := decodeKey(data[i:end])
			i = jsonscan.SkipSpace(data, end) // at ':'
			i = jsonscan.SkipSpace(data, i+1) // at the value
			if c := in.child(n, key); c != nil {
				i = in.walk(data, i, c, depth+1)
			} else {
				i = skipValue(data, i)
			}
			i = skipSeparator(data, i)
		}
		return i + 1
	case '[':
		n.types |= tArray
		if depth >= schemaMaxDepth {
			return skipValue(data, i)
		}
		count := 0
		for i = jsonscan.SkipSpace(data, i+1); i < len(data) && data[i] != ']'; count++ {
			if n.items == nil && count < schemaMaxElems {
				n.items = in.alloc()
			}
			if n.items != nil && count < schemaMaxElems {
				i = in.walk(data, i, n.items, depth+1)
			} else {
				i = skipValue(data, i)
			}
			i = skipSeparator(data, i)
		}
		return i + 1
	case '"':
		n.types |= tString
		return skipValue(data, i)
	case 't':
		n.types |= tBoolean
		return i + len("true")
	case 'f':
		n.types |= tBoolean
		return i + len("false")
	case 'n':
		n.types |= tNull
		return i + len("null")
	default:
		j, integer := i, true
		for ; j < len(data) && strings.IndexByte("+-.eE0123456789", data[j]) >= 0; j++ {
			if c := data[j]; c == '.' || c == 'e' || c == 'E' {
				integer = false
			}
		}
		if integer {
			n.types |= tInteger
		} else {
			n.types |= tNumber
		}
		return max(j, i+1)
	}
}

// skipValue returns the index just past the value at data[i].
func skipValue(data []byte, i int) int {
	return max(jsonscan.ValueEnd(data, i), i+1)
}

// skipSeparator moves from the end of a member or element past the ',' that
// follows it, to the next one or to the closing bracket.
func skipSeparator(data []byte, i int) int {
	i = jsonscan.SkipSpace(data, i)
	if i < len(data) && data[i] == ',' {
		i = jsonscan.SkipSpace(data, i+1)
	}
	return i
}

// decodeKey decodes the JSON string literal s (with its quotes).
func decodeKey(s []byte) string {
	if k, ok := jsonscan.Unquote(s); ok {
		return k
	}
	return validString(s)
}

// appendSchema appends n as a JSON Schema object.
func (n *node) appendSchema(dst []byte) []byte {
	dst = append(dst, '{')
	sep := func() {
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
	}
	if n == nil {
		return append(dst, '}')
	}
	switch names := n.types.names(); len(names) {
	case 0:
	case 1:
		dst = append(dst, `"type":`...)
		dst = appendJSONString(dst, names[0])
	default:
		dst = append(dst, `"type":[`...)
		for i, name := range names {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, name)
		}
		dst = append(dst, ']')
	}
	if len(n.keys) > 0 {
		sep()
		dst = append(dst, `"properties":{`...)
		var required []string
		for i, k := range n.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			p := n.props[k]
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = p.n.appendSchema(dst)
			if p.seen >= n.objects {
				required = append(required, k)
			}
		}
		dst = append(dst, '}')
		if len(required) > 0 {
			dst = append(dst, `,"required":[`...)
			for i, k := range required {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSONString(dst, k)
			}
			dst = append(dst, ']')
		}
	}
	if n.mapped != nil {
		sep()
		dst = append(dst, `"additionalProperties":`...)
		dst = n.mapped.appendSchema(dst)
	}
	if n.items != nil {
		sep()
		dst = append(dst, `"items":`...)
		dst = n.items.appendSchema(dst)
	}
	return append(dst, '}')
}
