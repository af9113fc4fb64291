package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store/query/querytest"
)

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

func TestSampleIsSeeded(t *testing.T) {
	data := make([]any, 1000)
	for i := range data {
		data[i] = map[string]any{"id": float64(i)}
	}
	sample := func(s Sample) []int {
		p := &Pipeline{Steps: []Step{s}}
		v, err := p.Run(context.Background(), querytest.Source(data))
		if err != nil {
			t.Fatal(err)
		}
		return querytest.IDs(t, v)
	}
	a := sample(Sample{N: 20, Seed: 42, Seeded: true})
	b := sample(Sample{N: 20, Seed: 42, Seeded: true})
	c := sample(Sample{N: 20, Seed: 43, Seeded: true})
	d := sample(Sample{N: 20})
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
		for _, id := range sample(Sample{N: 20, Seed: uint64(seed), Seeded: true}) {
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
	for _, step := range []Step{
		Exclude{Paths: []string{"tags", "author.h"}},
		Flatten{Path: "tags"},
		Select{Paths: []string{"author.name"}},
		GroupBy{Path: "author.name", Metrics: []Metric{{Name: "m", Func: MetricMedian, Path: "score"}}},
	} {
		p := &Pipeline{Steps: []Step{step}}
		if _, err := p.Run(context.Background(), querytest.Source(data)); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := json.Marshal(data); string(after) != string(before) {
		t.Errorf("Run changed its input:\nbefore %s\nafter  %s", before, after)
	}
}

func TestStreamingStopsEarly(t *testing.T) {
	tests := []struct {
		steps []Step
		read  int
	}{
		{[]Step{Limit{N: 3}}, 3},
		{[]Step{Limit{N: 0}}, 0},
		{[]Step{Filter{Cond: FieldCond{Path: "i", Op: OpGte, Value: 0.0}}, Select{Paths: []string{"i"}}, Limit{N: 2}}, 2},
		{[]Step{Filter{Cond: FieldCond{Path: "i", Op: OpGte, Value: 10.0}}, Limit{N: 2}}, 12},
		{[]Step{Slice{Start: 2, End: 4}}, 4},
		{[]Step{Skip{N: 5}, Limit{N: 1}}, 6},
		{[]Step{Unique{Path: "i"}, Exclude{Paths: []string{"x"}}, Flatten{Path: "i"}, Search{Query: "1"}, Limit{N: 3}}, 12},
		{[]Step{Limit{N: 5}, Count{}}, 5},
	}
	for _, tt := range tests {
		p := &Pipeline{Steps: tt.steps}
		read := 0
		if _, err := p.Run(context.Background(), countingSource(-1, &read)); err != nil {
			t.Fatal(err)
		}
		if read != tt.read {
			t.Errorf("%+v read %d items from an endless source, want %d", tt.steps, read, tt.read)
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
	p := &Pipeline{Steps: []Step{Sort{Keys: []SortKey{{Path: "a"}}}}}
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
	if err != nil || querytest.Diff(got, mustDecode(t, `[{"a": 1}, {"a": 2}]`)) != "" {
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
			_, err := p.RunFrom(context.Background(), tt.start, querytest.Source(testData(t)))
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
	p := &Pipeline{Steps: []Step{
		Filter{Cond: FieldCond{Path: "author.name", Op: OpEq, Value: "Ken"}},
		Sort{Keys: []SortKey{{Path: "year"}}},
		Select{Paths: []string{"id"}},
	}}
	// As a store would: run the filter natively, hand the rest over.
	var kens []any
	for _, it := range testData(t) {
		if get(it, "author.name") == "Ken" {
			kens = append(kens, it)
		}
	}
	got, err := p.RunFrom(context.Background(), 1, querytest.Source(kens))
	if err != nil {
		t.Fatal(err)
	}
	if d := querytest.Diff(roundTrip(t, got), mustDecode(t, `[{"id": 5}, {"id": 2}]`)); d != "" {
		t.Error(d)
	}
}

func TestHoldLimit(t *testing.T) {
	p := &Pipeline{Steps: []Step{Filter{Cond: And{Conds: []Cond{}}}, Sort{Keys: []SortKey{{Path: "i"}}}}}
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
	_, err := p.Run(context.Background(), many)
	var se *StepError
	if !errors.As(err, &se) || se.Index != 1 || se.Step != "sort" || !errors.Is(err, ErrTooMany) {
		t.Fatalf("got %v, want a StepError at step 1", err)
	}
	if !strings.Contains(se.Problem, "sort would hold more than") {
		t.Errorf("problem %q does not say sort holds too much", se.Problem)
	}
	// Followed by a limit, sort keeps only the top items.
	p = &Pipeline{Steps: []Step{Sort{Keys: []SortKey{{Path: "i", Desc: true}}}, Limit{N: 2}}}
	got, err := p.Run(context.Background(), many)
	if err != nil {
		t.Fatal(err)
	}
	if d := querytest.Diff(roundTrip(t, got), mustDecode(t, `[{"i": 2}, {"i": 1}]`)); d != "" {
		t.Error(d)
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
			top, err := (&Pipeline{Steps: []Step{s, w}}).Run(context.Background(), querytest.Source(data))
			if err != nil {
				t.Fatal(err)
			}
			// The filter in between keeps the sort whole.
			full, err := (&Pipeline{Steps: []Step{s, Filter{Cond: And{}}, w}}).Run(context.Background(), querytest.Source(data))
			if err != nil {
				t.Fatal(err)
			}
			if g, w2 := querytest.IDs(t, top), querytest.IDs(t, full); fmt.Sprint(g) != fmt.Sprint(w2) {
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
	got, err := p.Run(context.Background(), querytest.Source(testData(t)))
	if err != nil {
		t.Fatal(err)
	}
	if g := querytest.IDs(t, got); fmt.Sprint(g) != "[3 1 2]" {
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
	for v, err := range st(querytest.Source(testData(t))) {
		if err != nil {
			var se *StepError
			if !errors.As(err, &se) || se.Index != 3 || se.Step != "filter" || !strings.Contains(se.Problem, "spent more than") {
				t.Fatalf("got %v, want a StepError for step 3 about time spent", err)
			}
			return
		}
		got = append(got, v)
	}
	t.Fatalf("no error; got %d items", len(got))
}
