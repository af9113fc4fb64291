package query

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/store/query/querytest"
)

// TestAggregate checks that an Aggregate fed a group's values gives what
// group_by gives for that group, for every metric, since stores that form
// groups natively rely on it.
func TestAggregate(t *testing.T) {
	values := []any{3.0, "x", nil, 1.0, json.Number("9007199254740993"), true, 2.5, map[string]any{"a": 1.0}, 3.0}
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = map[string]any{"g": "same", "v": v}
	}
	for _, f := range MetricFuncs() {
		t.Run(string(f), func(t *testing.T) {
			m := Metric{Name: "r", Func: f, Path: "v"}
			if f == MetricCount {
				m.Path = ""
			}
			p := &Pipeline{Steps: []Step{GroupBy{Path: "g", Metrics: []Metric{m}}}}
			out, err := p.Run(context.Background(), querytest.Source(vs))
			if err != nil {
				t.Fatal(err)
			}
			rows, ok := out.([]any)
			if !ok || len(rows) != 1 {
				t.Fatalf("group_by gave %#v, want one group", out)
			}
			want := rows[0].(map[string]any)["r"]
			a := NewAggregate(m)
			held := 0
			for _, v := range values {
				held += a.Add(v)
			}
			if d := querytest.Diff(a.Result(), want); d != "" {
				t.Errorf("Result: %s", d)
			}
			wantHeld := map[MetricFunc]int{MetricMedian: 6, MetricStddev: 6, MetricValues: 7}[f]
			if held != wantHeld {
				t.Errorf("Add reported %d values held, want %d", held, wantHeld)
			}
		})
	}
}
