package guard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRecallStream: the recall loop's relay of a streamed answer, which an
// upstream writes, takes any bytes in any dialect, with rounds left or
// not, without panicking; an answer it swallows for a round has a
// context_recall call.
func FuzzRecallStream(f *testing.F) {
	f.Add(uint8(rdOllama), false, uint8(0), `{"message":{"content":"hi","tool_calls":[{"function":{"name":"context_recall","arguments":{"id":"evicted_a"}}}]},"done":false}`+"\n"+`{"done":true,"prompt_eval_count":1200}`+"\n")
	f.Add(uint8(rdOpenAI), true, uint8(1), `data: {"id":"c1","choices":[{"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"x","function":{"name":"context_recall","arguments":"{\"id\""}}]}}]}`+"\n\n"+`data: {"id":"c2","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"evicted_a\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1500}}`+"\n\ndata: [DONE]\n\n")
	f.Add(uint8(rdAnthropic), true, uint8(0), `data: {"type":"message_start","message":{"usage":{"input_tokens":2000}}}`+"\n\n"+`data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t","name":"context_recall"}}`+"\n\n"+`data: {"type":"content_block_delta","index":3,"delta":{"partial_json":"{}"}}`+"\n\n"+`data: {"type":"message_delta","delta":{"stop_reason":"tool_use"}}`+"\n\n")
	f.Add(uint8(rdAnthropic), true, uint8(1), "data: {\"type\":\"content_block_delta\",\"index\":-1}\n\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"redacted_thinking\"}}\n\n")
	f.Fuzz(func(t *testing.T, k uint8, sse bool, rounds uint8, body string) {
		g, err := New(Options{Ollama: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		kind := rdKind(k % 3)
		rc := &recaller{g: g, k: kind, max: 1, rounds: int(rounds % 2)}
		fi := &fit{b: g.backends[kOllama], rep: &Report{}, window: 4096, sent: 5000, cal: g.calibrationFor(kOllama, "m")}
		fi.cnt = fi.cal.snapshot(g.base)
		ct := "application/x-ndjson"
		if sse {
			ct = "text/event-stream"
		}
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body))}
		a, done := rc.stream(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil), fi, resp)
		if done != (a == nil) {
			t.Fatalf("done %v with answer %v", done, a)
		}
		if a != nil {
			if rec, _ := a.recalls(); len(rec) == 0 {
				t.Fatalf("an answer without context_recall was swallowed: %+v", a.calls)
			}
		}
	})
}
