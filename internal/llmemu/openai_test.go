package llmemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// oaiClient serves h and returns the official OpenAI client pointed at
// it, and its base URL.
func oaiClient(t *testing.T, h http.Handler) (openai.Client, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("test"),
		option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()),
	), srv.URL
}

func oaiNeedle(first string, n, size int) []openai.ChatCompletionMessageParamUnion {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are careful."), openai.UserMessage(first)}
	for range n {
		msgs = append(msgs, openai.UserMessage(filler(size)))
	}
	return append(msgs, openai.UserMessage("What is the secret?"))
}

// oaiCount is the default counter's count of the same conversation.
func oaiCount(first string, n, size int) int {
	msgs := []Message{{Role: "system", Content: "You are careful."}, {Role: "user", Content: first}}
	for range n {
		msgs = append(msgs, Message{Role: "user", Content: filler(size)})
	}
	return countChatWith(TinyBPE(), append(msgs, Message{Role: "user", Content: "What is the secret?"}), nil, false)
}

func TestOpenAIChat(t *testing.T) {
	s := NewOpenAI(OpenAIOptions{MaxContext: 8000})
	c, _ := oaiClient(t, s)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: oaiNeedle("SECRET: ANANAS-7734", 3, 100)}

	res, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	want := oaiCount("SECRET: ANANAS-7734", 3, 100)
	if res.Choices[0].Message.Content != "ANANAS-7734" || res.Usage.PromptTokens != int64(want) || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("response = %+v, want prompt_tokens %d", res, want)
	}

	// Streaming with include_usage, parsed by the SDK's accumulator.
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "ANANAS-7734" || acc.Usage.PromptTokens != int64(want) || acc.Usage.CompletionTokens != int64(TinyBPE().Count("ANANAS-7734")) {
		t.Fatalf("accumulated = %+v", acc.ChatCompletion)
	}
	if chunks != 1+len(Tokenize("ANANAS-7734"))+2 {
		t.Fatalf("chunks = %d", chunks)
	}

	// Over the window: 400 context_length_exceeded.
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: oaiNeedle("SECRET: X", 50, 200)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" || apiErr.Type != "invalid_request_error" || apiErr.Param != "messages" {
		t.Fatalf("err = %v", err)
	}
	if want := ContextLengthExceeded(8000, oaiCount("SECRET: X", 50, 200)); apiErr.Message != want {
		t.Fatalf("message = %q, want %q", apiErr.Message, want)
	}
	// Prompt plus max_tokens over the window: the older phrasing.
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: oaiNeedle("x", 1, 10), MaxTokens: openai.Int(7990)})
	if !errors.As(err, &apiErr) || apiErr.Code != "context_length_exceeded" || !strings.Contains(apiErr.Message, "in the completion") {
		t.Fatalf("err = %v", err)
	}
	// max_tokens cuts the answer: finish_reason length.
	res, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: oaiNeedle("SECRET: ANANAS-7734", 0, 0), MaxTokens: openai.Int(2)})
	if want := strings.Join(TinyBPE().Split("ANANAS-7734")[:2], ""); err != nil || res.Choices[0].Message.Content != want || res.Choices[0].FinishReason != "length" {
		t.Fatalf("limited = %+v, %v", res, err)
	}
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope", Messages: oaiNeedle("x", 0, 0)})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("unknown model: %v", err)
	}
}

