package query

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/store/query/querytest"
)

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

func testData(tb testing.TB) []any {
	tb.Helper()
	return mustDecode(tb, querytest.Sample).([]any)
}
