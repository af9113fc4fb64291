package offload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
)

type searchPapersArgs struct {
	Query string `json:"query" jsonschema:"What to search for."`
	Page  int    `json:"page,omitempty"`
}

type paper struct {
	Title string `json:"title"`
	Year  int    `json:"year"`
}

func TestProducer(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	calls := 0
	offload.AddProducer(e, offload.Producer[searchPapersArgs, []paper]{
		Name:        "search_papers",
		Description: "Search papers.",
		Type:        "papers",
		Key:         "papers_{query}_{page}",
		Meta:        map[string]any{"source": "test"},
		Transform: func(ps []paper) (any, error) {
			for i := range ps {
				ps[i].Title = strings.ToUpper(ps[i].Title)
			}
			return ps, nil
		},
		Func: func(_ context.Context, in searchPapersArgs) ([]paper, error) {
			calls++
			return []paper{{Title: in.Query + " one", Year: 2020}, {Title: in.Query + " two", Year: 2021}}, nil
		},
	})
	first := call(t, e, ctx, "search_papers", `{"query":"graphs","page":2}`)
	if first["stored_result"] != "papers_graphs_2" || first["items"] != float64(2) || first["tool"] != "search_papers" {
		t.Fatalf("producer notice: %v", first)
	}
	// The same arguments replace the same workspace.
	call(t, e, ctx, "search_papers", `{"query":"graphs","page":2}`)
	list, _ := e.List(ctx)
	if len(list) != 1 || calls != 2 {
		t.Errorf("after two identical calls: %d workspaces, %d calls", len(list), calls)
	}
	ws, err := e.Workspace(ctx, "papers_graphs_2")
	if err != nil || ws.Type != "papers" || ws.Meta["source"] != "test" || !strings.Contains(string(ws.Args), "graphs") {
		t.Fatalf("workspace: %+v, %v", ws, err)
	}
	item := call(t, e, ctx, "result_get_item", map[string]any{"workspace_id": "papers_graphs_2", "index": 1})
	if item["item"].(map[string]any)["title"] != "GRAPHS TWO" {
		t.Errorf("transform not applied: %v", item)
	}
	// The generated schema carries descriptions and required fields.
	var schema map[string]any
	for _, tl := range e.Tools() {
		if tl.Name == "search_papers" {
			_ = json.Unmarshal(tl.InputSchema, &schema)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	q, _ := props["query"].(map[string]any)
	if q["description"] != "What to search for." || fmt.Sprint(schema["required"]) != "[query]" {
		t.Errorf("schema: %v", schema)
	}
}

func TestProducerKeyMustNameArguments(t *testing.T) {
	e, _ := newEngine(t)
	defer func() {
		if recover() == nil {
			t.Error("a key naming an unknown argument was accepted")
		}
	}()
	offload.AddProducer(e, offload.Producer[searchPapersArgs, string]{
		Name: "p", Key: "{nope}",
		Func: func(context.Context, searchPapersArgs) (string, error) { return "", nil },
	})
}

type topArgs struct {
	N int `json:"n" jsonschema:"How many."`
}

func TestConsumerAndCustomTool(t *testing.T) {
	e, _ := newEngine(t)
	ctx := t.Context()
	offload.AddConsumer(e, offload.Consumer[topArgs]{
		Name: "top_scores", Description: "Keep the n best items.", Produces: "top",
		Func: func(ctx context.Context, v *offload.View, in topArgs) (any, error) {
			return v.Pipe(ctx, json.RawMessage(fmt.Sprintf(`[{"sort":{"field":"score","order":"desc"}},{"limit":%d}]`, in.N)))
		},
	})
	offload.AddTool(e, offload.CustomTool[struct{}]{
		Name: "count_chars", Description: "Count characters.", Shapes: []store.Shape{store.ShapeText},
		Func: func(_ context.Context, v *offload.View, _ struct{}) (any, error) {
			return map[string]any{"chars": v.Workspace().Chars}, nil
		},
	})
	list := put(t, e, ctx, papers(30), offload.PutOptions{Producer: "p"}).StoredResult
	text := put(t, e, ctx, []byte("hello"), offload.PutOptions{Producer: "p"}).StoredResult

	top := call(t, e, ctx, "top_scores", map[string]any{"workspace_id": list, "n": 3})
	if top["items"] != float64(3) || !strings.HasPrefix(top["stored_result"].(string), "top_") {
		t.Errorf("consumer: %v", top)
	}
	if out := callErr(t, e, ctx, "top_scores", map[string]any{"workspace_id": text, "n": 3}); out["code"] != offload.CodeWrongShape {
		t.Errorf("consumer on text: %v", out)
	}
	if out := call(t, e, ctx, "count_chars", map[string]any{"workspace_id": text}); out["chars"] != float64(5) {
		t.Errorf("custom tool: %v", out)
	}
	if out := callErr(t, e, ctx, "count_chars", map[string]any{"workspace_id": list}); out["code"] != offload.CodeWrongShape {
		t.Errorf("custom tool on list: %v", out)
	}
	if !strings.Contains(e.SystemPrompt("You are helpful."), "count_chars") {
		t.Error("system prompt does not name custom tools")
	}
}

func TestToolFormats(t *testing.T) {
	e, _ := newEngine(t)
	tools := e.Tools()
	if len(tools) != 11 {
		t.Errorf("%d built-in tools, want 11", len(tools))
	}
	oa, err := json.Marshal(e.OpenAITools())
	if err != nil {
		t.Fatal(err)
	}
	var openai []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(oa, &openai); err != nil || len(openai) != len(tools) {
		t.Fatalf("OpenAI tools: %v", err)
	}
	for _, tl := range openai {
		if tl.Type != "function" || tl.Function.Parameters["type"] != "object" {
			t.Errorf("OpenAI tool %s: %+v", tl.Function.Name, tl)
		}
	}
	for _, tl := range tools {
		if tl.Name != "result_list" && !strings.Contains(string(tl.InputSchema), `"properties":{"workspace_id"`) {
			t.Errorf("%s: workspace_id is not the first parameter: %s", tl.Name, tl.InputSchema)
		}
	}
	an, _ := json.Marshal(e.AnthropicTools())
	if !strings.Contains(string(an), `"input_schema":{`) {
		t.Errorf("Anthropic tools lack input_schema: %.200s", an)
	}
	if p := e.SystemPrompt(""); !strings.Contains(p, "result_pipe") || len(p) > 2000 {
		t.Errorf("system prompt: %d chars", len(p))
	}
}

func FuzzDispatch(f *testing.F) {
	f.Add("result_pipe", `{"workspace_id":"w","steps":[{"filter":{"a":{"$gt":1}}}]}`)
	f.Add("result_read_page", `{"workspace_id":"t","page":2,"chars_per_page":200}`)
	f.Add("result_get_value", `{"workspace_id":"d","key":"a.b.0"}`)
	f.Add("result_search", `"{\"workspace_id\":\"w\",\"query\":\"c++\"}"`)
	f.Add("nope", `[]`)
	e, _ := newEngine(f)
	ctx := context.Background()
	for id, data := range map[string]string{"w": `[{"a":1,"b":"x y"},{"a":2,"b":"c++"}]`, "d": `{"a":{"b":[1,2]}}`, "t": strings.Repeat("text and more\n\n", 100)} {
		if _, err := e.Put(ctx, []byte(data), offload.PutOptions{Producer: "p", ID: id, TTL: -1}); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, tool, args string) {
		res := e.Dispatch(ctx, tool, args)
		if !json.Valid(res.Output) {
			t.Fatalf("invalid JSON output: %s", res.Output)
		}
	})
}
