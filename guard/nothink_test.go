package guard_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestNoThinkReachesBackends: with NoThink, each backend receives the
// switch it reads, and without it the request is not touched.
func TestNoThinkReachesBackends(t *testing.T) {
	oll := llmemu.NewOllama(llmemu.OllamaOptions{})
	lcpp := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{})
	ollURL, lcppURL := serve(t, oll), serve(t, lcpp)
	chat := msg{"model": "llama3.2", "stream": false, "messages": []msg{{"role": "user", "content": "hi"}}}
	for _, tc := range []struct {
		name    string
		noThink bool
		emu     interface{ LastRequest() (llmemu.Request, bool) }
		path    string
		body    msg
		want    string
	}{
		{"ollama native", true, oll, "/api/chat", chat, `"think":false`},
		{"ollama generate", true, oll, "/api/generate", msg{"model": "llama3.2", "stream": false, "prompt": "hi"}, `"think":false`},
		{"ollama v1", true, oll, "/v1/chat/completions", chat, `"reasoning_effort":"none"`},
		{"llama.cpp", true, lcpp, "/v1/chat/completions", msg{"model": "model.gguf", "messages": chat["messages"]}, `"chat_template_kwargs":{"enable_thinking":false}`},
		{"off", false, oll, "/api/chat", chat, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := newGuard(t, guard.Options{Ollama: ollURL, LlamaCpp: lcppURL, NoThink: tc.noThink})
			resp, body := postJSON(t, gw+tc.path, tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			req, _ := tc.emu.LastRequest()
			if tc.want == "" {
				for _, k := range []string{"think", "reasoning_effort", "chat_template_kwargs"} {
					if bytes.Contains(req.Body, []byte(`"`+k+`"`)) {
						t.Errorf("upstream got %s: %s", k, req.Body)
					}
				}
				return
			}
			if !bytes.Contains(req.Body, []byte(tc.want)) {
				t.Errorf("upstream body lacks %s: %s", tc.want, req.Body)
			}
		})
	}
}
