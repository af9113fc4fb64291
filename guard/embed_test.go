package guard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestEmbedTruncation: Ollama's /api/embed cuts the end of an input longer
// than the model's window and says nothing. Through the guard the answer is
// Ollama's, with the inputs that were cut named in a header and a ctxkit
// field (the model's window read from /api/ps, after Ollama loaded it for
// the first request); strict refuses such a request before sending it once
// the window is known; truncate false goes through, and Ollama refuses.
func TestEmbedTruncation(t *testing.T) {
	long := strings.Repeat("a long document about the guard ", 200)
	inputs := []string{"short text", long, "another short one"}
	for _, tc := range []struct {
		name      string
		policy    guard.Policy
		body      msg
		status    int
		truncated string // the header
		sent      bool
	}{
		{"compact", guard.PolicyCompact, msg{"model": "all-minilm", "input": inputs}, http.StatusOK, "1", true},
		{"observe", guard.PolicyObserve, msg{"model": "all-minilm", "input": inputs}, http.StatusOK, "1", true},
		{"one string", guard.PolicyCompact, msg{"model": "all-minilm", "input": long}, http.StatusOK, "0", true},
		{"fits", guard.PolicyCompact, msg{"model": "all-minilm", "input": []string{"short"}}, http.StatusOK, "", true},
		{"num_ctx", guard.PolicyStrict, msg{"model": "all-minilm", "input": inputs, "options": msg{"num_ctx": 8192}}, http.StatusOK, "", true},
		{"truncate false", guard.PolicyCompact, msg{"model": "all-minilm", "input": inputs, "truncate": false}, http.StatusBadRequest, "", true},
		{"strict", guard.PolicyStrict, msg{"model": "all-minilm", "input": inputs}, http.StatusRequestEntityTooLarge, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 512, Models: []string{"all-minilm:latest"}})
			gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Policy: tc.policy})
			if tc.policy == guard.PolicyStrict {
				// Strict needs the window: a first request loads the
				// model at the server's default, which the guard learns.
				postJSON(t, gw+"/api/embed", msg{"model": "all-minilm", "input": "warm up"})
				emu.Reset()
			}
			resp, body := postJSON(t, gw+"/api/embed", tc.body)
			if resp.StatusCode != tc.status || resp.Header.Get(guard.EmbedTruncatedHeader) != tc.truncated {
				t.Fatalf("%d %q: %.300s", resp.StatusCode, resp.Header.Get(guard.EmbedTruncatedHeader), body)
			}
			if sent := emu.RequestCount("/api/embed") > 0; sent != tc.sent {
				t.Errorf("sent upstream: %v", sent)
			}
			if tc.status != http.StatusOK {
				return
			}
			var out struct {
				Embeddings [][]float32        `json:"embeddings"`
				Ctxkit     *guard.EmbedReport `json:"ctxkit"`
			}
			if err := json.Unmarshal(body, &out); err != nil || out.Ctxkit == nil || len(out.Embeddings) == 0 {
				t.Fatalf("%v %.300s", err, body)
			}
			if tc.truncated != "" && (out.Ctxkit.Window != 512 || len(out.Ctxkit.OverWindow) != 1 || out.Ctxkit.PromptEvalCount == 0) {
				t.Errorf("report %+v", out.Ctxkit)
			}
		})
	}
}
