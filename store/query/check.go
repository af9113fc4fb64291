package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"time"
	"unicode/utf8"
)

// Bounds on what a pipeline may ask for. Steps come from a model, so each
// one is bounded in what it may cost.
const (
	// MaxConditionDepth is how deep $and, $or and $not may nest.
	MaxConditionDepth = 32
	// MaxRegexLength is the longest $regex pattern, in characters.
	MaxRegexLength = 1_000
	// MaxRegexInput is how many leading characters of a value $regex reads.
	MaxRegexInput = 10_000
	// MaxRegexProgram bounds the size of a $regex's compiled program, which
	// is the factor in RE2's linear matching time.
	MaxRegexProgram = 1_000
	// MaxRegexTime is how long the $regex conditions of one run may spend
	// matching in all.
	MaxRegexTime = 10 * time.Second
	// MaxSample is the largest sample.
	MaxSample = 10_000
	// MaxHeldItems is the most items (or groups, or remembered values) one
	// step may hold in memory, and the longest result.
	MaxHeldItems = 1_000_000
	// MaxCount bounds the numbers of limit, skip and slice.
	MaxCount = 1_000_000_000
	// MaxPathLen is the longest dot path, in bytes.
	MaxPathLen = 256
	// MaxSortKeys is the most keys one sort may have.
	MaxSortKeys = 16
	// MaxMetrics is the most metrics one group_by may compute.
	MaxMetrics = 64
)

// Ops returns the field operators, in the order a description gives them.
func Ops() []Op {
	return []Op{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte, OpIn, OpNin, OpContains, OpStartsWith, OpRegex, OpExists}
}

// MetricFuncs returns the aggregate functions, count first.
func MetricFuncs() []MetricFunc {
	return []MetricFunc{MetricCount, MetricSum, MetricMean, MetricMin, MetricMax, MetricMedian, MetricStddev, MetricValues}
}

// CheckPath checks a dot path: not empty, at most MaxPathLen bytes.
func CheckPath(path string) error {
	if path == "" {
		return problemf("a field name is empty")
	}
	if len(path) > MaxPathLen {
		return problemf("the field name %s is longer than %d bytes", Quote(path), MaxPathLen)
	}
	return nil
}

// CheckOp checks that v is an argument operator op takes: a number or a
// string to order with, an array for $in and $nin, a valid and bounded
// RE2 pattern for $regex, a boolean for $exists, and so on.
func CheckOp(op Op, v any) error {
	switch op {
	case OpEq, OpNe:
		return nil
	case OpGt, OpGte, OpLt, OpLte:
		if _, ok := v.(string); ok {
			return nil
		}
		if _, ok := Number(v); ok {
			return nil
		}
		return problemf("%s compares with a number or a string, not %s", op, Describe(v))
	case OpIn, OpNin:
		if _, ok := v.([]any); ok {
			return nil
		}
		return problemf("%s takes an array of values, not %s", op, Describe(v))
	case OpContains:
		switch v.(type) {
		case nil:
			return problemf("$contains takes a string to find in a string, or a value to find in an array, not null")
		case []any:
			return problemf("$contains takes one value, not an array; to match any of several values use $in")
		}
		return nil
	case OpStartsWith:
		if _, ok := v.(string); ok {
			return nil
		}
		return problemf("$startswith takes a string, not %s", Describe(v))
	case OpRegex:
		s, ok := v.(string)
		if !ok {
			return problemf("$regex takes a pattern string, not %s", Describe(v))
		}
		if n := utf8.RuneCountInString(s); n > MaxRegexLength {
			return problemf("the $regex pattern has %d characters, more than the %d allowed", n, MaxRegexLength)
		}
		if _, err := regexp.Compile(s); err != nil {
			return problemf("the $regex pattern is not valid RE2 syntax (%v); RE2 has no backreferences or lookaround", err)
		}
		if n := programSize(s); n > MaxRegexProgram {
			return problemf("the $regex pattern compiles to %d instructions, more than the %d allowed; use fewer and smaller counted repeats and alternatives", n, MaxRegexProgram)
		}
		return nil
	case OpExists:
		if _, ok := v.(bool); ok {
			return nil
		}
		return problemf("$exists takes true or false, not %s", Describe(v))
	}
	return problemf("unknown operator %q", op)
}

// programSize is the number of instructions the pattern compiles to; the
// pattern is known to compile.
func programSize(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

func checkPaths(paths []string) error {
	if len(paths) == 0 {
		return problemf("at least one field name is needed")
	}
	for _, p := range paths {
		if err := CheckPath(p); err != nil {
			return err
		}
	}
	return nil
}

func checkSort(s Sort) error {
	if len(s.Keys) == 0 {
		return problemf("sort needs at least one field")
	}
	if len(s.Keys) > MaxSortKeys {
		return problemf("sort has %d keys, more than the %d allowed", len(s.Keys), MaxSortKeys)
	}
	for _, k := range s.Keys {
		if err := CheckPath(k.Path); err != nil {
			return err
		}
	}
	return nil
}

func checkGroupBy(g GroupBy) error {
	if err := CheckPath(g.Path); err != nil {
		return err
	}
	if len(g.Metrics) > MaxMetrics {
		return problemf("group_by has %d metrics, more than the %d allowed", len(g.Metrics), MaxMetrics)
	}
	for _, m := range g.Metrics {
		if m.Name == "" {
			return problemf("a metric name is empty")
		}
		if !slices.Contains(MetricFuncs(), m.Func) {
			return problemf("metric %q has unknown function %q", m.Name, m.Func)
		}
		if m.Func != MetricCount {
			if err := CheckPath(m.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// Describe names a decoded JSON value's type for messages: null, the
// boolean true, the string "x", an array of length 2, an object, the
// number 5.
func Describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", t)
	case string:
		return fmt.Sprintf("the string %s", Quote(v))
	case []any:
		return fmt.Sprintf("an array of length %d", len(t))
	case map[string]any:
		return "an object"
	}
	if _, ok := Number(v); ok {
		return fmt.Sprintf("the number %s", Quote(v))
	}
	return fmt.Sprintf("a %T", v)
}

// Quote renders a value as compact JSON (without escaping <, > and &), cut
// to a length that fits in a message.
func Quote(v any) string {
	b, err := Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	const max = 60
	if r := []rune(string(b)); len(r) > max {
		return string(r[:max]) + "…"
	}
	return string(b)
}

// Marshal encodes v as compact JSON without escaping <, > and &, which
// would only obscure a pattern or value quoted back to a model.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
