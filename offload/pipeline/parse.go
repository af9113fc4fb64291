package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store/query"
)

// Bounds on what a pipeline may ask for, besides those of package query
// (query.MaxConditionDepth, query.MaxSample, ...). Steps come from a model,
// so each one is bounded in what it may cost.
const (
	// MaxSteps is the most steps one pipeline may have.
	MaxSteps = 64
	// MaxStepsBytes is the largest steps argument, in bytes.
	MaxStepsBytes = 1 << 20

	maxQueryLen = 1_000
	maxFields   = 256
	// maxConditions bounds the field conditions of one filter, each tested
	// on every item.
	maxConditions = 1_000
	// maxJSONDepth bounds the nesting of the steps argument. It leaves room
	// for MaxConditionDepth levels of $and (two JSON levels each) and keeps
	// the cost of error messages, which re-parse parts of a step, small.
	maxJSONDepth = 2*query.MaxConditionDepth + 16
)

// Parse reads a pipeline: a JSON array of steps, each an object with one key
// naming the step. Models sometimes send the array as a JSON string holding
// it, or send a single step object; both are accepted. Every problem is a
// *StepError.
func Parse(steps json.RawMessage) (*query.Pipeline, error) {
	raw := bytes.TrimSpace(steps)
	whole := func(format string, args ...any) error {
		return &StepError{Index: -1, Problem: fmt.Sprintf(format, args...), Example: examplePipeline}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, whole("steps is missing; pass a JSON array of steps")
	}
	if len(raw) > MaxStepsBytes {
		return nil, whole("steps is %d bytes, more than the %d allowed", len(raw), MaxStepsBytes)
	}
	v, err := query.Decode(raw)
	if err != nil {
		return nil, whole("steps is not valid JSON (%v)", err)
	}
	if s, ok := v.(string); ok {
		if v, err = query.Decode([]byte(s)); err != nil {
			return nil, whole("steps is a string that does not hold a JSON array of steps (%v)", err)
		}
	}
	if tooDeep(v, maxJSONDepth) {
		return nil, whole("steps nest more than %d levels deep", maxJSONDepth)
	}
	var list []any
	switch t := v.(type) {
	case []any:
		list = t
	case map[string]any:
		list = []any{t}
	default:
		return nil, whole("steps must be a JSON array of step objects, not %s", query.Describe(v))
	}
	if len(list) > MaxSteps {
		return nil, whole("there are %d steps, more than the %d allowed", len(list), MaxSteps)
	}
	p := &query.Pipeline{Steps: make([]query.Step, 0, len(list))}
	for i, x := range list {
		s, err := parseStep(i, x)
		if err != nil {
			return nil, err
		}
		if _, ok := s.(query.Count); ok && i != len(list)-1 {
			return nil, &StepError{Index: i, Step: "count", Example: examples["count"],
				Problem: "count must be the last step, since it replaces the items by {\"count\": n}"}
		}
		p.Steps = append(p.Steps, s)
	}
	return p, nil
}

// parseStep reads the step at index i.
func parseStep(i int, v any) (query.Step, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &StepError{Index: i, Example: examples["filter"],
			Problem: fmt.Sprintf("each step must be an object with one key, the step name, not %s", query.Describe(v))}
	}
	if len(m) != 1 {
		return nil, shapeError(i, m)
	}
	var name string
	var arg any
	for name, arg = range m {
	}
	var (
		s   query.Step
		err error
	)
	switch name {
	case "filter":
		s, err = parseFilter(arg)
	case "search":
		s, err = parseSearch(arg)
	case "sort":
		s, err = parseSort(arg)
	case "select":
		var paths []string
		paths, err = parsePaths(name, arg)
		s = query.Select{Paths: paths}
	case "exclude":
		var paths []string
		paths, err = parsePaths(name, arg)
		s = query.Exclude{Paths: paths}
	case "limit":
		var n int
		n, err = parseCount(name, arg)
		s = query.Limit{N: n}
	case "skip":
		var n int
		n, err = parseCount(name, arg)
		s = query.Skip{N: n}
	case "slice":
		s, err = parseSlice(arg)
	case "sample":
		s, err = parseSample(arg)
	case "unique":
		var path string
		path, err = parseFieldArg(name, arg)
		s = query.Unique{Path: path}
	case "flatten":
		var path string
		path, err = parseFieldArg(name, arg)
		s = query.Flatten{Path: path}
	case "group_by":
		s, err = parseGroupBy(arg)
	case "count":
		s, err = parseCountStep(arg)
	default:
		msg := fmt.Sprintf("unknown step %q; the steps are %s", name, quoteList(stepNames))
		ex := examples["filter"]
		if sg := suggest(name, stepNames, stepAliases); sg != "" {
			msg = fmt.Sprintf("unknown step %q (did you mean %q?); the steps are %s", name, sg, quoteList(stepNames))
			ex = examples[sg]
		}
		return nil, &StepError{Index: i, Step: name, Problem: msg, Example: ex}
	}
	if err != nil {
		var p *problem
		if errors.As(err, &p) {
			ex := p.example
			if ex == "" {
				ex = examples[name]
			}
			return nil, &StepError{Index: i, Step: name, Problem: p.msg, Example: ex}
		}
		return nil, err
	}
	return s, nil
}

