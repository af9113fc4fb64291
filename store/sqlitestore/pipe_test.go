package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ctxkit/ctxkit/offload/pipeline"
	"github.com/ctxkit/ctxkit/offload/pipeline/pipelinetest"
	"github.com/ctxkit/ctxkit/store"
)

// openPipeStore opens a store in a fresh temporary directory.
func openPipeStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "ctxkit.db"), Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// putList stores items as the list workspace id.
func putList(tb testing.TB, s *Store, id string, items []json.RawMessage) {
	tb.Helper()
	ws := &store.Workspace{ID: id, Type: "test", Shape: store.ShapeList, Format: "json", Producer: "pipe_test"}
	if err := s.Put(context.Background(), ws, &store.Content{Items: items}); err != nil {
		tb.Fatalf("Put %s: %v", id, err)
	}
}

// rawItems turns JSON texts into items.
func rawItems(texts ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(texts))
	for i, t := range texts {
		out[i] = json.RawMessage(t)
	}
	return out
}

// goRun runs p in Go alone over the items of workspace id, the reference
// Pipe must match.
func goRun(ctx context.Context, s *Store, id string, p *pipeline.Pipeline) (any, error) {
	return p.Run(ctx, func(yield func(any, error) bool) {
		for raw, err := range s.ScanItems(ctx, id) {
			if err != nil {
				yield(nil, err)
				return
			}
			v, err := pipeline.Decode(raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
	})
}

// canon writes a pipeline value so that two values have the same text
// exactly when they are identical: same Go types, same float64 bits (but
// for NaN), same keys.
func canon(v any) string {
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

// samePipe checks that Pipe gives exactly what Run gives, errors included,
// both when it may project and when it must push down to SQL, and returns
// the steps the latter ran in SQL.
func samePipe(t *testing.T, s *Store, id string, steps string) int {
	t.Helper()
	sameMode(t, s, id, steps, pipeAuto)
	return sameMode(t, s, id, steps, pipeSQL)
}

// sameMode is samePipe in one mode.
func sameMode(t *testing.T, s *Store, id string, steps string, mode pipeMode) int {
	t.Helper()
	p, err := pipeline.Parse(json.RawMessage(steps))
	if err != nil {
		t.Fatalf("Parse(%s): %v", steps, err)
	}
	ctx := context.Background()
	want, werr := goRun(ctx, s, id, p)
	got, pushed, gerr := s.pipeWith(ctx, id, p, mode)
	if (werr != nil) != (gerr != nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("steps %s on %s (mode %d): Pipe error %v, Run error %v", steps, id, mode, gerr, werr)
	}
	if g, w := canon(got), canon(want); g != w {
		t.Fatalf("steps %s on %s (mode %d, %d steps in SQL):\nPipe %s\nRun  %s", steps, id, mode, pushed, g, w)
	}
	return pushed
}

// projects reports whether Pipe runs steps over projected items.
func projects(tb testing.TB, steps string) bool {
	p, err := pipeline.Parse(json.RawMessage(steps))
	if err != nil {
		tb.Fatalf("Parse(%s): %v", steps, err)
	}
	keys, ok := p.Projection()
	return ok && len(keys) > 0
}

// roundTrip passes v through JSON, as a tool result does, so that it
// compares in the form a model sees.
func roundTrip(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal %s: %v", canon(v), err)
	}
	out, err := pipeline.Decode(b)
	if err != nil {
		tb.Fatalf("decode %s: %v", b, err)
	}
	return out
}

// TestPipeConformance runs every shared vector through Pipe.
func TestPipeConformance(t *testing.T) {
	items, vecs := pipelinetest.LoadConformance(t)
	s := openPipeStore(t)
	putList(t, s, "conf", items)
	pushedAny := 0
	for _, v := range vecs {
		t.Run(fmt.Sprintf("line%03d", v.Line), func(t *testing.T) {
			p, err := pipeline.Parse(v.Steps)
			if err != nil {
				t.Fatalf("Parse(%s): %v", v.Steps, err)
			}
			want, err := pipeline.Decode(v.Expected)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []pipeMode{pipeAuto, pipeSQL} {
				got, pushed, err := s.pipeWith(t.Context(), "conf", p, mode)
				if err != nil {
					t.Fatalf("Pipe(%s) in mode %d: %v", v.Steps, mode, err)
				}
				if pushed > 0 && mode == pipeSQL {
					pushedAny++
				}
				if d := pipelinetest.Diff(roundTrip(t, got), want); d != "" {
					t.Errorf("steps %s (mode %d, %d in SQL)\n%s", v.Steps, mode, pushed, d)
				}
			}
		})
	}
	// Every vector starts with a filter that SQL runs.
	if pushedAny != len(vecs) {
		t.Errorf("%d of %d vectors ran a prefix in SQL, want all", pushedAny, len(vecs))
	}
}

// plainItems mix types, nulls, missing fields, nested arrays, odd keys,
// unicode and integers beyond 2^53, none of which makes the SQL hand the
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

// edgeLists hold values SQLite cannot hold as Go does, one kind per list
// so that each check of the compiled SQL meets its case alone: integers
// beyond int64, literals too long for SQLite's parser, numbers beyond
// float64, lone surrogates and invalid UTF-8, NUL, negative zero, arrays
// and objects where scalars are compared. Pipe must still match Run, by
// handing such runs to Go when the values matter.
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

// edgeSteps aim at the values of edgeLists.
var edgeSteps = []string{
	`[{"sort": {"field": "n"}}]`,
	`[{"sort": {"field": "n", "order": "desc"}}]`,
	`[{"sort": {"field": "s"}}]`,
	`[{"sort": {"field": "v"}}]`,
	`[{"group_by": {"field": "n"}}]`,
	`[{"group_by": {"field": "s"}}]`,
	`[{"group_by": {"field": "v"}}]`,
	`[{"group_by": {"field": "g", "metrics": {"lo": "min:n", "hi": "max:n", "t": "sum:n", "m": "mean:n", "md": "median:n", "sd": "stddev:n"}}}]`,
	`[{"group_by": {"field": "g", "metrics": {"lo": "min:n", "hi": "max:n", "vlo": "min:v", "vhi": "max:v"}}}]`,
	`[{"filter": {"n": {"$gt": 1.8446744073709552e19}}}]`,
	`[{"filter": {"n": {"$gte": 1.8446744073709552e19}}}]`,
	`[{"filter": {"n": {"$lt": 9.223372036854775807e18}}}]`,
	`[{"filter": {"n": 1.905409544972363e10}}]`,
	`[{"filter": {"n": {"$ne": 1.905409544972363e10}}}]`,
	`[{"filter": {"n": {"$in": [1.905409544972363e10, 2]}}}]`,
	`[{"filter": {"n": {"$in": [1.8446744073709552e19]}}}]`,
	`[{"filter": {"n": {"$lte": 0.1}}}]`,
	`[{"filter": {"n": {"$gt": 3}}}]`,
	`[{"filter": {"n": {"$gt": 1e308}}}]`,
	`[{"filter": {"s": {"$gt": "a\uF000"}}}]`,
	`[{"filter": {"s": {"$lt": "\uF000"}}}]`,
	`[{"filter": {"s": {"$gte": "a\u0000\uF000"}}}]`,
	`[{"filter": {"s": "\uFFFD"}}]`,
	`[{"filter": {"s": {"$contains": "b"}}}]`,
	`[{"filter": {"s": {"$startswith": "a"}}}]`,
	`[{"filter": {"s": "[1]"}}]`,
	`[{"filter": {"tags": {"$contains": 1.905409544972363e10}}}]`,
	`[{"filter": {"tags": {"$contains": 1.8446744073709552e19}}}]`,
	`[{"filter": {"tags": {"$contains": 0.1}}}]`,
	`[{"filter": {"n": {"$startswith": "1"}}}]`,
	`[{"filter": {"n": {"$contains": "0"}}}]`,
	`[{"filter": {"n": {"$exists": true}}}, {"count": true}]`,
}

// extraSteps are pipelines beyond the conformance vectors, aimed at the
// corners of the compiler.
var extraSteps = []string{
	`[{"filter": {"v": 1}}]`,
	`[{"filter": {"v": {"$ne": 1}}}]`,
	`[{"filter": {"v": {"$gt": 0}}}]`,
	`[{"filter": {"v": {"$gte": "1"}}}]`,
	`[{"filter": {"s": {"$lt": "beta"}}}]`,
	`[{"filter": {"s": {"$lte": "b"}}}]`,
	`[{"filter": {"n": {"$gt": 1.5}}}]`,
	`[{"filter": {"n": {"$lte": 0}}}]`,
	`[{"filter": {"n": {"$gte": 18446744073709551616}}}]`,
	`[{"filter": {"n": {"$lt": 1e308}}}]`,
	`[{"filter": {"n": 0.1}}]`,
	`[{"filter": {"v": null}}]`,
	`[{"filter": {"v": {"$ne": null}}}]`,
	`[{"filter": {"v": true}}]`,
	`[{"filter": {"v": false}}]`,
	`[{"filter": {"v": {"$in": [1, "1", true, null]}}}]`,
	`[{"filter": {"v": {"$nin": [1, "1"]}}}]`,
	`[{"filter": {"v": {"$in": []}}}]`,
	`[{"filter": {"v": {"$in": [[1, 2]]}}}]`,
	`[{"filter": {"arr": "[1,2]"}}]`,
	`[{"filter": {"arr": {"$in": ["{\"a\":1}", 1]}}}]`,
	`[{"filter": {"arr": {"$gte": "["}}}]`,
	`[{"filter": {"arr": {"$startswith": "["}}}]`,
	`[{"filter": {"arr": {"$contains": "a"}}}]`,
	`[{"filter": {"v": {"$exists": true}}}]`,
	`[{"filter": {"v": {"$exists": false}}}]`,
	`[{"filter": {"v": {"$contains": "1"}}}]`,
	`[{"filter": {"v": {"$contains": 1}}}]`,
	`[{"filter": {"s": {"$contains": "a"}}}]`,
	`[{"filter": {"s": {"$contains": ""}}}]`,
	`[{"filter": {"s": {"$contains": 3}}}]`,
	`[{"filter": {"s": {"$startswith": "b"}}}]`,
	`[{"filter": {"s": {"$startswith": "1"}}}]`,
	`[{"filter": {"n": {"$startswith": "1"}}}]`,
	`[{"filter": {"n": {"$startswith": ""}}}]`,
	`[{"filter": {"n": {"$startswith": "x"}}}]`,
	`[{"filter": {"big": {"$startswith": "9"}}}]`,
	`[{"filter": {"big": {"$contains": "0"}}}]`,
	`[{"filter": {"tags": {"$contains": "x"}}}]`,
	`[{"filter": {"tags": {"$contains": 1}}}]`,
	`[{"filter": {"tags": {"$contains": true}}}]`,
	`[{"filter": {"tags": {"$contains": {"a": 1}}}}]`,
	`[{"filter": {"tags.0": "x"}}]`,
	`[{"filter": {"tags.00": "x"}}]`,
	`[{"filter": {"m.0.1": 2}}]`,
	`[{"filter": {"m.1.0": {"$exists": true}}}]`,
	`[{"filter": {"o.0": {"$exists": true}}}]`,
	`[{"filter": {"o.1": 6}}]`,
	`[{"filter": {"q\"k": 1}}]`,
	`[{"filter": {"b\\s": 2}}]`,
	`[{"filter": {"é": "ü"}}]`,
	`[{"filter": {".": 5}}]`,
	`[{"filter": {"a.b": 1}}]`,
	`[{"filter": {"author.name": "Ada"}}]`,
	`[{"filter": {"author.h": {"$gte": 2}}}]`,
	`[{"filter": {"author.name.x": {"$exists": false}}}]`,
	`[{"filter": {"big": 9007199254740993}}]`,
	`[{"filter": {"big": {"$gt": 9007199254740992}}}]`,
	`[{"filter": {"big": {"$in": [9007199254740993, 1]}}}]`,
	`[{"filter": {"$not": {"v": 1}}}]`,
	`[{"filter": {"$or": []}}]`,
	`[{"filter": {"$and": []}}, {"count": true}]`,
	`[{"filter": {"$or": [{"n": {"$gt": 2}}, {"s": "beta"}], "kind": {"$ne": "b"}}}]`,
	`[{"filter": {"s": {"$regex": "^b"}}}, {"count": true}]`,
	`[{"filter": {"n": {"$gt": 0}}}, {"filter": {"s": {"$regex": "a"}}}, {"count": true}]`,
	`[{"sort": {"field": "v"}}]`,
	`[{"sort": {"field": "v", "order": "desc"}}]`,
	`[{"sort": [{"field": "kind"}, {"field": "n", "order": "desc"}]}]`,
	`[{"sort": {"field": "s"}}, {"limit": 3}]`,
	`[{"sort": {"field": "n"}}, {"skip": 2}]`,
	`[{"sort": {"field": "big", "order": "desc"}}, {"slice": [1, 4]}]`,
	`[{"sort": {"field": "n"}}, {"sort": {"field": "kind", "order": "desc"}}]`,
	`[{"sort": {"field": "tags.0"}}]`,
	`[{"limit": 4}, {"filter": {"n": {"$gt": 0}}}]`,
	`[{"skip": 1}, {"sort": {"field": "n"}}, {"limit": 2}]`,
	`[{"slice": [1, 6]}, {"count": true}]`,
	`[{"skip": 3}, {"skip": 2}, {"limit": 10}, {"limit": 4}]`,
	`[{"limit": 0}]`,
	`[{"skip": 100}, {"count": true}]`,
	`[{"sort": {"field": "n"}}, {"limit": 5}, {"sort": {"field": "s"}}, {"filter": {"v": {"$exists": true}}}, {"limit": 3}]`,
	`[{"count": true}]`,
	`[{"group_by": {"field": "kind", "metrics": {"n": "count", "s": "sum:n", "m": "mean:n", "lo": "min:n", "hi": "max:n", "md": "median:n", "sd": "stddev:n"}}}]`,
	`[{"group_by": {"field": "kind"}}]`,
	`[{"group_by": {"field": "missing", "metrics": {"n": "count", "lo": "min:v", "hi": "max:author.h"}}}]`,
	`[{"group_by": {"field": "v", "metrics": {"t": "sum:v", "lo": "min:v"}}}]`,
	`[{"group_by": {"field": "author.name", "metrics": {"n": "count", "avg": "mean:author.h", "kind": "max:id"}}}]`,
	`[{"group_by": {"field": "tags.0", "metrics": {"n": "count", "who": "values:id"}}}]`,
	`[{"filter": {"n": {"$exists": true}}}, {"group_by": {"field": "kind", "metrics": {"n": "count", "avg": "mean:n"}}}, {"sort": {"field": "n", "order": "desc"}}, {"limit": 2}]`,
	`[{"limit": 5}, {"group_by": {"field": "s", "metrics": {"sd": "stddev:n", "md": "median:n"}}}]`,
	`[{"sort": {"field": "n"}}, {"group_by": {"field": "kind", "metrics": {"s": "sum:n"}}}]`,
	`[{"filter": {"n": {"$gt": 0}}}, {"unique": "kind"}]`,
	`[{"search": "beta"}]`,
	`[{"flatten": "tags"}, {"count": true}]`,
	`[{"filter": {"v": {"$exists": true}}}, {"select": ["id", "v"]}]`,
	// Projected: every step before the aggregate reads known fields.
	`[{"search": {"query": "a", "fields": ["s", "author"]}}, {"group_by": {"field": "kind", "metrics": {"n": "count", "who": "values:author"}}}]`,
	`[{"select": ["id", "author.name", "n"]}, {"exclude": ["id"]}, {"group_by": {"field": "author.name", "metrics": {"t": "sum:n", "ids": "values:id"}}}]`,
	`[{"flatten": "tags"}, {"unique": "tags"}, {"group_by": {"field": "tags", "metrics": {"n": "count", "vs": "values:v"}}}]`,
	`[{"sample": {"n": 5, "seed": 3}}, {"filter": {"$not": {"n": {"$regex": "^1"}}}}, {"count": true}]`,
	`[{"sort": [{"field": "n", "order": "desc"}]}, {"limit": 4}, {"group_by": {"field": "kind", "metrics": {"m": "median:n", "lo": "min:big"}}}, {"sort": {"field": "m"}}]`,
	`[{"filter": {"$or": [{"dup": {"$exists": true}}, {"o.0": 0}]}}, {"group_by": {"field": "dup", "metrics": {"n": "count", "x": "values:x"}}}]`,
	`[{"filter": {"dup.k": {"$gte": 1}}}, {"count": true}]`,
	`[{"filter": {"x": {"$exists": true}}}, {"count": true}]`,
}

// dupItems repeat keys, where Go reads the last value and SQLite the
// first, and mix in items that are not objects or hold escaped keys. Only
// projected runs are held to Run's answers on them.
var dupItems = rawItems(
	`{"dup": 1, "x": "a", "dup": 2}`,
	`{"dup": {"k": 1}, "dup": {"k": 3, "j": 1}, "x": [1, {"y": 2}]}`,
	`{"d\u0075p": "escaped", "x": "\u00e9\n"}`,
	`{"dup": null, "x": 1e400, "dup": 2, "big": 12345678901234567890}`,
	`{"x": 1, "x": {"a": [1, "b"]}, "n": 3, "kind": "a"}`,
	`["dup", 1]`,
	`"dup"`,
	`12`,
	`null`,
	`{}`,
)

// TestPipeMatchesRun is the differential test: on every item set, every
// conformance vector and every extra pipeline gives exactly what Run
// gives.
func TestPipeMatchesRun(t *testing.T) {
	s := openPipeStore(t)
	putList(t, s, "plain", plainItems)
	putList(t, s, "empty", nil)
	lists := []string{"plain", "empty"}
	for _, name := range slices.Sorted(maps.Keys(edgeLists)) {
		putList(t, s, name, edgeLists[name])
		lists = append(lists, name)
	}
	steps := slices.Concat(extraSteps, edgeSteps)
	switch items, vecs, err := pipelinetest.ReadConformance(); {
	case err == nil:
		putList(t, s, "conf", items)
		lists = append(lists, "conf")
		for _, v := range vecs {
			steps = append(steps, string(v.Steps))
		}
	case errors.Is(err, fs.ErrNotExist):
		t.Logf("%v; running the extra pipelines only", err)
	default:
		t.Fatal(err)
	}
	// Under the race detector each pipeline runs on every third list, in
	// rotation: every list and every pipeline is still checked.
	stride := 1
	if raceEnabled {
		stride = 3
	}
	checked := 0
	for i, id := range lists {
		for j, st := range steps {
			if (i+j)%stride != 0 {
				continue
			}
			samePipe(t, s, id, st)
			checked++
		}
	}
	putList(t, s, "dups", dupItems)
	projected := 0
	for _, st := range steps {
		if projects(t, st) {
			sameMode(t, s, "dups", st, pipeAuto)
			projected++
		}
	}
	if projected < 10 {
		t.Errorf("only %d pipelines were projected, want many", projected)
	}
	t.Logf("%d pipelines matched on %d lists", checked, len(lists))
}

// TestPipePushdown checks how much of each pipeline runs in SQL, so that a
// regression to streaming everything through Go fails.
func TestPipePushdown(t *testing.T) {
	s := openPipeStore(t)
	putList(t, s, "plain", plainItems)
	cases := []struct {
		steps  string
		pushed int
	}{
		{`[{"filter": {"n": {"$gt": 1}}}]`, 1},
		{`[{"filter": {"kind": {"$in": ["a", "b"]}, "n": {"$gte": 0}}}, {"sort": {"field": "n", "order": "desc"}}, {"limit": 3}]`, 3},
		{`[{"filter": {"s": {"$startswith": "b"}}}, {"count": true}]`, 2},
		{`[{"filter": {"n": {"$exists": true}}}, {"group_by": {"field": "author.name", "metrics": {"n": "count", "avg": "mean:n"}}}, {"sort": {"field": "n", "order": "desc"}}, {"limit": 2}]`, 2},
		{`[{"sort": [{"field": "s"}, {"field": "n", "order": "desc"}]}, {"skip": 1}, {"limit": 4}]`, 3},
		{`[{"slice": [1, 6]}, {"filter": {"tags": {"$contains": "x"}}}, {"count": true}]`, 3},
		{`[{"group_by": {"field": "kind", "metrics": {"lo": "min:n", "hi": "max:n", "md": "median:n", "sd": "stddev:n", "t": "sum:n"}}}]`, 1},
		{`[{"filter": {"s": {"$regex": "a"}}}, {"count": true}]`, 0},
		{`[{"filter": {"n": {"$gt": 0}}}, {"filter": {"s": {"$regex": "a"}}}, {"count": true}]`, 1},
		{`[{"group_by": {"field": "kind", "metrics": {"who": "values:id"}}}]`, 0},
		{`[{"sort": {"field": "n"}}, {"group_by": {"field": "kind"}}]`, 1},
		{`[{"filter": {"n": 1}}, {"select": ["id"]}, {"count": true}]`, 1},
		{`[{"search": "beta"}, {"count": true}]`, 0},
		// 17 significant digits in 20 characters or more still sort in SQL.
		{`[{"sort": {"field": "f", "order": "desc"}}, {"filter": {"f": {"$lt": 1}}}]`, 2},
	}
	for _, c := range cases {
		if got := samePipe(t, s, "plain", c.steps); got != c.pushed {
			t.Errorf("steps %s: %d steps ran in SQL, want %d", c.steps, got, c.pushed)
		}
	}
}

// TestPipeFallback checks that values SQLite cannot hold exactly send the
// pipeline to Go rather than give a different answer, and only when they
// matter.
func TestPipeFallback(t *testing.T) {
	s := openPipeStore(t)
	for name, items := range edgeLists {
		putList(t, s, name, items)
	}
	cases := []struct {
		list, steps string
		pushed      int
	}{
		{"bigint", `[{"sort": {"field": "n"}}]`, 0},
		{"bigint", `[{"filter": {"n": {"$gt": 1.8446744073709552e19}}}]`, 0},
		{"bigint", `[{"filter": {"n": {"$gt": 3}}}]`, 1}, // far from every value
		{"bigint", `[{"group_by": {"field": "g", "metrics": {"hi": "max:n"}}}]`, 0},
		{"bigint", `[{"group_by": {"field": "g", "metrics": {"t": "sum:n"}}}]`, 1}, // sums read the text
		{"long", `[{"filter": {"n": 1.905409544972363e10}}]`, 0},
		{"long", `[{"filter": {"n": {"$lt": 1}}}]`, 1},
		{"long", `[{"sort": {"field": "n"}}]`, 0},
		{"inf", `[{"sort": {"field": "n"}}]`, 0},
		{"inf", `[{"filter": {"n": {"$gt": 1e308}}}]`, 1},
		{"text", `[{"sort": {"field": "s"}}]`, 0},
		{"text", `[{"group_by": {"field": "s"}}]`, 0},
		{"text", `[{"filter": {"s": {"$startswith": "a"}}}]`, 1}, // prefixes need no ordering
		{"nul", `[{"sort": {"field": "s"}}]`, 0},
		{"negzero", `[{"group_by": {"field": "g", "metrics": {"lo": "min:v"}}}]`, 0},
		{"negzero", `[{"sort": {"field": "n"}}]`, 1},
		{"composite", `[{"sort": {"field": "v"}}]`, 0},
		{"composite", `[{"filter": {"v": {"$exists": true}}}, {"count": true}]`, 2},
	}
	for _, c := range cases {
		if pushed := samePipe(t, s, c.list, c.steps); pushed != c.pushed {
			t.Errorf("%s, steps %s: %d steps ran in SQL, want %d", c.list, c.steps, pushed, c.pushed)
		}
	}
}

func TestPipeErrors(t *testing.T) {
	s := openPipeStore(t)
	putList(t, s, "plain", plainItems)
	ctx := context.Background()
	p, err := pipeline.Parse(json.RawMessage(`[{"count": true}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pipe(ctx, "nope", p); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Pipe on a missing workspace: %v, want ErrNotFound", err)
	}
	ws := &store.Workspace{ID: "d", Type: "test", Shape: store.ShapeDict, Format: "json", Producer: "pipe_test"}
	if err := s.Put(ctx, ws, &store.Content{Value: json.RawMessage(`{"a": 1}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pipe(ctx, "d", p); !errors.Is(err, store.ErrWrongShape) {
		t.Errorf("Pipe on a dict: %v, want ErrWrongShape", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Pipe(cancelled, "plain", p); !errors.Is(err, context.Canceled) {
		t.Errorf("Pipe with a cancelled context: %v, want context.Canceled", err)
	}
	// A bad step is the StepError Run reports, before anything is read.
	bad := &pipeline.Pipeline{Steps: []pipeline.Step{pipeline.Filter{Cond: pipeline.FieldCond{Path: "n", Op: pipeline.OpGt, Value: 1.0}}, pipeline.Limit{N: -1}}}
	_, err = s.Pipe(ctx, "plain", bad)
	var se *pipeline.StepError
	if !errors.As(err, &se) || se.Index != 1 {
		t.Errorf("Pipe with a bad limit: %v, want a StepError for step 1", err)
	}
	if _, err := s.Pipe(ctx, "plain", nil); err == nil {
		t.Error("Pipe with a nil pipeline succeeded")
	}
}

// TestPipeHandBuilt runs pipelines built in Go, with pointer steps and
// values of Go types Parse never produces.
func TestPipeHandBuilt(t *testing.T) {
	s := openPipeStore(t)
	putList(t, s, "plain", plainItems)
	ctx := context.Background()
	for i, p := range []*pipeline.Pipeline{
		{Steps: []pipeline.Step{&pipeline.Filter{Cond: &pipeline.FieldCond{Path: "n", Op: pipeline.OpGte, Value: 1}}, &pipeline.Count{}}},
		{Steps: []pipeline.Step{pipeline.Filter{Cond: pipeline.FieldCond{Path: "big", Value: int64(9007199254740993)}}}},
		{Steps: []pipeline.Step{pipeline.Filter{Cond: &pipeline.Or{Conds: []pipeline.Cond{&pipeline.Not{Cond: pipeline.FieldCond{Path: "v", Value: uint64(1)}}}}}}},
		{Steps: []pipeline.Step{&pipeline.Sort{Keys: []pipeline.SortKey{{Path: "n", Desc: true}}}, &pipeline.Limit{N: 2}}},
		{Steps: []pipeline.Step{&pipeline.GroupBy{Path: "kind", Metrics: []pipeline.Metric{{Name: "x", Func: pipeline.MetricCount}, {Name: "x", Func: pipeline.MetricSum, Path: "n"}}}}},
		{Steps: []pipeline.Step{pipeline.Filter{Cond: pipeline.FieldCond{Path: "s", Value: "\xffbad"}}}},
	} {
		want, werr := goRun(ctx, s, "plain", p)
		got, gerr := s.Pipe(ctx, "plain", p)
		if (werr != nil) != (gerr != nil) || canon(got) != canon(want) {
			t.Errorf("pipeline %d: Pipe %s (%v), Run %s (%v)", i, canon(got), gerr, canon(want), werr)
		}
	}
}

// randomPipeline builds a pipeline of up to five steps from fields, values
// and operators that meet every type in the test items.
func randomPipeline(r *rand.Rand) string {
	paths := []string{"n", "s", "v", "arr", "kind", "tags", "tags.0", "author.name", "author.h", "big", "m.0.0", "o.0", "missing", "é"}
	values := []string{`0`, `1`, `1.5`, `-2`, `100`, `"a"`, `"beta"`, `"1"`, `""`, `true`, `false`, `null`, `9007199254740993`, `1e-7`, `"x"`, `"Ada"`, `"[1,2]"`}
	ops := []string{"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$startswith", "$exists"}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	var cond func(depth int) string
	cond = func(depth int) string {
		if depth < 2 && r.IntN(4) == 0 {
			switch r.IntN(3) {
			case 0:
				return `{"$or": [` + cond(depth+1) + `, ` + cond(depth+1) + `]}`
			case 1:
				return `{"$and": [` + cond(depth+1) + `, ` + cond(depth+1) + `]}`
			default:
				return `{"$not": ` + cond(depth+1) + `}`
			}
		}
		p, _ := json.Marshal(pick(paths))
		op := pick(ops)
		var v string
		switch op {
		case "$in", "$nin":
			v = `[` + pick(values) + `, ` + pick(values) + `]`
		case "$startswith":
			v = pick([]string{`"a"`, `"b"`, `"1"`, `""`, `"9"`})
		case "$exists":
			v = pick([]string{`true`, `false`})
		case "$contains":
			v = pick([]string{`"a"`, `"x"`, `1`, `true`, `"1"`})
		default:
			v = pick(values)
		}
		return `{` + string(p) + `: {"` + op + `": ` + v + `}}`
	}
	steps := make([]string, 0, 5)
	for n := 1 + r.IntN(5); len(steps) < n; {
		switch r.IntN(8) {
		case 0, 1, 2:
			steps = append(steps, `{"filter": `+cond(0)+`}`)
		case 3:
			p, _ := json.Marshal(pick(paths))
			steps = append(steps, `{"sort": [{"field": `+string(p)+`, "order": "`+pick([]string{"asc", "desc"})+`"}]}`)
		case 4:
			steps = append(steps, pick([]string{`{"limit": 3}`, `{"skip": 2}`, `{"slice": [1, 4]}`, `{"limit": 0}`}))
		case 5:
			p, _ := json.Marshal(pick(paths))
			m, _ := json.Marshal(pick(paths))
			steps = append(steps, `{"group_by": {"field": `+string(p)+`, "metrics": {"n": "count", "a": "mean:`+string(m[1:len(m)-1])+`", "b": "`+pick([]string{"min", "max", "sum", "median", "stddev"})+`:`+string(m[1:len(m)-1])+`"}}}`)
		case 6:
			steps = append(steps, pick([]string{`{"unique": "kind"}`, `{"select": ["id", "n"]}`, `{"flatten": "tags"}`}))
		default:
			steps = append(steps, `{"count": true}`)
			n = len(steps) // count ends a pipeline
		}
	}
	return "[" + strings.Join(steps, ", ") + "]"
}

// TestPipeRandom compares Pipe with Run on many generated pipelines.
func TestPipeRandom(t *testing.T) {
	s := openPipeStore(t)
	putList(t, s, "plain", plainItems)
	putList(t, s, "bigint", edgeLists["bigint"])
	r := rand.New(rand.NewPCG(42, 7))
	n := 1500
	if testing.Short() || raceEnabled {
		n = 300
	}
	for range n {
		steps := randomPipeline(r)
		if _, err := pipeline.Parse(json.RawMessage(steps)); err != nil {
			continue // an operator with a value it does not take
		}
		samePipe(t, s, "plain", steps)
		samePipe(t, s, "bigint", steps)
	}
}

// FuzzPipe checks Pipe against Run on pipelines the fuzzer derives from the
// extra pipelines and the generated ones.
func FuzzPipe(f *testing.F) {
	for _, st := range slices.Concat(extraSteps, edgeSteps) {
		f.Add(st)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		f.Add(randomPipeline(r))
	}
	s := openPipeStore(f)
	putList(f, s, "plain", plainItems)
	names := slices.Sorted(maps.Keys(edgeLists))
	for _, name := range names {
		putList(f, s, name, edgeLists[name])
	}
	f.Fuzz(func(t *testing.T, steps string) {
		if _, err := pipeline.Parse(json.RawMessage(steps)); err != nil {
			return
		}
		samePipe(t, s, "plain", steps)
		for _, name := range names {
			samePipe(t, s, name, steps)
		}
	})
}

// TestProjectedRowsStop reads a list of several batches through
// projectedRows, in order, and stops early and on a cancelled context
// without leaving its goroutines blocked (the race detector and the test's
// end would show them).
func TestProjectedRowsStop(t *testing.T) {
	s := openPipeStore(t)
	items := make([]json.RawMessage, 3*projectBatch+7)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i": %d, "skip": "x", "i": %d}`, -i, i))
	}
	putList(t, s, "many", items)
	// read reads the projected rows of "many" until stop items (-1: all),
	// calling after, when set, after each item.
	read := func(ctx context.Context, stop int, after func(n int)) (n int, err error) {
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		tr := &txn{ctx: ctx, tx: tx, stmts: s.rst}
		ref, err := lookup(tr, "many", store.ShapeList)
		if err != nil {
			return 0, err
		}
		for v, err := range projectedRows(tr, ref, []string{"i"}) {
			if err != nil {
				return n, err
			}
			if want := map[string]any{"i": float64(n)}; canon(v) != canon(want) {
				return n, fmt.Errorf("item %d is %s, want %s", n, canon(v), canon(want))
			}
			if n++; after != nil {
				after(n)
			}
			if n == stop {
				return n, nil
			}
		}
		return n, nil
	}
	if n, err := read(t.Context(), -1, nil); err != nil || n != len(items) {
		t.Errorf("read %d items (%v), want %d", n, err, len(items))
	}
	if n, err := read(t.Context(), projectBatch+1, nil); err != nil || n != projectBatch+1 {
		t.Errorf("stopping after %d items read %d (%v)", projectBatch+1, n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	n, err := read(ctx, -1, func(n int) {
		if n == 10 {
			cancel()
		}
	})
	cancel()
	if !errors.Is(err, context.Canceled) || n >= len(items) {
		t.Errorf("cancelled after 10 items: read %d, error %v; want context.Canceled", n, err)
	}
}

// TestProjectedRowsBatches reads lists through projectedRows whose batches
// end exactly at the list's end, whose ids have gaps (deleted items) and
// whose items hold new lines, separators and multibyte text: every item
// comes back whole, in order.
func TestProjectedRowsBatches(t *testing.T) {
	ctx := t.Context()
	s := openPipeStore(t)
	item := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf("{\n \"i\": %d,\n \"s\": \"é,\\n\u2028%d\", \"t\": [\n1, \"x\"]\n}", i, i))
	}
	makeItems := func(n int) []json.RawMessage {
		items := make([]json.RawMessage, n)
		for i := range items {
			items[i] = item(i)
		}
		return items
	}
	putList(t, s, "exact", makeItems(2*projectBatch))
	putList(t, s, "gaps", makeItems(3*projectBatch+5))
	// Delete a run longer than a batch and scattered items, leaving gaps.
	var del []int
	for i := projectBatch - 3; i < 2*projectBatch+10; i++ {
		del = append(del, i)
	}
	del = append(del, 0, 2*projectBatch+40, 3*projectBatch+4)
	if err := s.DeleteItems(ctx, "gaps", del); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendItems(ctx, "gaps", makeItems(3)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"exact", "gaps"} {
		var want []any
		for raw, err := range s.ScanItems(ctx, id) {
			if err != nil {
				t.Fatal(err)
			}
			v, err := pipeline.DecodeKeys(raw, []string{"i", "s", "t"})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		tr := &txn{ctx: ctx, tx: tx, stmts: s.rst}
		ref, err := lookup(tr, id, store.ShapeList)
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		for v, err := range projectedRows(tr, ref, []string{"i", "s", "t"}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		tx.Rollback()
		if canon(got) != canon(want) {
			t.Errorf("%s: projectedRows read %d items, ScanItems %d; they differ:\n%s\n%s", id, len(got), len(want), canon(got), canon(want))
		}
	}
}

// TestProjectedRowsTooBig reads a list whose batches exceed the longest
// string SQLite makes: readBatches takes fewer rows at a time, down to
// one item, and still reads every item in order.
func TestProjectedRowsTooBig(t *testing.T) {
	ctx := t.Context()
	s := openPipeStore(t)
	items := make([]json.RawMessage, 40)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i": %d, "pad": %q}`, i, strings.Repeat("x", 3000+i)))
	}
	putList(t, s, "big", items)
	conn, err := s.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// SQLITE_LIMIT_LENGTH: strings of at most 10,000 bytes, about 3 items.
	old, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, old)
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tr := &txn{ctx: ctx, tx: tx, stmts: s.rst}
	ref, err := lookup(tr, "big", store.ShapeList)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for v, err := range projectedRows(tr, ref, []string{"i"}) {
		if err != nil {
			t.Fatalf("item %d: %v", n, err)
		}
		if want := map[string]any{"i": float64(n)}; canon(v) != canon(want) {
			t.Fatalf("item %d is %s, want %s", n, canon(v), canon(want))
		}
		n++
	}
	if n != len(items) {
		t.Errorf("read %d items, want %d", n, len(items))
	}
}
