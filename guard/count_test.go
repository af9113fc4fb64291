package guard_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

func TestEstimate(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"   \n\t", 0},
		{"word", 1},
		{"words", 2},
		{"a b c", 3},
		{".,;", 3},
		{`{"a":1}`, 7},
		{"héllo", 3},
	}
	for _, tt := range tests {
		if got := guard.Estimate(tt.text); got != tt.want {
			t.Errorf("Estimate(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// TestEstimateErrsHigh: on prose, code, JSON, logs and CJK the estimate is
// never below a real tokenizer's count: the byte-level BPE of the tiny
// model a real Ollama runs in the end-to-end tests (llmemu.TinyBPE). Not
// the emulators' own rule, which is the estimate's rule and could never
// disagree with it.
func TestEstimateErrsHigh(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("The quick brown fox jumps over the lazy dog. ", 50),
		strings.Repeat(`{"id": 12345, "name": "widget", "tags": ["a", "b"]}`+"\n", 40),
		strings.Repeat("2026-11-30T07:00:00Z ERROR [db] connection refused (retry 3/5)\n", 40),
		strings.Repeat("func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {}\n", 40),
		strings.Repeat("上下文窗口溢出。", 100),
	} {
		if est, exact := guard.Estimate(text), llmemu.TinyBPE().Count(text); est < exact {
			t.Errorf("estimate %d below %d for %.40q", est, exact, text)
		}
	}
}
