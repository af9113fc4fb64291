package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	`{"a" : [1, 2.5e-3, "x\"\\\/\b\f\n\r\t\u12aB"], "b":{}}`, `[01]`, `"\u12"`, `-`, `1.e5`, `tru`,
	"\"a\x01\"", "[\"\xff\"]", `"abcdefgh\"ijklmnop"`, `{"a":"b","c":[1,2,{"d":true}]}`, `"x"`,
	`[null,-1.5e3]`, `{"a":"\u00e9\ud83d\ude00"}`, `{"a":1,"a":2}`, "\"\xff\"", `[`, `{"":""}`,
	`{"k":{"x":"in"},"m":1,"k":"out"}`, `{"k":1,"\u006b":2}`, "{\"\xff\":1,\"\xfe\":2}",
	`{"a":"Héllo","b":[1,-2.5e+3,true,false,null],"c":{"d":"x\"y\\z"}}`, `"lone \ud800 \udc00"`,
}

// FuzzValid checks the validator against encoding/json, and compaction
// against json.Compact.
func FuzzValid(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := Valid(data), json.Valid(data)
		if got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", data, got, want)
		}
		if err := Validate(data); (err == nil) != want {
			t.Fatalf("Validate(%q) = %v, json.Valid says %v", data, err, want)
		}
		if !got {
			return
		}
		data = TrimSpace(data)
		compact := AppendCompact(nil, data, true)
		if !json.Valid(compact) || !utf8.Valid(compact) {
			t.Fatalf("AppendCompact(%q) = %q is not valid", data, compact)
		}
		if utf8.Valid(data) {
			var buf bytes.Buffer
			if err := json.Compact(&buf, data); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(compact, buf.Bytes()) {
				t.Fatalf("AppendCompact(%q) = %q, json.Compact gives %q", data, compact, buf.Bytes())
			}
		}
		end, l := CheckValue(data, 0, 0)
		if end != len(data) {
			t.Fatalf("CheckValue(%q) ended at %d, not at the end", data, end)
		}
		if ValueEnd(data, 0) != end {
			t.Fatalf("ValueEnd(%q) = %d, CheckValue %d", data, ValueEnd(data, 0), end)
		}
		if !bytes.Equal(AppendCompact(nil, data, !utf8.Valid(data)), compact) {
			t.Fatalf("AppendCompact without fixing valid UTF-8 changed %q", data)
		}
		if (l.Space || l.High && !utf8.Valid(data)) != !bytes.Equal(compact, data) {
			t.Fatalf("layout %+v disagrees with compaction of %q", l, data)
		}
	})
}

// FuzzAppendScalars checks the scalars against those of the value
// encoding/json decodes, repeated keys included: the same lines, in
// another order.
func FuzzAppendScalars(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := AppendScalars(nil, data)
		want, werr := referenceScalars(data)
		if valid := json.Valid(data); valid != (err == nil) || valid && werr != nil {
			t.Fatalf("AppendScalars(%q) error %v, json.Valid %v (%v)", data, err, valid, werr)
		}
		if err != nil {
			return
		}
		if !slices.Equal(sortedLines(string(got)), sortedLines(want)) {
			t.Fatalf("AppendScalars(%q) = %q, encoding/json decodes %q", data, got, want)
		}
		// A Scalars reused after other values gives the same text.
		var sc Scalars
		for _, other := range []string{`{"a":{"b":{"k":"X","k":"Y"}},"d":[{"e":2},{"a":1,"a":3}]}`, string(data), `[{"k":1},{"k":2}]`} {
			_, _ = sc.Append(nil, []byte(other))
		}
		if again, err := sc.Append(nil, data); err != nil || string(again) != string(got) {
			t.Fatalf("Scalars.Append(%q) after others = %q, %v; want %q", data, again, err, got)
		}
	})
}

