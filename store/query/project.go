package query

// Projection: decoding only the top-level members of items that a pipeline
// reads. Decoding whole items dominates the cost of aggregating a large list
// in Go, while a group_by or count reads a handful of fields; for such
// pipelines a store may decode just those fields and get the same result.

import (
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// maxScanDepth bounds the nesting DecodeKeys skips on its own; deeper items
// are decoded whole, which reports what Decode reports about them.
const maxScanDepth = 200

// Projection reports whether the final value of p cannot contain whole
// items, and which top-level keys of an object item it can depend on. That
// is so when p has a group_by or count step and every step before it reads
// items only through known paths; keys are then the first segments of
// those paths, sorted and without repeats. Running p over items reduced to
// keys (see [DecodeKeys]) gives what running it over the whole items gives.
func (p *Pipeline) Projection() (keys []string, ok bool) {
	var paths []string
	addCond := func(c Cond) bool { return condPaths(c, &paths, 0) }
	for _, st := range p.Steps {
		switch s := deref(st).(type) {
		case Filter:
			if !addCond(s.Cond) {
				return nil, false
			}
		case Search:
			if len(s.Fields) == 0 {
				return nil, false // it reads every value of an item
			}
			paths = append(paths, s.Fields...)
		case Sort:
			for _, k := range s.Keys {
				paths = append(paths, k.Path)
			}
		case Select:
			paths = append(paths, s.Paths...)
		case Exclude:
			paths = append(paths, s.Paths...)
		case Unique:
			paths = append(paths, s.Path)
		case Flatten:
			paths = append(paths, s.Path)
		case Limit, Skip, Slice, Sample:
		case Count:
			return topKeys(paths), true
		case GroupBy:
			paths = append(paths, s.Path)
			for _, m := range s.Metrics {
				if m.Path != "" {
					paths = append(paths, m.Path)
				}
			}
			return topKeys(paths), true
		default:
			return nil, false
		}
	}
	return nil, false
}

// condPaths appends the paths c reads; it reports false for a condition it
// does not know, or one nested too deeply to be real.
func condPaths(c Cond, paths *[]string, depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	switch t := c.(type) {
	case FieldCond:
		*paths = append(*paths, t.Path)
	case *FieldCond:
		if t == nil {
			return false
		}
		*paths = append(*paths, t.Path)
	case And:
		return condsPaths(t.Conds, paths, depth)
	case *And:
		return t != nil && condsPaths(t.Conds, paths, depth)
	case Or:
		return condsPaths(t.Conds, paths, depth)
	case *Or:
		return t != nil && condsPaths(t.Conds, paths, depth)
	case Not:
		return condPaths(t.Cond, paths, depth+1)
	case *Not:
		return t != nil && condPaths(t.Cond, paths, depth+1)
	default:
		return false
	}
	return true
}

func condsPaths(cs []Cond, paths *[]string, depth int) bool {
	for _, c := range cs {
		if !condPaths(c, paths, depth+1) {
			return false
		}
	}
	return true
}

// topKeys is the sorted set of the first segments of paths.
func topKeys(paths []string) []string {
	keys := make([]string, 0, len(paths))
	for _, p := range paths {
		head, _, _ := strings.Cut(p, ".")
		keys = append(keys, head)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// DecodeKeys decodes raw, one JSON value, as [Decode] does, except that when
// it is an object only its members named in keys are decoded and kept: the
// others are checked for syntax and skipped. A key that occurs more than
// once keeps its last value, as in Decode. Anything else (not an object,
// invalid JSON, very deep nesting) goes through Decode, so errors are
// Decode's.
func DecodeKeys(raw []byte, keys []string) (any, error) {
	if v, ok := decodeKeys(raw, keys); ok {
		return v, nil
	}
	v, err := Decode(raw)
	if m, ok := v.(map[string]any); ok {
		for k := range m {
			if !slices.Contains(keys, k) {
				delete(m, k)
			}
		}
	}
	return v, err
}

// decodeKeys is DecodeKeys on well-formed objects; ok is false when raw
// needs the full decoder.
func decodeKeys(raw []byte, keys []string) (map[string]any, bool) {
	s := &scanner{b: raw}
	s.ws()
	if !s.byte('{') {
		return nil, false
	}
	out := make(map[string]any, len(keys))
	s.ws()
	if s.byte('}') {
		return out, s.end()
	}
	for {
		s.ws()
		key, ok := s.key()
		if !ok {
			return nil, false
		}
		s.ws()
		if !s.byte(':') {
			return nil, false
		}
		s.ws()
		kept := -1
		for j, k := range keys {
			if string(key) == k {
				kept = j
				break
			}
		}
		if kept < 0 {
			if !s.skip() {
				return nil, false
			}
		} else {
			v, ok := s.decode(0)
			if !ok {
				return nil, false
			}
			out[keys[kept]] = v
		}
		s.ws()
		if s.byte('}') {
			return out, s.end()
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// key reads a member's key, as Decode decodes it. A plain key is a view of
// the input, so that comparing it costs no copy.
func (s *scanner) key() ([]byte, bool) {
	start := s.i
	if !s.str() {
		return nil, false
	}
	q := s.b[start:s.i]
	if plainString(q) {
		return q[1 : len(q)-1], true
	}
	k, ok := jsonscan.Unquote(q)
	return []byte(k), ok
}

// plainString reports whether the quoted string q, valid JSON, is its own
// text: no escapes and only ASCII.
func plainString(q []byte) bool {
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// decode reads one value as Decode would, handling the common forms itself
// and handing the rest to Decode.
func (s *scanner) decode(depth int) (any, bool) {
	if s.i >= len(s.b) || depth >= maxScanDepth {
		return nil, false
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '"':
		if !s.str() {
			return nil, false
		}
		return jsonscan.Unquote(s.b[start:s.i])
	case c == '-' || '0' <= c && c <= '9':
		if !s.skip() {
			return nil, false
		}
		// Decode gives every number literal what numberFromLiteral gives it.
		return numberFromLiteral(string(s.b[start:s.i])), true
	case c == '{':
		s.i++
		m := map[string]any{}
		s.ws()
		if s.byte('}') {
			return m, true
		}
		for {
			s.ws()
			k, ok := s.key()
			if !ok {
				return nil, false
			}
			s.ws()
			if !s.byte(':') {
				return nil, false
			}
			s.ws()
			v, ok := s.decode(depth + 1)
			if !ok {
				return nil, false
			}
			m[string(k)] = v
			s.ws()
			if s.byte('}') {
				return m, true
			}
			if !s.byte(',') {
				return nil, false
			}
		}
	case c == '[':
		s.i++
		a := []any{}
		s.ws()
		if s.byte(']') {
			return a, true
		}
		for {
			s.ws()
			v, ok := s.decode(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			s.ws()
			if s.byte(']') {
				return a, true
			}
			if !s.byte(',') {
				return nil, false
			}
		}
	case c == 't':
		return true, s.skip()
	case c == 'f':
		return false, s.skip()
	case c == 'n':
		return nil, s.skip()
	}
	return nil, false
}

// scanner checks JSON syntax without building values.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() { s.i = jsonscan.SkipSpace(s.b, s.i) }

// byte consumes c if it comes next.
func (s *scanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// skip moves past the value at the cursor, checking its syntax as
// json.Valid does, without building it.
func (s *scanner) skip() bool {
	end := jsonscan.ValueEnd(s.b, s.i)
	if end < 0 {
		return false
	}
	s.i = end
	return true
}

// str moves past the string at the cursor.
func (s *scanner) str() bool {
	return s.i < len(s.b) && s.b[s.i] == '"' && s.skip()
}
