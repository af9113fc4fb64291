package cli

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestGuardRecallFlag: `ctxkit guard --recall` lets the model read back a
// secret that compaction removed from the middle of a tool output (without
// the flag it cannot).
func TestGuardRecallFlag(t *testing.T) {
	if newGuardCmd(&globals{}, IO{Err: io.Discard}).Flags().Lookup("recall") == nil {
		t.Fatal("no --recall flag")
	}
	for _, recall := range []bool{false, true} {
		emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 2048}))
		base, stop := startGuard(t, GuardOptions{Ollama: emu.URL, Policy: "compact", KeepRecent: 4, Window: 4096, Reserve: 512, Margin: 128, Grace: 5 * time.Second, Recall: recall})
		body := `{"model":"llama3.2","stream":false,"options":{"num_ctx":2048},` +
			`"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}],"messages":[` +
			`{"role":"user","content":"Read the notes."},` +
			`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"read_file","arguments":{"path":"a"}}}]},` +
			`{"role":"tool","tool_name":"read_file","content":"` + strings.Repeat("filler ", 400) + `SECRET: FIG-9 ` + strings.Repeat("filler ", 400) + `"},` +
			`{"role":"assistant","content":"ok"},` +
			`{"role":"user","content":"What is the secret?"}]}`
		var out struct {
			Message struct{ Content string } `json:"message"`
			Ctxkit  struct {
				RecallRounds int `json:"recall_rounds"`
			} `json:"ctxkit"`
		}
		postDecode(t, base+"/api/chat", body, &out)
		want := llmemu.Dont
		if recall {
			want = "FIG-9"
		}
		if out.Message.Content != want || (out.Ctxkit.RecallRounds > 0) != recall {
			t.Errorf("recall %v: %+v", recall, out)
		}
		stop()
		emu.Close()
	}
}
