package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidate(t *testing.T) {
	valid := []string{
		`0`, `-0.5e+10`, `1E3`, ` true `, `false`, `null`, `""`, `"\u00e9\ud83d\ude00\/"`, `[]`, `{}`,
		`[1, {"a": [null, "x"]}]`, "\"\xff\"", `{"a":1,"a":2}`, "\t{\"k\" :\n 1 }\r\n",
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	}
	invalid := []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`,
		`"unterminated`, "\"tab\tinside\"", `"bad \x escape"`, `"\u12"`, `tru`, `nul`, `[1 2]`,
		`{} {}`, `1 2`, `NaN`, `Infinity`, `'single'`, `[1]]`, `{"a":1}}`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
		`[` + strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat("}", MaxDepth) + `]`,
	}
	for _, in := range valid {
		if err := Validate([]byte(in)); err != nil || !Valid([]byte(in)) {
			t.Errorf("Validate(%.40q) = %v, Valid = %v; want valid", in, err, Valid([]byte(in)))
		}
		if !json.Valid([]byte(in)) {
			t.Errorf("test case %.40q is not valid for encoding/json", in)
		}
	}
	for _, in := range invalid {
		if err := Validate([]byte(in)); !errors.Is(err, ErrSyntax) || Valid([]byte(in)) {
			t.Errorf("Validate(%.40q) = %v, Valid = %v; want a syntax error", in, err, Valid([]byte(in)))
		}
		if json.Valid([]byte(in)) {
			t.Errorf("test case %.40q is valid for encoding/json", in)
		}
	}
	if err := Validate([]byte(`{"a": tru}`)); err == nil || !strings.Contains(err.Error(), "offset 6") {
		t.Errorf("Validate names the offset: %v", err)
	}
}

func TestCheckValue(t *testing.T) {
	for _, tc := range []struct {
		in          string
		i, depth    int
		end         int
		space, high bool
	}{
		{`[1, 2]`, 0, 0, 6, true, false},
		{`x[1,2] `, 1, 0, 6, false, false},
		{"[\"\xc3\xa9\"]", 0, 0, 6, false, true},
		{`{"a":1} tail`, 0, 0, 7, false, false},
		{`[[1]]`, 0, MaxDepth - 1, -1, false, false},
		{`[[1]]`, 0, MaxDepth - 2, 5, false, false},
		{`[1,`, 0, 0, -1, false, false},
		{`1`, -1, 0, -1, false, false},
	} {
		end, l := CheckValue([]byte(tc.in), tc.i, tc.depth)
		if end != tc.end || end >= 0 && (l.Space != tc.space || l.High != tc.high) {
			t.Errorf("CheckValue(%q, %d, %d) = %d, %+v; want %d, space %v, high %v", tc.in, tc.i, tc.depth, end, l, tc.end, tc.space, tc.high)
		}
	}
}

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
		// A repeated key keeps its last value only, where it stands.
		{`{"k":"x","k":"y"}`, "y\n"},
		{`{"k":"x","m":"z","k":"y"}`, "z\ny\n"},
		{`{"k":{"a":"deep","b":[1,2]},"m":3,"k":[4]}`, "3\n4\n"},
		{`{"k":1,"k":2,"k":3}`, "3\n"},
		{`{"k":1,"\u006b":2}`, "2\n"},
		{"{\"\xff\":1,\"\xfe\":2}", "2\n"}, // both keys decode to U+FFFD
		{`{"a":{"k":1,"k":2},"k":3}`, "2\n3\n"},
		{`[{"k":1},{"k":2}]`, "1\n2\n"},
	} {
		got, err := AppendScalars([]byte("prefix|"), []byte(tc.in))
		if err != nil {
			t.Errorf("AppendScalars(%s): %v", tc.in, err)
			continue
		}
		if string(got) != "prefix|"+tc.want {
			t.Errorf("AppendScalars(%s) = %q, want %q", tc.in, got, "prefix|"+tc.want)
		}
	}
	if got, err := AppendScalars([]byte("keep"), []byte(`{"a":"x",}`)); !errors.Is(err, ErrSyntax) || string(got) != "keep" {
		t.Errorf("AppendScalars on invalid JSON = %q, %v; want dst unchanged and a syntax error", got, err)
	}
}

