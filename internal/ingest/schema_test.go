package ingest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func rawItems(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

func TestInferSchema(t *testing.T) {
	tests := []struct {
		name  string
		items []string
		want  string
	}{
		{"none", nil, `{}`},
		{"invalid items are skipped", []string{`{`, `nope`}, `{}`},
		{"strings", []string{`"a"`, `"b"`}, `{"type":"string"}`},
		{"integers", []string{`1`, `-2`}, `{"type":"integer"}`},
		{"integer and number fold", []string{`1`, `2.5`, `1e3`}, `{"type":"number"}`},
		{"nullable", []string{`"a"`, `null`}, `{"type":["string","null"]}`},
		{"mixed", []string{`true`, `"a"`, `3`}, `{"type":["string","integer","boolean"]}`},
		{"required and optional, in first-seen order",
			[]string{`{"b":1,"a":"x"}`, `{"a":"y","c":null,"b":2}`},
			`{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"},"c":{"type":"null"}},"required":["b","a"]}`},
		{"nested objects",
			[]string{`{"author":{"name":"a","id":1}}`, `{"author":{"name":"b"}}`},
			`{"type":"object","properties":{"author":{"type":"object","properties":{"name":{"type":"string"},"id":{"type":"integer"}},"required":["name"]}},"required":["author"]}`},
		{"nullable object",
			[]string{`{"m":{"x":1}}`, `{"m":null}`},
			`{"type":"object","properties":{"m":{"type":["object","null"],"properties":{"x":{"type":"integer"}},"required":["x"]}},"required":["m"]}`},
		{"arrays merge their elements",
			[]string{`{"tags":["a",1]}`, `{"tags":[]}`, `{"tags":[{"k":true},{"k":false,"j":1}]}`},
			`{"type":"object","properties":{"tags":{"type":"array","items":{"type":["object","string","integer"],"properties":{"k":{"type":"boolean"},"j":{"type":"integer"}},"required":["k"]}}},"required":["tags"]}`},
		{"empty array", []string{`[]`}, `{"type":"array"}`},
		{"empty object", []string{`{}`}, `{"type":"object"}`},
		{"duplicate keys count once", []string{`{"a":1,"a":2}`, `{"b":1}`},
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`},
		{"escaped keys", []string{`{"a\"b":1,"\u00e9":2}`}, `{"type":"object","properties":{"a\"b":{"type":"integer"},"é":{"type":"integer"}},"required":["a\"b","é"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(InferSchema(rawItems(tt.items...)))
			if got != tt.want {
				t.Errorf("InferSchema(%s)\n got %s\nwant %s", tt.items, got, tt.want)
			}
		})
	}
}

func TestInferSchemaSamplesFirstItems(t *testing.T) {
	items := make([]string, 0, SchemaSample+1)
	for range SchemaSample {
		items = append(items, `{"a":1}`)
	}
	items = append(items, `{"b":"late"}`)
	if got, want := string(InferSchema(rawItems(items...))), `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`; got != want {
		t.Errorf("item %d was sampled: %s", SchemaSample+1, got)
	}
}

func TestInferSchemaMapLike(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range schemaMaxProps + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		if i == 7 {
			fmt.Fprintf(&b, `"k%d":null`, i)
			continue
		}
		fmt.Fprintf(&b, `"k%d":{"n":%d}`, i, i)
	}
	b.WriteString("}")
	got := string(InferValueSchema(json.RawMessage(b.String())))
	want := `{"type":"object","additionalProperties":{"type":["object","null"],"properties":{"n":{"type":"integer"}},"required":["n"]}}`
	if got != want {
		t.Errorf("map-like object:\n got %s\nwant %s", got, want)
	}
}

func TestInferSchemaBounds(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	s := InferValueSchema(json.RawMessage(deep))
	if n := strings.Count(string(s), `"properties"`); n != schemaMaxDepth {
		t.Errorf("deep value: %d levels of properties, want %d", n, schemaMaxDepth)
	}

	// Many distinct keys spread over objects stop at the node bound.
	var items []string
	for i := range SchemaSample {
		var b strings.Builder
		b.WriteString("{")
		for j := range 150 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d_%d":%d`, i, j, j)
		}
		b.WriteString("}")
		items = append(items, b.String())
	}
	s = InferSchema(rawItems(items...))
	if !json.Valid(s) {
		t.Fatalf("invalid schema")
	}
	// The first object's 150 keys fit; the second's push the root past
	// schemaMaxProps, so it turns into a map of integers.
	if want := `{"type":"object","additionalProperties":{"type":"integer"}}`; string(s) != want {
		t.Errorf("got %.200s, want %s", s, want)
	}

	nested := make([]string, 0, 20)
	for i := range 20 {
		var b strings.Builder
		fmt.Fprintf(&b, `{"o%d":{`, i)
		for j := range 150 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":%d`, j, j)
		}
		b.WriteString("}}")
		nested = append(nested, b.String())
	}
	s = InferSchema(rawItems(nested...))
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		t.Fatal(err)
	}
	// Every node but the root and the objects o0…o13 is an integer key:
	// o0…o12 get all 150 keys, o13 the 35 that fit in the budget.
	if n := strings.Count(string(s), `"type":"integer"`); n != schemaMaxNodes-1-14 {
		t.Errorf("%d integer properties, want %d", n, schemaMaxNodes-1-14)
	}
}

