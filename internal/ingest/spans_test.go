package ingest

import (
	"encoding/json"
	"testing"
)

// ObjectSpans agrees with encoding/json on which documents are objects and
// on each field's value.
func FuzzObjectSpans(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a": 1, "b": [1, {"c": "d"}], "a": "last"} `, `{"k\u00e9y": null}`, `[1]`, `{"a":}`, `{"a":1,}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, ok := ObjectSpans(data)
		var want map[string]json.RawMessage
		wantOK := json.Unmarshal(data, &want) == nil && want != nil
		if ok != wantOK {
			t.Fatalf("ObjectSpans(%q) ok=%v, encoding/json ok=%v", data, ok, wantOK)
		}
		if !ok {
			return
		}
		if len(spans) != len(want) {
			t.Fatalf("%q: %d fields, want %d", data, len(spans), len(want))
		}
		for k, s := range spans {
			if string(data[s.Start:s.End]) != string(want[k]) {
				t.Fatalf("%q: field %q = %q, want %q", data, k, data[s.Start:s.End], want[k])
			}
			if els := ArraySpans(data, s); len(els) > 0 {
				var arr []json.RawMessage
				if err := json.Unmarshal(data[s.Start:s.End], &arr); err != nil || len(arr) != len(els) {
					t.Fatalf("%q: %d elements, encoding/json %d (%v)", data[s.Start:s.End], len(els), len(arr), err)
				}
			}
		}
	})
}
