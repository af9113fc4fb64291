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

// TestGuardCommand runs `ctxkit guard` in front of the Ollama emulator: an
// overflowing chat keeps its secret and carries the report.
func TestGuardCommand(t *testing.T) {
	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 2048}))
	defer emu.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runGuard(ctx, &globals{store: "memory:"}, &GuardOptions{Listen: "127.0.0.1:0", Ollama: emu.URL, Policy: "compact", KeepRecent: 4, Window: 4096, Reserve: 512, Margin: 128, Grace: 5 * time.Second},
			IO{Err: io.Discard}, func(a string) { addr <- a })
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}
	body := `{"model":"llama3.2","stream":false,"options":{"num_ctx":2048},"messages":[` +
		`{"role":"user","content":"SECRET: ANANAS-7734"},` +
		`{"role":"assistant","content":"noted"},` +
		`{"role":"user","content":"` + strings.Repeat("filler ", 3000) + `"},` +
		`{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":"What is the secret?"}]}`
	resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Message struct{ Content string } `json:"message"`
		Ctxkit  struct {
			Compacted bool `json:"compacted"`
			Window    int  `json:"window"`
		} `json:"ctxkit"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out.Message.Content != "ANANAS-7734" || !out.Ctxkit.Compacted || out.Ctxkit.Window != 2048 || resp.Header.Get("X-Ctxkit-Compacted") != "true" {
		t.Errorf("%+v %v", out, resp.Header)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestGuardCommandFlags(t *testing.T) {
	for _, tc := range []GuardOptions{
		{Listen: "127.0.0.1:0", Policy: "lenient"},
		{Listen: "127.0.0.1:0", Policy: "compact", KeepRecent: -1},
		{Listen: "127.0.0.1:0", Policy: "compact", Ollama: "not a url"},
	} {
		if err := runGuard(t.Context(), &globals{store: "memory:"}, &tc, IO{Err: io.Discard}, nil); err == nil {
			t.Errorf("%+v: no error", tc)
		}
	}
}
