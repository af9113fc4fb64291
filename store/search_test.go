package store

import (
	"encoding/json"
	"testing"
)

func TestSearchableText(t *testing.T) {
	item := json.RawMessage(`{"b":"second","a":{"name":"Ada","h":12},"tags":["x","y"],"ok":true,"none":null}`)
	tests := []struct {
		fields []string
		want   string
	}{
		{nil, "second\nAda\n12\nx\ny\ntrue\n"}, // document order
		{[]string{"a.name"}, "Ada\n"},
		{[]string{"tags", "b"}, "x\ny\nsecond\n"},
		{[]string{"missing"}, ""},
	}
	for _, tt := range tests {
		if got := SearchableText(item, tt.fields); got != tt.want {
			t.Errorf("SearchableText(%v) = %q, want %q", tt.fields, got, tt.want)
		}
	}
	if got := SearchableText(json.RawMessage(`{not json`), nil); got != "" {
		t.Errorf("invalid JSON gave %q", got)
	}
	// A repeated key counts with its last value only, with fields or not.
	dup := json.RawMessage(`{"k":"first","o":{"k":1,"k":2},"k":"last"}`)
	for _, tt := range []struct {
		fields []string
		want   string
	}{
		{nil, "2\nlast\n"},
		{[]string{"k"}, "last\n"},
		{[]string{"o"}, "2\n"},
	} {
		if got := SearchableText(dup, tt.fields); got != tt.want {
			t.Errorf("SearchableText(%s, %v) = %q, want %q", dup, tt.fields, got, tt.want)
		}
	}
}

func TestLookup(t *testing.T) {
	var v any
	_ = json.Unmarshal([]byte(`{"a":{"b":[{"c":1},{"c":2}]},"x.y":"literal","x":{"y":"nested"}}`), &v)
	tests := []struct {
		path string
		want any
		ok   bool
	}{
		{"a.b.1.c", float64(2), true},
		{"a.b.2.c", nil, false},
		{"a.b.-1", nil, false},
		{"x.y", "literal", true}, // a literal dotted key wins
		{"a.z", nil, false},
		{"a.b.0.c.d", nil, false},
	}
	for _, tt := range tests {
		got, ok := Lookup(v, tt.path)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzSearchableText(f *testing.F) {
	f.Add(`{"a":[1,"x",{"b":null}]}`, "a.2.b")
	f.Add(`[]`, "")
	f.Fuzz(func(t *testing.T, item, field string) {
		_ = SearchableText(json.RawMessage(item), []string{field})
	})
}