// shapeError explains a step object that does not have exactly one key.
func shapeError(i int, m map[string]any) error {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return &StepError{Index: i, Example: examples["filter"],
			Problem: "the step is an empty object; write {\"<step name>\": arguments}"}
	}
	var known []string
	for _, k := range keys {
		if slices.Contains(stepNames, k) {
			known = append(known, k)
		}
	}
	// {"op": "sort", "field": "x"}: the name is in a value.
	if len(known) == 0 {
		for _, k := range []string{"op", "type", "step", "operation", "name", "action"} {
			if s, ok := m[k].(string); ok && slices.Contains(stepNames, s) {
				return &StepError{Index: i, Step: s, Example: examples[s],
					Problem: fmt.Sprintf("the step name goes in the key, with the arguments as its value: {%q: ...}", s)}
			}
		}
	}
	step := strings.Join(keys, ", ")
	switch len(known) {
	case 0:
		return &StepError{Index: i, Step: step, Example: examples["filter"],
			Problem: fmt.Sprintf("a step must have one key, the step name, but none of %s is one; the steps are %s", quote(keys), quoteList(stepNames))}
	case 1:
		return &StepError{Index: i, Step: known[0], Example: examples[known[0]],
			Problem: fmt.Sprintf("a step must have exactly one key, but this one has %s; arguments of %q go inside its value", quote(keys), known[0])}
	}
	return &StepError{Index: i, Step: step, Example: examples[known[0]],
		Problem: fmt.Sprintf("a step must have exactly one key, but this one has %s; put each in its own step, in the order they should run", quote(keys))}
}

func quote(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}

func parseFilter(arg any) (query.Step, error) {
	if _, ok := arg.(map[string]any); !ok {
		return nil, problemf("filter takes an object of conditions, not %s", query.Describe(arg))
	}
	c, err := parseCond(arg, 1)
	if err != nil {
		return nil, err
	}
	if n := countConds(c); n > maxConditions {
		return nil, problemf("the filter has %d conditions, more than the %d allowed; to match any of many values use {\"field\": {\"$in\": [...]}}", n, maxConditions)
	}
	return query.Filter{Cond: c}, nil
}

// countConds counts the field conditions in c; each one costs a test per
// item.
func countConds(c query.Cond) int {
	switch t := c.(type) {
	case query.And:
		n := 0
		for _, x := range t.Conds {
			n += countConds(x)
		}
		return n
	case query.Or:
		n := 0
		for _, x := range t.Conds {
			n += countConds(x)
		}
		return n
	case query.Not:
		return countConds(t.Cond)
	}
	return 1
}

