package llmemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"   \n", nil},
		{"a", []string{"a"}},
		{"hello world", []string{"hell", "o", " worl", "d"}},
		{"a,b", []string{"a", ",", "b"}},
		{"  x  ", []string{"  x  "}},
		{"héllo", []string{"hél", "lo"}},
		{"12345678", []string{"1234", "5678"}},
		{ImStart + "user\nhi" + ImEnd + "\n", []string{ImStart, "user", "\nhi", ImEnd + "\n"}},
		{"SECRET: ANANAS-7734", []string{"SECR", "ET", ":", " ANAN", "AS", "-", "7734"}},
		{"<|im_", []string{"<", "|", "im", "_"}},
	}
	for _, tt := range tests {
		got := Tokenize(tt.text)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.text, got, tt.want)
		}
		if n := CountTokens(tt.text); n != len(tt.want) {
			t.Errorf("CountTokens(%q) = %d, want %d", tt.text, n, len(tt.want))
		}
		if len(tt.want) > 0 && strings.Join(got, "") != tt.text {
			t.Errorf("Tokenize(%q) does not join back: %q", tt.text, strings.Join(got, ""))
		}
	}
}

// TestCountChatAdditive checks that a conversation's count is the sum of
// its parts, which Ollama's layer 1 relies on.
func TestCountChatAdditive(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "You are terse. "},
		{Role: "user", Content: "what is the weather in Toronto?\n\n"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{ "city": "Toronto" }`)}}},
		{Role: "tool", Content: "11 degrees"},
		{Role: "user", Content: "and the secret?", Images: 2},
	}
	tools := []Tool{{Name: "get_weather", Description: "Weather now.", Parameters: json.RawMessage(`{"type":"object"}`)}}
	whole := CountChat(msgs, tools, true)
	sum := CountTokens(RenderChat(nil, tools)) + 1
	for _, m := range msgs {
		var b strings.Builder
		renderMessage(&b, m)
		sum += CountTokens(b.String()) + m.Images*ImageTokens
	}
	if whole != sum {
		t.Fatalf("CountChat = %d, sum of parts = %d", whole, sum)
	}
	if !strings.Contains(RenderChat(msgs, tools), `{"name":"get_weather","arguments":{"city":"Toronto"}}`) {
		t.Fatalf("tool call not rendered compactly:\n%s", RenderChat(msgs, tools))
	}
}

// TestHalfWindowLimit reproduces the test vectors of Ollama's half-window
// rule (llm-servers.md §1.6).
func TestHalfWindowLimit(t *testing.T) {
	tests := []struct{ numCtx, nKeep, want int }{
		{32768, 5, 16387}, // gemma4 adds BOS
		{32768, 4, 16386},
		{4096, 4, 2050},
		{65536, 4, 32770},
	}
	for _, tt := range tests {
		if got := HalfWindowLimit(tt.numCtx, tt.nKeep); got != tt.want {
			t.Errorf("HalfWindowLimit(%d, %d) = %d, want %d", tt.numCtx, tt.nKeep, got, tt.want)
		}
	}
}

func TestThink(t *testing.T) {
	tools := []Tool{{Name: "get_weather"}}
	tests := []struct {
		name string
		turn Turn
		want Reply
	}{
		{"needle kept", Turn{Prompt: "SECRET: ANANAS-7734\nfiller\nwhat is the secret?", Messages: []Message{{Role: "user", Content: "What is the secret?"}}}, Reply{Text: "ANANAS-7734"}},
		{"needle lost", Turn{Prompt: "filler\nwhat is the secret?", Messages: []Message{{Role: "user", Content: "what is the secret?"}}}, Reply{Text: Dont}},
		{"raw prompt", Turn{Prompt: "SECRET: X1 and SECRET: X2. What is the secret?"}, Reply{Text: "X2"}},
		{"no question", Turn{Prompt: "SECRET: X1", Messages: []Message{{Role: "user", Content: "hello"}}}, Reply{Text: "OK"}},
		{"tool call", Turn{Messages: []Message{{Role: "user", Content: "please call tool get_weather {\"city\": \"Paris\"}\nthanks"}}, Tools: tools},
			Reply{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}}},
		{"tool call without arguments", Turn{Messages: []Message{{Role: "user", Content: "call tool get_weather"}}, Tools: tools},
			Reply{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{}`)}}}},
		{"unknown tool", Turn{Messages: []Message{{Role: "user", Content: "call tool nope"}}, Tools: tools}, Reply{Text: "OK"}},
		{"after the tool result", Turn{Messages: []Message{{Role: "user", Content: "call tool get_weather"}, {Role: "tool", Content: "11"}}, Tools: tools}, Reply{Text: "OK"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Think(tt.turn)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Fatalf("Think = %s, want %s", gj, wj)
			}
		})
	}
}

