package guard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestFixedRoutes: Options.Routes sends a model to the backend it names
// even when another backend lists it; a route to a backend that is not
// configured is refused at start.
func TestFixedRoutes(t *testing.T) {
	oll := llmemu.NewOllama(llmemu.OllamaOptions{})
	oai := llmemu.NewOpenAI(llmemu.OpenAIOptions{Models: []string{"gpt-4o-mini", "llama3.2"}})
	ollURL, oaiURL := serve(t, oll), serve(t, oai)
	chat := func(model string) msg {
		return msg{"model": model, "messages": []msg{{"role": "user", "content": "hi"}}}
	}
	for _, tc := range []struct {
		name      string
		routes    map[string]string
		model     string
		wantOllam int
	}{
		{"discovered", nil, "llama3.2", 0}, // both list it: the OpenAI-compatible server comes first
		{"routed", map[string]string{"llama3.2": "ollama"}, "llama3.2", 1},
		{"other models still discovered", map[string]string{"llama3.2": "ollama"}, "gpt-4o-mini", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oll.Reset()
			oai.Reset()
			gw := newGuard(t, guard.Options{Ollama: ollURL, OpenAI: oaiURL, Routes: tc.routes})
			if resp, body := postJSON(t, gw+"/v1/chat/completions", chat(tc.model)); resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			got := oll.RequestCount("/v1/chat/completions")
			if got != tc.wantOllam || got+oai.RequestCount("/v1/chat/completions") != 1 {
				t.Errorf("ollama got %d requests, want %d", got, tc.wantOllam)
			}
		})
	}
	_, err := guard.New(guard.Options{Ollama: ollURL, Routes: map[string]string{"m": "llamacpp"}})
	if err == nil || !strings.Contains(err.Error(), "no llamacpp backend") {
		t.Errorf("route to an absent backend: %v", err)
	}
}