// TestOpenAIStreamWire checks the SSE bytes: data lines, usage null on
// every chunk but the last usage chunk, empty choices there, [DONE] last.
func TestOpenAIStreamWire(t *testing.T) {
	_, base := oaiClient(t, NewOpenAI(OpenAIOptions{}))
	tests := []struct {
		name         string
		includeUsage bool
	}{{"with usage", true}, {"without usage", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello"}]}`
			if tt.includeUsage {
				body = `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]}`
			}
			resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type = %q", ct)
			}
			events := sseData(t, resp.Body)
			if events[len(events)-1] != "[DONE]" {
				t.Fatalf("last event = %q", events[len(events)-1])
			}
			var chunks []map[string]json.RawMessage
			for _, e := range events[:len(events)-1] {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(e), &m); err != nil {
					t.Fatal(err)
				}
				chunks = append(chunks, m)
			}
			wantChunks := 3 // role, "OK", finish
			if tt.includeUsage {
				wantChunks = 4
			}
			if len(chunks) != wantChunks {
				t.Fatalf("chunks = %d: %q", len(chunks), events)
			}
			for i, c := range chunks {
				u, has := c["usage"]
				switch {
				case !tt.includeUsage && has:
					t.Fatalf("chunk %d has usage without include_usage", i)
				case tt.includeUsage && i < len(chunks)-1 && string(u) != "null":
					t.Fatalf("chunk %d usage = %s", i, u)
				}
			}
			if tt.includeUsage {
				last := chunks[len(chunks)-1]
				if string(last["choices"]) != "[]" || !strings.Contains(string(last["usage"]), `"prompt_tokens":`) {
					t.Fatalf("usage chunk = %v", last)
				}
			}
			fin := string(chunks[len(chunks)-1]["choices"])
			if tt.includeUsage {
				fin = string(chunks[len(chunks)-2]["choices"])
			}
			if fin != `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]` {
				t.Fatalf("finish chunk choices = %s", fin)
			}
		})
	}
}

// sseData returns the data payloads of an SSE body.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Description: openai.String("Weather now."),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})
}

func TestOpenAIToolCalls(t *testing.T) {
	s := NewOpenAI(OpenAIOptions{})
	c, _ := oaiClient(t, s)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Tools: []openai.ChatCompletionToolUnionParam{weatherTool()},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(`call tool get_weather {"city":"Paris"}`)},
	}
	res, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	calls := res.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` || res.Choices[0].FinishReason != "tool_calls" || calls[0].ID == "" {
		t.Fatalf("response = %+v", res.Choices[0])
	}

	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(finished) != 1 || finished[0].Name != "get_weather" || finished[0].Arguments != `{"city":"Paris"}` {
		t.Fatalf("streamed calls = %+v, acc %+v", finished, acc.Choices)
	}

	// The call and its result go back; then an orphan is refused.
	call := calls[0]
	history := []openai.ChatCompletionMessageParamUnion{
		params.Messages[0],
		res.Choices[0].Message.ToParam(),
		openai.ToolMessage("14 degrees", call.ID),
	}
	if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Tools: params.Tools, Messages: history}); err != nil {
		t.Fatal(err)
	}
	ev, _ := s.LastEval()
	if !strings.Contains(ev.Prompt, `{"name":"get_weather","arguments":{"city":"Paris"}}`) || !strings.Contains(ev.Prompt, "14 degrees") {
		t.Fatalf("prompt = %s", ev.Prompt)
	}
	tests := []struct {
		name     string
		msgs     []openai.ChatCompletionMessageParamUnion
		msg, prm string
	}{
		{"orphan result", []openai.ChatCompletionMessageParamUnion{history[0], history[2]}, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "messages.[1].role"},
		{"unanswered call", history[:2], "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + call.ID, "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: tt.msgs})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != tt.msg || apiErr.Param != tt.prm {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestOpenAIModelsAndEmbeddings(t *testing.T) {
	c, base := oaiClient(t, NewOpenAI(OpenAIOptions{Models: []string{"m1", "m2"}}))
	ctx := context.Background()
	page, err := c.Models.List(ctx)
	if err != nil || len(page.Data) != 2 || page.Data[1].ID != "m2" {
		t.Fatalf("models = %+v, %v", page, err)
	}
	m, err := c.Models.Get(ctx, "m1")
	if err != nil || m.ID != "m1" {
		t.Fatalf("model = %+v, %v", m, err)
	}
	emb, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "m1", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world"}}, Dimensions: openai.Int(32)})
	if err != nil || len(emb.Data) != 2 || len(emb.Data[1].Embedding) != 32 || emb.Usage.PromptTokens != int64(TinyBPE().Count("hello")+TinyBPE().Count("world")) {
		t.Fatalf("embeddings = %+v, %v", emb, err)
	}
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"model":"m1","prompt":"SECRET: K-1 what is the secret?","max_tokens":10}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Choices[0].Text != "K-1" {
		t.Fatalf("completions = %+v, %v", out, err)
	}
}