// parseCond reads a condition object at nesting depth.
func parseCond(v any, depth int) (query.Cond, error) {
	if depth > query.MaxConditionDepth {
		return nil, problemf("conditions nest more than %d levels deep", query.MaxConditionDepth)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, problemf("a condition must be an object such as {\"year\": 2024}, not %s", query.Describe(v))
	}
	conds := make([]query.Cond, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		x := m[k]
		switch {
		case k == "$and" || k == "$or":
			arr, ok := x.([]any)
			if !ok {
				p := problemf("%s takes an array of conditions, not %s", k, query.Describe(x))
				if _, isObj := x.(map[string]any); isObj {
					p.example = exampleFor("filter", map[string]any{"filter": map[string]any{k: []any{x}}})
				}
				return nil, p
			}
			sub := make([]query.Cond, 0, len(arr))
			for _, e := range arr {
				c, err := parseCond(e, depth+1)
				if err != nil {
					return nil, err
				}
				sub = append(sub, c)
			}
			if k == "$and" {
				conds = append(conds, query.And{Conds: sub})
			} else {
				conds = append(conds, query.Or{Conds: sub})
			}
		case k == "$not":
			c, err := parseCond(x, depth+1)
			if err != nil {
				return nil, err
			}
			conds = append(conds, query.Not{Cond: c})
		case slices.Contains(query.Ops(), query.Op(k)):
			return nil, &problem{msg: fmt.Sprintf("%s compares a field, so it goes inside one, as in {\"year\": {%q: ...}}", k, k),
				example: exampleFor("filter", filterOn("year", query.Op(k), x))}
		case k == "$nor":
			return nil, &problem{msg: "there is no $nor; write {\"$not\": {\"$or\": [...]}}",
				example: exampleFor("filter", map[string]any{"filter": map[string]any{"$not": map[string]any{"$or": x}}})}
		case strings.HasPrefix(k, "$"):
			return nil, problemf("unknown logical operator %q; the logical operators are $and, $or and $not, and field operators go inside a field, as in {\"year\": {\"$gte\": 2023}}", k)
		default:
			c, err := parseFieldCond(k, x, depth)
			if err != nil {
				return nil, err
			}
			conds = append(conds, c)
		}
	}
	if len(conds) == 1 {
		return conds[0], nil
	}
	return query.And{Conds: conds}, nil
}

func opNames() []string {
	var names []string
	for _, op := range query.Ops() {
		names = append(names, string(op))
	}
	return names
}

// parseFieldCond reads the condition on one field: a value to equal, or an
// object of operators.
func parseFieldCond(path string, x any, depth int) (query.Cond, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	m, ok := x.(map[string]any)
	if !ok || !hasOperator(m) {
		return query.FieldCond{Path: path, Op: query.OpEq, Value: x}, nil
	}
	conds := make([]query.Cond, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if !strings.HasPrefix(k, "$") {
			return nil, problemf("the conditions on %q mix operators with the plain key %q; to compare a nested field use a dot path such as %q", path, k, path+"."+k)
		}
		if k == "$not" {
			if depth+1 > query.MaxConditionDepth {
				return nil, problemf("conditions nest more than %d levels deep", query.MaxConditionDepth)
			}
			c, err := parseFieldCond(path, v, depth+1)
			if err != nil {
				return nil, err
			}
			conds = append(conds, query.Not{Cond: c})
			continue
		}
		op := query.Op(k)
		if !slices.Contains(query.Ops(), op) {
			return nil, unknownOp(path, k, v)
		}
		if err := checkOpValue(path, op, v); err != nil {
			return nil, err
		}
		conds = append(conds, query.FieldCond{Path: path, Op: op, Value: v})
	}
	if len(conds) == 1 {
		return conds[0], nil
	}
	return query.And{Conds: conds}, nil
}

