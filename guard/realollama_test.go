package guard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/realollama"
	"github.com/ctxkit/ctxkit/internal/tinymodel"
	"github.com/ctxkit/ctxkit/tokenizer"
)

// The end-to-end suite: the guard as an HTTP server in front of a real
// Ollama v0.17.4 running tinymodel's model (internal/realollama), with a
// recorder between them that keeps every request the guard sends. What
// reached the model is checked against the model's own answer: the test
// renders the messages the guard sent with the model's ChatML template and
// counts them with package tokenizer, which counts as Ollama does
// (tinymodel's TestCountsMatchRealOllama); prompt_eval_count equal to that
// count means Ollama evaluated all of it, neither dropping messages nor
// cutting the prompt. done_reason is no sign here: with num_predict 4 it
// is "length" whenever the 4 tokens are generated.
//
// One server serves every case (each model load costs about a second);
// cases that need the same window run next to each other.

// roNeedle is the fact the needle cases put in the prompt.
const roNeedle = "The passphrase for the vault is TANGERINE-4471."

// roSentences make the filler text: plain English, counted by the model's
// tokenizer at about three bytes a token.
var roSentences = []string{
	"The committee met on Tuesday to review the budget for the coming year.",
	"Several members asked whether the new library could open before the summer.",
	"The engineer explained that the bridge needed repairs after the winter storms.",
	"A small group of volunteers cleaned the park and planted forty young trees.",
	"Prices at the market rose slowly, but most families still bought fresh bread every morning.",
	"The school choir practised twice a week and sang at the festival in the old church.",
	"Heavy rain delayed the harvest, so the farmers worked late into the evening.",
	"The museum opened a new room about the history of the railway and its workers.",
	"Two students wrote a report on the river and the birds that live along its banks.",
	"After the meeting, everyone walked to the cafe near the station for coffee.",
	"The doctor reminded her patients to drink more water during the hot weeks.",
	"A letter from the mayor thanked the town for its patience during the road works.",
}

// roRig is what every case shares: the server, the recorder in front of
// it, the tokenizer.
type roRig struct {
	srv *realollama.Server
	rec *roRecorder
	tk  *tokenizer.Tokenizer
}

// TestRealOllama runs the guard's end-to-end cases against the real
// server; it is skipped without $CTXKIT_TEST_OLLAMA (and fails under
// CI=true).
func TestRealOllama(t *testing.T) {
	srv := realollama.Start(t, realollama.Options{})
	tk, err := tokenizer.Parse(tinymodel.TokenizerJSON())
	if err != nil {
		t.Fatal(err)
	}
	rig := &roRig{srv: srv, rec: newRORecorder(t, srv.URL()), tk: tk}

	// Window 2048, from the request.
	t.Run("single message over the window: shrunk, the needle at its head reaches the model", rig.singleMessage)
	t.Run("the same overflowing request twice: both answered", rig.repeated)
	t.Run("several messages over the window: the needle's message survives", rig.multiMessage)
	t.Run("streaming: the report in the done chunk", rig.streaming)
	t.Run("observe, a single message: Ollama's cut to num_ctx is reported", rig.observeSingle)
	t.Run("observe, several messages: Ollama's message drop is reported", rig.observeMulti)
	t.Run("observe, several messages of logs the estimate undercounts: Ollama's message drop is reported", rig.observeMultiLogs)
	t.Run("truncate false: Ollama's 400 is recovered from", rig.truncateFalse)
	t.Run("truncate false twice: the second costs no failed call", rig.truncateFalseTwice)
	// Window 4096: Ollama's default on a CPU.
	t.Run("no num_ctx while the model is loaded at 8192: fit to the default 4096", rig.noNumCtx)
	t.Run("/v1/chat/completions stream: the report carries the real prompt_tokens", rig.openAIStream)
	t.Run("a plan made at 4096 replayed at 2048", rig.shrunkWindow)
	// Other windows.
	t.Run("Modelfile num_ctx 1024: fit to it", rig.modelfileNumCtx)
	t.Run("num_ctx 16384 above the trained 8192: fit to 8192", rig.aboveCap)
	t.Run("/api/embed over the window: the cut input is named", rig.embed)
}

