package sqlitestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

func TestAppendScalars(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{`"plain"`, "plain\n"},
		{`  42 `, "42\n"},
		{`-0.5e+10`, "-0.5e+10\n"},
		{`true`, "true\n"},
		{`null`, ""},
		{`[]`, ""},
		{`{}`, ""},
		{`{"key":"value","n":1,"b":false,"z":null}`, "value\n1\nfalse\n"},
		{`{"a":{"b":["x",{"c":"y"}]},"d":[1,[2,[3]]]}`, "x\ny\n1\n2\n3\n"},
		{`"esc \" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00"`, "esc \" \\ / \b\f\n\r\t é 😀\n"},
		{`"lone \ud800 surrogate \udc00 x"`, "lone \ufffd surrogate \ufffd x\n"},
		{`"high then other \ud800\u0041"`, "high then other \ufffdA\n"},
		{"\"invalid \xff utf8\"", "invalid \ufffd utf8\n"},
		{`"日本語"`, "日本語\n"},
	} {
		got, err := appendScalars(nil, []byte(tc.in), true)
		if err != nil {
			t.Errorf("appendScalars(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("appendScalars(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAppendScalarsInvalid(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`,
		`"unterminated`, "\"tab\tinside\"", `"bad \x escape"`, `"\u12"`, `tru`, `nul`, `[1 2]`,
		`{} {}`, `1 2`, `NaN`, `Infinity`, `'single'`,
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	} {
		if _, err := appendScalars(nil, []byte(in), true); !errors.Is(err, errSyntax) {
			t.Errorf("appendScalars(%.40q) = %v, want a syntax error", in, err)
		}
	}
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if err := validJSON([]byte(deep)); err != nil {
		t.Errorf("validJSON at the depth limit: %v", err)
	}
}

func TestIsJSONObject(t *testing.T) {
	for in, want := range map[string]bool{
		`{}`: true, ` {"a":1} `: true, `[]`: false, `"x"`: false, `{`: false, ``: false, `null`: false,
	} {
		if got := isJSONObject([]byte(in)); got != want {
			t.Errorf("isJSONObject(%q) = %v", in, got)
		}
	}
	for in, want := range map[string]int{
		`{}`: 0, `{"a":1}`: 1, `{"a":{"b":1,"c":2},"d":[{"e":3}],"f":"g:h"}`: 3, `{"k\":":1,"x":2}`: 2,
	} {
		if got := topLevelMembers([]byte(in)); got != want {
			t.Errorf("topLevelMembers(%s) = %d, want %d", in, got, want)
		}
	}
}

// lines splits scalar text into its sorted lines.
func lines(s string) []string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return l
}

// hasDuplicateKeys reports whether some object in valid JSON repeats a key;
// encoding/json keeps only the last value of such a key.
func hasDuplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys     map[string]bool
		isObject bool
		wantKey  bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := func() *frame {
			if len(stack) == 0 {
				return nil
			}
			return stack[len(stack)-1]
		}
		f := top()
		if f != nil && f.isObject && f.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if p := top(); p != nil && p.isObject {
					p.wantKey = true
				}
				continue
			}
			key := tok.(string)
			if f.keys[key] {
				return true
			}
			f.keys[key] = true
			f.wantKey = false
			continue
		}
		switch d := tok.(type) {
		case json.Delim:
			switch d {
			case '{':
				stack = append(stack, &frame{keys: map[string]bool{}, isObject: true, wantKey: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		}
		if p := top(); p != nil && p.isObject {
			p.wantKey = true
		}
	}
}

// FuzzAppendScalars checks the scanner against encoding/json: it accepts
// exactly what json.Valid accepts, and extracts the lines of
// store.SearchableText (in another order).
func FuzzAppendScalars(f *testing.F) {
	for _, s := range []string{`{"a":"b","c":[1,2,{"d":true}]}`, `"x"`, `[null,-1.5e3]`, `{"a":"\u00e9\ud83d\ude00"}`,
		`{"a":1,"a":2}`, "\"\xff\"", `[`, `{"":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := appendScalars(nil, in, true)
		if valid := json.Valid(in); valid != (err == nil) {
			t.Fatalf("appendScalars(%q) error %v, json.Valid %v", in, err, valid)
		}
		if err != nil || hasDuplicateKeys(in) {
			return
		}
		want := store.SearchableText(in, nil)
		if !slices.Equal(lines(string(got)), lines(want)) {
			t.Errorf("appendScalars(%q) = %q, SearchableText %q", in, got, want)
		}
	})
}
