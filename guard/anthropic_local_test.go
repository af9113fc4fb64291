package guard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestAnthropicOnOllama is Claude Code pointed at a local model: the
// Messages API served by Ollama, which cuts an overflowing prompt from the
// front silently. Directly, the task's secret is lost with a 200; through
// the guard (Ollama its only backend), with the official SDK as the client,
// the window is Ollama's loaded one, the secret is kept, and
// /v1/messages/count_tokens, which Ollama lacks, is answered by the guard.
func TestAnthropicOnOllama(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	gw := newGuard(t, guard.Options{Ollama: up})
	req := msg{"model": "llama3.2", "max_tokens": 256, "system": "You are a careful agent.", "messages": anthropicHistory(12, 300),
		"tools": []msg{{"name": "read_file", "description": "read a file", "input_schema": msg{"type": "object"}}}}

	resp, body := postJSON(t, up+"/v1/messages", req)
	if ev, _ := emu.LastEval(); resp.StatusCode != http.StatusOK || !ev.Truncated || strings.Contains(string(body), secret) {
		t.Fatalf("directly: %d truncated=%v %s", resp.StatusCode, ev.Truncated, body)
	}

	c, params, opts := sdkRequest(gw, req)
	m, err := c.Messages.New(context.Background(), params, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep := sdkReport(t, m)
	if ev, _ := emu.LastEval(); len(m.Content) == 0 || !strings.Contains(m.Content[0].Text, secret) || !rep.Compacted || rep.Window != 4096 || rep.Backend != "ollama" || ev.Truncated {
		t.Errorf("through the guard: %+v %+v truncated=%v", m.Content, rep, ev.Truncated)
	}

	stream := c.Messages.NewStreaming(context.Background(), params, opts...)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil || len(acc.Content) == 0 || !strings.Contains(acc.Content[0].Text, secret) {
		t.Errorf("stream: %v %+v", err, acc.Content)
	}

	count, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "llama3.2", Messages: params.Messages}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if n := int(count.InputTokens); n < rep.TokensBefore/2 || n > rep.TokensBefore*2 {
		t.Errorf("count_tokens %d, the guard counted %d before compaction", count.InputTokens, rep.TokensBefore)
	}
	if n := emu.RequestCount("/v1/messages/count_tokens"); n != 0 {
		t.Errorf("count_tokens reached Ollama %d times", n)
	}
}
