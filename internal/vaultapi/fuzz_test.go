package vaultapi

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
)

// FuzzCompileFilter: a Chroma where filter from a client compiles or is
// refused as the caller's error (400), never panics, and a compiled one
// is a pure function of the metadata.
func FuzzCompileFilter(f *testing.F) {
	for _, s := range []string{
		`{"topic": "auth"}`,
		`{"generated_by": {"$in": ["a", "b"]}}`,
		`{"n": {"$gt": 1}}`,
		`{"$or": [{"topic": "x"}, {"source": {"$ne": "a.md"}}]}`,
		`{"$and": [{"$or": [{"a": 1}]}, {"b": true}]}`,
		`{"$and": []}`,
		`{"x": {"$eq": null}}`,
		`{"x": {"$in": [1, [2]]}}`,
		`{"x": {"$nin": ["a"], "$ne": "b"}}`,
	} {
		f.Add(s)
	}
	meta := map[string]string{"topic": "auth", "source": "a.md", "a": "1", "b": "true", "chunk_index": "0"}
	f.Fuzz(func(t *testing.T, s string) {
		var where map[string]any
		if json.Unmarshal([]byte(s), &where) != nil {
			return
		}
		keep, err := compileFilter(where)
		if err != nil {
			if _, ok := err.(*badRequest); !ok {
				t.Fatalf("%s: %T %v, want a 400", s, err, err)
			}
			return
		}
		// A filter alone under $and or $or is the same filter.
		for _, op := range []string{"$and", "$or"} {
			wrapped, err := compileFilter(map[string]any{op: []any{where}})
			if err != nil {
				t.Fatalf("%s under %s: %v", s, op, err)
			}
			for _, m := range []map[string]string{meta, nil} {
				if wrapped(m) != keep(m) {
					t.Fatalf("%s under %s: %v, alone: %v", s, op, wrapped(m), keep(m))
				}
			}
		}
	})
}

// fuzzQuery has a field of each kind decodeQuery fills.
type fuzzQuery struct {
	S string  `json:"s"`
	B bool    `json:"b"`
	N int     `json:"n"`
	F float64 `json:"f"`
}

// FuzzDecodeQuery: any query string decodes or is the caller's error,
// and what decodes is the parameters' values.
func FuzzDecodeQuery(f *testing.F) {
	for _, s := range []string{"s=x&b=true&n=3&f=0.5", "b", "n=1&n=2", "x=1", "n=9999999999999999999", "f=NaN", "b=maybe", "%zz", "s=%E2%82%AC;n=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest("GET", "/v1/x", nil)
		req.URL.RawQuery = raw
		var q fuzzQuery
		if err := decodeQuery(req, &q); err != nil {
			if _, ok := err.(*badRequest); !ok {
				t.Fatalf("%q: %T %v, want a 400", raw, err, err)
			}
			return
		}
		v := req.URL.Query()
		if q.S != v.Get("s") {
			t.Fatalf("%q: s decoded as %q", raw, q.S)
		}
		if n, err := strconv.ParseInt(v.Get("n"), 10, 64); v.Has("n") && (err != nil || int(n) != q.N) {
			t.Fatalf("%q: n decoded as %d", raw, q.N)
		}
	})
}
