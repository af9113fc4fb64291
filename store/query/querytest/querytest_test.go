package querytest

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name      string
		got, want any
		mismatch  string // "" when they must match, else a fragment of the report
	}{
		{"same", map[string]any{"a": []any{1.0, "x", nil, true}}, map[string]any{"a": []any{1.0, "x", nil, true}}, ""},
		{"within tolerance", 0.30000000000000004, 0.3, ""},
		{"beyond tolerance", 0.3001, 0.3, "got 0.3001"},
		{"big integer", json.Number("9007199254740993"), json.Number("9007199254740993"), ""},
		{"big integer by value", json.Number("9007199254740993"), json.Number("9.007199254740993e15"), ""},
		{"big integer off by one", json.Number("9007199254740993"), json.Number("9007199254740995"), "9007199254740993"},
		{"number not string", "1", 1.0, `got "1"`},
		{"bool not number", true, json.Number("1"), "got true"},
		{"null not zero", nil, 0.0, "got null"},
		{"missing key", map[string]any{}, map[string]any{"a": 1.0}, `key "a" missing`},
		{"extra key", map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"a": 1.0}, `unexpected key "b"`},
		{"nested", map[string]any{"a": []any{1.0, 2.0}}, map[string]any{"a": []any{1.0, 3.0}}, "result.a[1]"},
		{"shorter", []any{1.0}, []any{1.0, 2.0}, "got 1 elements, want 2"},
		{"array not object", []any{}, map[string]any{}, "want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Diff(tt.got, tt.want)
			if tt.mismatch == "" && d != "" {
				t.Errorf("Diff = %q, want a match", d)
			}
			if tt.mismatch != "" && !strings.Contains(d, tt.mismatch) {
				t.Errorf("Diff = %q, want a report containing %q", d, tt.mismatch)
			}
		})
	}
}

func TestReadConformance(t *testing.T) {
	items, cases := LoadConformance(t)
	if len(items) == 0 || len(cases) == 0 {
		t.Fatalf("%d items and %d cases, want some of each", len(items), len(cases))
	}
	for _, c := range cases {
		if !json.Valid(c.Steps) || !json.Valid(c.Expected) || c.Line < 2 {
			t.Fatalf("case at line %d: steps %q, expected %q", c.Line, c.Steps, c.Expected)
		}
	}
}
