package cli

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestGuardSummarize runs `ctxkit guard --summarize` in front of the Ollama
// emulator: a secret in the middle of an evicted turn is answered from the
// digest the notice carries; without --summarize it is lost.
func TestGuardSummarize(t *testing.T) {
	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 2048}))
	defer emu.Close()
	filler := strings.Repeat("filler ", 1500)
	body := `{"model":"llama3.2","stream":false,"options":{"num_ctx":2048},"messages":[` +
		`{"role":"user","content":"Read this."},` +
		`{"role":"assistant","content":"` + filler + `SECRET: ANANAS-7734. ` + filler + `"},` +
		`{"role":"user","content":"noted?"},` +
		`{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":"fine"},` +
		`{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":"What is the secret?"}]}`
	for _, tc := range []struct {
		summarize bool
		want      string
	}{{false, llmemu.Dont}, {true, "ANANAS-7734"}} {
		base, stop := startGuard(t, GuardOptions{Ollama: emu.URL, Policy: "compact", KeepRecent: 4,
			Window: 4096, Reserve: 512, Margin: 128, Grace: 5 * time.Second, Summarize: tc.summarize, SummarizeTimeout: 10 * time.Second})
		var out struct {
			Message struct{ Content string } `json:"message"`
			Ctxkit  json.RawMessage          `json:"ctxkit"`
		}
		postDecode(t, base+"/api/chat", body, &out)
		if out.Message.Content != tc.want {
			t.Errorf("--summarize=%v: %q, want %q; report %s", tc.summarize, out.Message.Content, tc.want, out.Ctxkit)
		}
		stop()
	}
}

func TestGuardSummarizeFlags(t *testing.T) {
	o := GuardOptions{Listen: "127.0.0.1:0", Policy: "compact", Summarize: true, SummarizerURL: "not a url"}
	if err := runGuard(t.Context(), &globals{store: "memory:"}, &o, IO{Err: io.Discard}, nil); err == nil || !strings.Contains(err.Error(), "summarizer URL") {
		t.Errorf("bad summarizer URL: %v", err)
	}
}
