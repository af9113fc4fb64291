package pipeline

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestProjection(t *testing.T) {
	cases := []struct {
		steps string
		keys  []string // nil: no projection
	}{
		{`[{"count": true}]`, []string{}},
		{`[{"limit": 3}, {"skip": 1}, {"slice": [0, 2]}, {"sample": {"n": 1, "seed": 2}}, {"count": true}]`, []string{}},
		{`[{"filter": {"year": {"$gte": 2010}, "category": {"$in": ["ml"]}}}, {"group_by": {"field": "author.name", "metrics": {"n": "count", "avg": "mean:score"}}}, {"sort": {"field": "n"}}]`,
			[]string{"author", "category", "score", "year"}},
		{`[{"filter": {"$or": [{"a.b": 1}, {"$not": {"c": 2}}], "$and": [{"d": 3}]}}, {"count": true}]`, []string{"a", "c", "d"}},
		{`[{"search": {"query": "x", "fields": ["t.u", "v"]}}, {"sort": ["w"]}, {"unique": "x"}, {"flatten": "y.0"}, {"count": true}]`,
			[]string{"t", "v", "w", "x", "y"}},
		{`[{"select": ["id", "author.name"]}, {"exclude": ["author.h"]}, {"group_by": {"field": "author.name", "metrics": {"n": "count"}}}]`, []string{"author", "id"}},
		{`[{"group_by": {"field": "g", "metrics": {"v": "values:id", "m": "max:s.x"}}}, {"select": ["zzz"]}]`, []string{"g", "id", "s"}},
		{`[{"search": "x"}, {"count": true}]`, nil},
		{`[{"filter": {"a": 1}}]`, nil},
		{`[{"sort": ["a"]}, {"limit": 1}]`, nil},
		{`[]`, nil},
	}
	for _, c := range cases {
		p, err := Parse(json.RawMessage(c.steps))
		if err != nil {
			t.Fatalf("Parse(%s): %v", c.steps, err)
		}
		keys, ok := p.Projection()
		if ok != (c.keys != nil) || ok && !slices.Equal(keys, c.keys) {
			t.Errorf("Projection of %s = %q, %v; want %q", c.steps, keys, ok, c.keys)
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
	pipes := []string{
		`[{"filter": {"year": {"$gte": 2010}}}, {"group_by": {"field": "author.name", "metrics": {"n": "count", "s": "sum:score", "v": "values:id"}}}]`,
		`[{"search": {"query": "gpu", "fields": ["tags"]}}, {"count": true}]`,
		`[{"flatten": "tags"}, {"group_by": {"field": "tags", "metrics": {"n": "count", "m": "median:score"}}}]`,
		`[{"select": ["id", "author.name"]}, {"exclude": ["author.h"]}, {"unique": "author.name"}, {"group_by": {"field": "author", "metrics": {"n": "count"}}}]`,
		`[{"sort": [{"field": "score", "order": "desc"}]}, {"limit": 3}, {"group_by": {"field": "year", "metrics": {"ids": "values:id"}}}]`,
		`[{"sample": {"n": 4, "seed": 1}}, {"filter": {"$not": {"id": {"$in": [1, 4]}}}}, {"count": true}]`,
	}
	var full, proj []any
	for _, p := range pipes {
		pl, err := Parse(json.RawMessage(p))
		if err != nil {
			t.Fatal(err)
		}
		keys, ok := pl.Projection()
		if !ok {
			t.Fatalf("%s has no projection", p)
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
		want, werr := pl.Run(t.Context(), items(full))
		got, gerr := pl.Run(t.Context(), items(proj))
		if werr != nil || gerr != nil {
			t.Fatalf("%s: errors %v, %v", p, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s over projected items (keys %q):\n got %#v\nwant %#v", p, keys, got, want)
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
