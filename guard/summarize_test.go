package guard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// middleNeedle is an agent history whose tool outputs (lower-case filler:
// no fact for the emulated summarizer to keep) are long enough to be
// evicted and summarized in several chunks, with the secret in the middle
// of the middle output: not at the head or the tail of the evicted span.
func middleNeedle(rounds, fillerWords int) []msg {
	msgs := []msg{
		{"role": "system", "content": "You are a careful agent."},
		{"role": "user", "content": "Your task: read the files, then answer my questions."},
	}
	filler := strings.Repeat("lorem ipsum dolor ", fillerWords/2)
	for i := range rounds {
		out := filler + filler
		if i == rounds/2 {
			out = filler + "SECRET: " + secret + ". " + filler
		}
		msgs = append(msgs,
			msg{"role": "assistant", "content": "", "tool_calls": []any{msg{"function": msg{"name": "read_file", "arguments": msg{"path": "notes.txt"}}}}},
			msg{"role": "tool", "content": out, "tool_name": "read_file"})
	}
	return append(msgs, msg{"role": "assistant", "content": "Done reading."}, msg{"role": "user", "content": "What is the secret?"})
}

// ask sends an Ollama chat through the guard and returns the answer and
// the report.
func ask(t *testing.T, gw string, msgs []msg) (string, *guard.Report) {
	t.Helper()
	resp, body := postJSON(t, gw+"/api/chat", msg{"model": "llama3.2", "stream": false, "messages": msgs})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got ollamaChatResp
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Ctxkit == nil || !got.Ctxkit.Compacted || len(got.Ctxkit.Evicted) == 0 {
		t.Fatalf("not compacted: %s", body)
	}
	return got.Message.Content, got.Ctxkit
}

// TestSummarizeMiddleNeedle: the secret deep in the middle of a long
// evicted span is lost with the plain notice and answered with the digest;
// the digest took a map over every chunk and a reduce; the next turn and a
// restarted guard with the same store do not summarize again.
func TestSummarizeMiddleNeedle(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	history := middleNeedle(12, 1200) // about 30k tokens, evicted as one span

	plain := newGuard(t, guard.Options{Ollama: up})
	if got, _ := ask(t, plain, history); got != llmemu.Dont {
		t.Fatalf("without --summarize: %q, want the secret lost", got)
	}

	engine, kv := offload.New(memstore.New(memstore.Options{})), memstore.NewKV()
	start := func() string {
		g, err := guard.New(guard.Options{Ollama: up, Engine: engine, KV: kv, Summarize: true, Counter: llmemu.TinyBPE()})
		if err != nil {
			t.Fatal(err)
		}
		return serve(t, g)
	}
	gw := start()
	before := emu.RequestCount("/api/generate")
	got, rep := ask(t, gw, history)
	calls := emu.RequestCount("/api/generate") - before
	if got != secret {
		t.Fatalf("with --summarize: %q, want %q; report %+v", got, secret, rep.Evicted)
	}
	if len(rep.Evicted) != 1 || !rep.Evicted[0].Summarized || rep.Evicted[0].SummaryErr != "" {
		t.Fatalf("span report %+v", rep.Evicted)
	}
	// the span is about 30k tokens; chunks fit a 4096 window: at least 8
	// map calls and one reduce
	if calls < 9 {
		t.Fatalf("%d summarizer calls for a 30k-token span in a 4096 window", calls)
	}
	// the health endpoint counts the calls
	resp, err := http.Get(gw + "/ctxkit/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Summarizer struct {
			Calls, Summarized, Failures int
		} `json:"summarizer"`
	}
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || health.Summarizer.Calls != calls || health.Summarizer.Summarized != 1 || health.Summarizer.Failures != 0 {
		t.Fatalf("health %+v (%v), want %d calls, 1 summarized", health.Summarizer, err, calls)
	}
	// no map call was cut by the summarizer's window
	for _, ev := range emu.Evals() {
		if ev.Path == "/api/generate" && ev.Truncated {
			t.Fatalf("a summarizer prompt of %d tokens was truncated", ev.SentTokens)
		}
	}

	next := append(append([]msg(nil), history...), msg{"role": "assistant", "content": secret}, msg{"role": "user", "content": "What is the secret, again?"})
	cases := []struct {
		name string
		gw   string
		msgs []msg
	}{
		{"next turn (plan replayed)", gw, next},
		{"restarted guard (digest from the store)", start(), history},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := emu.RequestCount("/api/generate")
			got, rep := ask(t, tc.gw, tc.msgs)
			if n := emu.RequestCount("/api/generate") - before; n != 0 {
				t.Fatalf("%d summarizer calls, want 0", n)
			}
			if got != secret || !rep.Evicted[0].Summarized {
				t.Fatalf("answer %q, span %+v", got, rep.Evicted[0])
			}
		})
	}
}

