package mcpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/mcpadapter"
	"github.com/ctxkit/ctxkit/store/memstore"
)

type rowsOut struct {
	Rows []row `json:"rows"`
}

type row struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

func manyRows(n int) rowsOut {
	var out rowsOut
	for i := range n {
		out.Rows = append(out.Rows, row{ID: i, Title: fmt.Sprintf("row number %d of the table", i)})
	}
	return out
}

// connect serves a Go SDK server with the adapter installed and returns a
// client session to it.
func connect(t *testing.T, threshold int) (*mcp.ClientSession, *offload.Engine) {
	t.Helper()
	ctx := t.Context()
	engine := offload.New(memstore.New(memstore.Options{}))
	a := mcpadapter.New(engine, mcpadapter.Options{Threshold: threshold, Server: "demo"})
	s := mcp.NewServer(&mcp.Implementation{Name: "demo"}, &mcp.ServerOptions{Instructions: a.Instructions()})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("e", threshold*2)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "picture", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: strings.Repeat("caption ", threshold)},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "rows"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		N int `json:"n"`
	}) (*mcp.CallToolResult, rowsOut, error) {
		return nil, manyRows(in.N), nil
	})
	a.Install(s)

	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, engine
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// stored is the part of a notice the tests read.
type stored struct {
	StoredResult string `json:"stored_result"`
	Tool         string `json:"tool"`
	Shape        string `json:"shape"`
}

func notice(t *testing.T, res *mcp.CallToolResult) stored {
	t.Helper()
	var n stored
	if err := json.Unmarshal([]byte(text(t, res)), &n); err != nil || n.StoredResult == "" {
		t.Fatalf("want a notice, got %.300q (%v)", text(t, res), err)
	}
	return n
}

func TestSmallResultsPassThrough(t *testing.T) {
	cs, _ := connect(t, 100)
	for _, s := range []string{"", "hello", strings.Repeat("x", 100)} {
		if got := text(t, call(t, cs, "echo", map[string]any{"text": s})); got != s {
			t.Errorf("echo %d chars: got %d chars", len(s), len(got))
		}
	}
}

func TestLargeTextIsStoredAndExplorable(t *testing.T) {
	cs, engine := connect(t, 100)
	body := strings.Repeat("filler line of a long document\n", 50) + "the needle sentence is here\n" + strings.Repeat("more filler text\n", 50)
	n := notice(t, call(t, cs, "echo", map[string]any{"text": body}))
	if n.Shape != "text" || n.Tool != "echo" {
		t.Errorf("notice shape %q tool %q", n.Shape, n.Tool)
	}
	ws, err := engine.Workspace(t.Context(), n.StoredResult)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Meta["server"] != "demo" {
		t.Errorf("meta %v: want server demo", ws.Meta)
	}
	found := text(t, call(t, cs, "result_search_in_text", map[string]any{"workspace_id": n.StoredResult, "query": "needle"}))
	if !strings.Contains(found, "needle sentence") {
		t.Errorf("search_in_text: %.300s", found)
	}
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ctxkit://results/" + n.StoredResult})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != body {
		t.Errorf("resource read does not give back the original")
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ctxkit://results/nope"}); err == nil {
		t.Error("reading a missing result: want an error")
	}
}

func TestErrorsAreNeverStored(t *testing.T) {
	cs, _ := connect(t, 100)
	res := call(t, cs, "fail", nil)
	if !res.IsError || len(text(t, res)) != 200 {
		t.Errorf("error result changed: isError=%v, %d chars", res.IsError, len(text(t, res)))
	}
}

func TestImagesPassThrough(t *testing.T) {
	cs, _ := connect(t, 100)
	res := call(t, cs, "picture", nil)
	notice(t, res)
	if len(res.Content) != 2 {
		t.Fatalf("%d content blocks, want notice + image", len(res.Content))
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" {
		t.Errorf("second block %T, want the image", res.Content[1])
	}
}

// A tool with an output schema keeps returning structured content that
// validates against the schema tools/list announced.
func TestStructuredResultsValidateAgainstAnnouncedSchema(t *testing.T) {
	cs, _ := connect(t, 200)
	var announced any
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "rows" {
			announced = tool.OutputSchema
		}
	}
	if announced == nil {
		t.Fatal("rows announces no output schema")
	}
	raw, _ := json.Marshal(announced)
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("announced schema does not resolve: %v\n%s", err, raw)
	}
	for _, n := range []int{2, 500} {
		res := call(t, cs, "rows", map[string]any{"n": n})
		var sc map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sc)
		if err := resolved.Validate(sc); err != nil {
			t.Errorf("n=%d: structured content does not validate: %v", n, err)
		}
		_, stored := sc["stored_result"]
		if stored != (n == 500) {
			t.Errorf("n=%d: stored=%v", n, stored)
		}
	}
	n := notice(t, call(t, cs, "rows", map[string]any{"n": 500}))
	if got := text(t, call(t, cs, "result_get_keys", map[string]any{"workspace_id": n.StoredResult})); !strings.Contains(got, `"rows"`) {
		t.Errorf("keys of the stored structured content: %s", got)
	}
}

func TestWidenOutputSchemaKeepsReferences(t *testing.T) {
	orig := map[string]any{
		"$schema":    "https://json-schema.org/draft/2020-12/schema",
		"type":       "object",
		"$defs":      map[string]any{"item": map[string]any{"type": "string"}},
		"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/item"}},
		"required":   []any{"x"},
	}
	r := widenAndResolve(t, orig)
	for _, tc := range []struct {
		v    map[string]any
		want bool
	}{
		{map[string]any{"x": "ok"}, true},
		{map[string]any{"x": 3}, false},
		{map[string]any{"stored_result": "w", "shape": "list", "how_to_explore": "..."}, true},
		{map[string]any{"y": 1}, false},
	} {
		if err := r.Validate(tc.v); (err == nil) != tc.want {
			t.Errorf("validate %v: err=%v, want valid=%v", tc.v, err, tc.want)
		}
	}
	if _, err := mcpadapter.WidenOutputSchema([]int{1}); err == nil {
		t.Error("a schema that is not an object: want an error")
	}
}

// zod-to-json-schema (TypeScript SDK servers) writes "$ref": "#/properties/a"
// for a sub-schema used twice; widening must keep such references working.
func TestWidenOutputSchemaRebasesRootReferences(t *testing.T) {
	orig := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"a": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}},
			"b": map[string]any{"$ref": "#/properties/a"},
		},
	}
	r := widenAndResolve(t, orig)
	if err := r.Validate(map[string]any{"b": map[string]any{"x": 1}}); err == nil {
		t.Error("b.x = 1 validates; the reference lost its target")
	}
	if err := r.Validate(map[string]any{"b": map[string]any{"x": "ok"}}); err != nil {
		t.Errorf("a valid value fails: %v", err)
	}
}

// widenAndResolve widens orig and resolves the result, as a validating
// client would.
func widenAndResolve(t *testing.T, orig any) *jsonschema.Resolved {
	t.Helper()
	raw, err := mcpadapter.WidenOutputSchema(orig)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("the widened schema does not resolve: %v\n%s", err, raw)
	}
	return r
}
