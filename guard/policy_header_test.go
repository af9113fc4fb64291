package guard_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestPolicyHeader: X-Ctxkit-Policy overrides the guard's policy for one
// request (strict refuses, observe and off pass through, compact
// compacts), never reaches the backend, and a bad value is a 400.
func TestPolicyHeader(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	gw := newGuard(t, guard.Options{Ollama: serve(t, emu), Policy: guard.PolicyCompact})
	body := msg{"model": "llama3.2", "stream": false, "messages": agentHistory(12, 300, false)}
	for _, tc := range []struct {
		header    string
		status    int
		truncated bool // the backend cut the prompt silently
		compacted bool
	}{
		{"", http.StatusOK, false, true},
		{"strict", http.StatusRequestEntityTooLarge, false, false},
		{"observe", http.StatusOK, true, false},
		{"off", http.StatusOK, true, false},
		{"compact", http.StatusOK, false, true},
		{"lenient", http.StatusBadRequest, false, false},
	} {
		t.Run(tc.header, func(t *testing.T) {
			emu.Reset()
			resp, out := postWithHeaders(t, gw+"/api/chat", body, map[string]string{guard.PolicyHeader: tc.header})
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s", resp.StatusCode, out)
			}
			ev, sent := emu.LastEval()
			if sent && ev.Truncated != tc.truncated {
				t.Errorf("backend truncated = %v, want %v", ev.Truncated, tc.truncated)
			}
			if sent != (tc.status == http.StatusOK) {
				t.Errorf("reached the backend: %v", sent)
			}
			for _, r := range emu.Requests() {
				if r.Header.Get(guard.PolicyHeader) != "" {
					t.Errorf("the header reached the backend")
				}
			}
			var rep struct {
				Ctxkit *guard.Report `json:"ctxkit"`
			}
			_ = json.Unmarshal(out, &rep)
			if tc.status == http.StatusOK && tc.header != "off" && (rep.Ctxkit == nil || rep.Ctxkit.Compacted != tc.compacted || (tc.header != "" && string(rep.Ctxkit.Policy) != tc.header)) {
				t.Errorf("report %+v", rep.Ctxkit)
			}
		})
	}
}
