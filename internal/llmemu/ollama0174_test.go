package llmemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
)

// logRecord is one line of the emulated server log.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

// logSink is a slog.Handler that keeps what it is given.
type logSink struct {
	mu   *sync.Mutex
	recs *[]logRecord
}

func newLogSink() logSink { return logSink{mu: &sync.Mutex{}, recs: &[]logRecord{}} }

func (h logSink) Enabled(context.Context, slog.Level) bool { return true }
func (h logSink) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logSink) WithGroup(string) slog.Handler            { return h }
func (h logSink) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	h.mu.Unlock()
	return nil
}

// find returns the records with message msg.
func (h logSink) find(msg string) []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
	for _, r := range *h.recs {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// fill returns text of exactly n tokens by c: " a" words, then one "."
// when a word takes two tokens and n is odd. It fails the test when c
// does not count it so.
func fill(t testing.TB, c Counter, n int) string {
	t.Helper()
	per := c.Count(" a")
	text := strings.Repeat(" a", n/per) + strings.Repeat(".", n%per)
	if got := c.Count(text); got != n {
		t.Fatalf("fill(%d) has %d tokens", n, got)
	}
	return text
}

// generateFinal runs a raw /api/generate and returns its done chunk.
func generateFinal(t *testing.T, c *api.Client, prompt string, opts map[string]any) api.GenerateResponse {
	t.Helper()
	var final api.GenerateResponse
	err := c.Generate(context.Background(), &api.GenerateRequest{Model: "llama3.2", Prompt: prompt, Raw: true, Options: opts},
		func(r api.GenerateResponse) error {
			if r.Done {
				final = r
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return final
}

// TestOllamaRunnerCut: v0.17.4's runner cuts a prompt longer than the
// window to exactly the window, keeping num_keep tokens (+1 for BOS) and
// the tail, and logs the WARN the real server logged ("limit=2048
// prompt=6026 keep=5 new=2048", measured); the reply goes on (context
// shift): done_reason does not tell.
func TestOllamaRunnerCut(t *testing.T) {
	tests := []struct {
		name         string
		numCtx, sent int // sent: tokens the runner sees, BOS included
		bos          bool
		numKeep      *int
		want, keep   int // prompt_eval_count; tokens kept from the head (BOS included); keep 0: no cut
		reason       string
	}{
		{"fits", 2048, 2000, false, nil, 2000, 0, "stop"},
		{"fills the window exactly", 2048, 2048, false, nil, 2048, 0, "stop"},
		{"one token over", 2048, 2049, false, nil, 2048, 4, "stop"},
		{"measured: 6026 with BOS into 2048", 2048, 6026, true, nil, 2048, 5, "stop"},
		{"num_keep 0 keeps only BOS", 2048, 6026, true, ptr(0), 2048, 1, "stop"},
		{"num_keep -1 keeps the head", 1024, 3000, false, ptr(-1), 1024, 1023, "stop"},
		{"num_keep 100", 1024, 3000, false, ptr(100), 1024, 100, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newLogSink()
			s := NewOllama(OllamaOptions{AddBOS: tt.bos, Log: slog.New(sink)})
			c, _ := ollamaClient(t, s)
			bos := 0
			if tt.bos {
				bos = 1
			}
			prompt := varied(t, s.Counter(), tt.sent-bos)
			opts := map[string]any{"num_ctx": tt.numCtx}
			if tt.numKeep != nil {
				opts["num_keep"] = *tt.numKeep
			}
			final := generateFinal(t, c, prompt, opts)
			if final.PromptEvalCount != tt.want || final.DoneReason != tt.reason {
				t.Fatalf("prompt_eval_count %d done_reason %q, want %d %q", final.PromptEvalCount, final.DoneReason, tt.want, tt.reason)
			}
			ev, _ := s.LastEval()
			warns := sink.find("truncating input prompt")
			if tt.keep == 0 {
				if ev.Truncated || ev.Prompt != prompt || len(warns) != 0 {
					t.Fatalf("cut a prompt that fits: %+v, log %v", ev.Truncated, warns)
				}
				return
			}
			toks := s.Counter().Split(prompt)
			head := tt.keep - bos
			wantPrompt := strings.Join(toks[:head], "") + strings.Join(toks[len(toks)-(tt.want-tt.keep):], "")
			if !ev.Truncated || ev.Prompt != wantPrompt || ev.SentTokens != tt.sent || ev.NumCtx != tt.numCtx {
				t.Fatalf("eval = truncated %v sent %d window %d, kept prompt %d bytes, want %d", ev.Truncated, ev.SentTokens, ev.NumCtx, len(ev.Prompt), len(wantPrompt))
			}
			if len(warns) != 1 || warns[0].level != slog.LevelWarn {
				t.Fatalf("log = %v", warns)
			}
			a := warns[0].attrs
			if a["limit"] != int64(tt.numCtx) || a["prompt"] != int64(tt.sent) || a["keep"] != int64(tt.keep) || a["new"] != int64(tt.numCtx) {
				t.Fatalf("WARN attrs = %v", a)
			}
		})
	}
}

// varied returns text of exactly n tokens by c, its tokens told apart
// (numbered words).
func varied(t testing.TB, c Counter, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < 8*n+16; i++ {
		b.WriteString(" w")
		b.WriteString(strconv.Itoa(i))
	}
	text := strings.Join(c.Split(b.String())[:n], "")
	if got := c.Count(text); got != n {
		t.Fatalf("varied(%d) has %d tokens", n, got)
	}
	return text
}

// chatOnce runs one /api/chat and returns the answer's text and its done
// chunk.
func chatOnce(t *testing.T, c *api.Client, req *api.ChatRequest) (string, api.ChatResponse) {
	t.Helper()
	var text strings.Builder
	var final api.ChatResponse
	err := c.Chat(context.Background(), req, func(r api.ChatResponse) error {
		text.WriteString(r.Message.Content)
		if r.Done {
			final = r
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return text.String(), final
}

// TestOllamaNeedle: v0.17.4 drops whole messages from the front (system
// and last kept, prompt_eval_count small, only a DEBUG log), and cuts one
// long message to the window, keeping the head's num_keep tokens and the
// tail (prompt_eval_count exactly num_ctx, a WARN).
func TestOllamaNeedle(t *testing.T) {
	c0 := NewOllama(OllamaOptions{}).Counter()
	tests := []struct {
		name      string
		msgs      []Message
		numCtx    int
		want      string
		evalFull  bool // prompt_eval_count is the window
		kept      int  // messages kept
		debug     bool // the message drop is logged at DEBUG
		truncated bool
	}{
		{"fits", needleChat(5, 100), 4096, "ANANAS-7734", false, 14, false, false},
		{"whole messages dropped", needleChat(30, 200), 4096, Dont, false, 0, true, true},
		{"the system message survives the drop", append([]Message{{Role: "system", Content: "SECRET: KIWI-1"}}, needleChat(30, 200)[1:]...), 4096, "KIWI-1", false, 0, true, true},
		{"one long message loses its head", []Message{{Role: "user", Content: "SECRET: ANANAS-7734\n" + fill(t, c0, 6000) + "\nWhat is the secret?"}}, 2048, Dont, true, 1, false, true},
		{"one long message keeps its tail", []Message{{Role: "user", Content: fill(t, c0, 6000) + "\nSECRET: MANGO-2\nWhat is the secret?"}}, 2048, "MANGO-2", true, 1, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newLogSink()
			s := NewOllama(OllamaOptions{Log: slog.New(sink)})
			c, _ := ollamaClient(t, s)
			text, final := chatOnce(t, c, &api.ChatRequest{Model: "llama3.2", Messages: toAPI(tt.msgs), Options: map[string]any{"num_ctx": tt.numCtx}})
			if text != tt.want {
				t.Fatalf("answer = %q, want %q", text, tt.want)
			}
			ev, _ := s.LastEval()
			kept := layer1With(s, tt.msgs, tt.numCtx)
			if tt.kept != 0 && len(kept) != tt.kept {
				t.Fatalf("reference kept %d messages, want %d", len(kept), tt.kept)
			}
			if ev.Truncated != tt.truncated || ev.KeptMessages != len(kept) {
				t.Fatalf("truncated %v kept %d, want %v %d", ev.Truncated, ev.KeptMessages, tt.truncated, len(kept))
			}
			want, reason := s.CountChat(kept, nil), "stop"
			if tt.evalFull {
				want = tt.numCtx
			}
			if final.PromptEvalCount != want || final.DoneReason != reason {
				t.Fatalf("prompt_eval_count %d done_reason %q, want %d %q", final.PromptEvalCount, final.DoneReason, want, reason)
			}
			if got := len(sink.find("truncating input messages which exceed context length")) > 0; got != tt.debug {
				t.Fatalf("DEBUG logged %v, want %v", got, tt.debug)
			}
			if got := len(sink.find("truncating input prompt")) > 0; got != tt.evalFull {
				t.Fatalf("WARN logged %v, want %v", got, tt.evalFull)
			}
		})
	}
}

// layer1With is chatPrompt's loop written out plainly (quadratic, each
// candidate rendered whole), counted by s.
func layer1With(s *Ollama, msgs []Message, numCtx int) []Message {
	for i := range msgs {
		var cand []Message
		for _, m := range msgs[:i] {
			if m.Role == "system" {
				cand = append(cand, m)
			}
		}
		cand = append(cand, msgs[i:]...)
		if i == len(msgs)-1 || s.CountChat(cand, nil) <= numCtx {
			return cand
		}
	}
	return msgs
}

// TestOllamaTruncateFalse: with "truncate": false v0.17.4 drops no message
// and cuts nothing; a prompt longer than the window gets 400 with the
// runner's words, streaming or not, on /api/chat and /api/generate.
func TestOllamaTruncateFalse(t *testing.T) {
	s := NewOllama(OllamaOptions{})
	c, base := ollamaClient(t, s)
	long := needleChat(30, 200)
	for _, stream := range []bool{true, false} {
		err := c.Chat(context.Background(), &api.ChatRequest{Model: "llama3.2", Messages: toAPI(long), Truncate: ptr(false), Stream: &stream},
			func(api.ChatResponse) error { return nil })
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode != 400 || se.ErrorMessage != OllamaInputTooLong {
			t.Fatalf("stream=%v: err = %#v", stream, err)
		}
		ev, _ := s.LastEval()
		if ev.KeptMessages != len(long) || ev.Status != 400 {
			t.Fatalf("eval = %+v", ev)
		}
	}
	// The raw body, as a client that reads JSON sees it.
	resp, err := http.Post(base+"/api/generate", "application/json",
		strings.NewReader(`{"model":"llama3.2","raw":true,"truncate":false,"options":{"num_ctx":100},"prompt":"`+fill(t, s.Counter(), 101)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || len(body) != 1 || body["error"] != "the input length exceeds the context length" {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	// Exactly the window is not refused.
	final := generateFinal(t, c, fill(t, s.Counter(), 100), map[string]any{"num_ctx": 100})
	if final.PromptEvalCount != 100 {
		t.Fatalf("prompt_eval_count = %d", final.PromptEvalCount)
	}
}

// TestOllamaWindow: the window a request runs at is its num_ctx, else the
// model's Modelfile num_ctx, else the server's default; a num_ctx over the
// trained context loads at the trained context (the first cut still uses
// the num_ctx asked for); any change of num_ctx reloads the model and
// /api/ps shows the last load only.
func TestOllamaWindow(t *testing.T) {
	sink := newLogSink()
	s := NewOllama(OllamaOptions{
		Models:         []string{"tiny:latest", "tuned:latest"},
		TrainedContext: 8192,
		Parameters:     map[string][]Parameter{"tuned": {{"num_ctx", "2048"}, {"stop", "<|im_end|>"}, {"temperature", "0.7"}}},
		Log:            slog.New(sink),
	})
	c, _ := ollamaClient(t, s)
	ctx := context.Background()
	ps := func() map[string]int {
		t.Helper()
		res, err := c.ListRunning(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, m := range res.Models {
			out[m.Name] = m.ContextLength
		}
		return out
	}
	long := func(n int) []api.Message {
		return []api.Message{{Role: "user", Content: fill(t, s.Counter(), n)}}
	}
	steps := []struct {
		name          string
		model         string
		numCtx        int // 0: none asked
		msgs          []api.Message
		wantEval      int
		wantPS        map[string]int
		wantLoads     int // of the model asked
		tooLargeWarns int // "requested context size too large for model" so far
	}{
		{"server default", "tiny", 0, long(5000), 4096, map[string]int{"tiny:latest": 4096}, 1, 0},
		{"same window: no reload", "tiny", 4096, long(10), s.CountChat([]Message{{Role: "user", Content: fill(t, s.Counter(), 10)}}, nil), map[string]int{"tiny:latest": 4096}, 1, 0},
		{"num_ctx over the trained context", "tiny", 16384, long(10000), 8192, map[string]int{"tiny:latest": 8192}, 2, 1},
		{"back to the default reloads", "tiny", 0, long(5000), 4096, map[string]int{"tiny:latest": 4096}, 3, 1},
		{"Modelfile num_ctx", "tuned", 0, long(5000), 2048, map[string]int{"tiny:latest": 4096, "tuned:latest": 2048}, 1, 1},
		{"the request's num_ctx overrides the Modelfile", "tuned", 3000, long(5000), 3000, map[string]int{"tiny:latest": 4096, "tuned:latest": 3000}, 2, 1},
	}
	for _, st := range steps {
		req := &api.ChatRequest{Model: st.model, Messages: st.msgs}
		if st.numCtx != 0 {
			req.Options = map[string]any{"num_ctx": st.numCtx}
		}
		_, final := chatOnce(t, c, req)
		if final.PromptEvalCount != st.wantEval {
			t.Errorf("%s: prompt_eval_count %d, want %d", st.name, final.PromptEvalCount, st.wantEval)
		}
		if got := ps(); !equalMaps(got, st.wantPS) {
			t.Errorf("%s: /api/ps %v, want %v", st.name, got, st.wantPS)
		}
		if got := s.LoadCount(s.resolve(st.model)); got != st.wantLoads {
			t.Errorf("%s: %d loads, want %d", st.name, got, st.wantLoads)
		}
		if got := len(sink.find("requested context size too large for model")); got != st.tooLargeWarns {
			t.Errorf("%s: %d WARNs about the size, want %d", st.name, got, st.tooLargeWarns)
		}
	}

	// Over the trained context the messages are dropped against the
	// num_ctx asked for, not the window loaded: 10 messages of 1000
	// tokens all pass the first cut and the runner cuts to 8192.
	var msgs []api.Message
	for range 10 {
		msgs = append(msgs, api.Message{Role: "user", Content: fill(t, s.Counter(), 1000)})
	}
	_, final := chatOnce(t, c, &api.ChatRequest{Model: "tiny", Messages: msgs, Options: map[string]any{"num_ctx": 16384}})
	ev, _ := s.LastEval()
	if final.PromptEvalCount != 8192 || ev.KeptMessages != 10 || final.DoneReason != "stop" {
		t.Fatalf("prompt_eval_count %d, kept %d messages, done_reason %q", final.PromptEvalCount, ev.KeptMessages, final.DoneReason)
	}

	// /api/show: the cap and the Modelfile's parameters as Ollama formats
	// them.
	show, err := c.Show(ctx, &api.ShowRequest{Model: "tuned"})
	if err != nil {
		t.Fatal(err)
	}
	wantParams := "num_ctx                        2048\nstop                           \"<|im_end|>\"\ntemperature                    0.7"
	if show.Parameters != wantParams || show.ModelInfo["llama.context_length"] != float64(8192) {
		t.Fatalf("show parameters %q model_info %v", show.Parameters, show.ModelInfo)
	}
	if !strings.Contains(show.Modelfile, "\nPARAMETER num_ctx 2048\n") {
		t.Fatalf("modelfile = %q", show.Modelfile)
	}
	plain, err := c.Show(ctx, &api.ShowRequest{Model: "tiny"})
	if err != nil || plain.Parameters != "" {
		t.Fatalf("show tiny = %q, %v", plain.Parameters, err)
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestOllamaShiftFalse: with "shift": false the runner stops when the
// window is full: the reply gets the room the prompt left, plus the token
// sampled last, which it emits before it finds no room to feed it back.
func TestOllamaShiftFalse(t *testing.T) {
	const answer = "one two three four five"
	s := NewOllama(OllamaOptions{Responder: func(Turn) Reply { return Reply{Text: answer} }})
	c, _ := ollamaClient(t, s)
	n := s.Counter().Count(answer)
	for _, tt := range []struct {
		prompt int
		room   int // tokens of the answer that fit; -1: all
	}{
		{100 - n - 1, -1},
		{100 - n, -1},
		{100 - n + 1, n},
		{100 - n + 3, n - 2},
		{100, 1},
		{300, 1},
	} {
		var text strings.Builder
		var final api.GenerateResponse
		err := c.Generate(context.Background(), &api.GenerateRequest{Model: "llama3.2", Raw: true, Prompt: fill(t, s.Counter(), tt.prompt),
			Shift: ptr(false), Options: map[string]any{"num_ctx": 100}}, func(r api.GenerateResponse) error {
			text.WriteString(r.Response)
			if r.Done {
				final = r
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want, reason := answer, "stop"
		if tt.room >= 0 {
			want, reason = strings.Join(s.Counter().Split(answer)[:tt.room], ""), "length"
		}
		if text.String() != want || final.DoneReason != reason || final.EvalCount != s.Counter().Count(want) {
			t.Errorf("prompt %d: %q %q (%d tokens), want %q %q", tt.prompt, text.String(), final.DoneReason, final.EvalCount, want, reason)
		}
	}
	// num_predict is checked before the next token is sampled: a reply of
	// exactly num_predict tokens ends "length" too.
	for _, tt := range []struct {
		numPredict int
		reason     string
	}{{n - 1, "length"}, {n, "length"}, {n + 1, "stop"}} {
		final := generateFinal(t, c, "hi", map[string]any{"num_predict": tt.numPredict})
		if final.DoneReason != tt.reason || final.EvalCount != min(n, tt.numPredict) {
			t.Errorf("num_predict %d: %q, %d tokens", tt.numPredict, final.DoneReason, final.EvalCount)
		}
	}
}

// TestOllamaOpenAIUsageChunk: /v1/chat/completions runs at the model's
// default window; with include_usage the usage comes in its own chunk,
// choices empty, after the finish chunk and before [DONE].
func TestOllamaOpenAIUsageChunk(t *testing.T) {
	s := NewOllama(OllamaOptions{NumCtx: 2048})
	_, base := oaiClient(t, s)
	body, err := json.Marshal(map[string]any{
		"model": "llama3.2", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []map[string]any{{"role": "user", "content": "SECRET: K-1\n" + fill(t, s.Counter(), 5000) + "\nWhat is the secret?"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type chunk struct {
		Choices []struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	var chunks []chunk
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		if done {
			t.Fatalf("data after [DONE]: %s", data)
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	if !done || len(chunks) < 3 {
		t.Fatalf("done %v, %d chunks", done, len(chunks))
	}
	finish, usage := chunks[len(chunks)-2], chunks[len(chunks)-1]
	if len(finish.Choices) != 1 || finish.Choices[0].FinishReason == nil || *finish.Choices[0].FinishReason != "stop" || finish.Usage != nil {
		t.Fatalf("finish chunk = %+v", finish)
	}
	if len(usage.Choices) != 0 || usage.Usage == nil || usage.Usage.PromptTokens != 2048 {
		t.Fatalf("usage chunk = %+v", usage)
	}
	if ev, _ := s.LastEval(); ev.NumCtx != 2048 || !ev.Truncated {
		t.Fatalf("eval = %+v", ev)
	}

	// The Modelfile's num_ctx applies to /v1 too.
	m := NewOllama(OllamaOptions{Parameters: map[string][]Parameter{"llama3.2": {{"num_ctx", "1024"}}}})
	oc, _ := oaiClient(t, m)
	res, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "llama3.2",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fill(t, m.Counter(), 3000))}})
	if err != nil || res.Usage.PromptTokens != 1024 || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("%+v, %v", res, err)
	}
}

// TestOllamaEmbedV0174: an input over the window keeps its head, the
// window less two tokens (the server assumes BOS and EOS) plus the BOS the
// runner adds; truncate:false gets the runner's 400.
func TestOllamaEmbedV0174(t *testing.T) {
	for _, bos := range []bool{false, true} {
		s := NewOllama(OllamaOptions{AddBOS: bos})
		c, _ := ollamaClient(t, s)
		ctx := context.Background()
		b := 0
		if bos {
			b = 1
		}
		in := "HEAD" + fill(t, s.Counter(), 3000)
		emb, err := c.Embed(ctx, &api.EmbedRequest{Model: "llama3.2", Input: []string{in, "short text"}, Options: map[string]any{"num_ctx": 1000}})
		if err != nil {
			t.Fatal(err)
		}
		want := 1000 - 2 + b + s.Counter().Count("short text") + b
		if emb.PromptEvalCount != want || len(emb.Embeddings) != 2 {
			t.Fatalf("bos %v: prompt_eval_count %d, want %d", bos, emb.PromptEvalCount, want)
		}
		head := strings.Join(s.Counter().Split(in)[:998], "")
		if got := emb.Embeddings[0]; !equalVec(got, embed(head, 0)) {
			t.Fatalf("bos %v: the embedding is not the head's", bos)
		}
		_, err = c.Embed(ctx, &api.EmbedRequest{Model: "llama3.2", Input: in, Truncate: ptr(false), Options: map[string]any{"num_ctx": 1000}})
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode != 400 || se.ErrorMessage != OllamaInputTooLong {
			t.Fatalf("bos %v: truncate false: %v", bos, err)
		}
		if s.Loaded()["llama3.2:latest"] != 1000 {
			t.Fatalf("loaded %v", s.Loaded())
		}
	}
}

func equalVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOllamaVersion: /api/version reports the version emulated; the
// v0.33-only options and unknown versions are refused.
func TestOllamaVersion(t *testing.T) {
	for _, tt := range []struct{ opts, want string }{{"", "0.17.4"}, {OllamaV0174, "0.17.4"}, {OllamaV033, "0.33.0"}} {
		c, _ := ollamaClient(t, NewOllama(OllamaOptions{Version: tt.opts}))
		if v, err := c.Version(context.Background()); err != nil || v != tt.want {
			t.Errorf("Version %q: /api/version %q, %v", tt.opts, v, err)
		}
	}
	for name, opts := range map[string]OllamaOptions{
		"unknown version":            {Version: "0.20.0"},
		"native on 0.17.4":           {Native: true},
		"no context shift on 0.17.4": {NoContextShift: true},
		"parameter not a number":     {Parameters: map[string][]Parameter{"llama3.2": {{"num_ctx", "big"}}}},
		"parameters of no model":     {Parameters: map[string][]Parameter{"absent": {{"num_ctx", "1"}}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			NewOllama(opts)
		}()
	}
}

// TestOllamaMaxLoadedModels: loading one model more than
// OLLAMA_MAX_LOADED_MODELS unloads the least recently used.
func TestOllamaMaxLoadedModels(t *testing.T) {
	s := NewOllama(OllamaOptions{Models: []string{"a:latest", "b:latest", "c:latest"}, MaxLoadedModels: 2})
	c, _ := ollamaClient(t, s)
	for _, step := range []struct {
		model string
		want  map[string]int
	}{
		{"a", map[string]int{"a:latest": 4096}},
		{"b", map[string]int{"a:latest": 4096, "b:latest": 4096}},
		{"a", map[string]int{"a:latest": 4096, "b:latest": 4096}},
		{"c", map[string]int{"a:latest": 4096, "c:latest": 4096}}, // b was used least recently
		{"b", map[string]int{"b:latest": 4096, "c:latest": 4096}},
	} {
		chatOnce(t, c, &api.ChatRequest{Model: step.model, Messages: []api.Message{{Role: "user", Content: "hi"}}})
		if got := s.Loaded(); !equalMaps(got, step.want) {
			t.Fatalf("after %s: loaded %v, want %v", step.model, got, step.want)
		}
	}
	if n := s.LoadCount("b:latest"); n != 2 {
		t.Fatalf("b loaded %d times", n)
	}
}

// TestOllamaLayer1Collated: the message drop counts each candidate as
// Ollama renders it, consecutive messages of one role merged (tool
// messages apart), the system messages before it first: the emulator's
// sum of parts equals rendering each candidate whole, on lists with runs,
// system messages in the middle, tool messages and images.
func TestOllamaLayer1Collated(t *testing.T) {
	s := NewOllama(OllamaOptions{})
	c := s.Counter()
	roles := []string{"user", "user", "system", "assistant", "tool", "tool", "user", "system", "system", "user", "assistant", "assistant", "user"}
	var msgs []Message
	for i, r := range roles {
		m := Message{Role: r, Content: fmt.Sprintf("message %d:%s", i, fill(t, c, 50+10*i))}
		if i == 6 {
			m.Images = 1
		}
		msgs = append(msgs, m)
	}
	// Reference: chatPrompt's loop, each candidate rendered whole.
	whole := func(numCtx int) ([]Message, int) {
		count := func(ms []Message) int {
			n := c.Count(renderOllama(ms, nil))
			return n
		}
		total := count(msgs) + ImageTokens
		for i := range msgs {
			var cand []Message
			for _, m := range msgs[:i] {
				if m.Role == "system" {
					cand = append(cand, m)
				}
			}
			cand = append(cand, msgs[i:]...)
			n := count(cand)
			if i <= 6 {
				n += ImageTokens // images of msgs[i:] only
			}
			if i == len(msgs)-1 || n <= numCtx {
				return cand, total
			}
		}
		return msgs, total
	}
	for numCtx := 200; numCtx <= 2600; numCtx += 50 {
		got, gotTotal := s.layer1(msgs, nil, numCtx, true)
		want, wantTotal := whole(numCtx)
		if gotTotal != wantTotal || len(got) != len(want) {
			t.Fatalf("num_ctx %d: kept %d messages of %d tokens, want %d of %d", numCtx, len(got), gotTotal, len(want), wantTotal)
		}
		for i := range got {
			if got[i].Content != want[i].Content {
				t.Fatalf("num_ctx %d: message %d differs", numCtx, i)
			}
		}
	}
	// collate joins a run's contents with a blank line.
	if got := collate([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}, {Role: "tool", Content: "c"}, {Role: "tool", Content: "d"}}); len(got) != 3 || got[0].Content != "a\n\nb" {
		t.Fatalf("collate = %+v", got)
	}
}
