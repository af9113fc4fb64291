package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store/query"
	"github.com/ctxkit/ctxkit/store/query/querytest"
)

func testData(tb testing.TB) []any {
	tb.Helper()
	return mustDecode(tb, querytest.Sample).([]any)
}

// run parses steps and runs them over the test items.
func run(tb testing.TB, steps string) (any, error) {
	tb.Helper()
	p, err := Parse(json.RawMessage(steps))
	if err != nil {
		return nil, err
	}
	return p.Run(context.Background(), querytest.Source(testData(tb)))
}

func TestFilterOperators(t *testing.T) {
	tests := []struct {
		name   string
		filter string
		want   []int
	}{
		{"eq number", `{"year": 2023}`, []int{1}},
		{"eq nested", `{"author.name": "Ada"}`, []int{1, 3}},
		{"eq null matches null and missing", `{"score": null}`, []int{3, 4}},
		{"eq array", `{"tags": ["ml"]}`, []int{3}},
		{"eq object", `{"author": {"name": "Grace"}}`, []int{4}},
		{"eq bool", `{"draft": true}`, []int{3}},
		{"eq int and float", `{"score": 7.0}`, []int{2}},
		{"eq array index", `{"tags.0": "ml"}`, []int{1, 3}},
		{"explicit $eq", `{"id": {"$eq": 2}}`, []int{2}},
		{"$ne matches missing and null", `{"score": {"$ne": 7}}`, []int{1, 3, 4, 5}},
		{"$gt", `{"year": {"$gt": 2021}}`, []int{1, 3}},
		{"$gte skips string year", `{"year": {"$gte": 2021}}`, []int{1, 2, 3}},
		{"$lt skips null and missing", `{"score": {"$lt": 7}}`, []int{5}},
		{"$lte", `{"score": {"$lte": 7}}`, []int{2, 5}},
		{"$lt strings by code point", `{"title": {"$lt": "E"}}`, []int{1, 5}},
		{"$lt string only matches strings", `{"year": {"$lt": "2023"}}`, []int{4}},
		{"two operators", `{"year": {"$gte": 2021, "$lt": 2024}}`, []int{1, 2}},
		{"two fields", `{"author.name": "Ken", "score": {"$gt": 5}}`, []int{2}},
		{"$in", `{"author.name": {"$in": ["Ken", "Grace"]}}`, []int{2, 4, 5}},
		{"$in numbers by value", `{"score": {"$in": [7.0, 3]}}`, []int{2, 5}},
		{"$in null", `{"score": {"$in": [null]}}`, []int{3, 4}},
		{"$in array value", `{"tags": {"$in": [["ml"], []]}}`, []int{2, 3}},
		{"$nin", `{"author.name": {"$nin": ["Ada"]}}`, []int{2, 4, 5}},
		{"$nin matches missing", `{"score": {"$nin": [7, 3, 9.5]}}`, []int{3, 4}},
		{"$contains substring", `{"title": {"$contains": "eep"}}`, []int{1, 3}},
		{"$contains is case-sensitive", `{"title": {"$contains": "Deep"}}`, []int{1}},
		{"$contains array element", `{"tags": {"$contains": "gpu"}}`, []int{1, 5}},
		{"$contains string field", `{"tags": {"$contains": "on"}}`, []int{4}},
		{"$contains number text", `{"year": {"$contains": "23"}}`, []int{1}},
		{"$startswith", `{"title": {"$startswith": "Deep"}}`, []int{1}},
		{"$regex ignore case", `{"title": {"$regex": "(?i)^deep"}}`, []int{1, 3}},
		{"$regex anchored end", `{"title": {"$regex": "s$"}}`, []int{2, 3, 4}},
		{"$regex on numbers", `{"year": {"$regex": "^202[34]$"}}`, []int{1, 3}},
		{"$exists true skips null", `{"score": {"$exists": true}}`, []int{1, 2, 5}},
		{"$exists false", `{"score": {"$exists": false}}`, []int{3, 4}},
		{"$exists nested", `{"author.h": {"$exists": false}}`, []int{4}},
		{"$or", `{"$or": [{"year": 2021}, {"author.name": "Grace"}]}`, []int{2, 4}},
		{"$and", `{"$and": [{"author.name": "Ada"}, {"year": {"$gt": 2023}}]}`, []int{3}},
		{"$not", `{"$not": {"author.name": "Ada"}}`, []int{2, 4, 5}},
		{"field $not", `{"score": {"$not": {"$gt": 5}}}`, []int{3, 4, 5}},
		{"empty $and matches all", `{"$and": []}`, []int{1, 2, 3, 4, 5}},
		{"empty $or matches none", `{"$or": []}`, []int{}},
		{"empty filter", `{}`, []int{1, 2, 3, 4, 5}},
		{"big int exact", `{"big": 12345678901234567890}`, []int{5}},
		{"big int off by one", `{"big": 12345678901234567891}`, []int{}},
		{"big int compare", `{"big": {"$gt": 12345678901234567889}}`, []int{5}},
		{"big int not a float", `{"big": {"$gt": 12345678901234567890}}`, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, `[{"filter": `+tt.filter+`}]`)
			if err != nil {
				t.Fatal(err)
			}
			if g := querytest.IDs(t, got); fmt.Sprint(g) != fmt.Sprint(tt.want) {
				t.Errorf("filter %s: got ids %v, want %v", tt.filter, g, tt.want)
			}
		})
	}
}