func TestLimitReply(t *testing.T) {
	got, cut := limitReply("hello world again", 2)
	if got != "hello" || !cut {
		t.Fatalf("limitReply = %q, %v", got, cut)
	}
	if got, cut := limitReply("hi", 0); got != "hi" || cut {
		t.Fatalf("no limit: %q, %v", got, cut)
	}
}

func TestEmbedDeterministic(t *testing.T) {
	a, b := embed("the same text", 8), embed("the same text", 8)
	if !slices.Equal(a, b) || len(a) != 8 {
		t.Fatalf("embed not deterministic: %v %v", a, b)
	}
	var norm float32
	for _, x := range a {
		norm += x * x
	}
	if norm < 0.999 || norm > 1.001 {
		t.Fatalf("embed not a unit vector: %v", norm)
	}
}

// TestRecorderConcurrent drives every emulator from several goroutines;
// run under -race it checks the recorder and the servers' state.
func TestRecorderConcurrent(t *testing.T) {
	servers := []struct {
		h interface {
			http.Handler
			RequestCount(string) int
			Evals() []Eval
		}
		path, body string
	}{
		{NewOllama(OllamaOptions{}), "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`},
		{NewLlamaCpp(LlamaCppOptions{}), "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{NewOpenAI(OpenAIOptions{}), "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`},
		{NewAnthropic(AnthropicOptions{}), "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	}
	const workers, each = 4, 5
	for _, sv := range servers {
		srv := httptest.NewServer(sv.h)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					resp, err := http.Post(srv.URL+sv.path, "application/json", strings.NewReader(sv.body))
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Errorf("%s: status %d", sv.path, resp.StatusCode)
					}
				}
			})
		}
		wg.Wait()
		srv.Close()
		if n, e := sv.h.RequestCount(sv.path), len(sv.h.Evals()); n != workers*each || e != workers*each {
			t.Fatalf("%s: %d requests and %d evals recorded, want %d", sv.path, n, e, workers*each)
		}
	}
}

// TestLatencyHonoursCancel checks that a client giving up during the
// emulated latency ends the request before any generation.
func TestLatencyHonoursCancel(t *testing.T) {
	s := NewOpenAI(OpenAIOptions{Timing: Timing{Latency: time.Hour}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for s.RequestCount("") == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	for s.Aborted() != 1 {
		time.Sleep(time.Millisecond)
	}
	if len(s.Evals()) != 0 {
		t.Fatalf("generated during the latency: %v", s.Evals())
	}
}

// TestStreamAbortedByClient checks that a client leaving mid-stream ends
// the stream on every emulator and is counted.
func TestStreamAbortedByClient(t *testing.T) {
	slow := Timing{ChunkDelay: time.Hour}
	question := "SECRET: A-LONG-ANSWER-OF-MANY-TOKENS what is the secret?"
	tests := []struct {
		name string
		h    interface {
			http.Handler
			Aborted() int
		}
		path, body string
	}{
		{"ollama", NewOllama(OllamaOptions{Timing: slow}), "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"` + question + `"}]}`},
		{"llama.cpp", NewLlamaCpp(LlamaCppOptions{Timing: slow}), "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"` + question + `"}]}`},
		{"openai", NewOpenAI(OpenAIOptions{Timing: slow}), "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` + question + `"}]}`},
		{"anthropic", NewAnthropic(AnthropicOptions{Timing: slow}), "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"` + question + `"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line == "" {
				t.Fatalf("first line %q: %v", line, err)
			}
			cancel()
			for tt.h.Aborted() != 1 {
				time.Sleep(time.Millisecond)
			}
		})
	}
}