// TestAppendScalarsManyKeys repeats keys in objects large enough for the
// scanner to look keys up in a map.
func TestAppendScalarsManyKeys(t *testing.T) {
	var b strings.Builder
	var want []string
	b.WriteString("{")
	for i := range 3 * manyKeys {
		if i > 0 {
			b.WriteString(",")
		}
		k := i % (2 * manyKeys) // the first manyKeys keys come twice
		b.WriteString(`"k` + string(rune('0'+k/10)) + string(rune('0'+k%10)) + `":"v` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `"`)
	}
	b.WriteString("}")
	var m map[string]string
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil {
		t.Fatal(err)
	}
	for _, v := range m {
		want = append(want, v)
	}
	got, err := AppendScalars(nil, []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := sortedLines(string(got)), sortedLines(strings.Join(want, "\n")+"\n"); !slices.Equal(g, w) {
		t.Errorf("AppendScalars = %q, want the values %q", got, want)
	}
}

func TestAppendString(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`""`, "", true},
		{`"abc"`, "abc", true},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", true},
		{`"\u00e9\u20ac\ud83d\ude00"`, "é€😀", true},
		{`"\ud800"`, "\ufffd", true},
		{`"\udc00\ud800x"`, "\ufffd\ufffdx", true},
		{`"\ud83d\u0041"`, "\ufffdA", true},
		{"\"a\xffb\xc3\"", "a\ufffdb\ufffd", true},
		{`"é"`, "é", true},
		{`"abc`, "", false},
		{`"a"b"`, "", false},
		{`"a" `, "", false},
		{`abc`, "", false},
		{`"\x"`, "", false},
		{`"\u12g4"`, "", false},
		{"\"a\x01\"", "", false},
		{`"`, "", false},
	} {
		got, ok := AppendString([]byte("x"), []byte(tc.in))
		if ok != tc.ok || ok && string(got) != "x"+tc.want || !ok && string(got) != "x" {
			t.Errorf("AppendString(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		s, ok := Unquote([]byte(tc.in))
		if ok != tc.ok || ok && s != tc.want {
			t.Errorf("Unquote(%q) = %q, %v; want %q, %v", tc.in, s, ok, tc.want, tc.ok)
		}
		n, ok := StringRunes([]byte(tc.in))
		if ok != tc.ok || ok && n != utf8.RuneCountInString(tc.want) {
			t.Errorf("StringRunes(%q) = %d, %v; want %d, %v", tc.in, n, ok, utf8.RuneCountInString(tc.want), tc.ok)
		}
	}
}

func TestAppendStringInPlace(t *testing.T) {
	lit := []byte(`"plain \"quoted\" \u00e9\ud83d\ude00 \n end"`)
	want, _ := Unquote(lit)
	got, ok := AppendString(lit[:0], lit)
	if !ok || string(got) != want {
		t.Errorf("in place: %q, %v; want %q", got, ok, want)
	}
}

func TestSpans(t *testing.T) {
	doc := []byte(` {"a": 1, "b": [1, {"c": "d"}], "a": "last", "\u00e9": null} `)
	ms, ok := Members(doc)
	if !ok {
		t.Fatal("Members failed")
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Key+" "+string(doc[m.KeySpan.Start:m.KeySpan.End])+"="+string(doc[m.Value.Start:m.Value.End]))
	}
	if want := []string{`a "a"=1`, `b "b"=[1, {"c": "d"}]`, `a "a"="last"`, `é "\u00e9"=null`}; !slices.Equal(got, want) {
		t.Errorf("Members = %q, want %q", got, want)
	}
	spans, ok := ObjectSpans(doc)
	if !ok || len(spans) != 3 || string(doc[spans["a"].Start:spans["a"].End]) != `"last"` {
		t.Errorf("ObjectSpans = %v, %v", spans, ok)
	}
	b := spans["b"]
	els, ok := ArraySpans(doc[b.Start:b.End])
	if !ok || len(els) != 2 || string(doc[b.Start+els[1].Start:b.Start+els[1].End]) != `{"c": "d"}` {
		t.Errorf("ArraySpans = %v, %v", els, ok)
	}
	for _, in := range []string{``, `[]`, `{`, `{"a":1,}`, `{"a":1} x`, `{"a"}`, `{1:2}`} {
		if _, ok := Members([]byte(in)); ok {
			t.Errorf("Members(%q) succeeded", in)
		}
		if _, ok := ObjectSpans([]byte(in)); ok {
			t.Errorf("ObjectSpans(%q) succeeded", in)
		}
	}
	for _, in := range []string{``, `{}`, `[`, `[1,]`, `[] x`, `[1 2]`} {
		if _, ok := ArraySpans([]byte(in)); ok {
			t.Errorf("ArraySpans(%q) succeeded", in)
		}
	}
	if ms, ok := Members([]byte(` {} `)); !ok || len(ms) != 0 {
		t.Errorf("Members of {} = %v, %v", ms, ok)
	}
	if els, ok := ArraySpans([]byte(` [ ] `)); !ok || len(els) != 0 {
		t.Errorf("ArraySpans of [] = %v, %v", els, ok)
	}
}

func TestSpace(t *testing.T) {
	if got := TrimSpace([]byte(" \t\r\n{} \n")); string(got) != "{}" {
		t.Errorf("TrimSpace = %q", got)
	}
	if got := SkipSpace([]byte("  x"), 0); got != 2 {
		t.Errorf("SkipSpace = %d", got)
	}
	for _, c := range []byte{'\v', '\f', 0xa0} {
		if IsSpace(c) {
			t.Errorf("IsSpace(%q): JSON whitespace is space, tab, CR and LF only", c)
		}
	}
}

// sortedLines splits s into lines and sorts them.
func sortedLines(s string) []string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return l
}

// referenceScalars is what AppendScalars must produce, computed by
// decoding with encoding/json, in some order.
func referenceScalars(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		case string:
			b.WriteString(t + "\n")
		case json.Number:
			b.WriteString(t.String() + "\n")
		case bool:
			if t {
				b.WriteString("true\n")
			} else {
				b.WriteString("false\n")
			}
		}
	}
	walk(v)
	return b.String(), nil
}