func TestSteps(t *testing.T) {
	tests := []struct {
		name  string
		steps string
		want  string
	}{
		{"search all fields", `[{"search": "deep"}, {"select": ["id"]}]`, `[{"id": 1}, {"id": 3}]`},
		{"search ignores case at depth", `[{"search": {"query": "ADA"}}, {"select": ["id"]}]`, `[{"id": 1}, {"id": 3}]`},
		{"search fields", `[{"search": {"query": "ada", "fields": ["title"]}}]`, `[]`},
		{"search numbers", `[{"search": "2023"}, {"select": ["id"]}]`, `[{"id": 1}]`},
		{"search array field", `[{"search": {"query": "gpu", "fields": ["tags"]}}, {"select": ["id"]}]`, `[{"id": 1}, {"id": 5}]`},
		{"sort asc nulls first", `[{"sort": {"field": "score"}}, {"select": ["id"]}]`,
			`[{"id": 3}, {"id": 4}, {"id": 5}, {"id": 2}, {"id": 1}]`},
		{"sort desc nulls last, ties stable", `[{"sort": {"field": "score", "order": "desc"}}, {"select": ["id"]}]`,
			`[{"id": 1}, {"id": 2}, {"id": 5}, {"id": 3}, {"id": 4}]`},
		{"sort numbers before strings", `[{"sort": {"field": "year"}}, {"select": ["id"]}]`,
			`[{"id": 5}, {"id": 2}, {"id": 1}, {"id": 3}, {"id": 4}]`},
		{"sort multi key", `[{"sort": [{"field": "author.name"}, {"field": "year", "order": "desc"}]}, {"select": ["id"]}]`,
			`[{"id": 3}, {"id": 1}, {"id": 4}, {"id": 2}, {"id": 5}]`},
		{"sort string shorthand by code point", `[{"sort": "title"}, {"select": ["id"]}]`,
			`[{"id": 5}, {"id": 1}, {"id": 2}, {"id": 4}, {"id": 3}]`},
		{"sort strings before arrays", `[{"sort": "tags"}, {"select": ["id"]}]`,
			`[{"id": 4}, {"id": 5}, {"id": 1}, {"id": 3}, {"id": 2}]`},
		{"select nested keeps shape", `[{"limit": 1}, {"select": ["id", "author.name"]}]`,
			`[{"id": 1, "author": {"name": "Ada"}}]`},
		{"select merges nested paths", `[{"limit": 1}, {"select": ["author.name", "author.h"]}]`,
			`[{"author": {"name": "Ada", "h": 10}}]`},
		{"select leaves out missing", `[{"skip": 3}, {"limit": 1}, {"select": ["id", "score"]}]`, `[{"id": 4}]`},
		{"select then filter on nested", `[{"select": ["id", "author.name"]}, {"filter": {"author.name": "Grace"}}]`,
			`[{"id": 4, "author": {"name": "Grace"}}]`},
		{"exclude top and nested", `[{"limit": 1}, {"exclude": ["tags", "author.h", "nothing.here"]}]`,
			`[{"id": 1, "title": "Deep Learning", "year": 2023, "score": 9.5, "author": {"name": "Ada"}, "note": null}]`},
		{"limit", `[{"limit": 2}, {"select": ["id"]}]`, `[{"id": 1}, {"id": 2}]`},
		{"limit 0", `[{"limit": 0}]`, `[]`},
		{"skip", `[{"skip": 3}, {"select": ["id"]}]`, `[{"id": 4}, {"id": 5}]`},
		{"skip past end", `[{"skip": 10}]`, `[]`},
		{"slice", `[{"slice": [1, 3]}, {"select": ["id"]}]`, `[{"id": 2}, {"id": 3}]`},
		{"slice empty", `[{"slice": [2, 2]}]`, `[]`},
		{"slice past end", `[{"slice": [4, 100]}, {"select": ["id"]}]`, `[{"id": 5}]`},
		{"sample all keeps order", `[{"sample": {"n": 10, "seed": 1}}, {"select": ["id"]}]`,
			`[{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 5}]`},
		{"sample 0", `[{"sample": 0}]`, `[]`},
		{"unique keeps first", `[{"unique": "author.name"}, {"select": ["id"]}]`, `[{"id": 1}, {"id": 2}, {"id": 4}]`},
		{"unique missing is null", `[{"unique": "score"}, {"select": ["id"]}]`, `[{"id": 1}, {"id": 2}, {"id": 3}, {"id": 5}]`},
		{"flatten", `[{"flatten": "tags"}, {"select": ["id", "tags"]}]`,
			`[{"id": 1, "tags": "ml"}, {"id": 1, "tags": "gpu"}, {"id": 3, "tags": "ml"}, {"id": 4, "tags": "none"},
			  {"id": 5, "tags": "gpu"}, {"id": 5, "tags": "db"}, {"id": 5, "tags": "ml"}]`},
		{"flatten missing passes", `[{"flatten": "nothing"}, {"count": true}]`, `{"count": 5}`},
		{"group_by metrics", `[{"group_by": {"field": "author.name", "metrics": {"n": "count", "s": "sum:score", "m": "mean:score",
			"lo": "min:score", "hi": "max:score", "med": "median:score", "sd": "stddev:score", "v": "values:year", "d": "sum:draft"}}}]`,
			`[{"author.name": "Ada", "n": 2, "s": 9.5, "m": 9.5, "lo": 9.5, "hi": 9.5, "med": 9.5, "sd": 0, "v": [2023, 2024], "d": 1},
			  {"author.name": "Ken", "n": 2, "s": 10, "m": 5, "lo": 3, "hi": 7, "med": 5, "sd": 2.8284271247461903, "v": [2021, 2020], "d": 0},
			  {"author.name": "Grace", "n": 1, "s": 0, "m": 0, "lo": null, "hi": null, "med": null, "sd": 0, "v": ["2022"], "d": 0}]`},
		{"group_by default metric, null group", `[{"group_by": {"field": "draft"}}]`,
			`[{"draft": null, "count": 4}, {"draft": true, "count": 1}]`},
		{"group_by by", `[{"group_by": {"by": "author.name", "metrics": {}}}]`,
			`[{"author.name": "Ada"}, {"author.name": "Ken"}, {"author.name": "Grace"}]`},
		{"group_by median odd", `[{"group_by": {"field": "nothing", "metrics": {"odd": "median:id", "even": "median:author.h"}}}]`,
			`[{"nothing": null, "odd": 3, "even": 8.5}]`},
		{"group then sort then limit", `[{"flatten": "tags"}, {"group_by": {"field": "tags", "metrics": {"n": "count"}}},
			{"sort": [{"field": "n", "order": "desc"}, {"field": "tags"}]}, {"limit": 2}]`,
			`[{"tags": "ml", "n": 3}, {"tags": "gpu", "n": 2}]`},
		{"count", `[{"count": true}]`, `{"count": 5}`},
		{"count after filter", `[{"filter": {"author.name": "Ada"}}, {"count": {}}]`, `{"count": 2}`},
		{"count nothing", `[{"filter": {"id": 99}}, {"count": null}]`, `{"count": 0}`},
		{"no steps", `[]`, querytest.Sample},
		{"single step object", `{"limit": 1}`, `[` + strings.TrimSuffix(strings.SplitN(querytest.Sample, "\n", 3)[1], ",") + `]`},
		{"steps as a string", `"[{\"count\": true}]"`, `{"count": 5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, tt.steps)
			if err != nil {
				t.Fatal(err)
			}
			want := mustDecode(t, tt.want)
			if d := querytest.Diff(roundTrip(t, got), want); d != "" {
				t.Errorf("%s\n%s", tt.steps, d)
			}
		})
	}
}

func TestOutput(t *testing.T) {
	list := []any{1.0, 2.0, 3.0}
	tests := []struct {
		value  any
		inline int
		want   string
	}{
		{list, 2, `{"items": [1, 2], "count": 3, "has_more": true}`},
		{list, 50, `{"items": [1, 2, 3], "count": 3, "has_more": false}`},
		{list, 3, `{"items": [1, 2, 3], "count": 3, "has_more": false}`},
		{list, -1, `{"items": [], "count": 3, "has_more": true}`},
		{[]any{}, 50, `{"items": [], "count": 0, "has_more": false}`},
		{map[string]any{"count": 7.0}, 50, `{"count": 7}`},
		{5.0, 50, `{"result": 5}`},
		{nil, 50, `{"result": null}`},
	}
	for _, tt := range tests {
		got := roundTrip(t, Output(tt.value, tt.inline))
		if d := querytest.Diff(got, mustDecode(t, tt.want)); d != "" {
			t.Errorf("Output(%v, %d): %s", tt.value, tt.inline, d)
		}
	}
	// Integers print as integers.
	b, _ := json.Marshal(Output([]any{map[string]any{"year": 2024.0, "big": json.Number("12345678901234567890")}}, 1))
	if !strings.Contains(string(b), `"year":2024`) || !strings.Contains(string(b), `"big":12345678901234567890`) {
		t.Errorf("numbers printed as %s", b)
	}
}

// TestExplain checks the StepError made of a run's error: the same step and
// problem, an example that parses, and the run's error still reachable.
func TestExplain(t *testing.T) {
	p := &query.Pipeline{Steps: []query.Step{query.Filter{Cond: query.And{}}, query.Sort{Keys: []query.SortKey{{Path: "i"}}}}}
	many := func(yield func(any, error) bool) {
		for range query.MaxHeldItems + 1 {
			if !yield(1.0, nil) {
				return
			}
		}
	}
	_, runErr := p.Run(context.Background(), many)
	for _, tt := range []struct {
		name    string
		err     error
		index   int
		example string
	}{
		{"too many", runErr, 1, examples["limit"]},
		{"hand-built", &query.StepError{Index: 0, Step: "unique", Problem: "a field name is empty"}, 0, examples["unique"]},
		{"no step", &query.StepError{Index: -1, Problem: "the result would hold too much"}, -1, examplePipeline},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var se *StepError
			if !errors.As(Explain(tt.err), &se) {
				t.Fatalf("Explain(%v) = %v, want a *StepError", tt.err, Explain(tt.err))
			}
			var qe *query.StepError
			if se.Index != tt.index || se.Example != tt.example || !errors.As(se, &qe) || se.Problem != qe.Problem {
				t.Errorf("Explain(%v) = %#v", tt.err, se)
			}
			checkExample(t, se)
		})
	}
	if !errors.Is(Explain(runErr), query.ErrTooMany) {
		t.Error("the explained error no longer wraps query.ErrTooMany")
	}
	other := errors.New("read item 3: boom")
	if Explain(other) != other || Explain(nil) != nil {
		t.Error("Explain changed an error that is not a step's")
	}
}
