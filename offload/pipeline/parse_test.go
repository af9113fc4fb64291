package pipeline

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store/query"
)

func TestParseAST(t *testing.T) {
	tests := []struct {
		steps string
		want  []query.Step
	}{
		{`[{"filter": {"year": {"$gte": 2023}, "author.name": "Ada"}}]`, []query.Step{query.Filter{Cond: query.And{Conds: []query.Cond{
			query.FieldCond{Path: "author.name", Op: query.OpEq, Value: "Ada"},
			query.FieldCond{Path: "year", Op: query.OpGte, Value: 2023.0},
		}}}}},
		{`[{"filter": {"$or": [{"a": 1}, {"$not": {"b": {"$in": [1, 2]}}}]}}]`, []query.Step{query.Filter{Cond: query.Or{Conds: []query.Cond{
			query.FieldCond{Path: "a", Op: query.OpEq, Value: 1.0},
			query.Not{Cond: query.FieldCond{Path: "b", Op: query.OpIn, Value: []any{1.0, 2.0}}},
		}}}}},
		{`[{"filter": {"s": {"$not": {"$gt": 5}}}}]`, []query.Step{query.Filter{Cond: query.Not{Cond: query.FieldCond{Path: "s", Op: query.OpGt, Value: 5.0}}}}},
		{`[{"search": "ML"}]`, []query.Step{query.Search{Query: "ML"}}},
		{`[{"search": {"query": "ML", "fields": ["title"]}}]`, []query.Step{query.Search{Query: "ML", Fields: []string{"title"}}}},
		{`[{"sort": {"field": "score", "order": "desc"}}]`, []query.Step{query.Sort{Keys: []query.SortKey{{Path: "score", Desc: true}}}}},
		{`[{"sort": ["a", {"field": "b", "order": "DESC"}, {"field": "c", "order": "asc"}]}]`,
			[]query.Step{query.Sort{Keys: []query.SortKey{{Path: "a"}, {Path: "b", Desc: true}, {Path: "c"}}}}},
		{`[{"select": ["title", "year"]}, {"exclude": "body"}]`, []query.Step{query.Select{Paths: []string{"title", "year"}}, query.Exclude{Paths: []string{"body"}}}},
		{`[{"limit": 10}, {"skip": "5"}, {"slice": [5, 15.0]}]`, []query.Step{query.Limit{N: 10}, query.Skip{N: 5}, query.Slice{Start: 5, End: 15}}},
		{`[{"sample": {"n": 10, "seed": 42}}, {"sample": 3}, {"sample": {}}]`,
			[]query.Step{query.Sample{N: 10, Seed: 42, Seeded: true}, query.Sample{N: 3}, query.Sample{N: 10}}},
		{`[{"unique": "author"}, {"flatten": {"field": "tags"}}]`, []query.Step{query.Unique{Path: "author"}, query.Flatten{Path: "tags"}}},
		{`[{"group_by": {"field": "cat", "metrics": {"n": "count", "avg": "mean:score"}}}]`, []query.Step{query.GroupBy{Path: "cat", Metrics: []query.Metric{
			{Name: "avg", Func: query.MetricMean, Path: "score"}, {Name: "n", Func: query.MetricCount},
		}}}},
		{`[{"count": true}]`, []query.Step{query.Count{}}},
	}
	for _, tt := range tests {
		p, err := Parse(json.RawMessage(tt.steps))
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.steps, err)
			continue
		}
		if !reflect.DeepEqual(p.Steps, tt.want) {
			t.Errorf("Parse(%s)\n got  %#v\n want %#v", tt.steps, p.Steps, tt.want)
		}
	}
}

// parseErrorCase is a bad pipeline and what Parse must say about it.
type parseErrorCase struct {
	name    string
	steps   string
	index   int
	step    string
	problem string // a fragment of Problem
	example string // a fragment of Example, if it should be tailored
}