func hasOperator(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

func unknownOp(path, op string, v any) error {
	valid := "the operators are " + quoteList(query.Ops()) + ", and $not to negate"
	switch strings.ToLower(op) {
	case "$endswith", "$ends_with", "$suffix":
		if s, ok := v.(string); ok {
			return &problem{msg: fmt.Sprintf("there is no %s; match the end with $regex instead", op),
				example: exampleFor("filter", filterOn(path, query.OpRegex, regexp.QuoteMeta(s)+"$"))}
		}
	case "$icontains", "$ilike", "$iregex":
		if s, ok := v.(string); ok {
			return &problem{msg: fmt.Sprintf("there is no %s; ignore case with a $regex starting (?i)", op),
				example: exampleFor("filter", filterOn(path, query.OpRegex, "(?i)"+regexp.QuoteMeta(s)))}
		}
	}
	if sg := suggest(op, opNames(), opAliases); sg != "" {
		return &problem{msg: fmt.Sprintf("unknown operator %q on %q (did you mean %q?); %s", op, path, sg, valid),
			example: exampleFor("filter", filterOn(path, query.Op(sg), v))}
	}
	return problemf("unknown operator %q on %q; %s", op, path, valid)
}

func filterOn(path string, op query.Op, v any) map[string]any {
	return map[string]any{"filter": map[string]any{path: map[string]any{string(op): v}}}
}

// checkOpValue checks that an operator's argument has the type it needs
// (query.CheckOp), with an example close to what was meant.
func checkOpValue(path string, op query.Op, v any) error {
	err := query.CheckOp(op, v)
	if err == nil {
		return nil
	}
	p := &problem{msg: err.Error()}
	switch op {
	case query.OpIn, query.OpNin:
		p.example = exampleFor("filter", filterOn(path, op, []any{v}))
	case query.OpContains:
		if _, isArray := v.([]any); isArray {
			p.example = exampleFor("filter", filterOn(path, query.OpIn, v))
		}
	case query.OpExists:
		p.example = exampleFor("filter", filterOn(path, query.OpExists, true))
	}
	return p
}

// checkPath is query.CheckPath as a problem of the step.
func checkPath(path string) error {
	if err := query.CheckPath(path); err != nil {
		return problemf("%s", err.Error())
	}
	return nil
}

func parseSearch(arg any) (query.Step, error) {
	var s query.Search
	switch t := arg.(type) {
	case string:
		s.Query = t
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			switch k {
			case "query":
				q, ok := t[k].(string)
				if !ok {
					return nil, problemf("search's query must be a string, not %s", query.Describe(t[k]))
				}
				s.Query = q
			case "fields", "field":
				paths, err := parsePaths("search's fields", t[k])
				if err != nil {
					return nil, err
				}
				s.Fields = paths
			default:
				return nil, problemf("search takes \"query\" and optionally \"fields\", not %q", k)
			}
		}
	default:
		return nil, problemf("search takes a string or {\"query\": ..., \"fields\": [...]}, not %s", query.Describe(arg))
	}
	if strings.TrimSpace(s.Query) == "" {
		return nil, problemf("search needs a non-empty query")
	}
	if n := utf8.RuneCountInString(s.Query); n > maxQueryLen {
		return nil, problemf("the search query has %d characters, more than the %d allowed", n, maxQueryLen)
	}
	return s, nil
}

func parseSort(arg any) (query.Step, error) {
	var specs []any
	switch t := arg.(type) {
	case []any:
		specs = t
	case string, map[string]any:
		specs = []any{t}
	default:
		return nil, problemf("sort takes {\"field\": ..., \"order\": \"asc\" or \"desc\"} or an array of those, not %s", query.Describe(arg))
	}
	if len(specs) == 0 {
		return nil, problemf("sort needs at least one field")
	}
	if len(specs) > query.MaxSortKeys {
		return nil, problemf("sort has %d keys, more than the %d allowed", len(specs), query.MaxSortKeys)
	}
	keys := make([]query.SortKey, 0, len(specs))
	for _, spec := range specs {
		k, err := parseSortKey(spec)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return query.Sort{Keys: keys}, nil
}

func parseSortKey(spec any) (query.SortKey, error) {
	switch t := spec.(type) {
	case string:
		return query.SortKey{Path: t}, checkPath(t)
	case map[string]any:
		var k query.SortKey
		field, ok := t["field"]
		if !ok {
			// {"score": -1} or {"score": "desc"}: Mongo's form.
			if _, isOrder := t["order"]; len(t) == 1 && !isOrder {
				for f, o := range t {
					desc := o == "desc" || o == "DESC"
					if n, ok := query.Number(o); ok && n < 0 {
						desc = true
					}
					ex := map[string]any{"sort": map[string]any{"field": f, "order": "asc"}}
					if desc {
						ex = map[string]any{"sort": map[string]any{"field": f, "order": "desc"}}
					}
					return k, &problem{msg: fmt.Sprintf("a sort key is {\"field\": name, \"order\": \"asc\" or \"desc\"}, not {%q: %s}", f, query.Quote(o)),
						example: exampleFor("sort", ex)}
				}
			}
			return k, problemf("a sort key needs \"field\"")
		}
		for _, key := range slices.Sorted(maps.Keys(t)) {
			v := t[key]
			switch key {
			case "field":
			case "order":
				o, _ := v.(string)
				switch strings.ToLower(o) {
				case "asc", "ascending":
				case "desc", "descending":
					k.Desc = true
				default:
					return k, problemf("sort order must be \"asc\" or \"desc\", not %s", query.Describe(v))
				}
			default:
				return k, problemf("a sort key has \"field\" and \"order\", not %q", key)
			}
		}
		path, ok := field.(string)
		if !ok {
			return k, problemf("a sort key's field must be a string, not %s", query.Describe(field))
		}
		k.Path = path
		return k, checkPath(path)
	}
	return query.SortKey{}, problemf("a sort key is {\"field\": name, \"order\": \"asc\" or \"desc\"}, not %s", query.Describe(spec))
}

// parsePaths reads a list of field names, or a single one.
func parsePaths(what string, arg any) ([]string, error) {
	var list []any
	switch t := arg.(type) {
	case string:
		list = []any{t}
	case []any:
		list = t
	default:
		return nil, problemf("%s takes an array of field names, not %s", what, query.Describe(arg))
	}
	if len(list) == 0 {
		return nil, problemf("%s needs at least one field name", what)
	}
	if len(list) > maxFields {
		return nil, problemf("%s has %d fields, more than the %d allowed", what, len(list), maxFields)
	}
	paths := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, problemf("%s takes field names (strings), not %s", what, query.Describe(x))
		}
		if err := checkPath(s); err != nil {
			return nil, err
		}
		paths = append(paths, s)
	}
	return paths, nil
}

