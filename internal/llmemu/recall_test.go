package llmemu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const recallNotice = `[ctxkit: 4 earlier messages (900 tokens) were removed here to fit the context window. They are stored as "evicted_00aa": call the context_recall tool with {"id":"evicted_00aa"} to read it back.]`

var recallTools = []Tool{{Name: "read_file"}, {Name: RecallTool}}

// TestThinkRecall: the model reads removed content back through
// context_recall only when the secret is lost, a notice names an id and
// the tool is offered; it follows pages, does not ask twice, and answers
// once the result holds the secret.
func TestThinkRecall(t *testing.T) {
	call := func(args string) Reply {
		return Reply{ToolCalls: []ToolCall{{Name: RecallTool, Arguments: json.RawMessage(args)}}}
	}
	asked := Message{Role: "assistant", ToolCalls: []ToolCall{{Name: RecallTool, Arguments: json.RawMessage(`{"id":"evicted_00aa"}`)}}}
	question := Message{Role: "user", Content: recallNotice + "\n\nWhat is the secret?"}
	tests := []struct {
		name  string
		msgs  []Message
		tools []Tool
		want  Reply
	}{
		{"asks", []Message{question}, recallTools, call(`{"id":"evicted_00aa"}`)},
		{"no tool", []Message{question}, recallTools[:1], Reply{Text: Dont}},
		{"no notice", []Message{{Role: "user", Content: "What is the secret?"}}, recallTools, Reply{Text: Dont}},
		{"found", []Message{question, asked, {Role: "tool", Content: "[context_recall evicted_00aa: characters 0 to 20 of 20]\nSECRET: FIG-1\n[end of the removed content]"}}, recallTools, Reply{Text: "FIG-1"}},
		{"pages", []Message{question, asked, {Role: "tool", Content: "[context_recall evicted_00aa: characters 0 to 9 of 99]\nlorem\n[more: call context_recall with {\"id\":\"evicted_00aa\",\"offset\":9}]"}}, recallTools, call(`{"id":"evicted_00aa","offset":9}`)},
		{"asked already", []Message{question, asked, {Role: "tool", Content: "context_recall error: nothing is stored"}}, recallTools, Reply{Text: Dont}},
		{"anthropic result", []Message{question, asked, {Role: "user", Content: "<tool_response>\nSECRET: FIG-2\n</tool_response>"}}, recallTools, Reply{Text: "FIG-2"}},
		{"anthropic page", []Message{question, asked, {Role: "user", Content: "<tool_response>\n[more: call context_recall with {\"id\":\"evicted_00aa\",\"offset\":4}]\n</tool_response>"}}, recallTools, call(`{"id":"evicted_00aa","offset":4}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Think(Turn{Prompt: RenderChat(tt.msgs, tt.tools), Messages: tt.msgs, Tools: tt.tools})
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRecallWire: each server emits the model's context_recall call in
// its own wire format, streamed and not.
func TestRecallWire(t *testing.T) {
	content := recallNotice + "\n\nWhat is the secret?"
	fn := map[string]any{"type": "function", "function": map[string]any{"name": RecallTool, "parameters": map[string]any{"type": "object"}}}
	cases := []struct {
		name string
		h    http.Handler
		path string
		req  map[string]any
		want []string // in the body, in order
	}{
		{"ollama", NewOllama(OllamaOptions{}), "/api/chat",
			map[string]any{"model": "llama3.2", "messages": []any{map[string]any{"role": "user", "content": content}}, "tools": []any{fn}},
			[]string{`"tool_calls":[{"function":{"index":0,"name":"context_recall","arguments":{"id":"evicted_00aa"}}}]`}},
		{"openai", NewOpenAI(OpenAIOptions{Models: []string{"gpt-4o"}}), "/v1/chat/completions",
			map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": content}}, "tools": []any{fn}},
			[]string{`"id":"call_`, `"type":"function","function":{"name":"context_recall","arguments":"{\"id\":\"evicted_00aa\"}"}`, `"finish_reason":"tool_calls"`}},
		{"anthropic", NewAnthropic(AnthropicOptions{}), "/v1/messages",
			map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": content}}, "tools": []any{map[string]any{"name": RecallTool, "input_schema": map[string]any{"type": "object"}}}},
			[]string{`"type":"tool_use","id":"toolu_`, `"name":"context_recall","input":{"id":"evicted_00aa"}`, `"stop_reason":"tool_use"`}},
	}
	for _, tc := range cases {
		srv := httptest.NewServer(tc.h)
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				tc.req["stream"] = stream
				data, _ := json.Marshal(tc.req)
				resp, err := http.Post(srv.URL+tc.path, "application/json", bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				if !stream {
					for _, w := range tc.want {
						if !bytes.Contains(body, []byte(w)) {
							t.Errorf("no %s in %s", w, body)
						}
					}
					return
				}
				// Streamed, the call is there: whole in one Ollama chunk,
				// as id+name then arguments in OpenAI deltas, as a
				// tool_use block start then input_json_delta in Anthropic.
				var name, args string
				sc := bufio.NewScanner(bytes.NewReader(body))
				for sc.Scan() {
					line := strings.TrimPrefix(sc.Text(), "data: ")
					var ev struct {
						Message struct {
							ToolCalls []struct {
								Function struct {
									Name      string          `json:"name"`
									Arguments json.RawMessage `json:"arguments"`
								} `json:"function"`
							} `json:"tool_calls"`
						} `json:"message"`
						Choices []struct {
							Delta struct {
								ToolCalls []struct {
									Function struct{ Name, Arguments string } `json:"function"`
								} `json:"tool_calls"`
							} `json:"delta"`
						} `json:"choices"`
						ContentBlock struct{ Name string } `json:"content_block"`
						Delta        struct {
							PartialJSON string `json:"partial_json"`
						} `json:"delta"`
					}
					if json.Unmarshal([]byte(line), &ev) != nil {
						continue
					}
					for _, c := range ev.Message.ToolCalls {
						name, args = name+c.Function.Name, args+string(c.Function.Arguments)
					}
					for _, ch := range ev.Choices {
						for _, c := range ch.Delta.ToolCalls {
							name, args = name+c.Function.Name, args+c.Function.Arguments
						}
					}
					name += ev.ContentBlock.Name
					args += ev.Delta.PartialJSON
				}
				if name != RecallTool || args != `{"id":"evicted_00aa"}` {
					t.Errorf("streamed call %q %q in %s", name, args, body)
				}
			})
		}
		srv.Close()
	}
}
