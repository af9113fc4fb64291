package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

func apply(target, patch string) ([]byte, error) {
	p, err := Parse([]byte(patch))
	if err != nil {
		return nil, err
	}
	return p.Apply([]byte(target))
}

func TestApply(t *testing.T) {
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
		{`{"a":"foo"}`, `{"a":{"b":null}}`, `{"a":{}}`},
		// Key order, digits and escapes survive; whitespace goes.
		{`{"z":1, "y":{"x":2,"w":3}, "v":4}`, `{"y":{"x":20}}`, `{"z":1,"y":{"x":20,"w":3},"v":4}`},
		{`{"big":12345678901234567890,"f":1.50}`, `{"g":1e400}`, `{"big":12345678901234567890,"f":1.50,"g":1e400}`},
		{`{"s":"\u00e9<>&"}`, `{"t":"a\"b"}`, `{"s":"\u00e9<>&","t":"a\"b"}`},
		{`{"k<>":1}`, `{"n<>":[1, 2]}`, `{"k<>":1,"n<>":[1,2]}`},
		{`{"\u00e9":1,"x":[ 1 , {"y" : "\/"} ]}`, `{"é":2}`, `{"\u00e9":2,"x":[1,{"y":"\/"}]}`},
		{` {"a":1} `, "\t{\"b\" : 2}\n", `{"a":1,"b":2}`},
		// A repeated key keeps its first place and its last value.
		{`{"a":1,"b":2,"a":3}`, `{}`, `{"a":3,"b":2}`},
		{`{"a":1}`, `{"a":2,"a":null}`, `{}`},
	} {
		got, err := apply(tc.target, tc.patch)
		if err != nil {
			t.Errorf("Apply(%s, %s): %v", tc.target, tc.patch, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Apply(%s, %s) = %s, want %s", tc.target, tc.patch, got, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		target, patch string
		want          error
	}{
		{`[1]`, `{"a":1}`, ErrNotObject},
		{`"s"`, `{"a":1}`, ErrNotObject},
		{`null`, `{"a":1}`, ErrNotObject},
		{`{"a":1}}`, `{"a":1}`, jsonscan.ErrSyntax},
		{`{"a":1}`, `[1]`, ErrNotObject},
		{`{"a":1}`, `null`, ErrNotObject},
		{`{"a":1}`, `{"a":`, jsonscan.ErrSyntax},
		{`{"a":1}`, `{"c":3}}`, jsonscan.ErrSyntax},
		{`{"a":1}`, `{"c":3} {"d":4}`, jsonscan.ErrSyntax},
		{`{"a":1}`, ``, jsonscan.ErrSyntax},
	} {
		if got, err := apply(tc.target, tc.patch); !errors.Is(err, tc.want) {
			t.Errorf("Apply(%s, %s) = %s, %v; want an error wrapping %v", tc.target, tc.patch, got, err, tc.want)
		}
	}
}

// referenceMerge is RFC 7386's MergePatch function on decoded values.
func referenceMerge(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = referenceMerge(t[k], v)
		}
	}
	return t
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzApply checks Apply against RFC 7386's algorithm run on the decoded
// documents, and that applying a patch twice changes nothing more.
func FuzzApply(f *testing.F) {
	f.Add(`{"a":{"b":1}}`, `{"a":{"c":null,"d":[1]},"e":null}`)
	f.Add(`{}`, `{"x":{"y":{"z":null}}}`)
	f.Add(`{"a":1,"a":{"b":2}}`, `{"a":{"c":3},"a":{"d":4}}`)
	f.Add(`{"a":1}`, `{"c":3}}`)
	f.Fuzz(func(t *testing.T, target, patch string) {
		got, err := apply(target, patch)
		var tv, pv map[string]any
		validTarget := json.Unmarshal([]byte(target), &tv) == nil && tv != nil
		validPatch := json.Unmarshal([]byte(patch), &pv) == nil && pv != nil
		if (err == nil) != (validTarget && validPatch) {
			t.Fatalf("Apply(%s, %s) error %v; encoding/json reads an object target %v, patch %v", target, patch, err, validTarget, validPatch)
		}
		if err != nil {
			return
		}
		if !json.Valid(got) || !bytes.Equal(got, jsonscan.AppendCompact(nil, got, false)) {
			t.Fatalf("Apply(%s, %s) = %s: not compact JSON", target, patch, got)
		}
		gv, _ := decode(got)
		td, _ := decode([]byte(target))
		pd, _ := decode([]byte(patch))
		if want := referenceMerge(td, pd); !reflect.DeepEqual(gv, want) {
			t.Fatalf("Apply(%s, %s) = %s, RFC 7386 gives %v", target, patch, got, want)
		}
		again, err := apply(string(got), patch)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("applying %s again to %s gave %s, %v", patch, got, again, err)
		}
	})
}
