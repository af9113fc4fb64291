package guard

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestNoThink(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    kind
		path string
		in   string
		want string // "" means unchanged
	}{
		{"ollama chat", kOllama, "/api/chat", `{"model":"qwen3","messages":[]}`, `{"model":"qwen3","messages":[],"think":false}`},
		{"ollama generate", kOllama, "/api/generate", `{"model":"qwen3","prompt":"p"}`, `{"model":"qwen3","prompt":"p","think":false}`},
		{"ollama client chose", kOllama, "/api/chat", `{"model":"qwen3","think":"high"}`, ""},
		{"ollama v1", kOllama, "/v1/chat/completions", `{"model":"qwen3"}`, `{"model":"qwen3","reasoning_effort":"none"}`},
		{"ollama v1 client chose", kOllama, "/v1/chat/completions", `{"model":"qwen3","reasoning_effort":"low"}`, ""},
		{"llama.cpp", kLlamaCpp, "/v1/chat/completions", `{"model":"m"}`, `{"model":"m","chat_template_kwargs":{"enable_thinking":false}}`},
		{"llama.cpp merges kwargs", kLlamaCpp, "/v1/chat/completions", `{"chat_template_kwargs":{"x":1}}`, `{"chat_template_kwargs":{"x":1,"enable_thinking":false}}`},
		{"llama.cpp client chose", kLlamaCpp, "/v1/chat/completions", `{"chat_template_kwargs":{"enable_thinking":true}}`, ""},
		{"openai-compatible", kOpenAI, "/v1/chat/completions", `{"model":"m","chat_template_kwargs":null}`, `{"model":"m","chat_template_kwargs":{"enable_thinking":false}}`},
		{"anthropic", kAnthropic, "/v1/messages", `{"model":"claude"}`, ""},
		{"kwargs not an object", kLlamaCpp, "/v1/chat/completions", `{"chat_template_kwargs":[1]}`, ""},
		{"not an object", kOllama, "/api/chat", `[1,2]`, ""},
		{"not json", kOllama, "/api/chat", `{`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := noThink([]byte(tc.in), tc.k, tc.path)
			want := tc.want
			if want == "" {
				if string(got) != tc.in {
					t.Fatalf("changed: %s", got)
				}
				return
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}
}

// TestNoThinkKeepsBytes: the switch is spliced in; the rest of a large
// body is not decoded and written again.
func TestNoThinkKeepsBytes(t *testing.T) {
	in := `{ "model" : "m", "messages":[ {"content":"<a> & \u00e9"} ] } `
	want := `{ "model" : "m", "messages":[ {"content":"<a> & \u00e9"} ] ,"think":false} `
	if got := noThink([]byte(in), kOllama, "/api/chat"); string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	in = `{"chat_template_kwargs": { "x" : 1 }, "model":"m"}`
	want = `{"chat_template_kwargs": { "x" : 1 ,"enable_thinking":false}, "model":"m"}`
	if got := noThink([]byte(in), kLlamaCpp, "/v1/chat/completions"); string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
