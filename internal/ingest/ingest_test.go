package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden is what a detection golden file records about one input.
type golden struct {
	Shape    store.Shape       `json:"shape"`
	Format   string            `json:"format"`
	Items    int               `json:"items"`
	Chars    int64             `json:"chars"`
	RawChars int64             `json:"raw_chars"`
	Tokens   int               `json:"tokens"`
	List     []json.RawMessage `json:"list,omitempty"`  // up to 5 items
	Value    json.RawMessage   `json:"value,omitempty"` // dicts up to 600 bytes
	Text     string            `json:"text,omitempty"`  // up to 300 characters
	Schema   json.RawMessage   `json:"schema,omitempty"`
	Fields   []Field           `json:"fields,omitempty"`
	Omitted  int               `json:"fields_omitted,omitempty"`
}

// TestDetectGolden parses every input under testdata/detect and compares
// what Parse made of it with NAME.golden. Run with -update to rewrite them.
func TestDetectGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/detect/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(in), filepath.Ext(in))
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, raw, res)
			g := golden{
				Shape: res.Shape, Format: res.Format, Items: res.Items,
				Chars: res.Chars, RawChars: res.RawChars, Tokens: res.Tokens,
				Schema: res.Schema,
			}
			g.List = res.Content.Items[:min(5, len(res.Content.Items))]
			if len(res.Content.Value) <= 600 {
				g.Value = res.Content.Value
			}
			g.Text = string([]rune(res.Content.Text)[:min(300, utf8.RuneCountInString(res.Content.Text))])
			if res.Schema != nil {
				g.Fields, g.Omitted = Fields(res.Schema, 12)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // keep array<string> readable
			enc.SetIndent("", "  ")
			if err := enc.Encode(g); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			path := filepath.Join("testdata", "detect", name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Parse(%s) differs from %s:\ngot:\n%s\nwant:\n%s", in, path, got, want)
			}
		})
	}
	if n < 30 {
		t.Errorf("found %d detection inputs, want at least 30", n)
	}
}

