package guard

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/guard/compact"
)

func TestParseRecallArgs(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want recallArgs
		err  string
	}{
		{`{"id":"evicted_ab"}`, recallArgs{ID: "evicted_ab"}, ""},
		{`"{\"id\":\"evicted_ab\",\"offset\":10}"`, recallArgs{ID: "evicted_ab", Offset: 10}, ""},
		{`{"id":" evicted_ab ","offset":"7","max_tokens":100.0}`, recallArgs{ID: "evicted_ab", Offset: 7, MaxTokens: 100}, ""},
		{`{"id":"x","offset":-5}`, recallArgs{ID: "x"}, ""},
		{`{"id":"x","offset":1e300}`, recallArgs{ID: "x", Offset: 1 << 40}, ""},
		{`{"offset":3}`, recallArgs{}, "missing"},
		{`{"id":""}`, recallArgs{}, "missing"},
		{`{"id":5}`, recallArgs{}, "missing"},
		{`{"id":"x","offset":"far"}`, recallArgs{}, "integer"},
		{`[1]`, recallArgs{}, "JSON object"},
		{``, recallArgs{}, "JSON object"},
		{`null`, recallArgs{}, "JSON object"},
	} {
		got, err := parseRecallArgs(tc.raw)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v", tc.raw, got, err, tc.want)
		}
	}
}

// FuzzParseRecallArgs: any input parses or fails without panicking; a
// success has a non-empty trimmed id and non-negative numbers.
func FuzzParseRecallArgs(f *testing.F) {
	for _, s := range []string{`{"id":"evicted_ab"}`, `"{\"id\":\"a\",\"offset\":3}"`, `{"id":"a","offset":"12","max_tokens":1e9}`, `{`, `""`, `{"id":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := parseRecallArgs(raw)
		if err != nil {
			return
		}
		if a.ID == "" || a.ID != strings.TrimSpace(a.ID) || a.Offset < 0 || a.MaxTokens < 0 {
			t.Fatalf("%q: %+v", raw, a)
		}
	})
}

// TestPageEnd: pages stay under the limit, on rune boundaries, always
// advance, and cover the text.
func TestPageEnd(t *testing.T) {
	c := compact.CounterFunc(Estimate)
	text := strings.Repeat("héllo wörld, 日本語 text; ", 200)
	for _, limit := range []int{1, 7, 64, 500} {
		start, pages := 0, 0
		for start < len(text) {
			end := pageEnd(text, start, limit, c)
			if end <= start || !utf8.ValidString(text[start:end]) {
				t.Fatalf("limit %d: page [%d,%d)", limit, start, end)
			}
			if n := c.Count(text[start:end]); n > limit && utf8.RuneCountInString(text[start:end]) > 1 {
				t.Fatalf("limit %d: page of %d tokens", limit, n)
			}
			start = end
			pages++
		}
		if limit == 500 && pages < 2 {
			t.Errorf("limit %d: %d pages", limit, pages)
		}
	}
}

// TestRoundMessages: the recall turn is valid in each dialect's format.
func TestRoundMessages(t *testing.T) {
	calls := []*call{{ID: "c1", Name: RecallTool, Args: json.RawMessage(`"{\"id\":\"evicted_a\"}"`)}}
	for k, want := range map[rdKind]string{
		rdOllama:    `{"content":"hm","role":"assistant","tool_calls":[{"function":{"arguments":{"id":"evicted_a"},"name":"context_recall"},"id":"c1"}]}|{"content":"R","role":"tool","tool_call_id":"c1","tool_name":"context_recall"}`,
		rdOpenAI:    `{"content":"hm","role":"assistant","tool_calls":[{"function":{"arguments":"{\"id\":\"evicted_a\"}","name":"context_recall"},"id":"c1","type":"function"}]}|{"content":"R","role":"tool","tool_call_id":"c1"}`,
		rdAnthropic: `{"content":[{"text":"hm","type":"text"},{"id":"c1","input":{"id":"evicted_a"},"name":"context_recall","type":"tool_use"}],"role":"assistant"}|{"content":[{"content":"R","tool_use_id":"c1","type":"tool_result"}],"role":"user"}`,
	} {
		msgs, err := roundMessages(k, "hm", nil, calls, []string{"R"})
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, m := range msgs {
			parts = append(parts, string(m))
		}
		if got := strings.Join(parts, "|"); got != want {
			t.Errorf("%d:\n got %s\nwant %s", k, got, want)
		}
	}
}

// TestAnthropicThinkingKept: the thinking block that led to a
// context_recall call goes back with it (the API requires it), from a
// whole answer and from a stream; in the stream it reached the client
// live, the tool_use did not.
func TestAnthropicThinkingKept(t *testing.T) {
	const thinking = `{"type":"thinking","thinking":"hmm","signature":"sig"}`
	whole := parseAnswer(rdAnthropic, []byte(`{"content":[`+thinking+`,{"type":"tool_use","id":"t1","name":"context_recall","input":{"id":"evicted_x"}}]}`))
	sse := strings.Join([]string{
		`event: message_start`, `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null}}`, ``,
		`event: content_block_start`, `data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`, ``,
		`event: content_block_delta`, `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`, ``,
		`event: content_block_delta`, `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"m"}}`, ``,
		`event: content_block_delta`, `data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`, ``,
		`event: content_block_stop`, `data: {"type":"content_block_stop","index":0}`, ``,
		`event: content_block_start`, `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"context_recall","input":{}}}`, ``,
		`event: content_block_delta`, `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"id\":\"evicted_x\"}"}}`, ``,
		`event: content_block_stop`, `data: {"type":"content_block_stop","index":1}`, ``,
		`event: message_delta`, `data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`, ``,
		`event: message_stop`, `data: {"type":"message_stop"}`, ``, ``,
	}, "\n")
	g := &Guard{log: slog.New(slog.DiscardHandler)}
	rc := &recaller{g: g, k: rdAnthropic, max: 4}
	f := &fit{b: &backend{kind: kAnthropic}, rep: &Report{}}
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(sse))}
	w := httptest.NewRecorder()
	streamed, done := rc.stream(w, httptest.NewRequest("POST", "/v1/messages", nil), f, resp)
	if done || streamed == nil {
		t.Fatal("the stream's recall call was not taken for a round")
	}
	for name, a := range map[string]*answer{"whole": whole, "stream": streamed} {
		if len(a.thinking) != 1 || string(a.thinking[0]) != thinking || len(a.calls) != 1 || a.calls[0].argString() != `{"id":"evicted_x"}` {
			t.Fatalf("%s: thinking %s calls %+v", name, a.thinking, a.calls)
		}
		msgs, err := roundMessages(rdAnthropic, "", a.thinking, a.calls, []string{"R"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(msgs[0]), `{"content":[`+thinking+`,{"id":"t1"`) {
			t.Errorf("%s: %s", name, msgs[0])
		}
	}
	out := w.Body.String()
	if !strings.Contains(out, `"thinking_delta"`) || strings.Contains(out, "context_recall") || strings.Contains(out, "message_stop") {
		t.Errorf("client got:\n%s", out)
	}
}
