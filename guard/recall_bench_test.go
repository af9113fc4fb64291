package guard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// BenchmarkRecallRound measures what one context_recall round costs end to
// end against the Ollama emulator: the overflowing needle chat of
// TestRecallNeedle (12 tool rounds, about 18k tokens into a 4,096 window)
// without --recall (one upstream request, the model cannot answer) and
// with it (two upstream requests: the call, then the answer), streamed or
// not. The difference is the round: store read, paging, rebuilding and
// refitting the request, the second upstream request.
func BenchmarkRecallRound(b *testing.B) {
	for _, stream := range []bool{false, true} {
		for _, recall := range []bool{false, true} {
			b.Run(fmt.Sprintf("stream=%v/recall=%v", stream, recall), func(b *testing.B) {
				emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: recallWindow}))
				b.Cleanup(emu.Close)
				gw := benchGuard(b, guard.Options{Ollama: emu.URL, Recall: recall})
				_, req := recallRequest("ollama", stream, false, recallHistory("ollama", 12, 250, 0))
				body, err := json.Marshal(req)
				if err != nil {
					b.Fatal(err)
				}
				latencies(b, benchPost(b, &http.Client{}, gw+"/api/chat", body))
			})
		}
	}
}
