package mcpadapter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

func newTestAdapter(threshold int) *Adapter {
	return New(offload.New(memstore.New(memstore.Options{})), Options{Threshold: threshold, Server: "s"})
}

// offloadJSON runs PrepareJSON and Store on a copy of raw, which it hands
// over; ok reports that the result was stored.
func offloadJSON(t testing.TB, a *Adapter, name string, raw []byte) ([]byte, bool) {
	t.Helper()
	before := bytes.Clone(raw)
	p := a.PrepareJSON(callReq(name), raw)
	if p == nil {
		if !bytes.Equal(raw, before) {
			t.Fatalf("PrepareJSON changed a result it left alone")
		}
		return nil, false
	}
	out, err := p.Store(t.Context())
	return out, err == nil
}

func callReq(name string) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(`{"q":1}`)}}
}

// PrepareJSON+Store and Offload store the same payload and give the same notice.
func TestPrepareJSONMatchesOffload(t *testing.T) {
	long := strings.Repeat("a line with \"quotes\", a tab\t, é and 😀 \\ end\n", 40)
	results := map[string]*mcp.CallToolResult{
		"one text": {Content: []mcp.Content{&mcp.TextContent{Text: long}}},
		"texts as list": {Content: []mcp.Content{
			&mcp.TextContent{Text: `{"a":"` + strings.Repeat("x", 600) + `"}`},
			&mcp.TextContent{Text: `[1,2,3]`},
		}},
		"texts joined":  {Content: []mcp.Content{&mcp.TextContent{Text: long}, &mcp.TextContent{Text: "tail"}}},
		"structured":    {Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"rows": strings.Split(long, "\n")}},
		"image kept":    {Content: []mcp.Content{&mcp.TextContent{Text: long}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("png")}}},
		"resource text": {Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x://y", Text: long}}}},
	}
	for name, res := range results {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			raw, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			viaRaw := newTestAdapter(500)
			out, ok := offloadJSON(t, viaRaw, "tool", bytes.Clone(raw))
			if !ok {
				t.Fatalf("not offloaded: %s", raw[:100])
			}
			var got mcp.CallToolResult
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output does not decode: %v\n%s", err, out)
			}
			viaTyped := newTestAdapter(500)
			want := viaTyped.Offload(ctx, callReq("tool"), res)
			if len(got.Content) != len(want.Content) || (got.StructuredContent == nil) != (want.StructuredContent == nil) {
				t.Fatalf("raw: %d blocks, structured %v; typed: %d blocks, structured %v", len(got.Content), got.StructuredContent != nil, len(want.Content), want.StructuredContent != nil)
			}
			gotRaw := storedRaw(t, viaRaw, got.Content[0].(*mcp.TextContent).Text)
			wantRaw := storedRaw(t, viaTyped, want.Content[0].(*mcp.TextContent).Text)
			if gotRaw != wantRaw {
				t.Errorf("stored payloads differ:\nraw:   %.200q\ntyped: %.200q", gotRaw, wantRaw)
			}
		})
	}
}

func storedRaw(t *testing.T, a *Adapter, notice string) string {
	t.Helper()
	var n struct {
		StoredResult string `json:"stored_result"`
	}
	if err := json.Unmarshal([]byte(notice), &n); err != nil {
		t.Fatalf("notice %q: %v", notice, err)
	}
	b, err := a.Engine().Store().Raw(t.Context(), n.StoredResult)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPrepareJSONLeavesAlone(t *testing.T) {
	big := strings.Repeat("z", 2000)
	for name, raw := range map[string]string{
		"small":          `{"content":[{"type":"text","text":"hi"}]}`,
		"error":          `{"content":[{"type":"text","text":"` + big + `"}],"isError":true}`,
		"input required": `{"resultType":"input_required","inputRequests":{"a":{"method":"x","params":{"p":"` + big + `"}}}}`,
		"not an object":  `["` + big + `"]`,
		"broken":         `{"content":[{"type":"text","text":"` + big + `"`,
		"image only":     `{"content":[{"type":"image","mimeType":"image/png","data":"` + big + `"}]}`,
	} {
		if out, ok := offloadJSON(t, newTestAdapter(500), "t", []byte(raw)); ok {
			t.Errorf("%s: offloaded into %.100s", name, out)
		}
	}
	if _, ok := offloadJSON(t, newTestAdapter(500), "result_pipe", []byte(`{"content":[{"type":"text","text":"`+big+`"}]}`)); ok {
		t.Error("an exploration tool's own result was offloaded")
	}
}

// FuzzUnquote checks decoding a text in place, in the wire bytes'
// memory, against encoding/json.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\\\/\b\f\n\r\t"`, `"\ud83d\u0041"`, "\"\xff\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		lit = strings.Trim(lit, " \t\r\n") // spans never include white space
		var want string
		wantErr := json.Unmarshal([]byte(lit), &want)
		if wantErr != nil || len(lit) == 0 || lit[0] != '"' {
			return
		}
		if got := unquoteInPlace([]byte(lit)); string(got) != want {
			t.Fatalf("unquoteInPlace(%q) = %q; want %q", lit, got, want)
		}
	})
}

func FuzzPrepareJSON(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"` + strings.Repeat("a", 300) + `"}]}`))
	f.Add([]byte(`{"content":[],"structuredContent":{"k":"` + strings.Repeat("b", 300) + `"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, ok := offloadJSON(t, newTestAdapter(100), "t", raw)
		if ok && !json.Valid(out) {
			t.Fatalf("invalid output %q for %q", out, raw)
		}
	})
}

// When storing fails, Store gives back the same content, rebuilt.
func TestPendingPassesThroughWhenStoringFails(t *testing.T) {
	long := strings.Repeat("text that will not fit ", 100)
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: long},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte("png")},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x://y", MIMEType: "text/plain", Text: "resource text"}},
	}}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	// An engine that refuses anything over 100 bytes.
	a := New(offload.New(memstore.New(memstore.Options{}), offload.WithLimits(0, 100)), Options{Threshold: 500})
	p := a.PrepareJSON(callReq("tool"), bytes.Clone(raw))
	if p == nil {
		t.Fatal("not prepared")
	}
	out, err := p.Store(t.Context())
	if err == nil {
		t.Fatal("storing over the limit: want an error")
	}
	var got, want mcp.CallToolResult
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("rebuilt result does not decode: %v", err)
	}
	_ = json.Unmarshal(raw, &want)
	gotJSON, _ := json.Marshal(&got)
	wantJSON, _ := json.Marshal(&want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("rebuilt result differs:\n got %.300s\nwant %.300s", gotJSON, wantJSON)
	}
}
