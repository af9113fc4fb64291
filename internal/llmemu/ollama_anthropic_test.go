package llmemu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOllamaAnthropicTruncates: Ollama's /v1/messages cuts an over-long
// prompt from the front silently, answers 200 in the Anthropic shape, and
// reports the tokens kept as input_tokens; streaming gives the Anthropic
// events.
func TestOllamaAnthropicTruncates(t *testing.T) {
	srv := httptest.NewServer(NewOllama(OllamaOptions{NumCtx: 1024}))
	defer srv.Close()
	msgs := []map[string]any{{"role": "user", "content": "The secret is " + "ANANAS-7734."}}
	for range 6 {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": strings.Repeat("filler words here ", 60)})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": "What is the secret?"})
	for _, stream := range []bool{false, true} {
		body, _ := json.Marshal(map[string]any{"model": "llama3.2", "max_tokens": 64, "stream": stream, "messages": msgs})
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		out := buf.String()
		if resp.StatusCode != http.StatusOK || strings.Contains(out, "ANANAS-7734") {
			t.Errorf("stream=%v: %d %s", stream, resp.StatusCode, out)
		}
		if stream && (!strings.Contains(out, "event: message_start") || !strings.Contains(out, "event: message_stop")) {
			t.Errorf("stream events: %s", out)
		}
		if !stream {
			var m struct {
				Type  string `json:"type"`
				Usage struct {
					InputTokens int `json:"input_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m.Type != "message" || m.Usage.InputTokens <= 0 || m.Usage.InputTokens >= 1024 {
				t.Errorf("%v %+v", err, m)
			}
		}
	}
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"absent","max_tokens":5,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown model: %d", resp.StatusCode)
	}
}
