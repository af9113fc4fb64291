package realollama

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// ChatBody is an /api/chat request as the tests send it: not streamed,
// temperature 0, 4 tokens at most (the tiny model's answers mean nothing;
// what it evaluated does), options.num_ctx when numCtx is positive, and
// extra's fields over the rest.
func ChatBody(model string, msgs any, numCtx int, extra map[string]any) map[string]any {
	opts := map[string]any{"num_predict": 4, "temperature": 0}
	if numCtx > 0 {
		opts["num_ctx"] = numCtx
	}
	b := map[string]any{"model": model, "messages": msgs, "stream": false, "options": opts}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// Post posts body as JSON to url with header's fields added, and returns
// the answer's status, header and body; any failure ends the test.
func Post(t testing.TB, url string, body any, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}

// PostJSON posts body as JSON to url, decodes the answer into out and
// returns its status; any failure ends the test.
func PostJSON(t testing.TB, url string, body, out any) int {
	t.Helper()
	status, _, raw := Post(t, url, body, nil)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: %d %s: %v", url, status, strings.TrimSpace(string(raw)), err)
	}
	return status
}