// parseCount reads a whole number from 0 to query.MaxCount; models sometimes
// quote it.
func parseCount(what string, arg any) (int, error) {
	if s, ok := arg.(string); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			arg = float64(n)
		}
	}
	f, ok := query.Number(arg)
	if !ok || f != math.Trunc(f) || f < 0 || f > query.MaxCount {
		return 0, problemf("%s takes a whole number from 0 to %d, not %s", what, query.MaxCount, query.Describe(arg))
	}
	return int(f), nil
}

func parseSlice(arg any) (query.Step, error) {
	arr, ok := arg.([]any)
	if !ok || len(arr) != 2 {
		return nil, problemf("slice takes [start, end], two whole numbers, not %s", query.Describe(arg))
	}
	start, err := parseCount("slice's start", arr[0])
	if err != nil {
		return nil, err
	}
	end, err := parseCount("slice's end", arr[1])
	if err != nil {
		return nil, err
	}
	if end < start {
		return nil, &problem{msg: fmt.Sprintf("slice's end (%d) is before its start (%d)", end, start),
			example: exampleFor("slice", map[string]any{"slice": []any{end, start}})}
	}
	return query.Slice{Start: start, End: end}, nil
}

func parseSample(arg any) (query.Step, error) {
	s := query.Sample{N: 10}
	switch t := arg.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			switch k {
			case "n":
				n, err := parseCount("sample's n", t[k])
				if err != nil {
					return nil, err
				}
				s.N = n
			case "seed":
				seed, err := parseSeed(t[k])
				if err != nil {
					return nil, err
				}
				s.Seed, s.Seeded = seed, true
			default:
				return nil, problemf("sample takes \"n\" and optionally \"seed\", not %q", k)
			}
		}
	default:
		n, err := parseCount("sample", arg)
		if err != nil {
			return nil, err
		}
		s.N = n
	}
	if s.N > query.MaxSample {
		return nil, problemf("sample takes at most %d items, not %d", query.MaxSample, s.N)
	}
	return s, nil
}