// roGuard starts a fresh guard (its own calibration and plans) in front of
// the recorder, counting with its default estimate, or with counter.
func (rig *roRig) roGuard(t *testing.T, counter ...compact.Counter) *httptest.Server {
	t.Helper()
	opts := guard.Options{Ollama: rig.rec.srv.URL, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	if len(counter) > 0 {
		opts.Counter = counter[0]
	}
	g, err := guard.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(g)
	t.Cleanup(s.Close)
	return s
}

// roMsg is a chat message.
type roMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// render is the model's ChatML rendering of msgs, as its Modelfile
// TEMPLATE (tinymodel.ChatTemplate) renders it.
func render(msgs []roMsg) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	b.WriteString("<|im_start|>assistant\n")
	return b.String()
}

// filler is English text of about n tokens (a sentence more at most),
// different for each seed.
func (rig *roRig) filler(seed, n int) string {
	var b strings.Builder
	for i := 0; rig.tk.Count(b.String()) < n; i++ {
		fmt.Fprintf(&b, "%s ", roSentences[(seed*7+i)%len(roSentences)])
		if i%8 == 7 {
			fmt.Fprintf(&b, "(note %d-%d)\n", seed, i/8)
		}
	}
	return b.String()
}

// logLines are server log lines of about n tokens: timestamps, ids and
// paths, which the guard's default estimate undercounts more than prose
// (about 1.6 times on this model).
func (rig *roRig) logLines(seed, n int) string {
	var b strings.Builder
	for i := seed * 1000; rig.tk.Count(b.String()) < n; i++ {
		fmt.Fprintf(&b, "2026-11-30T14:%02d:%02d.%03dZ level=INFO msg=\"request served\" id=%d path=/api/items/%d status=200 took=%dms\n",
			i/60%60, i%60, i*37%1000, 48213+i*17, 9921+i*3, 12+i%40)
	}
	return b.String()
}

// conversation is a system message, the task with the needle, turns of
// about turnTokens each, and a last question: about rounds*2*turnTokens
// tokens in all.
func (rig *roRig) conversation(rounds, turnTokens int) []roMsg {
	msgs := []roMsg{
		{"system", "You are a careful assistant."},
		{"user", "Remember this for later. " + roNeedle},
	}
	for i := range rounds {
		msgs = append(msgs,
			roMsg{"assistant", rig.filler(2*i, turnTokens)},
			roMsg{"user", rig.filler(2*i+1, turnTokens)})
	}
	return append(msgs, roMsg{"assistant", "Noted."}, roMsg{"user", "What is the passphrase for the vault?"})
}

// roChatAnswer is an /api/chat answer (or its done chunk).
type roChatAnswer struct {
	Done            bool          `json:"done"`
	DoneReason      string        `json:"done_reason"`
	PromptEvalCount int           `json:"prompt_eval_count"`
	EvalCount       int           `json:"eval_count"`
	Error           any           `json:"error"`
	Ctxkit          *guard.Report `json:"ctxkit"`
}

// chat posts an /api/chat request that is not streamed.
func (rig *roRig) chat(t *testing.T, base string, body map[string]any, header http.Header) (int, roChatAnswer, []byte) {
	t.Helper()
	code, _, raw := realollama.Post(t, base+"/api/chat", body, header)
	var a roChatAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("/api/chat %d: %v: %s", code, err, raw)
	}
	return code, a, raw
}

