package storetest

// The conformance of pipeline pushdown: a store that implements
// store.Piper must give what query.Pipeline.Run gives over the same items.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/query"
)

// plainItems mix types, nulls, missing fields, nested arrays, odd keys,
// unicode and integers beyond 2^53, none of which makes SQLite hand the
// pipeline back to Go.
var plainItems = rawItems(
	`{"id": 0, "n": 3, "s": "beta", "v": 1, "kind": "a", "tags": ["x", "y"], "m": [[1, 2], [3]], "author": {"name": "Ada", "h": 2}, "big": 9007199254740993, "q\"k": 1, "b\\s": 2, "é": "ü", "": {"": 5}, "a.b": 1, "o": {"0": "zero"}, "arr": [1,2], "f": -0.30000000000000004}`,
	`{"id": 1, "n": 1.5, "s": "alpha", "v": "1", "kind": "b", "tags": ["y"], "m": [[2]], "author": {"name": "Ken", "h": 5}, "big": 9007199254740992, "é": "é", "arr": {"a":1}, "f": 1.7976931348623157e+308}`,
	`{"id": 2, "n": -2, "s": "", "v": true, "kind": true, "tags": [], "author": {"name": "Ada"}, "big": -9223372036854775808, "o": {"0": 0}, "f": 0.000000000000000000000123456789}`,
	`{"id": 3, "n": 0, "s": "Zeta", "v": null, "kind": null, "tags": ["x"], "author": null, "big": 9223372036854775807}`,
	`{"id": 4, "s": "gamma ☃", "kind": 1, "tags": "x", "author": {"name": "Grace", "h": 5}, "big": 12345678901234567}`,
	`{"id": 5, "n": 1e2, "s": "δέλτα", "v": 0, "kind": 1.0, "tags": ["x", 1, true, null, 2.5], "author": {"name": "Ken", "h": 1.5}, "big": 1e300}`,
	`{"id": 6, "n": 100, "s": "beta", "v": false, "kind": "a", "tags": ["z"], "author": {"name": "Ada", "h": 2}, "m": [[1], [2, 3]], "o": [5, 6]}`,
	`{"id": 7, "n": 2.5, "s": "10", "v": 12, "kind": false, "tags": [["x"]], "author": {"name": "ken"}, "big": 1}`,
	`{"id": 8, "n": "3", "s": 3, "v": "", "kind": "b", "author": {"name": "Ada", "h": true}, "big": "9007199254740993"}`,
	`{"id": 9, "n": 1e-7, "s": "beta", "v": 1.0, "kind": "a", "tags": ["é", "ü"], "author": {"h": 7}, "big": 2e-308}`,
	`[1, 2, 3]`,
	`"a string item"`,
	`7`,
	`null`,
)

