package llmemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
)

func ollamaClient(t *testing.T, s *Ollama) (*api.Client, string) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(u, srv.Client()), srv.URL
}

// filler returns text of exactly n tokens by the emulators' rule and by
// the tiny model's BPE: n one-letter words, each after a space.
func filler(n int) string { return strings.Repeat(" a", n) }

func ptr[T any](v T) *T { return &v }

// TestOllamaHalfWindow reproduces v0.33's half-window test vectors end to
// end through /api/generate with the real Ollama client.
func TestOllamaHalfWindow(t *testing.T) {
	tests := []struct {
		name         string
		numCtx, sent int
		bos          bool
		want         int
	}{
		{"4096 keep 4", 4096, 7912, false, 2050},
		{"32768 keep 4", 32768, 40000, false, 16386},
		{"32768 keep 4 plus BOS", 32768, 40000, true, 16387},
		{"65536 fits below num_ctx-1", 65536, 65530, false, 65530},
		{"65536 over", 65536, 70000, false, 32770},
		{"exactly num_ctx-1 passes", 4096, 4095, false, 4095},
		{"num_ctx is cut", 4096, 4096, false, 2050},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewOllama(OllamaOptions{Version: OllamaV033, AddBOS: tt.bos})
			c, _ := ollamaClient(t, s)
			prompt := fill(t, s.Counter(), tt.sent)
			if tt.bos {
				prompt = fill(t, s.Counter(), tt.sent-1)
			}
			var final api.GenerateResponse
			err := c.Generate(context.Background(), &api.GenerateRequest{
				Model: "llama3.2", Prompt: prompt, Raw: true, Options: map[string]any{"num_ctx": tt.numCtx},
			}, func(r api.GenerateResponse) error {
				if r.Done {
					final = r
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if final.PromptEvalCount != tt.want {
				t.Fatalf("prompt_eval_count = %d, want %d", final.PromptEvalCount, tt.want)
			}
			ev, _ := s.LastEval()
			if ev.SentTokens != tt.sent || ev.PromptTokens != tt.want || ev.Truncated != (tt.want != tt.sent) {
				t.Fatalf("eval: sent %d prompt %d truncated %v", ev.SentTokens, ev.PromptTokens, ev.Truncated)
			}
			bos := 0
			if tt.bos {
				bos = 1
			}
			if n := s.Counter().Count(ev.Prompt) + bos; n != tt.want {
				t.Fatalf("kept prompt has %d tokens, want %d", n, tt.want)
			}
		})
	}
}

func toAPI(msgs []Message) []api.Message {
	out := make([]api.Message, len(msgs))
	for i, m := range msgs {
		out[i] = api.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// needleChat is a conversation with the secret in the first user message,
// n filler exchanges of size tokens each, and the question last.
func needleChat(n, size int) []Message {
	msgs := []Message{
		{Role: "system", Content: "You are a careful assistant."},
		{Role: "user", Content: "Remember this. SECRET: ANANAS-7734"},
		{Role: "assistant", Content: "Noted."},
	}
	for range n {
		msgs = append(msgs, Message{Role: "user", Content: filler(size)}, Message{Role: "assistant", Content: "OK"})
	}
	return append(msgs, Message{Role: "user", Content: "What is the secret?"})
}

// TestOllamaNeedleV033: v0.33 drops whole messages, then keeps the head
// and the tail of one long message, about half the window.
func TestOllamaNeedleV033(t *testing.T) {
	tests := []struct {
		name      string
		msgs      []Message
		numCtx    int
		want      string
		truncated bool
	}{
		{"fits", needleChat(5, 100), 4096, "ANANAS-7734", false},
		{"layer 1 drops the first messages", needleChat(30, 200), 4096, Dont, true},
		{"secret in the system message survives layer 1", append([]Message{{Role: "system", Content: "SECRET: KIWI-1"}}, needleChat(30, 200)[1:]...), 4096, "KIWI-1", true},
		{"layer 2 cuts the head of one long message", []Message{{Role: "user", Content: "SECRET: ANANAS-7734\n" + filler(6000) + "\nWhat is the secret?"}}, 4096, Dont, true},
		{"layer 2 keeps the tail", []Message{{Role: "user", Content: filler(6000) + "\nSECRET: MANGO-2\nWhat is the secret?"}}, 4096, "MANGO-2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewOllama(OllamaOptions{Version: OllamaV033})
			c, _ := ollamaClient(t, s)
			var text strings.Builder
			var final api.ChatResponse
			err := c.Chat(context.Background(), &api.ChatRequest{
				Model: "llama3.2:latest", Messages: toAPI(tt.msgs), Options: map[string]any{"num_ctx": tt.numCtx},
			}, func(r api.ChatResponse) error {
				text.WriteString(r.Message.Content)
				if r.Done {
					final = r
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if text.String() != tt.want {
				t.Fatalf("answer = %q, want %q", text.String(), tt.want)
			}
			ev, _ := s.LastEval()
			if ev.Truncated != tt.truncated {
				t.Fatalf("truncated = %v, want %v", ev.Truncated, tt.truncated)
			}
			kept := layer1With(s, tt.msgs, tt.numCtx)
			want := s.CountChat(kept, nil)
			if want > tt.numCtx-1 {
				want = HalfWindowLimit(tt.numCtx, 4)
			}
			if final.PromptEvalCount != want || ev.KeptMessages != len(kept) {
				t.Fatalf("prompt_eval_count = %d kept %d messages, want %d and %d", final.PromptEvalCount, ev.KeptMessages, want, len(kept))
			}
			if final.DoneReason != "stop" || final.EvalCount != s.Counter().Count(tt.want) {
				t.Fatalf("done chunk: done_reason %q eval_count %d", final.DoneReason, final.EvalCount)
			}
		})
	}
}

// TestOllamaStreamDefault checks that /api/chat streams NDJSON when
// stream is absent, ending with a done chunk carrying the counts.
func TestOllamaStreamDefault(t *testing.T) {
	s := NewOllama(OllamaOptions{})
	_, base := ollamaClient(t, s)
	body := `{"model":"llama3.2","messages":[{"role":"user","content":"SECRET: ZZ-9 what is the secret?"}]}`
	resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != len(Tokenize("ZZ-9"))+1 {
		t.Fatalf("got %d lines: %v", len(lines), lines)
	}
	last := lines[len(lines)-1]
	for _, k := range []string{"model", "created_at", "message", "done", "done_reason", "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
		if _, ok := last[k]; !ok {
			t.Errorf("done chunk lacks %q: %v", k, last)
		}
	}
	msgs := []Message{{Role: "user", Content: "SECRET: ZZ-9 what is the secret?"}}
	if last["done"] != true || int(last["prompt_eval_count"].(float64)) != s.CountChat(msgs, nil) {
		t.Fatalf("done chunk = %v", last)
	}
	if lines[0]["done"] != false {
		t.Fatalf("first chunk = %v", lines[0])
	}

	// stream:false answers one JSON object.
	resp2, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(`{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var one api.ChatResponse
	if err := json.NewDecoder(resp2.Body).Decode(&one); err != nil {
		t.Fatal(err)
	}
	if !one.Done || one.Message.Content != "OK" || resp2.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("non-streaming = %+v", one)
	}
	if n := s.RequestCount("/api/chat"); n != 2 {
		t.Fatalf("RequestCount = %d", n)
	}
	if last, _ := s.LastRequest(); !strings.Contains(string(last.Body), `"stream":false`) {
		t.Fatalf("last body = %s", last.Body)
	}
}

func TestOllamaToolCall(t *testing.T) {
	s := NewOllama(OllamaOptions{})
	c, _ := ollamaClient(t, s)
	tools := api.Tools{{Type: "function", Function: api.ToolFunction{Name: "get_weather", Description: "Weather now.", Parameters: api.ToolFunctionParameters{Type: "object"}}}}
	for _, stream := range []bool{true, false} {
		var calls []api.ToolCall
		var final api.ChatResponse
		err := c.Chat(context.Background(), &api.ChatRequest{
			Model: "llama3.2", Stream: &stream, Tools: tools,
			Messages: []api.Message{{Role: "user", Content: `call tool get_weather {"city":"Toronto"}`}},
		}, func(r api.ChatResponse) error {
			calls = append(calls, r.Message.ToolCalls...)
			if r.Done {
				final = r
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || calls[0].Function.Name != "get_weather" {
			t.Fatalf("stream=%v calls = %+v", stream, calls)
		}
		if city, _ := calls[0].Function.Arguments.Get("city"); city != "Toronto" {
			t.Fatalf("arguments = %v", calls[0].Function.Arguments.String())
		}
		if final.EvalCount == 0 {
			t.Fatalf("done = %+v", final)
		}
	}
	// The tool result goes back; the history renders the call.
	args := api.NewToolCallFunctionArguments()
	args.Set("city", "Toronto")
	var final api.ChatResponse
	err := c.Chat(context.Background(), &api.ChatRequest{Model: "llama3.2", Tools: tools, Messages: []api.Message{
		{Role: "user", Content: "call tool get_weather"},
		{Role: "assistant", ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "get_weather", Arguments: args}}}},
		{Role: "tool", Content: "11 degrees", ToolName: "get_weather"},
	}}, func(r api.ChatResponse) error { final = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := s.LastEval()
	if !strings.Contains(ev.Prompt, `{"name":"get_weather","arguments":{"city":"Toronto"}}`) || final.Message.Content != "" {
		t.Fatalf("prompt = %s, reply %+v", ev.Prompt, final.Message)
	}
}

func TestOllamaErrors(t *testing.T) {
	long := []api.Message{{Role: "user", Content: filler(5000)}}
	tests := []struct {
		name   string
		opts   OllamaOptions
		req    api.ChatRequest
		status int
		want   string
	}{
		{"truncate false", OllamaOptions{Version: OllamaV033}, api.ChatRequest{Model: "llama3.2", Messages: long, Truncate: ptr(false)}, 400, OllamaPromptTooLong},
		{"no context shift", OllamaOptions{Version: OllamaV033, NoContextShift: true}, api.ChatRequest{Model: "llama3.2", Messages: long}, 400, OllamaPromptTooLong},
		{"shift false", OllamaOptions{Version: OllamaV033}, api.ChatRequest{Model: "llama3.2", Messages: long, Shift: ptr(false)}, 400, OllamaPromptTooLong},
		{"native path", OllamaOptions{Version: OllamaV033, Native: true}, api.ChatRequest{Model: "llama3.2", Messages: long}, 400,
			string(LlamaCppOverflowBody(NewOllama(OllamaOptions{}).CountChat([]Message{{Role: "user", Content: filler(5000)}}, nil), 4096))},
		{"unknown model", OllamaOptions{}, api.ChatRequest{Model: "nope", Messages: long}, 404, `model "nope" not found, try pulling it first`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := ollamaClient(t, NewOllama(tt.opts))
			err := c.Chat(context.Background(), &tt.req, func(api.ChatResponse) error { return nil })
			var se api.StatusError
			if !errors.As(err, &se) || se.StatusCode != tt.status || se.ErrorMessage != tt.want {
				t.Fatalf("err = %#v, want %d %q", err, tt.status, tt.want)
			}
		})
	}
}

func TestOllamaPassthroughEndpoints(t *testing.T) {
	s := NewOllama(OllamaOptions{Version: OllamaV033, Models: []string{"qwen3:14b", "llama3.2:latest"}, NumCtx: 8192, TrainedContext: 40960})
	c, base := ollamaClient(t, s)
	ctx := context.Background()

	tags, err := c.List(ctx)
	if err != nil || len(tags.Models) != 2 || tags.Models[0].Name != "qwen3:14b" {
		t.Fatalf("tags = %+v, %v", tags, err)
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: "qwen3:14b"})
	if err != nil || show.ModelInfo["llama.context_length"] != float64(40960) {
		t.Fatalf("show = %+v, %v", show, err)
	}
	ps, err := c.ListRunning(ctx)
	if err != nil || len(ps.Models) != 0 {
		t.Fatalf("ps before = %+v, %v", ps, err)
	}
	// A chat loads the model with its num_ctx (the server default here).
	if err := c.Chat(ctx, &api.ChatRequest{Model: "qwen3:14b", Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	ps, err = c.ListRunning(ctx)
	if err != nil || len(ps.Models) != 1 || ps.Models[0].ContextLength != 8192 || ps.Models[0].Name != "qwen3:14b" {
		t.Fatalf("ps after = %+v, %v", ps, err)
	}
	// keep_alive 0 unloads.
	resp, err := http.Post(base+"/api/generate", "application/json", strings.NewReader(`{"model":"qwen3:14b","keep_alive":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var unload api.GenerateResponse
	if err := json.NewDecoder(resp.Body).Decode(&unload); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if unload.DoneReason != "unload" || len(s.Loaded()) != 0 {
		t.Fatalf("unload = %+v, loaded %v", unload, s.Loaded())
	}

	emb, err := c.Embed(ctx, &api.EmbedRequest{Model: "qwen3:14b", Input: []string{"hello world", "b"}, Dimensions: 16})
	if err != nil || len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) != 16 || emb.PromptEvalCount != s.Counter().Count("hello world")+s.Counter().Count("b") {
		t.Fatalf("embed = %+v, %v", emb, err)
	}
	_, err = c.Embed(ctx, &api.EmbedRequest{Model: "qwen3:14b", Input: filler(9000), Truncate: ptr(false)})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.ErrorMessage != "the input length exceeds the context length" {
		t.Fatalf("embed too long: %v", err)
	}
	emb, err = c.Embed(ctx, &api.EmbedRequest{Model: "qwen3:14b", Input: filler(9000)})
	if err != nil || emb.PromptEvalCount != 8192 {
		t.Fatalf("embed truncated = %v, %v", emb.PromptEvalCount, err)
	}
	if v, err := c.Version(ctx); err != nil || v != OllamaV033 {
		t.Fatalf("version = %q, %v", v, err)
	}
	if err := c.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOllamaOpenAICompat checks Ollama's /v1 endpoints through the
// official OpenAI client: the default window, silent truncation, usage
// equal to prompt_eval_count.
func TestOllamaOpenAICompat(t *testing.T) {
	s := NewOllama(OllamaOptions{})
	c, _ := oaiClient(t, s)
	ctx := context.Background()
	tests := []struct {
		name    string
		n, size int
		want    string
	}{
		{"fits", 3, 100, "ANANAS-7734"},
		{"silently truncated", 30, 200, Dont},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "llama3.2", Messages: oaiNeedle("SECRET: ANANAS-7734", tt.n, tt.size)})
			if err != nil {
				t.Fatal(err)
			}
			msgs := []Message{{Role: "system", Content: "You are careful."}, {Role: "user", Content: "SECRET: ANANAS-7734"}}
			for range tt.n {
				msgs = append(msgs, Message{Role: "user", Content: filler(tt.size)})
			}
			msgs = append(msgs, Message{Role: "user", Content: "What is the secret?"})
			want := s.CountChat(layer1With(s, msgs, 4096), nil)
			if res.Choices[0].Message.Content != tt.want || res.Usage.PromptTokens != int64(want) {
				t.Fatalf("response = %q prompt_tokens %d, want %q %d", res.Choices[0].Message.Content, res.Usage.PromptTokens, tt.want, want)
			}
		})
	}
	page, err := c.Models.List(ctx)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "llama3.2:latest" {
		t.Fatalf("models = %+v, %v", page, err)
	}
}

// TestOllamaClampsNumCtxV033 checks that on v0.33 a num_ctx over the
// trained window loads the trained window and cuts to half of it.
func TestOllamaClampsNumCtxV033(t *testing.T) {
	s := NewOllama(OllamaOptions{Version: OllamaV033, TrainedContext: 8192})
	c, _ := ollamaClient(t, s)
	err := c.Chat(context.Background(), &api.ChatRequest{Model: "llama3.2", Messages: []api.Message{{Role: "user", Content: filler(9000)}}, Options: map[string]any{"num_ctx": 200000}},
		func(api.ChatResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := s.LastEval()
	if got := s.Loaded()["llama3.2:latest"]; got != 8192 || ev.PromptTokens != HalfWindowLimit(8192, 4) {
		t.Fatalf("loaded num_ctx %d, prompt tokens %d", got, ev.PromptTokens)
	}
}