func parseErrorCases() []parseErrorCase {
	deepNot := strings.Repeat(`{"$not": `, query.MaxConditionDepth+1) + `{"a": 1}` + strings.Repeat(`}`, query.MaxConditionDepth+1)
	tooMany := "[" + strings.TrimSuffix(strings.Repeat(`{"limit": 1},`, MaxSteps+1), ",") + "]"
	return []parseErrorCase{
		{"missing", ``, -1, "", "missing", ""},
		{"null", `null`, -1, "", "missing", ""},
		{"not JSON", `[{"limit": 1}`, -1, "", "not valid JSON", ""},
		{"not an array", `5`, -1, "", "must be a JSON array", ""},
		{"string not holding an array", `"limit 10"`, -1, "", "string that does not hold", ""},
		{"too many steps", tooMany, -1, "", "more than the 64 allowed", ""},
		{"too deep", `[{"filter": {"a": ` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}}]`, -1, "", "nest more than", ""},
		{"step not an object", `[{"limit": 1}, 5]`, 1, "", "must be an object", ""},
		{"empty step", `[{}]`, 0, "", "empty object", ""},
		{"two steps in one", `[{"limit": 1}, {"filter": {}, "limit": 3}]`, 1, "filter, limit", "put each in its own step", ""},
		{"argument beside the name", `[{"sort": "a", "order": "desc"}]`, 0, "sort", "go inside its value", ""},
		{"name in a value", `[{"op": "sort", "field": "x"}]`, 0, "sort", "goes in the key", `{"sort"`},
		{"no step name", `[{"a": 1, "b": 2}]`, 0, "a, b", "none of", ""},
		{"unknown step alias", `[{"where": {"a": 1}}]`, 0, "where", `did you mean "filter"`, `{"filter"`},
		{"unknown step typo", `[{"srot": "x"}]`, 0, "srot", `did you mean "sort"`, `{"sort"`},
		{"unknown step", `[{"frobnicate": 1}]`, 0, "frobnicate", "the steps are filter, search, sort", ""},
		{"filter not an object", `[{"filter": [1]}]`, 0, "filter", "object of conditions", ""},
		{"condition not an object", `[{"filter": {"$or": [1]}}]`, 0, "filter", "must be an object", ""},
		{"unknown operator typo", `[{"filter": {"year": {"$gtee": 5}}}]`, 0, "filter", `did you mean "$gte"`, `{"filter":{"year":{"$gte":5}}}`},
		{"unknown operator", `[{"filter": {"year": {"$foo": 5}}}]`, 0, "filter", "the operators are $eq, $ne", ""},
		{"endswith", `[{"filter": {"name": {"$endswith": "a.b"}}}]`, 0, "filter", "$regex", `{"$regex":"a\\.b$"}`},
		{"no HTML escapes in examples", `[{"filter": {"name": {"$endswith": "<a&b>"}}}]`, 0, "filter", "$regex", `{"$regex":"<a&b>$"}`},
		{"icontains", `[{"filter": {"name": {"$icontains": "ada"}}}]`, 0, "filter", "(?i)", `"(?i)ada"`},
		{"$in not an array", `[{"filter": {"cat": {"$in": "ml"}}}]`, 0, "filter", "takes an array", `{"filter":{"cat":{"$in":["ml"]}}}`},
		{"$gt object", `[{"filter": {"a": {"$gt": {}}}}]`, 0, "filter", "number or a string", ""},
		{"$exists not bool", `[{"filter": {"a": {"$exists": "yes"}}}]`, 0, "filter", "true or false", `{"$exists":true}`},
		{"$contains array", `[{"filter": {"a": {"$contains": ["x", "y"]}}}]`, 0, "filter", "use $in", `{"$in":["x","y"]}`},
		{"$contains null", `[{"filter": {"a": {"$contains": null}}}]`, 0, "filter", "not null", ""},
		{"$startswith number", `[{"filter": {"a": {"$startswith": 5}}}]`, 0, "filter", "takes a string", ""},
		{"$regex invalid", `[{"limit": 1}, {"filter": {"a": {"$regex": "(a"}}}]`, 1, "filter", "not valid RE2", ""},
		{"$regex backreference", `[{"filter": {"a": {"$regex": "(a)\\1"}}}]`, 0, "filter", "no backreferences", ""},
		{"$regex lookahead", `[{"filter": {"a": {"$regex": "a(?=b)"}}}]`, 0, "filter", "not valid RE2", ""},
		{"$regex too long", `[{"filter": {"a": {"$regex": "` + strings.Repeat("a", query.MaxRegexLength+1) + `"}}}]`, 0, "filter", "more than the 1000 allowed", ""},
		{"$regex program too big", `[{"filter": {"a": {"$regex": "(?:\\w+\\s*){300}"}}}]`, 0, "filter", "instructions, more than the 1000 allowed", ""},
		{"$regex not a string", `[{"filter": {"a": {"$regex": 5}}}]`, 0, "filter", "pattern string", ""},
		{"$or not an array", `[{"filter": {"$or": {"a": 1}}}]`, 0, "filter", "takes an array of conditions", `{"$or":[{"a":1}]}`},
		{"$nor", `[{"filter": {"$nor": [{"a": 1}]}}]`, 0, "filter", "no $nor", `{"$not":{"$or":[{"a":1}]}}`},
		{"unknown logical", `[{"filter": {"$xyz": 1}}]`, 0, "filter", "unknown logical operator", ""},
		{"field operator at top", `[{"filter": {"$gte": 5}}]`, 0, "filter", "goes inside", `{"year":{"$gte":5}}`},
		{"operators mixed with keys", `[{"filter": {"author": {"$exists": true, "name": "x"}}}]`, 0, "filter", `"author.name"`, ""},
		{"nested too deep", `[{"filter": ` + deepNot + `}]`, 0, "filter", "more than 32 levels", ""},
		{"too many conditions", `[{"filter": {"$or": [` + strings.TrimSuffix(strings.Repeat(`{"a": 1},`, 1001), ",") + `]}}]`, 0, "filter", "use {\"field\": {\"$in\"", ""},
		{"empty field name", `[{"filter": {"": 1}}]`, 0, "filter", "empty", ""},
		{"long field name", `[{"unique": "` + strings.Repeat("a", 300) + `"}]`, 0, "unique", "longer than", ""},
		{"search empty", `[{"search": " "}]`, 0, "search", "non-empty query", ""},
		{"search bad key", `[{"search": {"query": "a", "limit": 3}}]`, 0, "search", `not "limit"`, ""},
		{"search query number", `[{"search": {"query": 5}}]`, 0, "search", "must be a string", ""},
		{"search number", `[{"search": 5}]`, 0, "search", "takes a string", ""},
		{"sort bad order", `[{"sort": {"field": "x", "order": "down"}}]`, 0, "sort", `"asc" or "desc"`, ""},
		{"sort mongo form", `[{"sort": {"score": -1}}]`, 0, "sort", `not {"score": -1}`, `{"sort":{"field":"score","order":"desc"}}`},
		{"sort no field", `[{"sort": {"order": "desc"}}]`, 0, "sort", `needs "field"`, ""},
		{"sort empty", `[{"sort": []}]`, 0, "sort", "at least one", ""},
		{"sort bad key", `[{"sort": {"field": "a", "dir": "asc"}}]`, 0, "sort", `not "dir"`, ""},
		{"sort number", `[{"sort": 5}]`, 0, "sort", "sort takes", ""},
		{"select number", `[{"select": 5}]`, 0, "select", "array of field names", ""},
		{"select empty", `[{"select": []}]`, 0, "select", "at least one", ""},
		{"select non-string", `[{"select": ["a", 1]}]`, 0, "select", "strings", ""},
		{"limit negative", `[{"limit": -1}]`, 0, "limit", "whole number from 0", ""},
		{"limit fraction", `[{"limit": 1.5}]`, 0, "limit", "whole number", ""},
		{"limit word", `[{"limit": "ten"}]`, 0, "limit", "whole number", ""},
		{"limit huge", `[{"limit": 1e12}]`, 0, "limit", "whole number", ""},
		{"skip object", `[{"skip": {}}]`, 0, "skip", "whole number", ""},
		{"slice reversed", `[{"slice": [3, 1]}]`, 0, "slice", "before its start", `{"slice":[1,3]}`},
		{"slice one number", `[{"slice": [1]}]`, 0, "slice", "[start, end]", ""},
		{"slice negative", `[{"slice": [-5, 2]}]`, 0, "slice", "whole number", ""},
		{"sample too big", `[{"sample": 10001}]`, 0, "sample", "at most 10000", ""},
		{"sample bad key", `[{"sample": {"size": 3}}]`, 0, "sample", `not "size"`, ""},
		{"sample bad seed", `[{"sample": {"n": 3, "seed": 1.5}}]`, 0, "sample", "seed", ""},
		{"unique number", `[{"unique": 5}]`, 0, "unique", "field name", ""},
		{"flatten array", `[{"flatten": ["a"]}]`, 0, "flatten", "field name", ""},
		{"group_by bare field", `[{"group_by": "category"}]`, 0, "group_by", "bare field name", `"field":"category"`},
		{"group_by no field", `[{"group_by": {"metrics": {"n": "count"}}}]`, 0, "group_by", `needs "field"`, ""},
		{"group_by field and by", `[{"group_by": {"field": "a", "by": "b"}}]`, 0, "group_by", "not both", ""},
		{"group_by bad key", `[{"group_by": {"field": "a", "agg": {}}}]`, 0, "group_by", `not "agg"`, ""},
		{"metric alias", `[{"group_by": {"field": "a", "metrics": {"x": "avg:score"}}}]`, 0, "group_by", `did you mean "mean"`, ""},
		{"metric unknown", `[{"group_by": {"field": "a", "metrics": {"x": "p99:score"}}}]`, 0, "group_by", "unknown function", ""},
		{"metric without field", `[{"group_by": {"field": "a", "metrics": {"x": "sum"}}}]`, 0, "group_by", "needs a field", ""},
		{"count with field", `[{"group_by": {"field": "a", "metrics": {"x": "count:b"}}}]`, 0, "group_by", "takes no field", ""},
		{"metric not a string", `[{"group_by": {"field": "a", "metrics": {"x": 1}}}]`, 0, "group_by", "must be a string", ""},
		{"metrics not an object", `[{"group_by": {"field": "a", "metrics": ["count"]}}]`, 0, "group_by", "must be an object", ""},
		{"count false", `[{"count": false}]`, 0, "count", "takes true", ""},
		{"count not last", `[{"count": true}, {"limit": 1}]`, 0, "count", "last step", ""},
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range parseErrorCases() {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(tt.steps))
			var se *StepError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%.80s): got %v, want a *StepError", tt.steps, err)
			}
			if se.Index != tt.index || se.Step != tt.step || !strings.Contains(se.Problem, tt.problem) {
				t.Errorf("got index %d, step %q, problem %q\nwant index %d, step %q, problem containing %q",
					se.Index, se.Step, se.Problem, tt.index, tt.step, tt.problem)
			}
			if strings.Contains(se.Problem, "\n") || se.Problem == "" {
				t.Errorf("problem %q is not one line", se.Problem)
			}
			if tt.example != "" && !strings.Contains(se.Example, tt.example) {
				t.Errorf("example %s does not contain %s", se.Example, tt.example)
			}
			checkExample(t, se)
			prefix := "steps: "
			if se.Index >= 0 {
				prefix = fmt.Sprintf("step %d", se.Index)
			}
			if msg := se.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, se.Example) {
				t.Errorf("Error() = %q, want it to start with %q and hold the example", msg, prefix)
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestErrorMessagesGolden keeps every message of the error table in one
// file, so that a change of wording shows in review as the model will see it.
func TestErrorMessagesGolden(t *testing.T) {
	var b strings.Builder
	for _, tt := range parseErrorCases() {
		_, err := Parse(json.RawMessage(tt.steps))
		fmt.Fprintf(&b, "%s\n\t%v\n", tt.name, err)
	}
	const golden = "testdata/errors.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("messages differ from %s at line %d (go test -update rewrites it):\n got  %s\n want %s", golden, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("messages differ from %s in length: %d lines, want %d", golden, len(gl), len(wl))
	}
}

// checkExample fails the test unless a StepError's example is valid: a
// step, or with index -1 a whole pipeline.
func checkExample(tb testing.TB, se *StepError) {
	tb.Helper()
	if se.Example == "" {
		tb.Errorf("error %q has no example", se)
		return
	}
	if se.Index < 0 {
		if _, err := Parse(json.RawMessage(se.Example)); err != nil {
			tb.Errorf("example pipeline %s does not parse: %v", se.Example, err)
		}
		return
	}
	s, err := parseStepJSON([]byte(se.Example))
	if err != nil {
		tb.Errorf("example step %s does not parse: %v", se.Example, err)
		return
	}
	// A step that would hold too many items is shown a limit to put
	// before it.
	if meant := suggest(se.Step, stepNames, stepAliases); meant != "" && s.Name() != meant && !errors.Is(se, query.ErrTooMany) {
		tb.Errorf("example %s is a %s step, for a %s step", se.Example, s.Name(), se.Step)
	}
}

func TestExamplesParse(t *testing.T) {
	for _, name := range stepNames {
		ex, ok := examples[name]
		if !ok {
			t.Errorf("no example for %s", name)
			continue
		}
		s, err := parseStepJSON([]byte(ex))
		if err != nil {
			t.Errorf("example %s: %v", ex, err)
		} else if s.Name() != name {
			t.Errorf("example %s parses as %s", ex, s.Name())
		}
	}
	if _, err := Parse(json.RawMessage(examplePipeline)); err != nil {
		t.Errorf("example pipeline: %v", err)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"filtr", "filter"}, {"Group-By", "group_by"}, {"orderBy", "sort"}, {"distinct", "unique"},
		{"xyzzy", ""}, {"", ""}, {strings.Repeat("a", 100), ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, stepNames, stepAliases); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