// edgeLists hold values a backend may hold otherwise than Go does (SQLite
// does), one kind per list so that each check meets its case alone: integers
// beyond int64, literals too long for SQLite's parser, numbers beyond
// float64, lone surrogates and invalid UTF-8, NUL, negative zero, arrays
// and objects where scalars are compared. Pipe must still match Run
// (SQLite hands such runs to Go when the values matter).
var edgeLists = map[string][]json.RawMessage{
	"bigint": rawItems(
		`{"id": 0, "g": 1, "n": 5, "s": "x", "tags": [18446744073709551617]}`,
		`{"id": 1, "g": 1, "n": 18446744073709551617, "tags": [18446744073709551616]}`,
		`{"id": 2, "g": 1, "n": 18446744073709551616, "tags": [1.8446744073709552e19]}`,
		`{"id": 3, "g": 2, "n": 1.8446744073709552e19}`,
		`{"id": 4, "g": 2, "n": 9223372036854775808}`,
		`{"id": 5, "g": 2, "n": -9223372036854775809}`,
		`{"id": 6, "g": 3, "n": 9223372036854775807}`,
	),
	"long": rawItems(
		`{"id": 0, "g": 1, "n": 1.905409544972363e10, "tags": [1.905409544972363e10]}`,
		`{"id": 1, "g": 1, "n": 19054095449.72362709085, "tags": [19054095449.72362709085]}`,
		`{"id": 2, "g": 2, "n": 0.1000000000000000000001, "tags": [0.1]}`,
		`{"id": 3, "g": 2, "n": 0.1}`,
		`{"id": 4, "g": 3, "n": 2}`,
	),
	"inf": rawItems(
		`{"id": 0, "g": 1, "n": 1e401}`,
		`{"id": 1, "g": 1, "n": 1e400}`,
		`{"id": 2, "g": 2, "n": -1e400}`,
		`{"id": 3, "g": 2, "n": 1.7976931348623157e308}`,
		`{"id": 4, "g": 3, "n": 5}`,
	),
	"text": rawItems(
		`{"id": 0, "g": 1, "s": "a\ud800b"}`,
		`{"id": 1, "g": 1, "s": "a\uFFFDb"}`,
		`{"id": 2, "g": 2, "s": "\ud800"}`,
		`{"id": 3, "g": 2, "s": "\udbff"}`,
		`{"id": 4, "g": 3, "s": "`+"\xff\xfe"+`"}`,
		`{"id": 5, "g": 3, "s": "\ud83d\ude00"}`,
		`{"id": 6, "g": 3, "s": "\uF000"}`,
		`{"id": 7, "g": 3, "s": "c"}`,
	),
	"nul": rawItems(
		`{"id": 0, "g": 1, "s": "a\u0000\ud800"}`,
		`{"id": 1, "g": 1, "s": "a\u0000\uFFFD"}`,
		`{"id": 2, "g": 2, "s": "a\u0000\uF000"}`,
		`{"id": 3, "g": 2, "s": "a\u0000b"}`,
	),
	"negzero": rawItems(
		`{"id": 0, "g": 1, "n": 0, "v": -0}`,
		`{"id": 1, "g": 1, "n": -0, "v": 0}`,
		`{"id": 2, "g": 1, "n": -0.0, "v": 0.0}`,
		`{"id": 3, "g": 2, "n": -0.0, "v": 0}`,
		`{"id": 4, "g": 2, "n": 0.0, "v": -0}`,
	),
	"composite": rawItems(
		`{"id": 0, "g": 1, "v": {"b": 2, "a": 1}, "s": [1]}`,
		`{"id": 1, "g": 1, "v": [1, 2], "s": {"a": 1}}`,
		`{"id": 2, "g": 2, "v": {"a": 1, "b": 2}, "s": "[1]"}`,
		`{"id": 3, "g": 2, "v": [1, 10]}`,
		`{"id": 4, "g": 2, "v": "x"}`,
		`{"id": 5, "g": 3, "v": [1, 9]}`,
	),
}

// Builders that keep the pipelines below short.

func pipe(steps ...query.Step) *query.Pipeline { return &query.Pipeline{Steps: steps} }
func where(c query.Cond) query.Step            { return query.Filter{Cond: c} }
func and(cs ...query.Cond) query.Cond          { return query.And{Conds: cs} }
func or(cs ...query.Cond) query.Cond           { return query.Or{Conds: cs} }
func not(c query.Cond) query.Cond              { return query.Not{Cond: c} }
func sortBy(keys ...query.SortKey) query.Step  { return query.Sort{Keys: keys} }
func asc(path string) query.SortKey            { return query.SortKey{Path: path} }
func desc(path string) query.SortKey           { return query.SortKey{Path: path, Desc: true} }

func fc(path string, op query.Op, v any) query.Cond {
	return query.FieldCond{Path: path, Op: op, Value: v}
}

func groupBy(path string, ms ...query.Metric) query.Step {
	return query.GroupBy{Path: path, Metrics: ms}
}

