package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/ctxkit/ctxkit/store/query/querytest"
)

// fuzzSeeds are pipelines, good and bad, that start the fuzzers near the
// interesting parts of the grammar.
var fuzzSeeds = []string{
	`[{"filter": {"year": {"$gte": 2023}, "author.name": "Ada"}}]`,
	`[{"filter": {"$or": [{"tags": {"$contains": "gpu"}}, {"$not": {"score": {"$lt": 5}}}]}}, {"count": true}]`,
	`[{"filter": {"title": {"$regex": "(?i)^deep", "$startswith": "D"}, "score": {"$in": [1, null, "x"]}}}]`,
	`[{"search": {"query": "ada", "fields": ["author"]}}, {"sort": [{"field": "score", "order": "desc"}, "id"]}]`,
	`[{"flatten": "tags"}, {"group_by": {"field": "tags", "metrics": {"n": "count", "m": "median:score", "s": "stddev:year", "v": "values:id"}}}]`,
	`[{"select": ["id", "author.name"]}, {"exclude": ["author.h"]}, {"unique": "author.name"}]`,
	`[{"sample": {"n": 2, "seed": 7}}, {"skip": 1}, {"slice": [0, 3]}, {"limit": 1}]`,
	`"[{\"limit\": 2}]"`,
	`{"limit": 1}`,
	`[{"sort": {"score": -1}}]`,
	`[{"filter": {"$nor": {}}}]`,
	`[{"where": 1}, 5, {}]`,
	`[{"filter": {"big": 12345678901234567890}}]`,
	`[]`,
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			var se *StepError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error is %T (%v), want *StepError", err, err)
			}
			if se.Problem == "" || se.Example == "" || se.Index < -1 {
				t.Fatalf("incomplete StepError %#v", se)
			}
			checkExample(t, se)
			return
		}
		if len(p.Steps) > MaxSteps {
			t.Fatalf("Parse accepted %d steps", len(p.Steps))
		}
	})
}

func FuzzRun(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	data := mustDecode(f, querytest.Sample).([]any)
	f.Fuzz(func(t *testing.T, steps string) {
		p, err := Parse(json.RawMessage(steps))
		if err != nil {
			return
		}
		v, err := p.Run(context.Background(), querytest.Source(data))
		if err != nil {
			var se *StepError
			if !errors.As(Explain(err), &se) {
				t.Fatalf("Run(%s) error is %T (%v), want one Explain makes a *StepError", steps, err, err)
			}
			checkExample(t, se)
			return
		}
		if _, err := json.Marshal(Output(v, 50)); err != nil {
			t.Fatalf("Run(%s) gave a value JSON cannot hold: %v", steps, err)
		}
		// Steps never change their input.
		if d := querytest.Diff(roundTrip(t, data), mustDecode(t, querytest.Sample)); d != "" {
			t.Fatalf("Run(%s) changed the items: %s", steps, d)
		}
	})
}
