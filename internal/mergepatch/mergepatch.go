// Package mergepatch applies RFC 7386 JSON merge patches to JSON objects,
// text to text, without decoding values into Go: the target keeps its
// members in their order with their values as written (only whitespace
// between tokens goes), a key the patch adds comes after them, a null in
// the patch removes a key, an object in the patch merges into the target's
// object (or into an empty one) and any other value replaces.
//
// Both the patch and the target must be exactly one JSON object each:
// trailing text such as the second brace of {"c":3}} is refused. An object
// that repeats a key means what a decoder makes of it: the key keeps its
// first place and its last value.
package mergepatch

import (
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// ErrNotObject is wrapped by the error for a patch or target that is valid
// JSON but not an object.
var ErrNotObject = errors.New("not a JSON object")

// Patch is a merge patch, parsed and checked.
type Patch struct {
	members []member
}

// Parse checks that patch is exactly one JSON object and returns it ready
// to apply. The error wraps [jsonscan.ErrSyntax] for invalid JSON and
// [ErrNotObject] for another value.
func Parse(patch []byte) (*Patch, error) {
	ms, err := members(patch)
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	return &Patch{members: ms}, nil
}

// Apply merges the patch into target, which must be exactly one JSON
// object, and returns the result as compact JSON. The error wraps
// [jsonscan.ErrSyntax] or [ErrNotObject] when target is not an object.
func (p *Patch) Apply(target []byte) ([]byte, error) {
	t, err := members(target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return appendObject(make([]byte, 0, len(target)), merge(t, p.members)), nil
}

// member is one member of an object: its key decoded, the key's literal and
// the value as written.
type member struct {
	key      string
	lit, val []byte
}

// members splits doc, exactly one JSON object, into its members in
// document order; a repeated key keeps its first place and its last value.
func members(doc []byte) ([]member, error) {
	ms, ok := jsonscan.Members(doc)
	if !ok {
		if err := jsonscan.Validate(doc); err != nil {
			return nil, err
		}
		return nil, ErrNotObject
	}
	out := make([]member, 0, len(ms))
	for _, m := range ms {
		val := doc[m.Value.Start:m.Value.End]
		if i := index(out, m.Key); i >= 0 {
			out[i].val = val
			continue
		}
		out = append(out, member{key: m.Key, lit: doc[m.KeySpan.Start:m.KeySpan.End], val: val})
	}
	return out, nil
}

// merge applies the members of a patch to the members of a target, both
// valid, and returns the target's new members.
func merge(target, patch []member) []member {
	for _, pm := range patch {
		i := index(target, pm.key)
		switch pm.val[0] {
		case 'n': // null removes the key
			if i >= 0 {
				target = append(target[:i], target[i+1:]...)
			}
		case '{':
			// An object merges into the target's object, or into an empty
			// one when the target has none there, which drops its nulls.
			var sub []member
			if i >= 0 && target[i].val[0] == '{' {
				sub, _ = members(target[i].val) // valid: it is part of target
			}
			ps, _ := members(pm.val)
			target = set(target, i, pm, appendObject(nil, merge(sub, ps)))
		default:
			target = set(target, i, pm, pm.val)
		}
	}
	return target
}

// set gives the member at i the value val, or adds pm's key with it when i
// is negative.
func set(ms []member, i int, pm member, val []byte) []member {
	if i >= 0 {
		ms[i].val = val
		return ms
	}
	pm.val = val
	return append(ms, pm)
}

func index(ms []member, key string) int {
	for i := range ms {
		if ms[i].key == key {
			return i
		}
	}
	return -1
}

// appendObject appends the members as a compact JSON object, keys as
// written and values as written but for the whitespace between tokens.
func appendObject(dst []byte, ms []member) []byte {
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.lit...)
		dst = append(dst, ':')
		dst = jsonscan.AppendCompact(dst, m.val, false)
	}
	return append(dst, '}')
}