func metric(name string, f query.MetricFunc, path string) query.Metric {
	return query.Metric{Name: name, Func: f, Path: path}
}

// pipeCases are pipelines aimed at the corners of a pushdown: every
// operator on every type, paths with digits, dots and escapes, windows
// before and after sorts, sorts of mixed types, group metrics, steps
// that only Go runs, and those aimed at the values of edgeLists.
var pipeCases = []*query.Pipeline{
	pipe(where(fc("v", query.OpEq, 1.0))),
	pipe(where(fc("v", query.OpNe, 1.0))),
	pipe(where(fc("v", query.OpGt, 0.0))),
	pipe(where(fc("v", query.OpGte, "1"))),
	pipe(where(fc("s", query.OpLt, "beta"))),
	pipe(where(fc("s", query.OpLte, "b"))),
	pipe(where(fc("n", query.OpGt, 1.5))),
	pipe(where(fc("n", query.OpLte, 0.0))),
	pipe(where(fc("n", query.OpGte, json.Number("18446744073709551616")))),
	pipe(where(fc("n", query.OpLt, 1e+308))),
	pipe(where(fc("n", query.OpEq, 0.1))),
	pipe(where(fc("v", query.OpEq, nil))),
	pipe(where(fc("v", query.OpNe, nil))),
	pipe(where(fc("v", query.OpEq, true))),
	pipe(where(fc("v", query.OpEq, false))),
	pipe(where(fc("v", query.OpIn, []any{1.0, "1", true, nil}))),
	pipe(where(fc("v", query.OpNin, []any{1.0, "1"}))),
	pipe(where(fc("v", query.OpIn, []any{}))),
	pipe(where(fc("v", query.OpIn, []any{[]any{1.0, 2.0}}))),
	pipe(where(fc("arr", query.OpEq, "[1,2]"))),
	pipe(where(fc("arr", query.OpIn, []any{"{\"a\":1}", 1.0}))),
	pipe(where(fc("arr", query.OpGte, "["))),
	pipe(where(fc("arr", query.OpStartsWith, "["))),
	pipe(where(fc("arr", query.OpContains, "a"))),
	pipe(where(fc("v", query.OpExists, true))),
	pipe(where(fc("v", query.OpExists, false))),
	pipe(where(fc("v", query.OpContains, "1"))),
	pipe(where(fc("v", query.OpContains, 1.0))),
	pipe(where(fc("s", query.OpContains, "a"))),
	pipe(where(fc("s", query.OpContains, ""))),
	pipe(where(fc("s", query.OpContains, 3.0))),
	pipe(where(fc("s", query.OpStartsWith, "b"))),
	pipe(where(fc("s", query.OpStartsWith, "1"))),
	pipe(where(fc("n", query.OpStartsWith, "1"))),
	pipe(where(fc("n", query.OpStartsWith, ""))),
	pipe(where(fc("n", query.OpStartsWith, "x"))),
	pipe(where(fc("big", query.OpStartsWith, "9"))),
	pipe(where(fc("big", query.OpContains, "0"))),
	pipe(where(fc("tags", query.OpContains, "x"))),
	pipe(where(fc("tags", query.OpContains, 1.0))),
	pipe(where(fc("tags", query.OpContains, true))),
	pipe(where(fc("tags", query.OpContains, map[string]any{"a": 1.0}))),
	pipe(where(fc("tags.0", query.OpEq, "x"))),
	pipe(where(fc("tags.00", query.OpEq, "x"))),
	pipe(where(fc("m.0.1", query.OpEq, 2.0))),
	pipe(where(fc("m.1.0", query.OpExists, true))),
	pipe(where(fc("o.0", query.OpExists, true))),
	pipe(where(fc("o.1", query.OpEq, 6.0))),
	pipe(where(fc("q\"k", query.OpEq, 1.0))),
	pipe(where(fc("b\\s", query.OpEq, 2.0))),
	pipe(where(fc("é", query.OpEq, "ü"))),
	pipe(where(fc(".", query.OpEq, 5.0))),
	pipe(where(fc("a.b", query.OpEq, 1.0))),
	pipe(where(fc("author.name", query.OpEq, "Ada"))),
	pipe(where(fc("author.h", query.OpGte, 2.0))),
	pipe(where(fc("author.name.x", query.OpExists, false))),
	pipe(where(fc("big", query.OpEq, json.Number("9007199254740993")))),
	pipe(where(fc("big", query.OpGt, 9.007199254740992e+15))),
	pipe(where(fc("big", query.OpIn, []any{json.Number("9007199254740993"), 1.0}))),
	pipe(where(not(fc("v", query.OpEq, 1.0)))),
	pipe(where(or())),
	pipe(where(and()), query.Count{}),
	pipe(where(and(or(fc("n", query.OpGt, 2.0), fc("s", query.OpEq, "beta")), fc("kind", query.OpNe, "b")))),
	pipe(where(fc("s", query.OpRegex, "^b")), query.Count{}),
	pipe(where(fc("n", query.OpGt, 0.0)), where(fc("s", query.OpRegex, "a")), query.Count{}),
	pipe(sortBy(asc("v"))),
	pipe(sortBy(desc("v"))),
	pipe(sortBy(asc("kind"), desc("n"))),
	pipe(sortBy(asc("s")), query.Limit{N: 3}),
	pipe(sortBy(asc("n")), query.Skip{N: 2}),
	pipe(sortBy(desc("big")), query.Slice{Start: 1, End: 4}),
	pipe(sortBy(asc("n")), sortBy(desc("kind"))),
	pipe(sortBy(asc("tags.0"))),
	pipe(query.Limit{N: 4}, where(fc("n", query.OpGt, 0.0))),
	pipe(query.Skip{N: 1}, sortBy(asc("n")), query.Limit{N: 2}),
	pipe(query.Slice{Start: 1, End: 6}, query.Count{}),
	pipe(query.Skip{N: 3}, query.Skip{N: 2}, query.Limit{N: 10}, query.Limit{N: 4}),
	pipe(query.Limit{N: 0}),
	pipe(query.Skip{N: 100}, query.Count{}),
	pipe(sortBy(asc("n")), query.Limit{N: 5}, sortBy(asc("s")), where(fc("v", query.OpExists, true)), query.Limit{N: 3}),
	pipe(query.Count{}),
	pipe(groupBy("kind", metric("hi", query.MetricMax, "n"), metric("lo", query.MetricMin, "n"), metric("m", query.MetricMean, "n"), metric("md", query.MetricMedian, "n"), metric("n", query.MetricCount, ""), metric("s", query.MetricSum, "n"), metric("sd", query.MetricStddev, "n"))),
	pipe(groupBy("kind", metric("count", query.MetricCount, ""))),
	pipe(groupBy("missing", metric("hi", query.MetricMax, "author.h"), metric("lo", query.MetricMin, "v"), metric("n", query.MetricCount, ""))),
	pipe(groupBy("v", metric("lo", query.MetricMin, "v"), metric("t", query.MetricSum, "v"))),
	pipe(groupBy("author.name", metric("avg", query.MetricMean, "author.h"), metric("kind", query.MetricMax, "id"), metric("n", query.MetricCount, ""))),
	pipe(groupBy("tags.0", metric("n", query.MetricCount, ""), metric("who", query.MetricValues, "id"))),
	pipe(where(fc("n", query.OpExists, true)), groupBy("kind", metric("avg", query.MetricMean, "n"), metric("n", query.MetricCount, "")), sortBy(desc("n")), query.Limit{N: 2}),
	pipe(query.Limit{N: 5}, groupBy("s", metric("md", query.MetricMedian, "n"), metric("sd", query.MetricStddev, "n"))),
	pipe(sortBy(asc("n")), groupBy("kind", metric("s", query.MetricSum, "n"))),
	pipe(where(fc("n", query.OpGt, 0.0)), query.Unique{Path: "kind"}),
	pipe(query.Search{Query: "beta"}),
	pipe(query.Flatten{Path: "tags"}, query.Count{}),
	pipe(where(fc("v", query.OpExists, true)), query.Select{Paths: []string{"id", "v"}}),
	// Projected: every step before the aggregate reads known fields.
	pipe(query.Search{Query: "a", Fields: []string{"s", "author"}}, groupBy("kind", metric("n", query.MetricCount, ""), metric("who", query.MetricValues, "author"))),
	pipe(query.Select{Paths: []string{"id", "author.name", "n"}}, query.Exclude{Paths: []string{"id"}}, groupBy("author.name", metric("ids", query.MetricValues, "id"), metric("t", query.MetricSum, "n"))),
	pipe(query.Flatten{Path: "tags"}, query.Unique{Path: "tags"}, groupBy("tags", metric("n", query.MetricCount, ""), metric("vs", query.MetricValues, "v"))),
	pipe(query.Sample{N: 5, Seed: 3, Seeded: true}, where(not(fc("n", query.OpRegex, "^1"))), query.Count{}),
	pipe(sortBy(desc("n")), query.Limit{N: 4}, groupBy("kind", metric("lo", query.MetricMin, "big"), metric("m", query.MetricMedian, "n")), sortBy(asc("m"))),
	pipe(where(or(fc("dup", query.OpExists, true), fc("o.0", query.OpEq, 0.0))), groupBy("dup", metric("n", query.MetricCount, ""), metric("x", query.MetricValues, "x"))),
	pipe(where(fc("dup.k", query.OpGte, 1.0)), query.Count{}),
	pipe(where(fc("x", query.OpExists, true)), query.Count{}),
	// Empty strings: every string starts with and contains "".
	pipe(where(fc("v", query.OpStartsWith, ""))),
	pipe(where(not(fc("s", query.OpStartsWith, "b")))),
	pipe(where(not(fc("s", query.OpContains, "a")))),
	pipe(where(not(fc("v", query.OpContains, "")))),
	// Aimed at the values of edgeLists.
	pipe(sortBy(asc("n"))),
	pipe(sortBy(desc("n"))),
	pipe(sortBy(asc("s"))),
	pipe(sortBy(asc("v"))),
	pipe(groupBy("n", metric("count", query.MetricCount, ""))),
	pipe(groupBy("s", metric("count", query.MetricCount, ""))),
	pipe(groupBy("v", metric("count", query.MetricCount, ""))),
	pipe(groupBy("g", metric("hi", query.MetricMax, "n"), metric("lo", query.MetricMin, "n"), metric("m", query.MetricMean, "n"), metric("md", query.MetricMedian, "n"), metric("sd", query.MetricStddev, "n"), metric("t", query.MetricSum, "n"))),
	pipe(groupBy("g", metric("hi", query.MetricMax, "n"), metric("lo", query.MetricMin, "n"), metric("vhi", query.MetricMax, "v"), metric("vlo", query.MetricMin, "v"))),
	pipe(where(fc("n", query.OpGt, 1.8446744073709552e+19))),
	pipe(where(fc("n", query.OpGte, 1.8446744073709552e+19))),
	pipe(where(fc("n", query.OpLt, 9.223372036854776e+18))),
	pipe(where(fc("n", query.OpEq, 1.905409544972363e+10))),
	pipe(where(fc("n", query.OpNe, 1.905409544972363e+10))),
	pipe(where(fc("n", query.OpIn, []any{1.905409544972363e+10, 2.0}))),
	pipe(where(fc("n", query.OpIn, []any{1.8446744073709552e+19}))),
	pipe(where(fc("n", query.OpLte, 0.1))),
	pipe(where(fc("n", query.OpGt, 3.0))),
	pipe(where(fc("n", query.OpGt, 1e+308))),
	pipe(where(fc("s", query.OpGt, "a\uf000"))),
	pipe(where(fc("s", query.OpLt, "\uf000"))),
	pipe(where(fc("s", query.OpGte, "a\x00\uf000"))),
	pipe(where(fc("s", query.OpEq, "�"))),
	pipe(where(fc("s", query.OpContains, "b"))),
	pipe(where(fc("s", query.OpStartsWith, "a"))),
	pipe(where(fc("s", query.OpEq, "[1]"))),
	pipe(where(fc("tags", query.OpContains, 1.905409544972363e+10))),
	pipe(where(fc("tags", query.OpContains, 1.8446744073709552e+19))),
	pipe(where(fc("tags", query.OpContains, 0.1))),
	pipe(where(fc("n", query.OpStartsWith, "1"))),
	pipe(where(fc("n", query.OpContains, "0"))),
	pipe(where(fc("n", query.OpExists, true)), query.Count{}),
}

