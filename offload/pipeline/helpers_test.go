package pipeline

import (
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"testing"
)

// items yields vs as a pipeline source.
func items(vs []any) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for _, v := range vs {
			if !yield(v, nil) {
				return
			}
		}
	}
}

// mustDecode decodes JSON text or fails the test.
func mustDecode(tb testing.TB, s string) any {
	tb.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		tb.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

// roundTrip passes v through JSON, as a tool result does, so that results
// compare in the form a model sees.
func roundTrip(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal %#v: %v", v, err)
	}
	return mustDecode(tb, string(b))
}

// diff describes how got differs from want, numbers compared with a relative
// tolerance of 1e-9; "" means they match.
func diff(got, want any, at string) string {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		if !ok {
			return fmt.Sprintf("%s: got %s, want %v", at, short(got), w)
		}
		if g == w || math.Abs(g-w) <= 1e-9*math.Max(math.Abs(g), math.Abs(w)) {
			return ""
		}
		return fmt.Sprintf("%s: got %v, want %v", at, g, w)
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an array of %d", at, short(got), len(w))
		}
		for i := range min(len(g), len(w)) {
			if d := diff(g[i], w[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: got %d elements, want %d", at, len(g), len(w))
		}
		return ""
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an object", at, short(got))
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				return fmt.Sprintf("%s: key %q missing", at, k)
			}
		}
		for _, k := range slices.Sorted(mapsKeys(g)) {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s: unexpected key %q", at, k)
			}
			if d := diff(g[k], w[k], at+"."+k); d != "" {
				return d
			}
		}
		return ""
	}
	if !equal(got, want) {
		return fmt.Sprintf("%s: got %s, want %s", at, short(got), short(want))
	}
	return ""
}

func mapsKeys(m map[string]any) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