// sentMessages are the messages of the last /api/chat (or /v1) request
// that reached Ollama since mark.
func (rig *roRig) sentMessages(t *testing.T, mark int, path string) []roMsg {
	t.Helper()
	reqs := rig.rec.since(mark, path)
	if len(reqs) == 0 {
		t.Fatalf("no %s request reached Ollama", path)
	}
	var req struct {
		Messages []roMsg `json:"messages"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1], &req); err != nil {
		t.Fatalf("the guard sent %s: %v", path, err)
	}
	return req.Messages
}

// wholePrompt checks that Ollama evaluated the whole prompt the guard sent,
// within the window, and did not log a cut.
func (rig *roRig) wholePrompt(t *testing.T, sent []roMsg, promptEvalCount, window, logMark int) {
	t.Helper()
	want := rig.tk.Count(render(sent))
	if promptEvalCount != want {
		t.Errorf("prompt_eval_count %d, but the %d messages the guard sent count %d tokens: Ollama did not evaluate what was sent (it dropped messages or cut the prompt)", promptEvalCount, len(sent), want)
	}
	if want > window {
		t.Errorf("the guard sent %d tokens into a window of %d", want, window)
	}
	for _, r := range rig.srv.Log().Records(logMark) {
		if r.Msg == "truncating input prompt" {
			t.Errorf("Ollama cut the prompt: %s %q %v", r.Level, r.Msg, r.Attrs)
		}
	}
}

// hasNeedle reports whether a message of msgs holds the needle.
func hasNeedle(msgs []roMsg) bool {
	return slices.ContainsFunc(msgs, func(m roMsg) bool { return strings.Contains(m.Content, roNeedle) })
}

func report(t *testing.T, a roChatAnswer, raw []byte) *guard.Report {
	t.Helper()
	if a.Ctxkit == nil {
		t.Fatalf("no ctxkit report in %s", short(raw))
	}
	return a.Ctxkit
}

func short(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// bigMessage is one user message of about n tokens with the needle at its
// head: Ollama's own cut keeps 4 tokens of the head and the tail.
func (rig *roRig) bigMessage(n int) []roMsg {
	return []roMsg{{"user", roNeedle + " Keep it in mind while you read the notes below.\n" + rig.filler(100, n)}}
}

func (rig *roRig) singleMessage(t *testing.T) {
	g := rig.roGuard(t)
	msgs := rig.bigMessage(6000)
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 2048, nil), nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	sent := rig.sentMessages(t, mark, "/api/chat")
	if len(sent) != 1 || !hasNeedle(sent) {
		t.Errorf("the guard sent %d messages, needle kept: %v", len(sent), hasNeedle(sent))
	}
	rig.wholePrompt(t, sent, a.PromptEvalCount, 2048, logMark)
	rep := report(t, a, raw)
	if !rep.Compacted || rep.Window != 2048 || rep.PromptEvalCount != a.PromptEvalCount || rep.UpstreamTruncated {
		t.Errorf("report: compacted %v, window %d, prompt_eval_count %d (Ollama's %d), upstream_truncated %v", rep.Compacted, rep.Window, rep.PromptEvalCount, a.PromptEvalCount, rep.UpstreamTruncated)
	}
	if rep.EvictedTokens <= 0 {
		t.Errorf("report: evicted_tokens %d after shrinking a %d-token message", rep.EvictedTokens, rig.tk.Count(msgs[0].Content))
	}
}

func (rig *roRig) repeated(t *testing.T) {
	g := rig.roGuard(t)
	// Log lines: the first answer raises the calibration well above the
	// estimate the first plan was made with.
	msgs := []roMsg{{"user", roNeedle + " Find the failed requests in this log.\n" + rig.logLines(0, 6000)}}
	body := realollama.ChatBody("tiny", msgs, 2048, nil)
	for i := range 2 {
		mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
		code, a, raw := rig.chat(t, g.URL, body, nil)
		if code != http.StatusOK {
			t.Errorf("request %d: status %d: %s", i+1, code, short(raw))
			continue
		}
		sent := rig.sentMessages(t, mark, "/api/chat")
		if !hasNeedle(sent) {
			t.Errorf("request %d: the needle did not reach the model", i+1)
		}
		rig.wholePrompt(t, sent, a.PromptEvalCount, 2048, logMark)
	}
}

func (rig *roRig) multiMessage(t *testing.T) {
	g := rig.roGuard(t)
	msgs := rig.conversation(10, 250)
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 2048, nil), nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	sent := rig.sentMessages(t, mark, "/api/chat")
	if !hasNeedle(sent) || sent[0] != msgs[0] || sent[len(sent)-1] != msgs[len(msgs)-1] {
		t.Errorf("the guard sent %d of %d messages: needle kept %v, system kept %v, question kept %v", len(sent), len(msgs), hasNeedle(sent), sent[0] == msgs[0], sent[len(sent)-1] == msgs[len(msgs)-1])
	}
	rig.wholePrompt(t, sent, a.PromptEvalCount, 2048, logMark)
	rep := report(t, a, raw)
	if !rep.Compacted || len(rep.Evicted) == 0 || rep.EvictedTokens <= 0 || rep.UpstreamTruncated {
		t.Errorf("report: compacted %v, %d evicted spans, evicted_tokens %d, upstream_truncated %v", rep.Compacted, len(rep.Evicted), rep.EvictedTokens, rep.UpstreamTruncated)
	}
}

func (rig *roRig) streaming(t *testing.T) {
	g := rig.roGuard(t)
	body := realollama.ChatBody("tiny", rig.conversation(10, 250), 2048, map[string]any{"stream": true})
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, _, raw := realollama.Post(t, g.URL+"/api/chat", body, nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	var chunks []roChatAnswer
	for line := range bytes.Lines(raw) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var c roChatAnswer
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		chunks = append(chunks, c)
	}
	if len(chunks) < 2 {
		t.Fatalf("%d chunks: %s", len(chunks), short(raw))
	}
	done := chunks[len(chunks)-1]
	if !done.Done {
		t.Fatalf("the last chunk is not done: %s", short(raw))
	}
	for i, c := range chunks[:len(chunks)-1] {
		if c.Done || c.Ctxkit != nil {
			t.Errorf("chunk %d before the last: done %v, report %v", i, c.Done, c.Ctxkit != nil)
		}
	}
	sent := rig.sentMessages(t, mark, "/api/chat")
	if !hasNeedle(sent) {
		t.Error("the needle's message did not reach Ollama")
	}
	rig.wholePrompt(t, sent, done.PromptEvalCount, 2048, logMark)
	rep := report(t, done, raw)
	if !rep.Compacted || rep.PromptEvalCount != done.PromptEvalCount {
		t.Errorf("report in the done chunk: compacted %v, prompt_eval_count %d (Ollama's %d)", rep.Compacted, rep.PromptEvalCount, done.PromptEvalCount)
	}
}

var observe = http.Header{guard.PolicyHeader: {"observe"}}

func (rig *roRig) observeSingle(t *testing.T) {
	g := rig.roGuard(t)
	msgs := []roMsg{{"user", rig.filler(200, 3000)}}
	logMark := rig.srv.Log().Len()
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 2048, nil), observe)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	// What Ollama did: the runner cut the prompt to exactly num_ctx and
	// said so at WARN only.
	if a.PromptEvalCount != 2048 {
		t.Errorf("prompt_eval_count %d, want Ollama's cut to 2048", a.PromptEvalCount)
	}
	cut := false
	for _, r := range rig.srv.Log().Records(logMark) {
		if r.Msg == "truncating input prompt" && r.Attrs["limit"] == "2048" && r.Attrs["prompt"] == fmt.Sprint(rig.tk.Count(render(msgs))) {
			cut = true
		}
	}
	if !cut {
		t.Errorf("no WARN truncating input prompt limit=2048 prompt=%d in Ollama's log", rig.tk.Count(render(msgs)))
	}
	rep := report(t, a, raw)
	if rep.Compacted || rep.WouldEvictTokens <= 0 || !rep.UpstreamTruncated || rep.PromptEvalCount != 2048 {
		t.Errorf("report: compacted %v, would_evict_tokens %d, upstream_truncated %v (want true), prompt_eval_count %d", rep.Compacted, rep.WouldEvictTokens, rep.UpstreamTruncated, rep.PromptEvalCount)
	}
}

func (rig *roRig) observeMulti(t *testing.T) {
	g := rig.roGuard(t)
	msgs := rig.conversation(10, 250)
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 2048, nil), observe)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	// What Ollama did: dropped whole messages from the front, keeping the
	// system message and the last ones that fit, silently.
	if kept := rig.survivors(msgs, 2048); a.PromptEvalCount != rig.tk.Count(render(kept)) || hasNeedle(kept) {
		t.Errorf("prompt_eval_count %d; Ollama's message drop would keep %d of %d messages, %d tokens", a.PromptEvalCount, len(kept), len(msgs), rig.tk.Count(render(kept)))
	}
	rep := report(t, a, raw)
	if rep.Compacted || rep.WouldEvictTokens <= 0 || !rep.UpstreamTruncated || rep.PromptEvalCount != a.PromptEvalCount {
		t.Errorf("report: compacted %v, would_evict_tokens %d, upstream_truncated %v (want true), prompt_eval_count %d (Ollama's %d)", rep.Compacted, rep.WouldEvictTokens, rep.UpstreamTruncated, rep.PromptEvalCount, a.PromptEvalCount)
	}
}

func (rig *roRig) observeMultiLogs(t *testing.T) {
	g := rig.roGuard(t)
	msgs := []roMsg{{"system", "You are a careful assistant."}, {"user", "Remember this for later. " + roNeedle}}
	for i := range 5 {
		msgs = append(msgs, roMsg{"assistant", "Here is the next part of the log."}, roMsg{"user", rig.logLines(i+1, 480)})
	}
	msgs = append(msgs, roMsg{"assistant", "Noted."}, roMsg{"user", "What is the passphrase for the vault?"})
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 2048, nil), observe)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	kept := rig.survivors(msgs, 2048)
	if a.PromptEvalCount != rig.tk.Count(render(kept)) || len(kept) == len(msgs) {
		t.Fatalf("prompt_eval_count %d; Ollama's message drop would keep %d of %d messages, %d tokens", a.PromptEvalCount, len(kept), len(msgs), rig.tk.Count(render(kept)))
	}
	rep := report(t, a, raw)
	if !rep.UpstreamTruncated || rep.PromptEvalCount != a.PromptEvalCount {
		t.Errorf("report: upstream_truncated %v (want true: Ollama dropped %d of %d messages), tokens_before %d (the prompt counts %d), prompt_eval_count %d (Ollama's %d)", rep.UpstreamTruncated, len(msgs)-len(kept), len(msgs), rep.TokensBefore, rig.tk.Count(render(msgs)), rep.PromptEvalCount, a.PromptEvalCount)
	}
}

// survivors are the messages Ollama v0.17.4 keeps of msgs in a window
// (server/prompt.go): the first suffix that fits with the system messages
// before it, else the last message with them.
func (rig *roRig) survivors(msgs []roMsg, window int) []roMsg {
	for i := range msgs {
		var kept []roMsg
		for _, m := range msgs[:i] {
			if m.Role == "system" {
				kept = append(kept, m)
			}
		}
		kept = append(kept, msgs[i:]...)
		if rig.tk.Count(render(kept)) <= window || i == len(msgs)-1 {
			return kept
		}
	}
	return nil
}

// underestimated is one message of plain English that the guard's default
// estimate puts under the 2048 window's budget while it holds more tokens
// than the window.
func (rig *roRig) underestimated() []roMsg {
	return []roMsg{{"user", rig.filler(300, 2150)}}
}

func (rig *roRig) truncateFalse(t *testing.T) {
	g := rig.roGuard(t)
	msgs := rig.underestimated()
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 2048, map[string]any{"truncate": false}), nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	if n := len(rig.rec.since(mark, "/api/chat")); n != 2 {
		t.Errorf("%d requests reached Ollama, want the refused one and the retry", n)
	}
	rig.wholePrompt(t, rig.sentMessages(t, mark, "/api/chat"), a.PromptEvalCount, 2048, logMark)
	rep := report(t, a, raw)
	if !rep.Recovered || !strings.Contains(rep.UpstreamError, "exceeds the context length") || !rep.Compacted {
		t.Errorf("report: recovered %v, upstream_error %q, compacted %v", rep.Recovered, rep.UpstreamError, rep.Compacted)
	}
}

func (rig *roRig) truncateFalseTwice(t *testing.T) {
	g := rig.roGuard(t)
	body := realollama.ChatBody("tiny", rig.underestimated(), 2048, map[string]any{"truncate": false})
	if code, _, raw := rig.chat(t, g.URL, body, nil); code != http.StatusOK {
		t.Fatalf("first: status %d: %s", code, short(raw))
	}
	mark := rig.rec.mark()
	code, _, raw := rig.chat(t, g.URL, body, nil)
	if code != http.StatusOK {
		t.Fatalf("second: status %d: %s", code, short(raw))
	}
	if n := len(rig.rec.since(mark, "/api/chat")); n != 1 {
		t.Errorf("the second request made %d calls to Ollama, want 1: the first one's refusal did not raise the calibration", n)
	}
}

// loadAt makes Ollama load the model at numCtx with a short request sent
// to it directly, and checks /api/ps says so.
func (rig *roRig) loadAt(t *testing.T, model string, numCtx int) {
	t.Helper()
	code, _, raw := realollama.Post(t, rig.srv.URL()+"/api/generate", map[string]any{
		"model": model, "prompt": "hi", "raw": true, "stream": false,
		"options": map[string]any{"num_ctx": numCtx, "num_predict": 1},
	}, nil)
	if code != http.StatusOK {
		t.Fatalf("load at %d: %d %s", numCtx, code, raw)
	}
	if got := rig.loadedWindow(t); got != numCtx {
		t.Fatalf("/api/ps context_length %d after a load at %d", got, numCtx)
	}
}

// loadedWindow is /api/ps's context_length of the loaded model.
func (rig *roRig) loadedWindow(t *testing.T) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, rig.srv.URL()+"/api/ps", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ps struct {
		Models []struct {
			ContextLength int `json:"context_length"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil || len(ps.Models) != 1 {
		t.Fatalf("/api/ps: %v, %d models", err, len(ps.Models))
	}
	return ps.Models[0].ContextLength
}

func (rig *roRig) noNumCtx(t *testing.T) {
	rig.loadAt(t, "tiny", 8192)
	g := rig.roGuard(t)
	msgs := rig.conversation(12, 250)
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 0, nil), nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	if w := rig.loadedWindow(t); w != 4096 {
		t.Errorf("Ollama ran the request at %d, want its default 4096", w)
	}
	sent := rig.sentMessages(t, mark, "/api/chat")
	if !hasNeedle(sent) {
		t.Error("the needle's message did not reach the model")
	}
	rig.wholePrompt(t, sent, a.PromptEvalCount, 4096, logMark)
	if rep := report(t, a, raw); rep.Window != 4096 {
		t.Errorf("report: window %d (%s), want 4096", rep.Window, rep.WindowSource)
	}
}

