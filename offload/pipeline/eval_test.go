package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/offload/pipeline/pipelinetest"
)

// testItems covers the awkward cases: null and missing fields, a string
// where numbers are usual, empty and non-array "arrays", nested objects and
// an integer beyond float64 precision.
const testItems = `[
 {"id": 1, "title": "Deep Learning", "year": 2023, "score": 9.5, "tags": ["ml", "gpu"], "author": {"name": "Ada", "h": 10}, "note": null},
 {"id": 2, "title": "Fast Graphs", "year": 2021, "score": 7, "tags": [], "author": {"name": "Ken", "h": 3}},
 {"id": 3, "title": "deep nets", "year": 2024, "score": null, "tags": ["ml"], "author": {"name": "Ada", "h": 12}, "draft": true},
 {"id": 4, "title": "Queues", "year": "2022", "tags": "none", "author": {"name": "Grace"}},
 {"id": 5, "title": "Big id", "year": 2020, "score": 3, "big": 12345678901234567890, "tags": ["gpu", "db", "ml"], "author": {"name": "Ken", "h": 7}}
]`

func testData(tb testing.TB) []any {
	tb.Helper()
	return mustDecode(tb, testItems).([]any)
}

// run parses steps and runs them over the test items.
func run(tb testing.TB, steps string) (any, error) {
	tb.Helper()
	p, err := Parse(json.RawMessage(steps))
	if err != nil {
		return nil, err
	}
	return p.Run(context.Background(), items(testData(tb)))
}

