package llmemu

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

func anthropicClient(t *testing.T, s *Anthropic) (anthropic.Client, string) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return anthropic.NewClient(
		option.WithBaseURL(srv.URL), option.WithAPIKey("test"),
		option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()),
	), srv.URL
}

func anthropicNeedle(first string, n, size int) ([]anthropic.MessageParam, int) {
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(first)), anthropic.NewAssistantMessage(anthropic.NewTextBlock("Noted."))}
	ours := []Message{{Role: "system", Content: "You are careful."}, {Role: "user", Content: first}, {Role: "assistant", Content: "Noted."}}
	for range n {
		msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(filler(size))), anthropic.NewAssistantMessage(anthropic.NewTextBlock("OK")))
		ours = append(ours, Message{Role: "user", Content: filler(size)}, Message{Role: "assistant", Content: "OK"})
	}
	msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock("What is the secret?")))
	ours = append(ours, Message{Role: "user", Content: "What is the secret?"})
	return msgs, countChatWith(TinyBPE(), ours, nil, false)
}

func TestAnthropicMessages(t *testing.T) {
	s := NewAnthropic(AnthropicOptions{MaxContext: 10000})
	c, base := anthropicClient(t, s)
	ctx := context.Background()
	msgs, want := anthropicNeedle("SECRET: ANANAS-7734", 3, 100)
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, System: []anthropic.TextBlockParam{{Text: "You are careful."}}, Messages: msgs}

	res, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "ANANAS-7734" || res.Usage.InputTokens != int64(want) || res.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("response = %+v, want input_tokens %d", res, want)
	}

	count, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5", Messages: msgs,
		System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: []anthropic.TextBlockParam{{Text: "You are careful."}}}})
	if err != nil || count.InputTokens != int64(want) {
		t.Fatalf("count_tokens = %+v, %v; want %d", count, err, want)
	}

	stream := c.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Content[0].Text != "ANANAS-7734" || acc.Usage.InputTokens != int64(want) || acc.Usage.OutputTokens != int64(TinyBPE().Count("ANANAS-7734")) || acc.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("accumulated = %+v", acc)
	}
	// The SDK hides ping events; the wire has them.
	wantTypes := "message_start content_block_start ping" + strings.Repeat(" content_block_delta", len(Tokenize("ANANAS-7734"))) + " content_block_stop message_delta message_stop"
	if got := strings.Join(types, " "); got != strings.Replace(wantTypes, " ping", "", 1) {
		t.Fatalf("events = %v\nwant %v", got, wantTypes)
	}
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":9,"stream":true,"system":"You are careful.","messages":[{"role":"user","content":"SECRET: ANANAS-7734 what is the secret?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, block := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(block, "\n")
		ev, ok1 := strings.CutPrefix(name, "event: ")
		payload, ok2 := strings.CutPrefix(data, "data: ")
		if !ok || !ok1 || !ok2 || !strings.Contains(payload, `"type":"`+ev+`"`) {
			t.Fatalf("SSE block %q", block)
		}
		names = append(names, ev)
	}
	if got := strings.Join(names, " "); got != wantTypes || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("wire events = %v\nwant %v", got, wantTypes)
	}

	// Too long: the API's 400.
	long, n := anthropicNeedle("SECRET: X", 60, 200)
	_, err = c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 10, System: params.System, Messages: long})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("err = %v", err)
	}
	if body := `{"type":"error","error":{"type":"invalid_request_error","message":"` + PromptTooLong(n, 10000) + `"}}`; apiErr.RawJSON() != body {
		t.Fatalf("body = %s\nwant %s", apiErr.RawJSON(), body)
	}
	if string(apiErr.Type()) != "invalid_request_error" {
		t.Fatalf("type = %q", apiErr.Type())
	}
	// max_tokens cuts the answer.
	res, err = c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1, Messages: msgs})
	if err != nil || res.Content[0].Text != TinyBPE().Split("ANANAS-7734")[0] || res.StopReason != anthropic.StopReasonMaxTokens {
		t.Fatalf("limited = %+v, %v", res, err)
	}
}

func TestAnthropicToolUse(t *testing.T) {
	s := NewAnthropic(AnthropicOptions{})
	c, base := anthropicClient(t, s)
	ctx := context.Background()
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", Description: anthropic.String("Weather now."),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}
	ask := anthropic.NewUserMessage(anthropic.NewTextBlock(`call tool get_weather {"city":"Paris"}`))
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Tools: tools, Messages: []anthropic.MessageParam{ask}}

	stream := c.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Type != "tool_use" || acc.Content[0].Name != "get_weather" || string(acc.Content[0].Input) != `{"city":"Paris"}` || acc.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("accumulated = %+v", acc)
	}
	use := acc.Content[0]

	history := []anthropic.MessageParam{ask, acc.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "14 degrees", false))}
	if _, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Tools: tools, Messages: history}); err != nil {
		t.Fatal(err)
	}
	ev, _ := s.LastEval()
	if !strings.Contains(ev.Prompt, `{"name":"get_weather","arguments":{"city":"Paris"}}`) || !strings.Contains(ev.Prompt, "<tool_response>\n14 degrees\n</tool_response>") {
		t.Fatalf("prompt = %s", ev.Prompt)
	}

	tests := []struct {
		name string
		msgs []anthropic.MessageParam
		want string
	}{
		{"orphan result", []anthropic.MessageParam{ask, history[2]}, "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: " + use.ID + ". Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"unanswered use", []anthropic.MessageParam{ask, history[1], anthropic.NewUserMessage(anthropic.NewTextBlock("hm"))}, "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: " + use.ID + ". Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Tools: tools, Messages: tt.msgs})
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != tt.want {
				t.Fatalf("err = %v", err)
			}
		})
	}

	resp, body := post(t, base+"/v1/messages", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(body), "max_tokens: Field required") {
		t.Fatalf("missing max_tokens = %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, base+"/v1/models")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"id":"claude-sonnet-4-5"`) {
		t.Fatalf("models = %s", body)
	}
}