func (rig *roRig) openAIStream(t *testing.T) {
	g := rig.roGuard(t)
	msgs := rig.conversation(12, 250)
	body := map[string]any{"model": "tiny", "messages": msgs, "stream": true, "stream_options": map[string]any{"include_usage": true}, "max_tokens": 4, "temperature": 0}
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, _, raw := realollama.Post(t, g.URL+"/v1/chat/completions", body, nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	type chunk struct {
		Choices []struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
		Ctxkit *guard.Report `json:"ctxkit"`
	}
	var chunks []chunk
	sawDone := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			sawDone = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	if !sawDone {
		t.Errorf("no [DONE]: %s", short(raw))
	}
	var usage, rep *chunk
	for i := range chunks {
		if chunks[i].Usage != nil {
			usage = &chunks[i]
		}
		if chunks[i].Ctxkit != nil {
			rep = &chunks[i]
		}
	}
	if usage == nil || rep == nil {
		t.Fatalf("usage chunk %v, report %v: %s", usage != nil, rep != nil, short(raw))
	}
	sent := rig.sentMessages(t, mark, "/v1/chat/completions")
	if !hasNeedle(sent) {
		t.Error("the needle's message did not reach the model")
	}
	rig.wholePrompt(t, sent, usage.Usage.PromptTokens, 4096, logMark)
	if rep.Ctxkit.PromptEvalCount != usage.Usage.PromptTokens || rep.Ctxkit.Window != 4096 {
		t.Errorf("report: prompt_eval_count %d, window %d; usage.prompt_tokens %d, Ollama's default window 4096", rep.Ctxkit.PromptEvalCount, rep.Ctxkit.Window, usage.Usage.PromptTokens)
	}
}

func (rig *roRig) shrunkWindow(t *testing.T) {
	g := rig.roGuard(t)
	msgs := rig.bigMessage(6000)
	for _, w := range []int{4096, 2048} {
		mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
		code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, w, nil), nil)
		if code != http.StatusOK {
			t.Errorf("at %d: status %d: %s", w, code, short(raw))
			continue
		}
		rig.wholePrompt(t, rig.sentMessages(t, mark, "/api/chat"), a.PromptEvalCount, w, logMark)
	}
}

