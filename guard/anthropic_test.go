package guard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// anthropicHistory is agentHistory in Anthropic's format: tool_use blocks
// in assistant messages, tool_result blocks in the next user message.
func anthropicHistory(rounds, fillerWords int) []msg {
	msgs := []msg{{"role": "user", "content": "Your task. SECRET: " + secret + "\nRemember it."}}
	for i := range rounds {
		id := fmt.Sprintf("toolu_%02d", i)
		msgs = append(msgs,
			msg{"role": "assistant", "content": []msg{{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": id, "name": "read_file", "input": msg{"path": fmt.Sprintf("f%d.txt", i)}}}},
			msg{"role": "user", "content": []msg{{"type": "tool_result", "tool_use_id": id, "content": fmt.Sprintf("file %d: %s", i, strings.Repeat("lorem ipsum dolor ", fillerWords))}}})
	}
	return append(msgs, msg{"role": "assistant", "content": "Done reading."}, msg{"role": "user", "content": "What is the secret?"})
}

// sdkRequest is req (model, max_tokens, system, messages, tools) as the
// official SDK sends it to the guard at gw: the parameters and the options
// that set req's raw messages, system and tools.
func sdkRequest(gw string, req msg) (anthropic.Client, anthropic.MessageNewParams, []option.RequestOption) {
	c := anthropic.NewClient(option.WithBaseURL(gw), option.WithAPIKey("x"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: anthropic.Model(req["model"].(string)), MaxTokens: int64(req["max_tokens"].(int)),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("placeholder"))}}
	opts := []option.RequestOption{option.WithJSONSet("messages", req["messages"]), option.WithJSONSet("system", req["system"]), option.WithJSONSet("tools", req["tools"])}
	return c, params, opts
}

// sdkReport is the guard's report in an answer the SDK decoded.
func sdkReport(t *testing.T, m *anthropic.Message) guard.Report {
	t.Helper()
	var rep guard.Report
	if err := json.Unmarshal([]byte(m.JSON.ExtraFields["ctxkit"].Raw()), &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	return rep
}

// TestAnthropic: the emulator refuses the overflowing history directly
// (400 prompt is too long); through the guard, with the official SDK as
// the client and streaming too, it answers with the secret, and the tool
// pairs it received are whole (it would answer 400 otherwise).
func TestAnthropic(t *testing.T) {
	emu := llmemu.NewAnthropic(llmemu.AnthropicOptions{MaxContext: 4096})
	up := serve(t, emu)
	gw := newGuard(t, guard.Options{Anthropic: up, Windows: map[string]int{"claude-sonnet-4-5": 4096}})
	req := msg{"model": "claude-sonnet-4-5", "max_tokens": 256, "system": "You are a careful agent.", "messages": anthropicHistory(12, 300),
		"tools": []msg{{"name": "read_file", "description": "read a file", "input_schema": msg{"type": "object"}}}}
	resp, body := postJSON(t, up+"/v1/messages", req)
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("prompt is too long")) {
		t.Fatalf("directly: %d %s", resp.StatusCode, body)
	}

	c, params, opts := sdkRequest(gw, req)
	m, err := c.Messages.New(context.Background(), params, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep := sdkReport(t, m)
	if len(m.Content) == 0 || !strings.Contains(m.Content[0].Text, secret) || !rep.Compacted || rep.Window != 4096 {
		t.Errorf("%+v %+v", m.Content, rep)
	}

	req["stream"] = true
	resp, body = postJSON(t, gw+"/v1/messages", req)
	if ev, _ := emu.LastEval(); resp.StatusCode != http.StatusOK || ev.Reply.Text != secret {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.Contains(line, `"ctxkit"`) && !strings.Contains(line, `"message_delta"`) {
			t.Errorf("report outside message_delta: %s", line)
		}
	}
	if !strings.Contains(string(body), `"ctxkit"`) {
		t.Errorf("no report in the stream")
	}
	// count_tokens passes through.
	resp, body = postJSON(t, gw+"/v1/messages/count_tokens", msg{"model": "claude-sonnet-4-5", "messages": []msg{{"role": "user", "content": "hi"}}})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("input_tokens")) {
		t.Errorf("count_tokens: %d %s", resp.StatusCode, body)
	}
}

// TestAnthropicMixedBlocks: user messages that hold tool results and text
// together, an image, a huge recent tool result shrunk in place: whatever
// the guard rebuilds, the API's pairing rules hold (the emulator answers
// 400 otherwise) and untouched messages are sent byte for byte.
func TestAnthropicMixedBlocks(t *testing.T) {
	emu := llmemu.NewAnthropic(llmemu.AnthropicOptions{MaxContext: 4096})
	gw := newGuard(t, guard.Options{Anthropic: serve(t, emu), Windows: map[string]int{"claude-sonnet-4-5": 4096}, KeepRecent: 2})
	img := msg{"type": "image", "source": msg{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
	msgs := []msg{{"role": "user", "content": []msg{{"type": "text", "text": "Task. SECRET: " + secret}, img}}}
	for i := range 10 {
		id := fmt.Sprintf("toolu_%02d", i)
		msgs = append(msgs,
			msg{"role": "assistant", "content": []msg{{"type": "tool_use", "id": id, "name": "read_file", "input": msg{"i": i}}}},
			msg{"role": "user", "content": []msg{{"type": "tool_result", "tool_use_id": id, "content": []msg{{"type": "text", "text": strings.Repeat("data ", 200)}}}, {"type": "text", "text": "continue"}}})
	}
	msgs = append(msgs,
		msg{"role": "assistant", "content": []msg{{"type": "tool_use", "id": "toolu_big", "name": "read_file", "input": msg{}}}},
		msg{"role": "user", "content": []msg{{"type": "tool_result", "tool_use_id": "toolu_big", "content": strings.Repeat("huge output line\n", 1500) + "end"}, {"type": "text", "text": "What is the secret?"}}})
	resp, body := postJSON(t, gw+"/v1/messages", msg{"model": "claude-sonnet-4-5", "max_tokens": 256, "messages": msgs})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var out struct {
		Content []struct{ Text string } `json:"content"`
		Ctxkit  guard.Report            `json:"ctxkit"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Content) == 0 || out.Content[0].Text != secret || !out.Ctxkit.Compacted {
		t.Errorf("%s", body)
	}
	last, _ := emu.LastRequest()
	first, _ := json.Marshal(msgs[0])
	if !bytes.Contains(last.Body, first) {
		t.Errorf("the task message changed")
	}
}
