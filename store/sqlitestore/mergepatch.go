package sqlitestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// errNotObject is returned when a merge patch or its target is not a JSON
// object.
var errNotObject = errors.New("not a JSON object")

// member is one key of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// mergePatch applies patch, an RFC 7386 JSON merge patch that must be an
// object, to target, which must be an object too, and returns the result as
// compact JSON. Unlike a round trip through map[string]any it keeps the
// target's key order (new keys go at the end) and every number's digits.
func mergePatch(target, patch []byte) ([]byte, error) {
	if err := jsonscan.Validate(patch); err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	t, err := parseObject(target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	p, err := parseObject(patch)
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	merged, err := mergeMembers(t, p)
	if err != nil {
		return nil, err
	}
	return encodeObject(merged)
}

func mergeMembers(target, patch []member) ([]member, error) {
	for _, pm := range patch {
		i := indexOf(target, pm.key)
		switch {
		case isNull(pm.val):
			if i >= 0 {
				target = append(target[:i], target[i+1:]...)
			}
		case isObject(pm.val):
			// A patch object merges into the target's object, or into an
			// empty one when the target has none there, which also drops
			// the patch's nulls.
			var sub []member
			if i >= 0 && isObject(target[i].val) {
				var err error
				if sub, err = parseObject(target[i].val); err != nil {
					return nil, err
				}
			}
			ps, err := parseObject(pm.val)
			if err != nil {
				return nil, err
			}
			if sub, err = mergeMembers(sub, ps); err != nil {
				return nil, err
			}
			val, err := encodeObject(sub)
			if err != nil {
				return nil, err
			}
			target = set(target, i, pm.key, val)
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, pm.val); err != nil {
				return nil, err
			}
			target = set(target, i, pm.key, buf.Bytes())
		}
	}
	return target, nil
}

func set(ms []member, i int, key string, val []byte) []member {
	if i >= 0 {
		ms[i].val = val
		return ms
	}
	return append(ms, member{key: key, val: val})
}

func indexOf(ms []member, key string) int {
	for i := range ms {
		if ms[i].key == key {
			return i
		}
	}
	return -1
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func isObject(b []byte) bool { return firstByte(b) == '{' }
func isNull(b []byte) bool   { return firstByte(b) == 'n' }

// parseObject splits a JSON object into its members; a repeated key keeps
// its first position and its last value.
func parseObject(b []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		ms = set(ms, indexOf(ms, key), key, val)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return ms, nil
}

func encodeObject(ms []member) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(m.key); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		if err := json.Compact(&buf, m.val); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
