package llmemu

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkOllamaChat160k measures the emulator's own cost for a
// 400-message, about 160k-token agent history overflowing a 32k window
// (both truncation layers), so that guard benchmarks can subtract it.
func BenchmarkOllamaChat160k(b *testing.B) {
	msgs := []map[string]string{{"role": "system", "content": "You are an agent."}}
	for i := range 400 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": filler(400)})
	}
	body, err := json.Marshal(map[string]any{"model": "llama3.2", "stream": false, "options": map[string]int{"num_ctx": 32768}, "messages": msgs})
	if err != nil {
		b.Fatal(err)
	}
	s := NewOllama(OllamaOptions{})
	b.ReportAllocs()
	for b.Loop() {
		s.Reset()
		req := httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}