// FuzzAppendString checks string decoding against encoding/json, in new
// memory and in place, and StringRunes against the decoded text.
func FuzzAppendString(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		got, ok := AppendString(nil, lit)
		var want string
		// A literal alone: quotes at both ends, no space around them.
		wantOK := len(lit) > 1 && lit[0] == '"' && lit[len(lit)-1] == '"' && json.Unmarshal(lit, &want) == nil
		if ok != wantOK || ok && string(got) != want {
			t.Fatalf("AppendString(%q) = %q, %v; encoding/json %q, %v", lit, got, ok, want, wantOK)
		}
		if s, ok := Unquote(lit); ok != wantOK || ok && s != want {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json %q, %v", lit, s, ok, want, wantOK)
		}
		if n, ok := StringRunes(lit); ok != wantOK || ok && n != utf8.RuneCountInString(want) {
			t.Fatalf("StringRunes(%q) = %d, %v; want %d, %v", lit, n, ok, utf8.RuneCountInString(want), wantOK)
		}
		if ok && utf8.Valid(lit) {
			in := bytes.Clone(lit)
			if got, _ := AppendString(in[:0], in); string(got) != want {
				t.Fatalf("AppendString(%q) in place = %q, want %q", lit, got, want)
			}
		}
	})
}

// FuzzSpans checks Members, ObjectSpans and ArraySpans against
// encoding/json on which documents are objects or arrays and on each
// member's and element's value.
func FuzzSpans(f *testing.F) {
	for _, s := range append(fuzzSeeds, ` {"a": 1, "b": [1, {"c": "d"}], "a": "last"} `, `{"k\u00e9y": null}`, `[1]`, `{"a":}`, `{"a":1,}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, ok := ObjectSpans(data)
		var want map[string]json.RawMessage
		wantOK := json.Unmarshal(data, &want) == nil && want != nil
		if ok != wantOK {
			t.Fatalf("ObjectSpans(%q) ok=%v, encoding/json ok=%v", data, ok, wantOK)
		}
		if ok {
			if len(spans) != len(want) {
				t.Fatalf("%q: %d fields, want %d", data, len(spans), len(want))
			}
			for k, s := range spans {
				if string(data[s.Start:s.End]) != string(want[k]) {
					t.Fatalf("%q: field %q = %q, want %q", data, k, data[s.Start:s.End], want[k])
				}
			}
			ms, ok := Members(data)
			if !ok {
				t.Fatalf("Members(%q) failed where ObjectSpans succeeded", data)
			}
			last := map[string]Span{}
			for _, m := range ms {
				last[m.Key] = m.Value
			}
			if len(last) != len(spans) {
				t.Fatalf("Members(%q) has %d distinct keys, ObjectSpans %d", data, len(last), len(spans))
			}
			for k, s := range last {
				if spans[k] != s {
					t.Fatalf("Members(%q)'s last %q is at %v, ObjectSpans says %v", data, k, s, spans[k])
				}
			}
		}
		els, ok := ArraySpans(data)
		var arr []json.RawMessage
		arrOK := json.Unmarshal(data, &arr) == nil && arr != nil
		if ok != arrOK {
			t.Fatalf("ArraySpans(%q) ok=%v, encoding/json ok=%v", data, ok, arrOK)
		}
		if ok {
			if len(els) != len(arr) {
				t.Fatalf("%q: %d elements, encoding/json %d", data, len(els), len(arr))
			}
			for i, s := range els {
				if string(data[s.Start:s.End]) != string(arr[i]) {
					t.Fatalf("%q: element %d = %q, want %q", data, i, data[s.Start:s.End], arr[i])
				}
			}
		}
	})
}

// FuzzAppendQuote checks string encoding against encoding/json with HTML
// escaping off, and QuoteLen against what AppendQuote writes.
func FuzzAppendQuote(f *testing.F) {
	for _, s := range append(fuzzSeeds, "\b\f\x00\x1f\x7f<>&\u2028\u2029\ufffd", "tab\there\nquote\"back\\") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got := AppendQuote([]byte("x"), s)
		if string(got[1:]) != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("AppendQuote(%q) = %s, encoding/json writes %s", s, got[1:], want.Bytes())
		}
		if n := QuoteLen(s); n != len(got)-1 {
			t.Fatalf("QuoteLen(%q) = %d, AppendQuote wrote %d bytes", s, n, len(got)-1)
		}
	})
}