// testPipe holds a store.Piper to the Go evaluator: on every item set,
// every pipeline of pipeCases gives exactly what Run gives.
func testPipe(t *testing.T, s store.Store) {
	ps := piper(t, s)
	lists := putPipeLists(t, s)
	checked := 0
	for i, id := range lists {
		for j, p := range pipeCases {
			// Under the race detector each pipeline runs on every third
			// list, in rotation: every list and every pipeline is still
			// checked.
			if raceEnabled && (i+j)%3 != 0 {
				continue
			}
			samePipe(t, ps, s, id, p)
			checked++
		}
	}
	t.Logf("%d pipelines matched on %d lists", checked, len(lists))
}

// testPipeRandom compares Pipe with Run on many generated pipelines.
func testPipeRandom(t *testing.T, s store.Store) {
	ps := piper(t, s)
	putList(t, s, "plain", plainItems)
	putList(t, s, "bigint", edgeLists["bigint"])
	r := rand.New(rand.NewPCG(42, 7))
	n := 1500
	if testing.Short() || raceEnabled {
		n = 300
	}
	for range n {
		p := randomPipeline(r)
		samePipe(t, ps, s, "plain", p)
		samePipe(t, ps, s, "bigint", p)
	}
}

// testPipeErrors checks Pipe's errors: the workspace's, the context's and
// the steps' (the StepError Run gives, before any item is read).
func testPipeErrors(t *testing.T, s store.Store) {
	ps := piper(t, s)
	ctx := t.Context()
	putList(t, s, "plain", plainItems)
	count := pipe(query.Count{})
	_, err := ps.Pipe(ctx, "nope", count)
	wantErr(t, err, store.ErrNotFound, "Pipe on a missing workspace")
	ws, c := dictWorkspace("d", `{"a": 1}`)
	mustPut(t, s, ws, c)
	_, err = ps.Pipe(ctx, "d", count)
	wantErr(t, err, store.ErrWrongShape, "Pipe on a dict")
	_, err = ps.Pipe(canceled(t), "plain", count)
	wantErr(t, err, context.Canceled, "Pipe with a canceled context")
	bad := pipe(where(fc("n", query.OpGt, 1.0)), query.Limit{N: -1})
	_, err = ps.Pipe(ctx, "plain", bad)
	if se := (*query.StepError)(nil); !errors.As(err, &se) || se.Index != 1 {
		t.Errorf("Pipe with a bad limit: %v, want a StepError for step 1", err)
	}
	if _, err := ps.Pipe(ctx, "plain", nil); err == nil {
		t.Error("Pipe with a nil pipeline succeeded")
	}
	// Pipelines built in Go: pointer steps, values of Go types the parser
	// never produces.
	for _, p := range []*query.Pipeline{
		pipe(&query.Filter{Cond: &query.FieldCond{Path: "n", Op: query.OpGte, Value: 1}}, &query.Count{}),
		pipe(where(fc("big", query.OpEq, int64(9007199254740993)))),
		pipe(where(&query.Or{Conds: []query.Cond{&query.Not{Cond: fc("v", query.OpEq, uint64(1))}}})),
		pipe(&query.Sort{Keys: []query.SortKey{desc("n")}}, &query.Limit{N: 2}),
		pipe(&query.GroupBy{Path: "kind", Metrics: []query.Metric{metric("x", query.MetricCount, ""), metric("x", query.MetricSum, "n")}}),
		pipe(where(fc("s", query.OpEq, "\xffbad"))),
		pipe(where(fc("n", query.OpIn, "not an array"))),
	} {
		samePipe(t, ps, s, "plain", p)
	}
}

