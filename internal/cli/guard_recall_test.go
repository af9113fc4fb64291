package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
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
		ctx, cancel := context.WithCancel(t.Context())
		addr := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- runGuard(ctx, &globals{store: "memory:"}, &GuardOptions{Listen: "127.0.0.1:0", Ollama: emu.URL, Policy: "compact", KeepRecent: 4, Window: 4096, Reserve: 512, Margin: 128, Grace: 5 * time.Second, Recall: recall},
				IO{Err: io.Discard}, func(a string) { addr <- a })
		}()
		var base string
		select {
		case a := <-addr:
			base = "http://" + a
		case err := <-done:
			t.Fatal(err)
		}
		body := `{"model":"llama3.2","stream":false,"options":{"num_ctx":2048},` +
			`"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}],"messages":[` +
			`{"role":"user","content":"Read the notes."},` +
			`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"read_file","arguments":{"path":"a"}}}]},` +
			`{"role":"tool","tool_name":"read_file","content":"` + strings.Repeat("filler ", 400) + `SECRET: FIG-9 ` + strings.Repeat("filler ", 400) + `"},` +
			`{"role":"assistant","content":"ok"},` +
			`{"role":"user","content":"What is the secret?"}]}`
		resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Message struct{ Content string } `json:"message"`
			Ctxkit  struct {
				RecallRounds int `json:"recall_rounds"`
			} `json:"ctxkit"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := llmemu.Dont
		if recall {
			want = "FIG-9"
		}
		if out.Message.Content != want || (out.Ctxkit.RecallRounds > 0) != recall {
			t.Errorf("recall %v: %+v", recall, out)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		emu.Close()
	}
}