// TestInferSchemaIsValidSchema checks the output is a JSON Schema the
// jsonschema package accepts and that the sampled items satisfy it.
func TestInferSchemaIsValidSchema(t *testing.T) {
	items := rawItems(
		`{"id":1,"name":"a","tags":["x"],"author":{"login":"u","site":null},"score":1.5}`,
		`{"id":2,"name":null,"tags":[],"author":null}`,
		`{"id":3,"name":"c","tags":["y",2],"author":{"login":"v","site":"https://x"},"extra":{}}`,
	)
	raw := InferSchema(items)
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema %s: %v", raw, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", raw, err)
	}
	for i, it := range items {
		var v any
		if err := json.Unmarshal(it, &v); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(v); err != nil {
			t.Errorf("item %d does not satisfy %s: %v", i, raw, err)
		}
	}
	var bad any
	_ = json.Unmarshal([]byte(`{"id":"one","name":"a","tags":[],"author":null}`), &bad)
	if rs.Validate(bad) == nil {
		t.Errorf("an item with a string id satisfies %s", raw)
	}
}

func TestFields(t *testing.T) {
	schema := InferSchema(rawItems(
		`{"id":1,"title":"t","author":{"name":"a","email":null,"org":{"id":1}},"labels":[{"n":"x"}],"tags":["a"],"meta":null}`,
		`{"id":2,"title":"u","author":{"name":"b","email":"e","org":{"id":2}},"labels":[],"tags":["b",1],"meta":{"k":1}}`,
	))
	tests := []struct {
		max     int
		want    string
		omitted int
	}{
		{0, "id:integer title:string author.name:string author.email:string|null author.org.id:integer labels:array<object> tags:array<string|integer> meta:object|null meta.k:integer", 0},
		// Top-level fields are kept first, then the shallowest nested ones.
		{6, "id:integer title:string author.name:string labels:array<object> tags:array<string|integer> meta:object|null", 3},
		{5, "id:integer title:string labels:array<object> tags:array<string|integer> meta:object|null", 4},
		{1, "id:integer", 8},
	}
	for _, tt := range tests {
		fields, omitted := Fields(schema, tt.max)
		var parts []string
		for _, f := range fields {
			parts = append(parts, f.Path+":"+f.Type)
		}
		if got := strings.Join(parts, " "); got != tt.want || omitted != tt.omitted {
			t.Errorf("Fields(max %d) =\n %s (omitted %d)\nwant\n %s (omitted %d)", tt.max, got, omitted, tt.want, tt.omitted)
		}
	}
}

func TestFieldsOtherSchemas(t *testing.T) {
	tests := []struct {
		schema string
		want   string
	}{
		{`{"type":"string"}`, ":string"},
		{`{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`, ":array<array<integer>>"},
		{`{"type":"array"}`, ":array"},
		{`{}`, ""},
		{`not json`, ""},
		{`{"type":["object","string"],"properties":{"a":{"type":"integer"}}}`, ":object|string a:integer"},
		{`{"type":"object","additionalProperties":{"type":"object","properties":{"n":{"type":"string"}}}}`, "*.n:string"},
		{`{"type":"object","properties":{"a":{"type":"object"}}}`, "a:object"},
		{`{"properties":{"z":{"type":"null"},"a":true}}`, "z:null"},
	}
	for _, tt := range tests {
		fields, _ := Fields(json.RawMessage(tt.schema), 0)
		var parts []string
		for _, f := range fields {
			parts = append(parts, f.Path+":"+f.Type)
		}
		if got := strings.Join(parts, " "); got != tt.want {
			t.Errorf("Fields(%s) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}