// checkResult asserts the invariants every Result keeps, whatever the input.
func checkResult(t *testing.T, raw []byte, res *Result) {
	t.Helper()
	c := res.Content
	switch {
	case c.Raw == nil:
		if res.Shape != store.ShapeText || c.Text != string(raw) {
			t.Errorf("Content.Raw is nil but the %s content is not the input itself", res.Shape)
		}
	case !bytes.Equal(c.Raw, raw) || (len(raw) > 0 && &c.Raw[0] != &raw[0]):
		t.Errorf("Content.Raw is not the input itself")
	case res.Shape == store.ShapeText && c.Text == string(raw):
		t.Errorf("Content.Raw repeats a text that is the input itself")
	}
	if got := int64(utf8.RuneCount(raw)); res.RawChars != got {
		t.Errorf("RawChars = %d, want %d", res.RawChars, got)
	}
	switch res.Shape {
	case store.ShapeList:
		if res.Items != len(c.Items) {
			t.Errorf("Items = %d, want len(Content.Items) = %d", res.Items, len(c.Items))
		}
		for i, it := range c.Items {
			if !json.Valid(it) || !utf8.Valid(it) {
				t.Fatalf("item %d is not valid JSON in UTF-8: %q", i, it)
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, it); err != nil || !bytes.Equal(buf.Bytes(), it) {
				t.Fatalf("item %d is not compact: %q", i, it)
			}
		}
		if res.Chars != res.RawChars {
			t.Errorf("list Chars = %d, want RawChars %d", res.Chars, res.RawChars)
		}
		if !json.Valid(res.Schema) {
			t.Errorf("schema is not valid JSON: %s", res.Schema)
		}
	case store.ShapeDict:
		if !json.Valid(c.Value) || !utf8.Valid(c.Value) || c.Value[0] != '{' {
			t.Fatalf("dict value is not a JSON object in UTF-8: %q", c.Value)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(c.Value, &m); err != nil {
			t.Fatal(err)
		}
		if res.Items != len(m) {
			t.Errorf("Items = %d, want %d keys", res.Items, len(m))
		}
		if !json.Valid(res.Schema) {
			t.Errorf("schema is not valid JSON: %s", res.Schema)
		}
	case store.ShapeText:
		if !utf8.ValidString(c.Text) {
			t.Errorf("text is not valid UTF-8")
		}
		if got := int64(utf8.RuneCountInString(c.Text)); res.Chars != got {
			t.Errorf("text Chars = %d, want %d", res.Chars, got)
		}
		if res.Items != 0 || res.Schema != nil || c.Items != nil || c.Value != nil {
			t.Errorf("text result has list or dict parts: %+v", res)
		}
	default:
		t.Fatalf("unknown shape %q", res.Shape)
	}
}

func TestParseDetection(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		shape  store.Shape
		format string
		items  int
	}{
		{"array", `[1,2,3]`, store.ShapeList, FormatJSON, 3},
		{"array in whitespace", " \n[1]\n ", store.ShapeList, FormatJSON, 1},
		{"empty array", `[ ]`, store.ShapeList, FormatJSON, 0},
		{"object", `{"a":1,"b":{"c":2}}`, store.ShapeDict, FormatJSON, 2},
		{"empty object", `{}`, store.ShapeDict, FormatJSON, 0},
		{"object with duplicate keys", `{"a":1,"\u0061":2,"b":3}`, store.ShapeDict, FormatJSON, 2},
		{"string", `"x"`, store.ShapeText, FormatJSON, 0},
		{"string holding array", `"[1,2]"`, store.ShapeList, FormatJSON, 2},
		{"string holding string", `"\"x\""`, store.ShapeText, FormatJSON, 0},
		{"string holding broken json", `"[1,"`, store.ShapeText, FormatJSON, 0},
		{"number", `-1.5e3`, store.ShapeText, FormatJSON, 0},
		{"false", `false`, store.ShapeText, FormatJSON, 0},
		{"ndjson", "{\"a\":1}\n{\"a\":2}", store.ShapeList, FormatNDJSON, 2},
		{"one line is not ndjson", "{\"a\":1}\n\n", store.ShapeDict, FormatJSON, 1},
		{"two values on a line", "{\"a\":1} {\"a\":2}\n{}", store.ShapeText, FormatText, 0},
		{"ndjson with a bad line", "{\"a\":1}\n{\"a\":\n", store.ShapeText, FormatText, 0},
		{"ndjson numbers", "1\n2\n", store.ShapeList, FormatNDJSON, 2},
		{"json then garbage", `[1,2]x`, store.ShapeText, FormatText, 0},
		{"leading zero", `01`, store.ShapeText, FormatText, 0},
		{"NaN", `NaN`, store.ShapeText, FormatText, 0},
		{"csv", "a,b\n1,2\n3,4\n", store.ShapeList, FormatCSV, 2},
		{"csv three columns one row", "a,b,c\n1,2,3\n", store.ShapeList, FormatCSV, 1},
		{"two columns one row is text", "Hello, world\nGoodbye, moon\n", store.ShapeText, FormatText, 0},
		{"csv after blank lines", "\n\r\na,b,c\n1,2,3\n", store.ShapeList, FormatCSV, 1},
		{"tsv", "a\tb\n1\t2\n3\t4\n", store.ShapeList, FormatTSV, 2},
		{"header only", "a,b,c\n", store.ShapeText, FormatText, 0},
		{"one column", "a\n1\n2\n", store.ShapeText, FormatText, 0},
		{"bare quote in csv", "a,b,c\n1,5\" wide,3\n", store.ShapeText, FormatText, 0},
		{"bare quote in tsv", "a\tb\tc\n1\t5\" wide\t3\n", store.ShapeList, FormatTSV, 1},
		{"quoted newline", "a,b,c\n1,\"x\ny\",3\n", store.ShapeList, FormatCSV, 1},
		{"plain text", "hello world", store.ShapeText, FormatText, 0},
		{"bom json", "\ufeff[1]", store.ShapeList, FormatJSON, 1},
		{"deep nesting", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), store.ShapeText, FormatText, 0},
		{"nesting at the limit", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), store.ShapeList, FormatJSON, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.in)
			res, err := Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, raw, res)
			if res.Shape != tt.shape || res.Format != tt.format || res.Items != tt.items {
				t.Errorf("Parse(%.40q) = %s/%s with %d items, want %s/%s with %d",
					tt.in, res.Shape, res.Format, res.Items, tt.shape, tt.format, tt.items)
			}
		})
	}
}