// piper returns s as a store.Piper, skipping the test when it is not one.
func piper(t *testing.T, s store.Store) store.Piper {
	t.Helper()
	ps, ok := s.(store.Piper)
	if !ok {
		t.Skipf("%T does not run pipelines itself (store.Piper)", s)
	}
	return ps
}

// PipeItems returns the item sets the pushdown tests run on, by name:
// "plain" (mixed types, missing fields, odd keys, big integers), "empty",
// and lists of values a backend may hold otherwise than Go does ("bigint",
// "long", "inf", "text", "nul", "negzero", "composite"). A backend's own
// tests of its pushdown may use them.
func PipeItems() map[string][]json.RawMessage {
	lists := map[string][]json.RawMessage{"plain": slices.Clone(plainItems), "empty": nil}
	for name, items := range edgeLists {
		lists[name] = slices.Clone(items)
	}
	return lists
}

// putPipeLists stores the item sets of PipeItems and returns their ids.
func putPipeLists(t *testing.T, s store.Store) []string {
	lists := PipeItems()
	ids := slices.Sorted(maps.Keys(lists))
	for _, id := range ids {
		putList(t, s, id, lists[id])
	}
	return ids
}

// putList stores items as the list workspace id.
func putList(t *testing.T, s store.Store, id string, items []json.RawMessage) {
	t.Helper()
	ws, c := listWorkspace(id, items)
	mustPut(t, s, ws, c)
}

