package guard_test

import (
	"encoding/json"
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

// TestModelsWindow: GET /v1/models says, per model, the window its backend
// has loaded and the budget (llama.cpp's per-slot n_ctx, Ollama's loaded
// context_length, the configured window of an OpenAI-compatible model),
// keeps a context_length the backend gave, passes the client's credentials
// to the backends, and is passed through untouched under the off policy.
func TestModelsWindow(t *testing.T) {
	oll := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 8192})
	lcp := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{Model: "qwen.gguf", NCtx: 2048})
	oai := llmemu.NewOpenAI(llmemu.OpenAIOptions{Models: []string{"gpt-4o-mini"}})
	ollURL := serve(t, oll)
	opts := guard.Options{Ollama: ollURL, LlamaCpp: serve(t, lcp), OpenAI: serve(t, oai), Windows: map[string]int{"gpt-4o-mini": 128000}}
	gw := newGuard(t, opts)
	// A chat through the guard loads the Ollama model at the server's
	// default window (OLLAMA_CONTEXT_LENGTH 8192), which the guard learns
	// from that load.
	if resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": "hi"}}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	type model struct {
		ID            string `json:"id"`
		ContextLength int    `json:"context_length"`
		Ctxkit        struct {
			Backend string `json:"backend"`
			Window  int    `json:"window"`
			Budget  int    `json:"budget"`
		} `json:"ctxkit"`
	}
	get := func(gw string) map[string]model {
		req, err := http.NewRequest(http.MethodGet, gw+"/v1/models", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list struct {
			Data []model `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		out := map[string]model{}
		for _, m := range list.Data {
			out[m.ID] = m
		}
		return out
	}
	models := get(gw)
	for id, want := range map[string]struct {
		backend string
		window  int
	}{"qwen.gguf": {"llamacpp", 2048}, "llama3.2:latest": {"ollama", 8192}, "gpt-4o-mini": {"openai", 128000}} {
		m := models[id]
		if m.Ctxkit.Backend != want.backend || m.Ctxkit.Window != want.window || m.ContextLength != want.window || m.Ctxkit.Budget <= 0 || m.Ctxkit.Budget >= want.window {
			t.Errorf("%s: %+v, want %s with window %d", id, m, want.backend, want.window)
		}
	}
	if reqs := oai.Requests(); len(reqs) == 0 || reqs[len(reqs)-1].Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("the client's credentials did not reach the backend: %v", reqs)
	}

	opts.Policy = guard.PolicyOff
	for _, m := range get(newGuard(t, opts)) {
		if m.Ctxkit.Backend != "" {
			t.Errorf("off: %+v", m)
		}
	}
}
