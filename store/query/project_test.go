package query

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store/query/querytest"
)

func TestProjection(t *testing.T) {
	cases := []struct {
		steps []Step
		keys  []string // nil: no projection
	}{
		{[]Step{Count{}}, []string{}},
		{[]Step{Limit{N: 3}, Skip{N: 1}, Slice{Start: 0, End: 2}, Sample{N: 1, Seed: 2, Seeded: true}, Count{}}, []string{}},
		{[]Step{
			Filter{Cond: And{Conds: []Cond{FieldCond{Path: "category", Op: OpIn, Value: []any{"ml"}}, FieldCond{Path: "year", Op: OpGte, Value: 2010.0}}}},
			GroupBy{Path: "author.name", Metrics: []Metric{{Name: "avg", Func: MetricMean, Path: "score"}, {Name: "n", Func: MetricCount}}},
			Sort{Keys: []SortKey{{Path: "n"}}},
		}, []string{"author", "category", "score", "year"}},
		{[]Step{
			Filter{Cond: And{Conds: []Cond{
				And{Conds: []Cond{FieldCond{Path: "d", Op: OpEq, Value: 3.0}}},
				Or{Conds: []Cond{FieldCond{Path: "a.b", Op: OpEq, Value: 1.0}, Not{Cond: FieldCond{Path: "c", Op: OpEq, Value: 2.0}}}},
			}}},
			Count{},
		}, []string{"a", "c", "d"}},
		{[]Step{Search{Query: "x", Fields: []string{"t.u", "v"}}, Sort{Keys: []SortKey{{Path: "w"}}}, Unique{Path: "x"}, Flatten{Path: "y.0"}, Count{}},
			[]string{"t", "v", "w", "x", "y"}},
		{[]Step{Select{Paths: []string{"id", "author.name"}}, Exclude{Paths: []string{"author.h"}}, GroupBy{Path: "author.name", Metrics: []Metric{{Name: "n", Func: MetricCount}}}},
			[]string{"author", "id"}},
		{[]Step{GroupBy{Path: "g", Metrics: []Metric{{Name: "m", Func: MetricMax, Path: "s.x"}, {Name: "v", Func: MetricValues, Path: "id"}}}, Select{Paths: []string{"zzz"}}},
			[]string{"g", "id", "s"}},
		{[]Step{Search{Query: "x"}, Count{}}, nil},
		{[]Step{Filter{Cond: FieldCond{Path: "a", Op: OpEq, Value: 1.0}}}, nil},
		{[]Step{Sort{Keys: []SortKey{{Path: "a"}}}, Limit{N: 1}}, nil},
		{[]Step{}, nil},
	}
	for _, c := range cases {
		p := &Pipeline{Steps: c.steps}
		keys, ok := p.Projection()
		if ok != (c.keys != nil) || ok && !slices.Equal(keys, c.keys) {
			t.Errorf("Projection of %+v = %q, %v; want %q", c.steps, keys, ok, c.keys)
		}
	}
	// Hand-built pipelines with pointers are read through.
	p := &Pipeline{Steps: []Step{&Filter{Cond: &Not{Cond: &FieldCond{Path: "k.z", Op: OpEq}}}, &Count{}}}
	if keys, ok := p.Projection(); !ok || !slices.Equal(keys, []string{"k"}) {
		t.Errorf("Projection of pointer steps = %q, %v; want [k]", keys, ok)
	}
	p = &Pipeline{Steps: []Step{&Filter{Cond: (*FieldCond)(nil)}, &Count{}}}
	if _, ok := p.Projection(); ok {
		t.Error("Projection of a nil condition is ok, want not")
	}
}

// restrict is what DecodeKeys must give: Decode, with an object reduced to
// keys.
func restrict(raw []byte, keys []string) (any, error) {
	v, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	out := map[string]any{}
	for _, k := range keys {
		if x, ok := m[k]; ok {
			out[k] = x
		}
	}
	return out, nil
}