// ids returns the "id" of each item of a list result.
func ids(tb testing.TB, v any) []int {
	tb.Helper()
	list, ok := v.([]any)
	if !ok {
		tb.Fatalf("result is %T, want a list", v)
	}
	out := make([]int, 0, len(list))
	for _, x := range list {
		f, ok := get(x, "id").(float64)
		if !ok {
			tb.Fatalf("item %s has no numeric id", short(x))
		}
		out = append(out, int(f))
	}
	return out
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
			if g := ids(t, got); fmt.Sprint(g) != fmt.Sprint(tt.want) {
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
		{"no steps", `[]`, testItems},
		{"single step object", `{"limit": 1}`, `[` + strings.TrimSuffix(strings.SplitN(testItems, "\n", 3)[1], ",") + `]`},
		{"steps as a string", `"[{\"count\": true}]"`, `{"count": 5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, tt.steps)
			if err != nil {
				t.Fatal(err)
			}
			want := mustDecode(t, tt.want)
			if d := pipelinetest.Diff(roundTrip(t, got), want); d != "" {
				t.Errorf("%s\n%s", tt.steps, d)
			}
		})
	}
}

func TestSampleIsSeeded(t *testing.T) {
	data := make([]any, 1000)
	for i := range data {
		data[i] = map[string]any{"id": float64(i)}
	}
	sample := func(steps string) []int {
		p, err := Parse(json.RawMessage(steps))
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.Run(context.Background(), items(data))
		if err != nil {
			t.Fatal(err)
		}
		return ids(t, v)
	}
	a := sample(`[{"sample": {"n": 20, "seed": 42}}]`)
	b := sample(`[{"sample": {"n": 20, "seed": 42}}]`)
	c := sample(`[{"sample": {"n": 20, "seed": 43}}]`)
	d := sample(`[{"sample": 20}]`)
	if len(a) != 20 || len(d) != 20 {
		t.Fatalf("sample sizes %d and %d, want 20", len(a), len(d))
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, different samples: %v and %v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 42 and 43 gave the same sample %v", a)
	}
	for _, s := range [][]int{a, c, d} {
		for i := 1; i < len(s); i++ {
			if s[i] <= s[i-1] {
				t.Fatalf("sample %v is not in source order", s)
			}
		}
	}
	// Every item must be able to be picked: over many seeds, the last item
	// of the source turns up.
	seenLast := false
	for seed := range 200 {
		for _, id := range sample(fmt.Sprintf(`[{"sample": {"n": 20, "seed": %d}}]`, seed)) {
			seenLast = seenLast || id == 999
		}
	}
	if !seenLast {
		t.Error("the last item was never sampled in 200 seeds")
	}
}

func TestRunDoesNotChangeItems(t *testing.T) {
	data := testData(t)
	before, _ := json.Marshal(data)
	for _, steps := range []string{
		`[{"exclude": ["tags", "author.h"]}]`,
		`[{"flatten": "tags"}]`,
		`[{"select": ["author.name"]}]`,
		`[{"group_by": {"field": "author.name", "metrics": {"m": "median:score"}}}]`,
	} {
		p, err := Parse(json.RawMessage(steps))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background(), items(data)); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := json.Marshal(data); string(after) != string(before) {
		t.Errorf("Run changed its input:\nbefore %s\nafter  %s", before, after)
	}
}

// countingSource yields n copies of an item (n < 0: without end) and counts
// how many were read.
func countingSource(n int, read *int) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for i := 0; n < 0 || i < n; i++ {
			*read++
			if !yield(map[string]any{"i": float64(i)}, nil) {
				return
			}
		}
	}
}

func TestStreamingStopsEarly(t *testing.T) {
	tests := []struct {
		steps string
		read  int
	}{
		{`[{"limit": 3}]`, 3},
		{`[{"limit": 0}]`, 0},
		{`[{"filter": {"i": {"$gte": 0}}}, {"select": ["i"]}, {"limit": 2}]`, 2},
		{`[{"filter": {"i": {"$gte": 10}}}, {"limit": 2}]`, 12},
		{`[{"slice": [2, 4]}]`, 4},
		{`[{"skip": 5}, {"limit": 1}]`, 6},
		{`[{"unique": "i"}, {"exclude": ["x"]}, {"flatten": "i"}, {"search": "1"}, {"limit": 3}]`, 12},
		{`[{"limit": 5}, {"count": true}]`, 5},
	}
	for _, tt := range tests {
		p, err := Parse(json.RawMessage(tt.steps))
		if err != nil {
			t.Fatal(err)
		}
		read := 0
		if _, err := p.Run(context.Background(), countingSource(-1, &read)); err != nil {
			t.Fatal(err)
		}
		if read != tt.read {
			t.Errorf("%s read %d items from an endless source, want %d", tt.steps, read, tt.read)
		}
	}
}

func TestRunErrors(t *testing.T) {
	boom := errors.New("boom")
	failing := func(yield func(any, error) bool) {
		if yield(map[string]any{"a": 1.0}, nil) {
			yield(nil, boom)
		}
	}
	p, _ := Parse(json.RawMessage(`[{"sort": "a"}]`))
	if _, err := p.Run(context.Background(), failing); !errors.Is(err, boom) || !strings.Contains(err.Error(), "item 1") {
		t.Errorf("source error: got %v, want boom at item 1", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	read := 0
	if _, err := p.Run(ctx, countingSource(10, &read)); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: got %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	stopping := func(yield func(any, error) bool) {
		for i := 0; ; i++ {
			if i == 1000 {
				cancel()
			}
			if !yield(1.0, nil) {
				return
			}
		}
	}
	if _, err := p.Run(ctx, stopping); !errors.Is(err, context.Canceled) {
		t.Errorf("context canceled mid-run: got %v", err)
	}

	raw := func(yield func(any, error) bool) {
		_ = yield(json.RawMessage(`{"a": 2}`), nil) && yield([]byte(`{"a": 1}`), nil) && yield(json.RawMessage(`{"a": `), nil)
	}
	if _, err := p.Run(context.Background(), raw); err == nil || !strings.Contains(err.Error(), "decode item 2") {
		t.Errorf("bad raw item: got %v", err)
	}
	rawOK := func(yield func(any, error) bool) {
		_ = yield(json.RawMessage(`{"a": 2}`), nil) && yield([]byte(`{"a": 1}`), nil)
	}
	got, err := p.Run(context.Background(), rawOK)
	if err != nil || pipelinetest.Diff(got, mustDecode(t, `[{"a": 1}, {"a": 2}]`)) != "" {
		t.Errorf("raw items: got %v, %v", got, err)
	}
	if _, err := p.RunFrom(context.Background(), 2, rawOK); err == nil {
		t.Error("RunFrom past the end: no error")
	}
}

// TestHandBuilt checks that pipelines built in Go, not parsed, fail with a
// StepError naming their index in the whole pipeline.
func TestHandBuilt(t *testing.T) {
	tests := []struct {
		name    string
		steps   []Step
		start   int
		index   int
		problem string
	}{
		{"bad regex", []Step{Limit{N: 1}, Select{Paths: []string{"a"}}, Filter{Cond: FieldCond{Path: "a", Op: OpRegex, Value: "(a"}}}, 1, 2, "not valid RE2"},
		{"wrong value type", []Step{&Filter{Cond: &FieldCond{Path: "a", Op: OpIn, Value: "x"}}}, 0, 0, "array"},
		{"unknown op", []Step{Filter{Cond: Or{Conds: []Cond{FieldCond{Path: "a", Op: "$nope", Value: 1.0}}}}}, 0, 0, "unknown operator"},
		{"nil cond", []Step{Filter{}}, 0, 0, "missing"},
		{"nil step", []Step{Limit{N: 1}, nil}, 0, 1, "missing"},
		{"count not last", []Step{Count{}, Limit{N: 1}}, 0, 0, "last"},
		{"negative limit", []Step{Limit{N: -1}}, 0, 0, "whole number"},
		{"bad slice", []Step{Slice{Start: 3, End: 1}}, 0, 0, "start <= end"},
		{"big sample", []Step{Sample{N: MaxSample + 1}}, 0, 0, "sample"},
		{"bad metric", []Step{GroupBy{Path: "a", Metrics: []Metric{{Name: "x", Func: "avg", Path: "b"}}}}, 0, 0, "unknown function"},
		{"empty select", []Step{Select{}}, 0, 0, "field name"},
		{"empty sort", []Step{Sort{}}, 0, 0, "sort needs"},
		{"empty sort before limit", []Step{&Sort{}, &Limit{N: 1}}, 0, 0, "sort needs"},
		{"pointer steps", []Step{&Sort{Keys: []SortKey{{Path: "id"}}}, &Limit{N: 1}, &Count{}, &Limit{N: 1}}, 0, 2, "last"},
		{"empty search", []Step{Search{Query: " "}}, 0, 0, "query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pipeline{Steps: tt.steps}
			_, err := p.RunFrom(context.Background(), tt.start, items(testData(t)))
			var se *StepError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *StepError", err)
			}
			if se.Index != tt.index || !strings.Contains(se.Problem, tt.problem) {
				t.Errorf("got index %d, problem %q; want index %d, problem containing %q", se.Index, se.Problem, tt.index, tt.problem)
			}
		})
	}
}

func TestRunFromSkipsPrefix(t *testing.T) {
	p, err := Parse(json.RawMessage(`[{"filter": {"author.name": "Ken"}}, {"sort": {"field": "year"}}, {"select": ["id"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	// As a store would: run the filter natively, hand the rest over.
	var kens []any
	for _, it := range testData(t) {
		if get(it, "author.name") == "Ken" {
			kens = append(kens, it)
		}
	}
	got, err := p.RunFrom(context.Background(), 1, items(kens))
	if err != nil {
		t.Fatal(err)
	}
	if d := pipelinetest.Diff(roundTrip(t, got), mustDecode(t, `[{"id": 5}, {"id": 2}]`)); d != "" {
		t.Error(d)
	}
}

func TestHoldLimit(t *testing.T) {
	p, err := Parse(json.RawMessage(`[{"filter": {}}, {"sort": "i"}]`))
	if err != nil {
		t.Fatal(err)
	}
	// Items without "i", then two with: cheap to make a million of.
	var plain any = 1.0
	many := func(yield func(any, error) bool) {
		for range MaxHeldItems - 1 {
			if !yield(plain, nil) {
				return
			}
		}
		_ = yield(map[string]any{"i": 1.0}, nil) && yield(map[string]any{"i": 2.0}, nil)
	}
	_, err = p.Run(context.Background(), many)
	var se *StepError
	if !errors.As(err, &se) || se.Index != 1 || se.Step != "" && se.Step != "sort" {
		t.Fatalf("got %v, want a StepError at step 1", err)
	}
	if !strings.Contains(se.Problem, "sort would hold more than") {
		t.Errorf("problem %q does not say sort holds too much", se.Problem)
	}
	// Followed by a limit, sort keeps only the top items.
	p, err = Parse(json.RawMessage(`[{"sort": {"field": "i", "order": "desc"}}, {"limit": 2}]`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Run(context.Background(), many)
	if err != nil {
		t.Fatal(err)
	}
	if d := pipelinetest.Diff(roundTrip(t, got), mustDecode(t, `[{"i": 2}, {"i": 1}]`)); d != "" {
		t.Error(d)
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
		if d := pipelinetest.Diff(got, mustDecode(t, tt.want)); d != "" {
			t.Errorf("Output(%v, %d): %s", tt.value, tt.inline, d)
		}
	}
	// Integers print as integers.
	b, _ := json.Marshal(Output([]any{map[string]any{"year": 2024.0, "big": json.Number("12345678901234567890")}}, 1))
	if !strings.Contains(string(b), `"year":2024`) || !strings.Contains(string(b), `"big":12345678901234567890`) {
		t.Errorf("numbers printed as %s", b)
	}
}

// TestTopMatchesSort checks that a sort followed by limit or slice, which
// runs as one top-k step, gives what a full sort and then the slice give.
func TestTopMatchesSort(t *testing.T) {
	values := []string{`null`, `1`, `1.0`, `-2`, `"a"`, `"B"`, `true`, `false`, `[1]`, `{"x": 1}`, `12345678901234567890`, `12345678901234567891`}
	var data []any
	for i := range 300 {
		item := fmt.Sprintf(`{"id": %d, "a": %s, "b": %s}`, i, values[(i*7)%len(values)], values[(i*5+i/len(values))%len(values)])
		if i%11 == 0 {
			item = fmt.Sprintf(`{"id": %d}`, i)
		}
		data = append(data, mustDecode(t, item))
	}
	sorts := []Sort{
		{Keys: []SortKey{{Path: "a"}}},
		{Keys: []SortKey{{Path: "a", Desc: true}, {Path: "b"}}},
		{Keys: []SortKey{{Path: "b", Desc: true}, {Path: "a", Desc: true}}},
	}
	windows := []Step{Limit{N: 0}, Limit{N: 1}, Limit{N: 17}, Limit{N: 1000}, Slice{Start: 3, End: 40}, Slice{Start: 299, End: 500}}
	for _, s := range sorts {
		for _, w := range windows {
			top, err := (&Pipeline{Steps: []Step{s, w}}).Run(context.Background(), items(data))
			if err != nil {
				t.Fatal(err)
			}
			// The filter in between keeps the sort whole.
			full, err := (&Pipeline{Steps: []Step{s, Filter{Cond: And{}}, w}}).Run(context.Background(), items(data))
			if err != nil {
				t.Fatal(err)
			}
			if g, w2 := ids(t, top), ids(t, full); fmt.Sprint(g) != fmt.Sprint(w2) {
				t.Errorf("%+v then %+v:\n top  %v\n full %v", s, w, g, w2)
			}
		}
	}
}

func TestPointerSteps(t *testing.T) {
	p := &Pipeline{Steps: []Step{
		&Filter{Cond: &Not{Cond: &FieldCond{Path: "author.name", Op: OpEq, Value: "Grace"}}},
		&Sort{Keys: []SortKey{{Path: "year", Desc: true}}},
		&Limit{N: 3},
		&Select{Paths: []string{"id"}},
	}}
	got, err := p.Run(context.Background(), items(testData(t)))
	if err != nil {
		t.Fatal(err)
	}
	if g := ids(t, got); fmt.Sprint(g) != "[3 1 2]" {
		t.Errorf("got ids %v, want [3 1 2]", g)
	}
}

// TestRegexBudget checks that a run whose $regex matching takes too long
// stops with a StepError; the budget here is spent before the first match.
func TestRegexBudget(t *testing.T) {
	env := &runEnv{regexLeft: -1}
	step := Filter{Cond: FieldCond{Path: "title", Op: OpRegex, Value: "e"}}
	st, err := compileStep(3, step, env)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for v, err := range st(items(testData(t))) {
		if err != nil {
			var se *StepError
			if !errors.As(err, &se) || se.Index != 3 || se.Step != "filter" || !strings.Contains(se.Problem, "spent more than") {
				t.Fatalf("got %v, want a StepError for step 3 about time spent", err)
			}
			checkExample(t, se)
			return
		}
		got = append(got, v)
	}
	t.Fatalf("no error; got %d items", len(got))
}