func (rig *roRig) modelfileNumCtx(t *testing.T) {
	rig.srv.Create(t, realollama.Model{Name: "tiny1k", NumCtx: 1024})
	g := rig.roGuard(t)
	msgs := rig.conversation(6, 250)
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny1k", msgs, 0, nil), nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	if w := rig.loadedWindow(t); w != 1024 {
		t.Errorf("Ollama ran the request at %d, want the Modelfile's 1024", w)
	}
	sent := rig.sentMessages(t, mark, "/api/chat")
	if !hasNeedle(sent) {
		t.Error("the needle's message did not reach the model")
	}
	rig.wholePrompt(t, sent, a.PromptEvalCount, 1024, logMark)
	if rep := report(t, a, raw); rep.Window != 1024 {
		t.Errorf("report: window %d (%s), want 1024", rep.Window, rep.WindowSource)
	}
}

func (rig *roRig) aboveCap(t *testing.T) {
	// The window is under test here, not the estimate: the guard counts
	// with the model's own tokenizer (ctxkit guard --tokenizer). The tiny
	// model's few merges (3.1 bytes a token on English) are outside what
	// the default estimate promises; at 8192 its shortfall passes the
	// budget's margin, and the first request is cut (and reported).
	g := rig.roGuard(t, rig.tk)
	msgs := rig.conversation(18, 250)
	mark, logMark := rig.rec.mark(), rig.srv.Log().Len()
	code, a, raw := rig.chat(t, g.URL, realollama.ChatBody("tiny", msgs, 16384, nil), nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	if w := rig.loadedWindow(t); w != tinymodel.ContextLength {
		t.Errorf("Ollama loaded the model at %d, want its trained %d", w, tinymodel.ContextLength)
	}
	sent := rig.sentMessages(t, mark, "/api/chat")
	if !hasNeedle(sent) {
		t.Error("the needle's message did not reach the model")
	}
	rig.wholePrompt(t, sent, a.PromptEvalCount, tinymodel.ContextLength, logMark)
	if rep := report(t, a, raw); rep.Window != tinymodel.ContextLength {
		t.Errorf("report: window %d (%s), want %d", rep.Window, rep.WindowSource, tinymodel.ContextLength)
	}
}

func (rig *roRig) embed(t *testing.T) {
	g := rig.roGuard(t)
	inputs := []string{"A short note about the weather.", rig.filler(400, 1500)}
	code, h, raw := realollama.Post(t, g.URL+"/api/embed", map[string]any{"model": "tiny", "input": inputs, "options": map[string]any{"num_ctx": 1024}}, nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, short(raw))
	}
	var a struct {
		Embeddings      [][]float64        `json:"embeddings"`
		PromptEvalCount int                `json:"prompt_eval_count"`
		Ctxkit          *guard.EmbedReport `json:"ctxkit"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Embeddings) != 2 {
		t.Errorf("%d embeddings", len(a.Embeddings))
	}
	// What Ollama did: embedded the first num_ctx-2 tokens of the long
	// input (it keeps room for a BOS and an EOS it assumes the model adds:
	// the GGUF has no llama.add_bos_token, which it reads).
	if want := rig.tk.Count(inputs[0]) + 1024 - 2; a.PromptEvalCount != want {
		t.Errorf("prompt_eval_count %d, want %d (the short input and 1022 tokens of the long one)", a.PromptEvalCount, want)
	}
	if got := h.Get(guard.EmbedTruncatedHeader); got != "1" {
		t.Errorf("%s: %q, want 1", guard.EmbedTruncatedHeader, got)
	}
	if a.Ctxkit == nil || a.Ctxkit.Window != 1024 || fmt.Sprint(a.Ctxkit.OverWindow) != "[1]" {
		t.Errorf("report %+v", a.Ctxkit)
	}
}

// roRecorder is a reverse proxy in front of Ollama that keeps the body of
// every request it passes on.
type roRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []roRecorded
}

type roRecorded struct {
	path string
	body []byte
}

func newRORecorder(t *testing.T, upstream string) *roRecorder {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rec := &roRecorder{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = u.Host },
		FlushInterval: -1,
	}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, roRecorded{r.URL.Path, body})
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// mark is the number of requests so far.
func (rec *roRecorder) mark() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

// since returns the bodies of the requests to path after mark.
func (rec *roRecorder) since(mark int, path string) [][]byte {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out [][]byte
	for _, r := range rec.reqs[mark:] {
		if r.path == path {
			out = append(out, r.body)
		}
	}
	return out
}
