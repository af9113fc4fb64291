package query

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/store/query/querytest"
)

// FuzzDecode checks Decode against encoding/json and against the slow
// path that keeps every number's text, and that decoded values survive a
// round trip through JSON.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, -0, 1e400, 12345678901234567890]}`, `"x"`, `null`, `[1] 2`, `{"a":`, querytest.Sample} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		var std any
		stdErr := json.Unmarshal(data, &std)
		if err != nil {
			if stdErr == nil {
				t.Fatalf("Decode rejects %q, which encoding/json accepts: %v", data, err)
			}
			return
		}
		slow, err := decodeNumbers(data)
		if err != nil || !equal(v, slow) {
			t.Fatalf("Decode(%q) = %v, but decodeNumbers gives %v, %v", data, v, slow, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("decoded %q cannot be marshalled: %v", data, err)
		}
		again, err := Decode(b)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		if !equal(v, again) {
			t.Fatalf("round trip of %q changed it: %s", data, b)
		}
	})
}