func TestParseItemsShareInput(t *testing.T) {
	raw := []byte(`[{"a":1},{"b": 2}]`)
	res, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	items := res.Content.Items
	// The compact item is a view of the input; the spaced one was rewritten.
	if &items[0][0] != &raw[1] {
		t.Errorf("compact item was copied")
	}
	if string(items[1]) != `{"b":2}` {
		t.Errorf("item 1 = %s, want compacted", items[1])
	}
}

func TestParseTextDecodesJSONString(t *testing.T) {
	res, err := Parse([]byte(`"caf\u00e9\n\ud83d\ude00"`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "café\n😀"; res.Content.Text != want {
		t.Errorf("text = %q, want %q", res.Content.Text, want)
	}
	if res.Chars != 6 || res.RawChars != 25 {
		t.Errorf("Chars, RawChars = %d, %d, want 6, 25", res.Chars, res.RawChars)
	}
}

func TestParseInvalidUTF8(t *testing.T) {
	tests := []struct {
		in   string
		text string
		item string
	}{
		{in: "ab\xffc\xe2\x82", text: "ab\uFFFDc\uFFFD\uFFFD"},
		{in: "[\"a\xffb\"]", item: "\"a\uFFFDb\""},
		{in: "a,b,c\n1,\xff,3\n", item: "{\"a\":1,\"b\":\"\uFFFD\",\"c\":3}"},
	}
	for _, tt := range tests {
		raw := []byte(tt.in)
		res, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, raw, res)
		if tt.text != "" && res.Content.Text != tt.text {
			t.Errorf("Parse(%q) text = %q, want %q", tt.in, res.Content.Text, tt.text)
		}
		if tt.item != "" && (len(res.Content.Items) != 1 || string(res.Content.Items[0]) != tt.item) {
			t.Errorf("Parse(%q) items = %q, want [%s]", tt.in, res.Content.Items, tt.item)
		}
	}
}

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name string
		opts ParseOptions
		in   string
		msg  string // in the error; empty means no error
	}{
		{"bytes over", ParseOptions{MaxBytes: 4}, `[1,2]`, "5 bytes, limit 4"},
		{"bytes at", ParseOptions{MaxBytes: 5}, `[1,2]`, ""},
		{"bytes checked for text too", ParseOptions{MaxBytes: 2}, `abc`, "3 bytes, limit 2"},
		{"array over", ParseOptions{MaxItems: 2}, `[1,2,3]`, "more than 2 items"},
		{"array at", ParseOptions{MaxItems: 3}, `[1,2,3]`, ""},
		{"ndjson over", ParseOptions{MaxItems: 1}, "1\n2\n", "more than 1 items"},
		{"csv over", ParseOptions{MaxItems: 1}, "a,b,c\n1,2,3\n4,5,6\n", "more than 1 rows"},
		{"double encoded over", ParseOptions{MaxItems: 1}, `"[1,2]"`, "more than 1 items"},
		{"dict keys are not items", ParseOptions{MaxItems: 1}, `{"a":1,"b":2}`, ""},
		{"text has no item limit", ParseOptions{MaxItems: 1}, "x\ny\nz", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.in)
			res, err := tt.opts.Parse(raw)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				checkResult(t, raw, res)
				return
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error = %v, want ErrTooLarge with %q", err, tt.msg)
			}
			if res != nil {
				t.Errorf("result with error: %+v", res)
			}
		})
	}
}

