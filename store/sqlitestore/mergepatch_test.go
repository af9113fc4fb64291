package sqlitestore

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMergePatch(t *testing.T) {
	for _, tc := range []struct{ target, patch, want string }{
		// RFC 7386, appendix A, the cases with object targets and patches.
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		// Key order, digits and escapes survive; whitespace goes.
		{`{"z":1, "y":{"x":2,"w":3}, "v":4}`, `{"y":{"x":20}}`, `{"z":1,"y":{"x":20,"w":3},"v":4}`},
		{`{"big":12345678901234567890,"f":1.50}`, `{"g":1e400}`, `{"big":12345678901234567890,"f":1.50,"g":1e400}`},
		{`{"s":"\u00e9<>&"}`, `{"t":"a\"b"}`, `{"s":"\u00e9<>&","t":"a\"b"}`},
		{`{"k<>":1}`, `{"n<>":[1, 2]}`, `{"k<>":1,"n<>":[1,2]}`},
		// A repeated key keeps its first place and last value.
		{`{"a":1,"b":2,"a":3}`, `{}`, `{"a":3,"b":2}`},
	} {
		got, err := mergePatch([]byte(tc.target), []byte(tc.patch))
		if err != nil {
			t.Errorf("mergePatch(%s, %s): %v", tc.target, tc.patch, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("mergePatch(%s, %s) = %s, want %s", tc.target, tc.patch, got, tc.want)
		}
	}
}

func TestMergePatchErrors(t *testing.T) {
	for _, tc := range []struct{ target, patch string }{
		{`[1]`, `{"a":1}`},
		{`"s"`, `{"a":1}`},
		{`null`, `{"a":1}`},
		{`{"a":1}`, `[1]`},
		{`{"a":1}`, `{"a":`},
		{`{"a":1}`, ``},
	} {
		if got, err := mergePatch([]byte(tc.target), []byte(tc.patch)); err == nil {
			t.Errorf("mergePatch(%s, %s) = %s, want an error", tc.target, tc.patch, got)
		}
	}
}

// FuzzMergePatch checks that a merge patch of two objects yields an object
// that carries every non-null patch value and that applying the patch again
// changes nothing.
func FuzzMergePatch(f *testing.F) {
	f.Add(`{"a":{"b":1}}`, `{"a":{"c":null,"d":[1]},"e":null}`)
	f.Add(`{}`, `{"x":{"y":{"z":null}}}`)
	f.Fuzz(func(t *testing.T, target, patch string) {
		got, err := mergePatch([]byte(target), []byte(patch))
		if err != nil {
			return
		}
		var out map[string]any
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("mergePatch(%s, %s) = %s: not an object: %v", target, patch, got, err)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(patch), &p); err != nil {
			t.Fatalf("patch %s accepted but not an object: %v", patch, err)
		}
		for k, v := range p {
			if _, isObj := v.(map[string]any); v == nil || isObj {
				continue
			}
			if !reflect.DeepEqual(out[k], v) {
				t.Errorf("mergePatch(%s, %s)[%q] = %v, want %v", target, patch, k, out[k], v)
			}
		}
		again, err := mergePatch(got, []byte(patch))
		if err != nil {
			t.Fatalf("second mergePatch: %v", err)
		}
		var out2 map[string]any
		if err := json.Unmarshal(again, &out2); err != nil || !reflect.DeepEqual(out, out2) {
			t.Errorf("patch not idempotent: %s then %s", got, again)
		}
	})
}