// RunGo runs p with query.Pipeline.Run over the items of workspace id of
// s, decoded: what a store.Piper must give.
func RunGo(ctx context.Context, s store.Store, id string, p *query.Pipeline) (any, error) {
	return p.Run(ctx, func(yield func(any, error) bool) {
		for raw, err := range s.ScanItems(ctx, id) {
			if err != nil {
				yield(nil, err)
				return
			}
			v, err := query.Decode(raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
	})
}

// samePipe checks that Pipe gives exactly what Run gives, errors included.
func samePipe(t *testing.T, ps store.Piper, s store.Store, id string, p *query.Pipeline) {
	t.Helper()
	ctx := t.Context()
	want, werr := RunGo(ctx, s, id, p)
	got, gerr := ps.Pipe(ctx, id, p)
	if (werr != nil) != (gerr != nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("pipeline %s on %s: Pipe error %v, Run error %v", describePipe(p), id, gerr, werr)
	}
	if g, w := Canon(got), Canon(want); g != w {
		t.Fatalf("pipeline %s on %s:\nPipe %s\nRun  %s", describePipe(p), id, g, w)
	}
}

// describePipe writes p for a failure message.
func describePipe(p *query.Pipeline) string {
	if p == nil {
		return "nil"
	}
	var b strings.Builder
	for i, st := range p.Steps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%+v", st)
	}
	return "[" + b.String() + "]"
}

// canon writes a pipeline value so that two values have the same text
// exactly when they are identical: same Go types, same float64 bits (but
// for NaN), same keys.
func Canon(v any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case nil:
			b.WriteString("null")
		case bool:
			b.WriteString(strconv.FormatBool(t))
		case string:
			b.WriteString(strconv.Quote(t))
		case float64:
			b.WriteString("f" + strconv.FormatFloat(t, 'g', -1, 64))
		case json.Number:
			b.WriteString("n" + string(t))
		case []any:
			b.WriteByte('[')
			for i, x := range t {
				if i > 0 {
					b.WriteByte(',')
				}
				walk(x)
			}
			b.WriteByte(']')
		case map[string]any:
			b.WriteByte('{')
			for i, k := range slices.Sorted(maps.Keys(t)) {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Quote(k) + ":")
				walk(t[k])
			}
			b.WriteByte('}')
		default:
			fmt.Fprintf(&b, "%T(%v)", v, v)
		}
	}
	walk(v)
	return b.String()
}

