package vaultapi

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
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

// FuzzDecodeBody: any request body decodes into a CtxVault model or is a
// 422 whose items each name a location, never a panic; what decodes
// holds the model's bounds and its required fields.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"vault_name": "m", "query": "x", "limit": 5, "order_by": "composite", "weights": {"recency": 2}}`,
		`{"vault_name": "m", "limit": 0, "half_life_days": -1, "order_by": "size", "entities": ["a", 1]}`,
		`{"vault_name": "m", "limit": "7", "include_closed": "yes", "min_confidence": "0.5"}`,
		`{"vault_name": null}`, `[]`, `"x"`, ``, `{`, `{"a": 1} {}`, `{"limit": 1e400}`, `{"limit": 2.0}`, `{"limit": -9223372036854775809}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		req := httptest.NewRequest("POST", "/ctxvault/episodes/query", strings.NewReader(s))
		var m compatQueryEpisodesRequest
		err := decodeBody(req, &m)
		if err != nil {
			ve, ok := err.(*validationError)
			if !ok || len(ve.items) == 0 {
				t.Fatalf("%q: %T %v, want a 422", s, err, err)
			}
			for _, it := range ve.items {
				if len(it.Loc) == 0 || it.Loc[0] != "body" || it.Type == "" || it.Msg == "" {
					t.Fatalf("%q: item %+v", s, it)
				}
				if _, err := json.Marshal(it); err != nil {
					t.Fatalf("%q: item %+v does not encode: %v", s, it, err)
				}
			}
			return
		}
		var raw map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &raw) != nil || raw["vault_name"] == nil {
			t.Fatalf("%q decoded without vault_name: %+v", s, m)
		}
		if m.Limit != nil && (*m.Limit < 1 || *m.Limit > 200) || m.HalfLifeDays != nil && *m.HalfLifeDays <= 0 {
			t.Fatalf("%q: out of bounds: %+v", s, m)
		}
		if m.OrderBy != nil && !slices.Contains([]string{"relevance", "recency", "salience", "composite"}, *m.OrderBy) {
			t.Fatalf("%q: order_by %q", s, *m.OrderBy)
		}
	})
}

// FuzzDecodeParams: any query string decodes into a CtxVault model of
// parameters or is a 422 naming the parameter.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{"vault_name=m&all=true&min_episodes=2&min_confidence=0.5", "all=maybe", "vault_name=a&vault_name=b", "min_episodes=x", "%zz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest("GET", "/ctxvault/episodes/entities", nil)
		req.URL.RawQuery = raw
		var q compatEntitiesParams
		if err := decodeParams(req, &q); err != nil {
			ve, ok := err.(*validationError)
			if !ok || len(ve.items) == 0 || ve.items[0].Loc[0] != "query" {
				t.Fatalf("%q: %T %v, want a 422 about the query", raw, err, err)
			}
			return
		}
		if vs := req.URL.Query()["vault_name"]; len(vs) == 0 || q.VaultName != vs[len(vs)-1] {
			t.Fatalf("%q: vault_name %q", raw, q.VaultName)
		}
	})
}
