package guard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// TestRecallResult: what one context_recall call gets back: pages within
// max_tokens and the page cap, each naming where the next starts; the end
// said; and errors a model can act on.
func TestRecallResult(t *testing.T) {
	g, err := New(Options{Ollama: "http://127.0.0.1:1", Recall: true, Engine: offload.New(memstore.New(memstore.Options{}))})
	if err != nil {
		t.Fatal(err)
	}
	span := []compact.Message{
		{Role: compact.RoleAssistant, ToolCalls: []compact.ToolCall{{Name: "read_file", Args: `{"path":"a"}`}}},
		{Role: compact.RoleTool, Name: "read_file", Text: strings.Repeat("lorem ipsum ", 400) + "SECRET: END"},
	}
	id, err := g.storeFunc(t.Context())(span)
	if err != nil {
		t.Fatal(err)
	}
	f := &fit{rep: &Report{Budget: 2000}, cnt: counter{c: compact.CounterFunc(Estimate)}}
	res := func(args string) string {
		out, _ := g.recallResult(t.Context(), f, &call{Name: RecallTool, Args: json.RawMessage(args)})
		return out
	}
	// Read page by page with max_tokens 100 until the end.
	var all strings.Builder
	args := `{"id":"` + id + `","max_tokens":100}`
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		out := res(args)
		body := out[strings.IndexByte(out, '\n')+1:]
		if more := strings.LastIndex(body, "\n[more: call context_recall with "); more >= 0 {
			next := strings.TrimSuffix(body[more+len("\n[more: call context_recall with "):], "]")
			all.WriteString(body[:more])
			if Estimate(body[:more]) > 100 {
				t.Errorf("page of %d tokens over max_tokens 100", Estimate(body[:more]))
			}
			var a map[string]any
			if err := json.Unmarshal([]byte(next), &a); err != nil {
				t.Fatalf("next page args %q: %v", next, err)
			}
			a["max_tokens"] = 100
			data, _ := json.Marshal(a)
			args = string(data)
			continue
		}
		all.WriteString(strings.TrimSuffix(body, "\n[end of the removed content]"))
		break
	}
	want := "[assistant]\n\n(calls read_file {\"path\":\"a\"})\n\n[tool read_file]\n" + span[1].Text + "\n"
	if all.String() != want {
		t.Errorf("pages joined differ from the span:\n%q\nwant\n%q", all.String(), want)
	}
	// The page cap (budget/4) bounds a page without max_tokens.
	if out := res(`{"id":"` + id + `"}`); Estimate(out) > 600 || !strings.Contains(out, "[more:") {
		t.Errorf("uncapped page: %d tokens", Estimate(out))
	}
	for _, tc := range []struct{ args, want string }{
		{`{"id":"` + id + `","offset":999999}`, "[end of the removed content]"},
		{`{"id":"evicted_0000000000000000"}`, `nothing is stored under "evicted_0000000000000000"`},
		{`{"id":"papers"}`, `"papers" is not a removal id`},
		{`{"offset":1}`, `missing "id"`},
		{`not json`, "must be a JSON object"},
	} {
		if out := res(tc.args); !strings.Contains(out, tc.want) {
			t.Errorf("%s: %q, want %q", tc.args, out, tc.want)
		}
	}
	g.opts.Engine = nil
	if out := res(`{"id":"` + id + `"}`); !strings.Contains(out, "not kept") {
		t.Errorf("no store: %q", out)
	}
}