func checkDecodeKeys(t *testing.T, raw []byte, keys []string) {
	t.Helper()
	want, werr := restrict(raw, keys)
	got, gerr := DecodeKeys(raw, keys)
	if (werr != nil) != (gerr != nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("DecodeKeys(%q, %q) error %v, want %v", raw, keys, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeKeys(%q, %q) = %#v, want %#v", raw, keys, got, want)
	}
}

var decodeKeysSeeds = []struct {
	raw  string
	keys string
}{
	{`{"a": 1, "b": {"c": [1, 2, "x"]}, "d": "s"}`, "a,b"},
	{`{"a": 1, "a": {"x": 2}, "b": null}`, "a"},
	{`{"a": {"x": 2}, "b": true, "a": false}`, "a,b"},
	{` {"a\u0062": "\u00e9\n", "\u00e9": 12345678901234567890, "n": -0.5e-3} `, "ab,é,n"},
	{`{"k": "\xff\xfe", "\xffk": 1}`, "k,\uFFFDk"},
	{`{"big": 1e400, "x": 9007199254740993, "y": 1.0}`, "big,x,y"},
	{`{"skip": [1, {"a": [[], {}]}, "q\"\\"], "t": "ok"}`, "t"},
	{`{"a": 1} x`, "a"},
	{`{"a": 1,}`, "a"},
	{`{"a": 01}`, "a"},
	{`{"a": "` + "\x01" + `"}`, "a"},
	{`{"a": [1 2]}`, "a"},
	{`{"a": tru}`, "a"},
	{`{"a": "\x"}`, "a"},
	{`[{"a": 1}]`, "a"},
	{`"str"`, "a"},
	{`12`, ""},
	{`{}`, "a"},
	{`{"a": 1}`, ""},
	{``, "a"},
	{`{"d": ` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `, "a": 2}`, "a"},
	{`{"d": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `, "a": 2}`, "a"},
}

func splitKeys(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func TestDecodeKeys(t *testing.T) {
	for _, c := range decodeKeysSeeds {
		checkDecodeKeys(t, []byte(c.raw), splitKeys(c.keys))
	}
}

// TestProjectedRun checks the promise of Projection: the pipelines that
// have one give the same over items decoded by DecodeKeys.
func TestProjectedRun(t *testing.T) {
	raws := []string{
		`{"id": 1, "author": {"name": "Ada", "h": 3}, "score": 2.5, "tags": ["gpu", "new"], "year": 2020, "title": "Deep"}`,
		`{"id": 2, "author": {"name": "Bob"}, "score": 4, "tags": [], "year": 2011, "title": "lazy", "author": {"name": "Cy"}}`,
		`{"id": 3, "score": "x", "tags": "gpu", "year": null, "extra": {"deep": [1, 2, 3]}}`,
		`[1, 2]`, `"text"`, `null`, `7`,
		`{"id": 4, "author": {"name": "Ada", "h": 9}, "score": 12345678901234567890, "year": 2020}`,
	}
	pipes := [][]Step{
		{
			Filter{Cond: FieldCond{Path: "year", Op: OpGte, Value: 2010.0}},
			GroupBy{Path: "author.name", Metrics: []Metric{{Name: "n", Func: MetricCount}, {Name: "s", Func: MetricSum, Path: "score"}, {Name: "v", Func: MetricValues, Path: "id"}}},
		},
		{Search{Query: "gpu", Fields: []string{"tags"}}, Count{}},
		{Flatten{Path: "tags"}, GroupBy{Path: "tags", Metrics: []Metric{{Name: "m", Func: MetricMedian, Path: "score"}, {Name: "n", Func: MetricCount}}}},
		{
			Select{Paths: []string{"id", "author.name"}},
			Exclude{Paths: []string{"author.h"}},
			Unique{Path: "author.name"},
			GroupBy{Path: "author", Metrics: []Metric{{Name: "n", Func: MetricCount}}},
		},
		{
			Sort{Keys: []SortKey{{Path: "score", Desc: true}}},
			Limit{N: 3},
			GroupBy{Path: "year", Metrics: []Metric{{Name: "ids", Func: MetricValues, Path: "id"}}},
		},
		{
			Sample{N: 4, Seed: 1, Seeded: true},
			Filter{Cond: Not{Cond: FieldCond{Path: "id", Op: OpIn, Value: []any{1.0, 4.0}}}},
			Count{},
		},
	}
	var full, proj []any
	for _, steps := range pipes {
		pl := &Pipeline{Steps: steps}
		keys, ok := pl.Projection()
		if !ok {
			t.Fatalf("%+v has no projection", steps)
		}
		full, proj = full[:0], proj[:0]
		for _, r := range raws {
			full = append(full, mustDecode(t, r))
			v, err := DecodeKeys([]byte(r), keys)
			if err != nil {
				t.Fatal(err)
			}
			proj = append(proj, v)
		}
		want, werr := pl.Run(t.Context(), querytest.Source(full))
		got, gerr := pl.Run(t.Context(), querytest.Source(proj))
		if werr != nil || gerr != nil {
			t.Fatalf("%+v: errors %v, %v", steps, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v over projected items (keys %q):\n got %#v\nwant %#v", steps, keys, got, want)
		}
	}
}

func FuzzDecodeKeys(f *testing.F) {
	for _, c := range decodeKeysSeeds {
		f.Add([]byte(c.raw), c.keys)
	}
	f.Fuzz(func(t *testing.T, raw []byte, keys string) {
		checkDecodeKeys(t, raw, splitKeys(keys))
	})
}

func BenchmarkDecodeKeys(b *testing.B) {
	raw := []byte(`{"id":17,"title":"fast robust lazy deep","body":"tiny queues graphs caches parsers models systems learning storage networks proofs compilers fast robust lazy deep tiny queues graphs caches parsers models systems learning storage networks proofs compilers fast robust lazy deep tiny queues graphs","category":"ml","score":42.125,"year":2015,"tags":["gpu","beta"],"author":{"name":"Author 042","h":17}}`)
	keys := []string{"author", "category", "score", "year"}
	b.Run("keys", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeKeys(raw, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
