package guard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// openaiChat asks the guard at base through openai-go, with msgs as the
// raw messages, and returns the reply and the report.
func openaiChat(t *testing.T, base string, msgs []msg, stream bool) (string, *guard.Report) {
	t.Helper()
	c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "model.gguf", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("placeholder")}}
	set := option.WithJSONSet("messages", msgs)
	ctx := context.Background()
	var rep *guard.Report
	decode := func(raw string) {
		if raw == "" {
			return
		}
		rep = &guard.Report{}
		if err := json.Unmarshal([]byte(raw), rep); err != nil {
			t.Fatalf("report %s: %v", raw, err)
		}
	}
	if !stream {
		resp, err := c.Chat.Completions.New(ctx, params, set)
		if err != nil {
			t.Fatal(err)
		}
		decode(resp.JSON.ExtraFields["ctxkit"].Raw())
		return resp.Choices[0].Message.Content, rep
	}
	s := c.Chat.Completions.NewStreaming(ctx, params, set)
	var text strings.Builder
	for s.Next() {
		ch := s.Current()
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
		decode(ch.JSON.ExtraFields["ctxkit"].Raw())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return text.String(), rep
}

// TestOllamaClient uses the real Ollama Go client against the guard:
// streaming chat keeps the secret and the done chunk parses.
func TestOllamaClient(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu)})
	u, err := url.Parse(gw)
	if err != nil {
		t.Fatal(err)
	}
	c := ollama.NewClient(u, http.DefaultClient)
	var msgs []ollama.Message
	for _, m := range agentHistory(12, 300, false) {
		data, _ := json.Marshal(m)
		var om ollama.Message
		if err := json.Unmarshal(data, &om); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, om)
	}
	var text strings.Builder
	var last ollama.ChatResponse
	err = c.Chat(context.Background(), &ollama.ChatRequest{Model: "llama3.2", Messages: msgs}, func(r ollama.ChatResponse) error {
		text.WriteString(r.Message.Content)
		last = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), secret) || !last.Done || last.PromptEvalCount == 0 {
		t.Errorf("%q %+v", text.String(), last)
	}
	var list *ollama.ListResponse
	if list, err = c.List(context.Background()); err != nil || len(list.Models) == 0 {
		t.Errorf("list through the guard: %v %v", list, err)
	}
}

// TestOpenAIServer: an OpenAI-compatible server, with tool calls that it
// rejects when orphaned, through openai-go.
func TestOpenAIServer(t *testing.T) {
	emu := llmemu.NewOpenAI(llmemu.OpenAIOptions{MaxContext: 8192, Models: []string{"model.gguf"}})
	gw := newGuard(t, guard.Options{OpenAI: serve(t, emu), Windows: map[string]int{"model.gguf": 8192}})
	msgs := agentHistory(30, 200, true)
	text, rep := openaiChat(t, gw, msgs, false)
	if !strings.Contains(text, secret) || rep == nil || !rep.Compacted || rep.Window != 8192 {
		t.Errorf("%q %+v", text, rep)
	}
}
