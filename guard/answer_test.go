package guard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
)

// TestSpacedStreamGetsReport: the final object of a stream is found by
// reading it as JSON, so an upstream that writes `"done": true`, or an
// SSE event without the space after "data:", still gets the report
// (issue 19: it was found by the byte pattern "done":true).
func TestSpacedStreamGetsReport(t *testing.T) {
	for _, tc := range []struct {
		name, path, ctype, body string
		req                     msg
	}{
		{"ollama", "/api/chat", "application/x-ndjson",
			"{ \"message\": {\"role\": \"assistant\", \"content\": \"hi\"}, \"done\": false }\n{ \"message\": {\"role\": \"assistant\", \"content\": \"\"}, \"done\": true, \"done_reason\": \"stop\", \"prompt_eval_count\": 12 }\n",
			msg{"model": "m", "messages": []msg{{"role": "user", "content": "hello"}}}},
		{"openai", "/v1/chat/completions", "text/event-stream",
			"data:{\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"hi\"}, \"finish_reason\": null}]}\n\ndata:{\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}\n\ndata: [DONE]\n\n",
			msg{"model": "m", "stream": true, "messages": []msg{{"role": "user", "content": "hello"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tc.path {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", tc.ctype)
				fmt.Fprint(w, tc.body)
			}))
			opts := guard.Options{Ollama: up}
			if tc.name == "openai" {
				opts = guard.Options{OpenAI: up, Routes: map[string]string{"m": "openai"}}
			}
			resp, body := postJSON(t, newGuard(t, opts)+tc.path, tc.req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			var reports int
			sc := bufio.NewScanner(bytes.NewReader(body))
			for sc.Scan() {
				line := bytes.TrimPrefix(sc.Bytes(), []byte("data:"))
				var obj struct {
					Ctxkit *guard.Report `json:"ctxkit"`
				}
				if json.Unmarshal(line, &obj) == nil && obj.Ctxkit != nil {
					reports++
				}
			}
			if reports != 1 {
				t.Errorf("%d reports in the stream: %s", reports, body)
			}
		})
	}
}