// randomPipeline builds a pipeline of up to five steps from fields, values
// and operators that meet every type in the test items. Some are invalid
// (an ordering with a boolean): Pipe must then fail as Run does.
func randomPipeline(r *rand.Rand) *query.Pipeline {
	paths := []string{"n", "s", "v", "arr", "kind", "tags", "tags.0", "author.name", "author.h", "big", "m.0.0", "o.0", "missing", "é"}
	values := []any{0.0, 1.0, 1.5, -2.0, 100.0, "a", "beta", "1", "", true, false, nil, json.Number("9007199254740993"), 1e-7, "x", "Ada", "[1,2]"}
	ops := []query.Op{query.OpEq, query.OpNe, query.OpGt, query.OpGte, query.OpLt, query.OpLte, query.OpIn, query.OpNin, query.OpContains, query.OpStartsWith, query.OpExists}
	path := func() string { return paths[r.IntN(len(paths))] }
	value := func() any { return values[r.IntN(len(values))] }
	var cond func(depth int) query.Cond
	cond = func(depth int) query.Cond {
		if depth < 2 && r.IntN(4) == 0 {
			switch r.IntN(3) {
			case 0:
				return or(cond(depth+1), cond(depth+1))
			case 1:
				return and(cond(depth+1), cond(depth+1))
			default:
				return not(cond(depth + 1))
			}
		}
		op := ops[r.IntN(len(ops))]
		var v any
		switch op {
		case query.OpIn, query.OpNin:
			v = []any{value(), value()}
		case query.OpStartsWith:
			v = []string{"a", "b", "1", "", "9"}[r.IntN(5)]
		case query.OpExists:
			v = r.IntN(2) == 0
		case query.OpContains:
			v = []any{"a", "x", 1.0, true, "1"}[r.IntN(5)]
		default:
			v = value()
		}
		return fc(path(), op, v)
	}
	var steps []query.Step
	for n := 1 + r.IntN(5); len(steps) < n; {
		switch r.IntN(8) {
		case 0, 1, 2:
			steps = append(steps, where(cond(0)))
		case 3:
			k := asc(path())
			k.Desc = r.IntN(2) == 0
			steps = append(steps, sortBy(k))
		case 4:
			steps = append(steps, []query.Step{query.Limit{N: 3}, query.Skip{N: 2}, query.Slice{Start: 1, End: 4}, query.Limit{N: 0}}[r.IntN(4)])
		case 5:
			f := []query.MetricFunc{query.MetricMin, query.MetricMax, query.MetricSum, query.MetricMedian, query.MetricStddev}[r.IntN(5)]
			m := path()
			steps = append(steps, groupBy(path(), metric("n", query.MetricCount, ""), metric("a", query.MetricMean, m), metric("b", f, m)))
		case 6:
			steps = append(steps, []query.Step{query.Unique{Path: "kind"}, query.Select{Paths: []string{"id", "n"}}, query.Flatten{Path: "tags"}}[r.IntN(3)])
		default:
			steps = append(steps, query.Count{})
			n = len(steps) // count ends a pipeline
		}
	}
	return pipe(steps...)
}
