package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// TestGuardArbitrate runs `ctxkit guard --arbitrate` in front of the
// Ollama emulator and a router-mode llama.cpp emulator: a pin posted to
// /ctxkit/runtime switches the GPU and lands in the ctxkit home.
func TestGuardArbitrate(t *testing.T) {
	t.Setenv(home.EnvVar, t.TempDir())
	ollama := llmemu.NewOllama(llmemu.OllamaOptions{Preload: true})
	up := httptest.NewServer(ollama)
	defer up.Close()
	llama := httptest.NewServer(llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{Router: true}))
	defer llama.Close()
	base, stop := startGuard(t, GuardOptions{Ollama: up.URL, LlamaCpp: llama.URL, Policy: "compact",
		KeepRecent: 4, Window: 4096, Reserve: 512, Margin: 128, Grace: 5 * time.Second,
		Arbitrate: true, MinHold: 20 * time.Second, QueueTimeout: time.Minute, QueueLimit: 8})
	var st map[string]any
	resp := postDecode(t, base+"/ctxkit/runtime", `{"pin":"llamacpp"}`, &st)
	if resp.StatusCode != http.StatusOK || st["pinned"] != "llamacpp" || st["active"] != "llamacpp" || st["min_hold_seconds"] != 20.0 || len(ollama.Loaded()) != 0 {
		t.Errorf("%d %v, ollama loaded %v", resp.StatusCode, st, ollama.Loaded())
	}
	data, err := os.ReadFile(filepath.Join(os.Getenv(home.EnvVar), "guard-runtime.json"))
	if err != nil || !strings.Contains(string(data), `"llamacpp"`) {
		t.Errorf("pin file: %s %v", data, err)
	}
	stop()
}