// TestSummarizeConcurrent: two requests with the same new span share one
// summarization.
func TestSummarizeConcurrent(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096, Timing: llmemu.Timing{Latency: 20 * time.Millisecond}})
	up := serve(t, emu)
	history := middleNeedle(12, 600)

	// one summarization alone, for the count
	solo := newGuard(t, guard.Options{Ollama: up, Summarize: true})
	before := emu.RequestCount("/api/generate")
	ask(t, solo, history)
	one := emu.RequestCount("/api/generate") - before

	gw := newGuard(t, guard.Options{Ollama: up, Summarize: true})
	before = emu.RequestCount("/api/generate")
	var wg sync.WaitGroup
	answers := make([]string, 2)
	for i := range answers {
		wg.Go(func() { answers[i], _ = ask(t, gw, history) })
	}
	wg.Wait()
	if n := emu.RequestCount("/api/generate") - before; n != one {
		t.Fatalf("%d summarizer calls for two concurrent requests, want %d (one summarization)", n, one)
	}
	for _, a := range answers {
		if a != secret {
			t.Fatalf("answers %q", answers)
		}
	}
}

// TestSummarizeFails: a summarizer that errs, hangs past the timeout or
// is unreachable leaves the plain notice; the request is still answered.
func TestSummarizeFails(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	failing := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"model \"gemma3:1b\" not found, try pulling it first"}`, http.StatusNotFound)
	}))
	hanging := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	// The timeout is short only where it is what fails: chunking the span
	// (counted by the model's tokenizer) takes its time under -race.
	cases := []struct {
		name, url, err string
		timeout        time.Duration
	}{
		{"error", failing, "status 404", time.Minute},
		{"timeout", hanging, "deadline exceeded", 200 * time.Millisecond},
		{"unreachable", "http://127.0.0.1:1", "connect", time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gw := newGuard(t, guard.Options{Ollama: up, Summarize: true, SummarizerModel: "gemma3:1b", SummarizerURL: tc.url, SummarizeTimeout: tc.timeout})
			got, rep := ask(t, gw, middleNeedle(8, 600))
			if got != llmemu.Dont {
				t.Fatalf("answer %q", got)
			}
			sp := rep.Evicted[0]
			if sp.Summarized || !strings.Contains(sp.SummaryErr, tc.err) {
				t.Fatalf("span %+v, want a summary error with %q", sp, tc.err)
			}
		})
	}
}

// TestSummarizeOpenAIBackend: a summarizer model served by llama.cpp (by
// the guard's routing, or by a /v1 summarizer URL) is asked through
// /v1/chat/completions.
func TestSummarizeOpenAIBackend(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	llama := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{NCtx: 8192, Model: "qwen-small.gguf"})
	lurl := serve(t, llama)
	cases := []struct {
		name string
		opts guard.Options
	}{
		{"routed by model", guard.Options{Ollama: up, LlamaCpp: lurl, Summarize: true, SummarizerModel: "qwen-small.gguf"}},
		{"summarizer URL", guard.Options{Ollama: up, Summarize: true, SummarizerModel: "qwen-small.gguf", SummarizerURL: lurl + "/v1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := llama.RequestCount("/v1/chat/completions")
			gw := newGuard(t, tc.opts)
			got, rep := ask(t, gw, middleNeedle(12, 1200))
			if got != secret || !rep.Evicted[0].Summarized {
				t.Fatalf("answer %q, span %+v", got, rep.Evicted[0])
			}
			// an 8192 window takes about half the calls a 4096 one does
			if n := llama.RequestCount("/v1/chat/completions") - before; n < 5 {
				t.Fatalf("%d calls to llama.cpp", n)
			}
		})
	}
}

// BenchmarkDigest measures the guard's own cost of a digest of a 20k-token
// span against the emulator (chunking, the calls, the store), per request
// that evicts it, each a new conversation (no plan to replay): miss
// summarizes a new span each time (every chunk new), miss-one-chunk a span
// whose other chunks' summaries are in the store, hit finds the span's
// digest in the store; off/new-span and off/same-span are the same requests
// without --summarize.
func BenchmarkDigest(b *testing.B) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	upSrv := httptest.NewServer(emu)
	defer upSrv.Close()
	start := func(summarize bool) string {
		g, err := guard.New(guard.Options{Ollama: upSrv.URL, Engine: offload.New(memstore.New(memstore.Options{})), KV: memstore.NewKV(), Summarize: summarize, Counter: llmemu.TinyBPE()})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(g)
		b.Cleanup(srv.Close)
		return srv.URL
	}
	client := &http.Client{}
	post := func(gw string, msgs []msg, summarized bool) int {
		data, _ := json.Marshal(msg{"model": "llama3.2", "stream": false, "messages": msgs})
		resp, err := client.Post(gw+"/api/chat", "application/json", strings.NewReader(string(data)))
		if err != nil {
			b.Fatal(err)
		}
		var out ollamaChatResp
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d, %v", resp.StatusCode, err)
		}
		resp.Body.Close()
		if out.Ctxkit == nil || len(out.Ctxkit.Evicted) != 1 || out.Ctxkit.Evicted[0].Summarized != summarized {
			b.Fatalf("report %+v", out.Ctxkit)
		}
		return out.Ctxkit.Evicted[0].Tokens
	}
	history := middleNeedle(10, 356)
	seq := 0 // every conversation is new
	// fresh returns a new conversation whose first changed tool outputs
	// differ from every earlier one's
	fresh := func(changed int) []msg {
		seq++
		h := append([]msg(nil), history...)
		tag := fmt.Sprintf("%c%c%c", 'a'+seq%26, 'a'+seq/26%26, 'a'+seq/676%26)
		h[len(h)-1] = msg{"role": "user", "content": "What is the secret? (ask " + tag + ")"}
		for i := 3; changed > 0 && i < len(h); i += 2 {
			if h[i]["role"] == "tool" {
				h[i] = msg{"role": "tool", "content": fmt.Sprint("run ", tag, " ", history[i]["content"]), "tool_name": "read_file"}
				changed--
			}
		}
		return h
	}
	for _, bc := range []struct {
		name      string
		summarize bool
		changed   int // tool outputs changed: 0, the span's digest is in the store
	}{{"off/new-span", false, 10}, {"miss", true, 10}, {"miss-one-chunk", true, 1}, {"off/same-span", false, 0}, {"hit", true, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			gw := start(bc.summarize)
			if bc.changed == 0 {
				post(gw, fresh(0), bc.summarize)
			}
			calls := emu.RequestCount("/api/generate")
			tokens := 0
			for b.Loop() {
				tokens = post(gw, fresh(bc.changed), bc.summarize)
			}
			b.ReportMetric(float64(emu.RequestCount("/api/generate")-calls)/float64(b.N), "calls/op")
			b.ReportMetric(float64(tokens), "span_tokens")
		})
	}
}

// TestSummarizeGrowingSpan: when the evicted span grows on a later turn,
// the chunks it starts with are not summarized again.
func TestSummarizeGrowingSpan(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	first := middleNeedle(12, 1200)
	grown := append(append([]msg(nil), first[:len(first)-2]...), middleNeedle(18, 1200)[2+2*12:]...)

	// the grown history alone: every chunk summarized
	before := emu.RequestCount("/api/generate")
	if got, _ := ask(t, newGuard(t, guard.Options{Ollama: up, Summarize: true}), grown); got != secret {
		t.Fatalf("grown alone: %q", got)
	}
	full := emu.RequestCount("/api/generate") - before

	gw := newGuard(t, guard.Options{Ollama: up, Summarize: true})
	ask(t, gw, first)
	before = emu.RequestCount("/api/generate")
	got, rep := ask(t, gw, grown)
	calls := emu.RequestCount("/api/generate") - before
	if got != secret || len(rep.Evicted) != 1 || !rep.Evicted[0].Summarized {
		t.Fatalf("answer %q, spans %+v", got, rep.Evicted)
	}
	t.Logf("%d summarizer calls for the grown span after the first, %d from scratch", calls, full)
	if calls >= full-4 {
		t.Fatalf("%d summarizer calls for the grown span after the first, %d from scratch", calls, full)
	}
}

// TestSummarizeReduceRecursive: with a small summarizer window and facts
// everywhere, the partial summaries do not fit one reduce and are reduced
// in levels; no summarizer prompt overflows its window.
func TestSummarizeReduceRecursive(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	// 1,700 tokens hold two partial summaries as the guard's estimate
	// counts them (this text of digits about 1.5 times the emulator's own
	// count), not all of them.
	small := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 1700, Preload: true, Models: []string{"gemma3:1b"}})
	surl := serve(t, small)
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "step %d wrote file out-%d.txt. ", i, i)
	}
	history := []msg{
		{"role": "system", "content": "You are a careful agent."},
		{"role": "user", "content": "Your task: run the steps."},
	}
	for range 4 {
		history = append(history, msg{"role": "assistant", "content": b.String()}, msg{"role": "user", "content": "go on"})
	}
	history = append(history, msg{"role": "assistant", "content": "Done."}, msg{"role": "user", "content": "What is the secret?"})
	gw := newGuard(t, guard.Options{Ollama: up, Summarize: true, SummarizerModel: "gemma3:1b", SummarizerURL: surl})
	_, rep := ask(t, gw, history)
	if !rep.Evicted[0].Summarized {
		t.Fatalf("span %+v", rep.Evicted[0])
	}
	reduces := 0
	for _, ev := range small.Evals() {
		if ev.Truncated {
			t.Fatalf("a summarizer prompt of %d tokens was truncated in a 1700 window", ev.SentTokens)
		}
		if strings.Contains(ev.Prompt, "Summarize these summaries") {
			reduces++
		}
	}
	t.Logf("%d summarizer calls, %d of them reduces", len(small.Evals()), reduces)
	if reduces < 3 {
		t.Fatalf("%d reduce calls: want levels of reduce", reduces)
	}
}

// TestSummarizeArbitrate: under --arbitrate, a summarizer model on the
// other runtime than the request's is not called (the request holds its
// runtime): plain notice, the reason reported.
func TestSummarizeArbitrate(t *testing.T) {
	emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 4096})
	up := serve(t, emu)
	llama := llmemu.NewLlamaCpp(llmemu.LlamaCppOptions{NCtx: 8192, Model: "qwen-small.gguf", Router: true, RouterModels: []string{"qwen-small.gguf"}})
	lurl := serve(t, llama)
	gw := newGuard(t, guard.Options{Ollama: up, LlamaCpp: lurl, Arbitrate: true, Arbiter: guard.ArbiterOptions{MinHold: -1, StateFile: t.TempDir() + "/pin.json"},
		Summarize: true, SummarizerModel: "qwen-small.gguf"})
	got, rep := ask(t, gw, middleNeedle(8, 600))
	if got != llmemu.Dont || rep.Evicted[0].Summarized || !strings.Contains(rep.Evicted[0].SummaryErr, "--arbitrate") {
		t.Fatalf("answer %q, span %+v", got, rep.Evicted[0])
	}
	if n := llama.RequestCount("/v1/chat/completions"); n != 0 {
		t.Fatalf("%d summarizer calls to llama.cpp while Ollama held the GPU", n)
	}
}
