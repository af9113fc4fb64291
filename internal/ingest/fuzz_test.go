package ingest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// addDetectSeeds adds every detection input under testdata/detect.
func addDetectSeeds(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/detect/*")
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzParse checks that Parse never panics, keeps the input as Raw, and
// makes well-formed content: items and dict values are compact, valid JSON
// in valid UTF-8; text is valid UTF-8; the counts match.
func FuzzParse(f *testing.F) {
	addDetectSeeds(f)
	f.Add([]byte(`[{"a": [1, {"b": null}]}, "x\u0000", -0.5e+3]`))
	f.Add([]byte("\"[\\\"a\\\", 1]\""))
	f.Add([]byte("a;b;c\n1;2;3\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		in := bytes.Clone(raw)
		res, err := Parse(raw)
		if err != nil {
			t.Fatalf("Parse without limits failed: %v", err)
		}
		if !bytes.Equal(raw, in) {
			t.Fatalf("Parse modified its input")
		}
		checkResult(t, raw, res)
		if res.Content.Items != nil {
			out, err := json.Marshal(res.Content.Items)
			if err != nil || !json.Valid(out) {
				t.Fatalf("items do not marshal to valid JSON: %v", err)
			}
		}

		limited, err := ParseOptions{MaxItems: 2}.Parse(raw)
		switch {
		case err != nil && res.Items <= 2 && res.Shape == "list":
			t.Fatalf("MaxItems 2 rejected a list of %d: %v", res.Items, err)
		case err == nil && res.Shape == "list" && res.Items > 2:
			t.Fatalf("MaxItems 2 accepted a list of %d", res.Items)
		case err == nil && (limited.Shape != res.Shape || limited.Format != res.Format):
			t.Fatalf("limits changed detection: %s/%s vs %s/%s", limited.Shape, limited.Format, res.Shape, res.Format)
		}
	})
}

// FuzzInferSchema checks that InferSchema never panics, returns valid JSON
// that jsonschema accepts, that every sampled item satisfies it, and that
// Fields can read it.
func FuzzInferSchema(f *testing.F) {
	f.Add([]byte("{\"a\":1,\"b\":[1,\"x\"]}\n{\"a\":null,\"c\":{\"d\":true}}"))
	f.Add([]byte("1\n\"s\"\n[]\n{}"))
	f.Add([]byte("{\"a\":1,\"a\":\"dup\"}\n{\"\\u00e9\":[[[]]]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var items []json.RawMessage
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			items = append(items, line)
		}
		raw := InferSchema(items)
		if !json.Valid(raw) {
			t.Fatalf("InferSchema gave invalid JSON %q", raw)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("schema %s: %v", raw, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("resolve %s: %v", raw, err)
		}
		for _, it := range items[:min(len(items), SchemaSample)] {
			var v any
			if json.Unmarshal(it, &v) != nil {
				continue // invalid, or a number a float64 cannot hold
			}
			if err := rs.Validate(v); err != nil {
				t.Fatalf("item %s does not satisfy %s: %v", it, raw, err)
			}
		}
		fields, omitted := Fields(raw, 5)
		if len(fields) > 5 || omitted < 0 {
			t.Fatalf("Fields(max 5) returned %d, omitted %d", len(fields), omitted)
		}
	})
}
