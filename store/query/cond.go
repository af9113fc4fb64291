package query

import (
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// matcher reports whether an item matches a condition.
type matcher func(item any) bool

// lookup follows a dot path through decoded JSON: "author.name" is the
// name inside author, "tags.0" the first tag. Paths always split at dots, as
// in the reference engine and in SQL JSON paths, so a key that holds a dot
// itself (such as the "author.name" key group_by writes) cannot be reached.
func lookup(v any, path string) (any, bool) {
	for {
		head, rest, more := strings.Cut(path, ".")
		switch t := v.(type) {
		case map[string]any:
			x, ok := t[head]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			i, ok := ArrayIndex(head)
			if !ok || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
		if !more {
			return v, true
		}
		path = rest
	}
}

// ArrayIndex reports whether a segment of a dot path reads as an index when
// it meets an array, and which: a segment of one to nine decimal digits
// (leading zeros allowed). Any other segment, on an array, finds nothing.
// It is exported so that a store compiling paths to its own query language
// can follow exactly the rule the evaluator's lookup follows.
func ArrayIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// get returns the value at path, nil when it is missing: every operator
// treats a missing field as null.
func get(item any, path string) any {
	v, _ := lookup(item, path)
	return v
}

// compileCond turns a condition into a matcher, checking the rules the
// parser checks so that hand-built conditions fail cleanly too.
func compileCond(c Cond, depth int, env *runEnv) (matcher, error) {
	if depth > MaxConditionDepth {
		return nil, problemf("conditions nest more than %d levels deep", MaxConditionDepth)
	}
	switch t := c.(type) {
	case And:
		return compileAll(t.Conds, depth, true, env)
	case *And:
		if t != nil {
			return compileAll(t.Conds, depth, true, env)
		}
	case Or:
		return compileAll(t.Conds, depth, false, env)
	case *Or:
		if t != nil {
			return compileAll(t.Conds, depth, false, env)
		}
	case Not:
		m, err := compileCond(t.Cond, depth+1, env)
		if err != nil {
			return nil, err
		}
		return func(item any) bool { return !m(item) }, nil
	case *Not:
		if t != nil {
			return compileCond(Not{Cond: t.Cond}, depth, env)
		}
	case FieldCond:
		return compileField(t, env)
	case *FieldCond:
		if t != nil {
			return compileField(*t, env)
		}
	}
	return nil, problemf("a condition is missing or of unknown type %T", c)
}

func compileAll(conds []Cond, depth int, all bool, env *runEnv) (matcher, error) {
	ms := make([]matcher, len(conds))
	for i, c := range conds {
		m, err := compileCond(c, depth+1, env)
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	switch {
	case len(ms) == 1:
		return ms[0], nil
	case all:
		return func(item any) bool {
			for _, m := range ms {
				if !m(item) {
					return false
				}
			}
			return true
		}, nil
	}
	return func(item any) bool {
		for _, m := range ms {
			if m(item) {
				return true
			}
		}
		return false
	}, nil
}

func compileField(fc FieldCond, env *runEnv) (matcher, error) {
	path := fc.Path
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	op := fc.Op
	if op == "" {
		op = OpEq
	}
	if err := CheckOp(op, fc.Value); err != nil {
		return nil, err
	}
	want := fc.Value
	switch op {
	case OpEq, OpNe:
		ne := op == OpNe
		if s, ok := want.(string); ok {
			return func(item any) bool {
				v, ok := get(item, path).(string)
				return (ok && v == s) != ne
			}, nil
		}
		return func(item any) bool { return equal(get(item, path), want) != ne }, nil
	case OpGt, OpGte, OpLt, OpLte:
		test := map[Op]func(int) bool{
			OpGt:  func(c int) bool { return c > 0 },
			OpGte: func(c int) bool { return c >= 0 },
			OpLt:  func(c int) bool { return c < 0 },
			OpLte: func(c int) bool { return c <= 0 },
		}[op]
		if s, ok := want.(string); ok {
			return func(item any) bool {
				v, ok := get(item, path).(string)
				return ok && test(strings.Compare(v, s))
			}, nil
		}
		fw, _ := number(want, false)
		return func(item any) bool {
			v := get(item, path)
			fv, ok := number(v, false)
			return ok && test(cmpNumbers(v, want, fv, fw))
		}, nil
	case OpIn, OpNin:
		set := make(map[any]struct{})
		for _, x := range want.([]any) {
			set[hashKey(x)] = struct{}{}
		}
		nin := op == OpNin
		return func(item any) bool {
			_, ok := set[hashKey(get(item, path))]
			return ok != nin
		}, nil
	case OpContains:
		text, isText := scalarText(want)
		if _, isBool := want.(bool); isBool {
			isText = false
		}
		return func(item any) bool {
			switch v := get(item, path).(type) {
			case []any:
				for _, x := range v {
					if equal(x, want) {
						return true
					}
				}
				return false
			case nil, bool, map[string]any:
				return false
			default:
				s, ok := scalarText(v)
				return ok && isText && strings.Contains(s, text)
			}
		}, nil
	case OpStartsWith:
		prefix := want.(string)
		return func(item any) bool {
			switch v := get(item, path).(type) {
			case nil, bool, []any, map[string]any:
				return false
			default:
				s, ok := scalarText(v)
				return ok && strings.HasPrefix(s, prefix)
			}
		}, nil
	case OpRegex:
		re, err := regexp.Compile(want.(string))
		if err != nil {
			return nil, problemf("the $regex pattern is not valid RE2 syntax (%v)", err)
		}
		return func(item any) bool {
			switch v := get(item, path).(type) {
			case nil, bool, []any, map[string]any:
				return false
			default:
				s, ok := scalarText(v)
				return ok && env.match(re, firstChars(s, MaxRegexInput))
			}
		}, nil
	case OpExists:
		exists := want.(bool)
		return func(item any) bool {
			v, ok := lookup(item, path)
			return (ok && v != nil) == exists
		}, nil
	}
	return nil, problemf("unknown operator %q", op)
}

// runEnv is what the steps of one run share.
type runEnv struct {
	// regexLeft is the time $regex may still spend matching. RE2 runs in
	// time linear in the input, but the factor is the size of the pattern's
	// program, and a pattern such as (?:\w+\s*){200} keeps hundreds of
	// threads alive per character: over many items that is minutes.
	regexLeft time.Duration
	// err is set when a matcher ran out of budget; the filter stops with it.
	err error
}

func newRunEnv() *runEnv { return &runEnv{regexLeft: MaxRegexTime} }

// match runs re on s and charges the time it took.
func (e *runEnv) match(re *regexp.Regexp, s string) bool {
	if e.err != nil {
		return false
	}
	start := time.Now()
	ok := re.MatchString(s)
	if e.regexLeft -= time.Since(start); e.regexLeft < 0 {
		e.err = problemf("$regex spent more than %v matching; use a simpler pattern (fewer repeats and alternatives) or filter the items first", MaxRegexTime)
	}
	return ok
}

// firstChars returns the first n characters (runes) of s.
func firstChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// compileSearch returns the matcher of a search step.
func compileSearch(s Search) (matcher, error) {
	if strings.TrimSpace(s.Query) == "" {
		return nil, problemf("search needs a non-empty query")
	}
	for _, f := range s.Fields {
		if err := CheckPath(f); err != nil {
			return nil, err
		}
	}
	q := strings.ToLower(s.Query)
	fields := s.Fields
	match := func(text string) bool { return containsFold(text, q) }
	if len(fields) == 0 {
		return func(item any) bool { return anyScalar(item, match) }, nil
	}
	return func(item any) bool {
		for _, f := range fields {
			if v, ok := lookup(item, f); ok && anyScalar(v, match) {
				return true
			}
		}
		return false
	}, nil
}

// anyScalar reports whether match accepts the text of some scalar in v, at
// any depth. Object keys are not looked at.
func anyScalar(v any, match func(string) bool) bool {
	switch t := v.(type) {
	case nil:
		return false
	case string:
		return match(t)
	case []any:
		for _, x := range t {
			if anyScalar(x, match) {
				return true
			}
		}
		return false
	case map[string]any:
		for _, x := range t {
			if anyScalar(x, match) {
				return true
			}
		}
		return false
	}
	s, ok := scalarText(v)
	return ok && match(s)
}

// containsFold reports whether s contains the lower-case needle, ignoring
// case. ASCII needles are matched without allocating.
func containsFold(s, needle string) bool {
	if needle == "" {
		return true
	}
	for i := 0; i < len(needle); i++ {
		if needle[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), needle)
		}
	}
	n := len(needle)
	first := needle[0]
	for i := 0; i+n <= len(s); i++ {
		if lowerASCII(s[i]) != first {
			continue
		}
		j := 1
		for j < n && lowerASCII(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