func TestCellNumber(t *testing.T) {
	tests := []struct {
		cell string
		want string // "" means not a number
	}{
		{"0", "0"}, {"-0", "-0"}, {"12", "12"}, {" 12 ", "12"}, {"1.5", "1.5"},
		{"-2.5e-3", "-2.5e-3"}, {"1E9", "1E9"}, {"123456789012345", "123456789012345"},
		{"02134", ""}, {"+5", ""}, {"NaN", ""}, {"Inf", ""}, {"0x1F", ""}, {"1.", ""},
		{".5", ""}, {"1e", ""}, {"", ""}, {"-", ""}, {"1,5", ""}, {"1e999", ""},
		{"1234567890123456", ""}, {"true", ""}, {"\t1", ""},
	}
	for _, tt := range tests {
		got, ok := cellNumber(tt.cell)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("cellNumber(%q) = %q, %v, want %q", tt.cell, got, ok, tt.want)
		}
	}
}

func TestHeaderNames(t *testing.T) {
	got := headerNames([]string{"id", "", " name ", "name", "name_2", "", "id"})
	// The repeated "name" takes name_2 first, so the header really called
	// "name_2" becomes name_2_2.
	want := []string{"id", "column_2", "name", "name_2", "name_2_2", "column_6", "id_2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("headerNames = %q, want %q", got, want)
	}
}

func TestHeaderLikely(t *testing.T) {
	tests := []struct {
		name string
		recs [][]string
		want bool
	}{
		{"names over numbers", [][]string{{"id", "n"}, {"1", "2"}, {"3", "4"}}, true},
		{"names over words", [][]string{{"name", "city"}, {"Ann", "Paris"}, {"Bob", "Rome"}}, true},
		{"numbers over numbers", [][]string{{"1", "x"}, {"2", "y"}, {"3", "zz"}}, false},
		{"all numbers", [][]string{{"1", "2"}, {"3", "4"}}, false},
		{"fixed width like the data", [][]string{{"2024-01-01 10:00:00", "1 a"}, {"2024-01-01 10:00:01", "2 bb"}, {"2024-01-01 10:00:02", "3 c"}}, false},
		{"fixed width column, header differs", [][]string{{"date", "v"}, {"2024-01-01", "a"}, {"2024-01-02", "b"}}, true},
	}
	for _, tt := range tests {
		if got := headerLikely(tt.recs[0], tt.recs[1:]); got != tt.want {
			t.Errorf("%s: headerLikely = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "\x00\x1f\n\r\t", "é😀", "\u2028\u2029", "bad\xffutf8\xe2\x82"} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("appendJSONString(%q) = %s: %v", s, got, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); utf8.ValidString(s) && back != want {
			t.Errorf("round trip of %q = %q", s, back)
		}
		if !utf8.Valid(got) {
			t.Errorf("appendJSONString(%q) is not valid UTF-8", s)
		}
		std, _ := json.Marshal(strings.ToValidUTF8(s, "\uFFFD"))
		if utf8.ValidString(s) && !bytes.Equal(got, bytes.ReplaceAll(std, []byte(`\u0026`), []byte("&"))) {
			t.Errorf("appendJSONString(%q) = %s, encoding/json gives %s", s, got, std)
		}
	}
}

func TestRuneCount(t *testing.T) {
	for _, s := range []string{"", "abc", "héllo wörld, 日本語 and 😀 in a longer line", "\xff\x80\xc3", "x\xe2\x82y\xf0\x9f\x98z"} {
		if got, want := runeCount([]byte(s)), int64(utf8.RuneCountInString(s)); got != want {
			t.Errorf("runeCount(%q) = %d, want %d", s, got, want)
		}
	}
}
