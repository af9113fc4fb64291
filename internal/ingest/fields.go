package ingest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// Field is one field of a list item or dict, as a notice lists it.
type Field struct {
	// Path is the field's dot path ("author.name"), the form store.Lookup
	// and search fields take. "*" stands for every key of an object whose
	// keys are data (additionalProperties). The empty path stands for the
	// root, listed when it is not an object or not only one.
	Path string `json:"path"`
	// Type is the field's type: a JSON Schema type name; "array<T>" for an
	// array whose elements have type T; alternatives joined by "|", as in
	// "string|null".
	Type string `json:"type"`
}

// Fields flattens a schema from InferSchema into at most max fields (all of
// them when max <= 0) and returns how many it left out.
//
// Top-level properties come first, each followed by the fields of an object
// it holds, as dot paths. A root that is not an object, or not only one
// ("object|string"), is listed first with the empty path. An object property with fields of its own is not
// listed itself unless it can also be something else ("object|null").
// Elements of arrays are described by the array's type, not as fields. When
// there are more fields than max, shallower fields are kept before deeper
// ones, and the kept fields stay in schema order.
func Fields(schema json.RawMessage, max int) (fields []Field, omitted int) {
	type entry struct {
		Field
		depth, order int
	}
	var all []entry
	var walk func(s *schemaView, prefix string, depth int)
	walk = func(s *schemaView, prefix string, depth int) {
		for _, p := range s.props {
			path := prefix + p.name
			child := p.schema
			nested := len(child.props) > 0 || child.additional != nil
			if !nested || child.typ() != "object" {
				all = append(all, entry{Field{path, child.typ()}, depth, len(all)})
			}
			if nested && depth < schemaMaxDepth {
				walk(child, path+".", depth+1)
			}
		}
		if a := s.additional; a != nil {
			path := prefix + "*"
			nested := len(a.props) > 0 || a.additional != nil
			if !nested || a.typ() != "object" {
				all = append(all, entry{Field{path, a.typ()}, depth, len(all)})
			}
			if nested && depth < schemaMaxDepth {
				walk(a, path+".", depth+1)
			}
		}
	}
	root := parseSchemaView(schema, 0)
	if root == nil {
		return nil, 0
	}
	if len(root.props) == 0 && root.additional == nil {
		if t := root.typ(); t != "" {
			return []Field{{Path: "", Type: t}}, 0
		}
		return nil, 0
	}
	if t := root.typ(); t != "" && t != "object" {
		// Items that are not always objects: say what else they are.
		all = append(all, entry{Field{"", t}, 0, 0})
	}
	walk(root, "", 0)
	if max > 0 && len(all) > max {
		slices.SortStableFunc(all, func(a, b entry) int { return cmp.Compare(a.depth, b.depth) })
		omitted = len(all) - max
		all = all[:max]
		slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.order, b.order) })
	}
	fields = make([]Field, len(all))
	for i, e := range all {
		fields[i] = e.Field
	}
	return fields, omitted
}

// schemaView is the part of a JSON Schema that Fields reads, with properties
// in their written order.
type schemaView struct {
	types      []string
	props      []namedSchema
	additional *schemaView
	items      *schemaView
}

type namedSchema struct {
	name   string
	schema *schemaView
}

// parseSchemaView reads raw, returning nil when it is not a schema object.
// depth bounds the recursion for schemas that did not come from InferSchema.
func parseSchemaView(raw json.RawMessage, depth int) *schemaView {
	if depth > schemaMaxDepth+1 {
		return nil
	}
	var doc struct {
		Type                 json.RawMessage `json:"type"`
		Properties           json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
		Items                json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil
	}
	s := &schemaView{}
	var one string
	if json.Unmarshal(doc.Type, &one) == nil {
		s.types = []string{one}
	} else {
		_ = json.Unmarshal(doc.Type, &s.types) // no type: any value
	}
	for _, m := range objectMembers(doc.Properties) {
		if c := parseSchemaView(m.value, depth+1); c != nil {
			s.props = append(s.props, namedSchema{m.key, c})
		}
	}
	if len(doc.AdditionalProperties) > 0 && doc.AdditionalProperties[0] == '{' {
		s.additional = parseSchemaView(doc.AdditionalProperties, depth+1)
	}
	if len(doc.Items) > 0 {
		s.items = parseSchemaView(doc.Items, depth+1)
	}
	return s
}

// typ renders the schema's type as Field.Type describes.
func (s *schemaView) typ() string {
	parts := make([]string, 0, len(s.types))
	for _, t := range s.types {
		if t == "array" && s.items != nil {
			if it := s.items.typ(); it != "" {
				t = "array<" + it + ">"
			}
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "|")
}

type member struct {
	key   string
	value json.RawMessage
}

// objectMembers returns the members of the JSON object raw in their written
// order (encoding/json's maps would lose it); nil when raw is not an object.
func objectMembers(raw json.RawMessage) []member {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, member{key, v})
	}
	return out
}