func parseSeed(v any) (uint64, error) {
	if s, ok := v.(string); ok {
		h := fnv.New64a()
		h.Write([]byte(s))
		return h.Sum64(), nil
	}
	f, ok := query.Number(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<63 {
		return 0, problemf("sample's seed must be a whole number, not %s", query.Describe(v))
	}
	return uint64(int64(f)), nil
}

// parseFieldArg reads a step argument that names one field: "tags" or
// {"field": "tags"}.
func parseFieldArg(what string, arg any) (string, error) {
	if m, ok := arg.(map[string]any); ok && len(m) == 1 {
		if f, ok := m["field"]; ok {
			arg = f
		}
	}
	s, ok := arg.(string)
	if !ok {
		return "", problemf("%s takes a field name, not %s", what, query.Describe(arg))
	}
	return s, checkPath(s)
}

func parseGroupBy(arg any) (query.Step, error) {
	m, ok := arg.(map[string]any)
	if !ok {
		if s, isStr := arg.(string); isStr && checkPath(s) == nil {
			return nil, &problem{msg: "group_by takes {\"field\": ..., \"metrics\": {...}}, not a bare field name",
				example: exampleFor("group_by", map[string]any{"group_by": map[string]any{"field": s, "metrics": map[string]any{"n": "count"}}})}
		}
		return nil, problemf("group_by takes {\"field\": ..., \"metrics\": {...}}, not %s", query.Describe(arg))
	}
	var g query.GroupBy
	var hasField, hasMetrics bool
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "field", "by":
			if hasField {
				return nil, problemf("group_by takes one of \"field\" and \"by\", not both")
			}
			hasField = true
			s, ok := v.(string)
			if !ok {
				return nil, problemf("group_by's field must be a field name, not %s", query.Describe(v))
			}
			if err := checkPath(s); err != nil {
				return nil, err
			}
			g.Path = s
		case "metrics":
			hasMetrics = true
			ms, err := parseMetrics(v)
			if err != nil {
				return nil, err
			}
			g.Metrics = ms
		default:
			return nil, problemf("group_by takes \"field\" and \"metrics\", not %q", k)
		}
	}
	if !hasField {
		return nil, problemf("group_by needs \"field\", the field to group by")
	}
	if !hasMetrics {
		g.Metrics = []query.Metric{{Name: "count", Func: query.MetricCount}}
	}
	return g, nil
}

func parseMetrics(v any) ([]query.Metric, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, problemf("group_by's metrics must be an object such as {\"n\": \"count\", \"avg\": \"mean:score\"}, not %s", query.Describe(v))
	}
	if len(m) > query.MaxMetrics {
		return nil, problemf("group_by has %d metrics, more than the %d allowed", len(m), query.MaxMetrics)
	}
	valid := "\"count\" or \"<function>:<field>\" with function " + quoteList(query.MetricFuncs()[1:])
	out := make([]query.Metric, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if name == "" {
			return nil, problemf("a metric name is empty")
		}
		spec, ok := m[name].(string)
		if !ok {
			return nil, problemf("metric %q must be a string such as \"mean:score\", not %s", name, query.Describe(m[name]))
		}
		fn, path, hasPath := strings.Cut(spec, ":")
		fn = strings.TrimSpace(fn)
		f := query.MetricFunc(fn)
		if !slices.Contains(query.MetricFuncs(), f) {
			names := make([]string, 0, len(query.MetricFuncs()))
			for _, mf := range query.MetricFuncs() {
				names = append(names, string(mf))
			}
			msg := fmt.Sprintf("metric %q has unknown function %q; use %s", name, fn, valid)
			if sg := suggest(fn, names, metricAliases); sg != "" {
				msg = fmt.Sprintf("metric %q has unknown function %q (did you mean %q?); use %s", name, fn, sg, valid)
			}
			return nil, problemf("%s", msg)
		}
		switch {
		case f == query.MetricCount && hasPath:
			return nil, problemf("metric %q: count takes no field; write \"count\"", name)
		case f != query.MetricCount && !hasPath:
			return nil, problemf("metric %q: %s needs a field, as in \"%s:score\"", name, f, f)
		}
		if f != query.MetricCount {
			if err := checkPath(path); err != nil {
				return nil, err
			}
		}
		out = append(out, query.Metric{Name: name, Func: f, Path: path})
	}
	return out, nil
}

func parseCountStep(arg any) (query.Step, error) {
	switch t := arg.(type) {
	case nil:
		return query.Count{}, nil
	case bool:
		if t {
			return query.Count{}, nil
		}
	case map[string]any:
		if len(t) == 0 {
			return query.Count{}, nil
		}
	}
	return nil, problemf("count takes true, not %s", query.Describe(arg))
}

// tooDeep reports whether v nests arrays and objects more than max levels.
func tooDeep(v any, max int) bool {
	if max < 0 {
		return true
	}
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			if tooDeep(x, max-1) {
				return true
			}
		}
	case map[string]any:
		for _, x := range t {
			if tooDeep(x, max-1) {
				return true
			}
		}
	}
	return false
}
