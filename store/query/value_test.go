package query

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

func TestDecodeNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`2024`, 2024.0},
		{`-1.5e3`, -1500.0},
		{`9007199254740992`, 9007199254740992.0}, // 2^53: exact
		{`9007199254740993`, json.Number("9007199254740993")},
		{`12345678901234567890`, json.Number("12345678901234567890")},
		{`100000000000000000000`, 1e20}, // long but exact
		{`1e400`, json.Number("1e400")},
		{`0.1`, 0.1},
	}
	for _, tt := range tests {
		got, err := Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.in, err)
			continue
		}
		if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", tt.want, tt.want) {
			t.Errorf("Decode(%s) = %T %v, want %T %v", tt.in, got, got, tt.want, tt.want)
		}
	}
	for _, bad := range []string{``, `{"a": 1} x`, `[1,]`, `{"a"}`, `nul`} {
		if v, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) = %v, want an error", bad, v)
		}
	}
	nested := mustDecode(t, `{"a": [1, {"b": 12345678901234567890}]}`)
	if _, ok := get(nested, "a.1.b").(json.Number); !ok {
		t.Errorf("nested big integer decoded as %T", get(nested, "a.1.b"))
	}
	if _, ok := get(nested, "a.0").(float64); !ok {
		t.Errorf("nested small integer decoded as %T", get(nested, "a.0"))
	}
}

// TestEqualAndHashKey checks that hashKey is consistent with equal, which
// unique, group_by and $in rely on.
func TestEqualAndHashKey(t *testing.T) {
	values := []any{
		nil, true, false, "", "1", "a", 0.0, math.Copysign(0, -1), 1.0, int64(1), 1, uint64(1), json.Number("1"), json.Number("1.0"),
		2.5, json.Number("12345678901234567890"), json.Number("12345678901234567891"), uint64(12345678901234567890),
		float64(12345678901234567890), json.Number("1e400"), []any{}, []any{1.0}, []any{json.Number("1")}, []any{"1"},
		map[string]any{}, map[string]any{"a": 1.0}, map[string]any{"a": int64(1)}, map[string]any{"a": "1"}, map[string]any{"b": 1.0},
	}
	for _, a := range values {
		for _, b := range values {
			eq := equal(a, b)
			if eq != equal(b, a) {
				t.Errorf("equal(%#v, %#v) is not symmetric", a, b)
			}
			if hk := hashKey(a) == hashKey(b); hk != eq {
				t.Errorf("equal(%#v, %#v) = %v but keys equal = %v (%#v, %#v)", a, b, eq, hk, hashKey(a), hashKey(b))
			}
		}
	}
	for _, tt := range []struct {
		a, b any
		want bool
	}{
		{1.0, int64(1), true},
		{json.Number("12345678901234567890"), uint64(12345678901234567890), true},
		{json.Number("12345678901234567890"), float64(12345678901234567890), false},
		{true, 1.0, false},
		{"1", 1.0, false},
		{nil, []any{}, false},
	} {
		if got := equal(tt.a, tt.b); got != tt.want {
			t.Errorf("equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestNumberText(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 2024, 65.1, 0.1, 1e20, 1e21, 1.5e-7, 123456789012345, 1e-6, -3.25e300} {
		want, _ := json.Marshal(f)
		if got := string(appendNumberText(nil, f)); got != string(want) {
			t.Errorf("appendNumberText(%v) = %s, want %s", f, got, want)
		}
	}
	if got := string(appendNumberText(nil, math.Inf(1))); got != "null" {
		t.Errorf("infinity reads %s", got)
	}
}
