package realollama_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/realollama"
	"github.com/ctxkit/ctxkit/internal/tinymodel"
	"github.com/ctxkit/ctxkit/tokenizer"
)

var update = flag.Bool("update", false, "rewrite testdata/ollama-v0.17.4.json from the real server")

type msg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// recording builds the fixed requests.
type recording struct {
	tk *tokenizer.Tokenizer
}

func (r recording) text(seed, n int) string {
	words := strings.Fields("the river town school morning light paper answer people water garden window letter market station bridge winter summer music story")
	var b strings.Builder
	for i := 0; r.tk.Count(b.String()) < n; i++ {
		fmt.Fprintf(&b, "%s %s %s, ", words[(seed+i)%len(words)], words[(seed*3+i*7)%len(words)], words[(i*11)%len(words)])
		if i%10 == 9 {
			fmt.Fprintf(&b, "item %d.\n", seed*100+i)
		}
	}
	return b.String()
}

func (r recording) conversation(turns, n int) []msg {
	msgs := []msg{{"system", "You are brief."}, {"user", "The code word is MARIGOLD. Remember it."}}
	for i := range turns {
		role := []string{"assistant", "user"}[i%2]
		msgs = append(msgs, msg{role, r.text(i+1, n)})
	}
	return append(msgs, msg{"assistant", "Yes."}, msg{"user", "What is the code word?"})
}

func render(msgs []msg) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	return b.String() + "<|im_start|>assistant\n"
}

// TestAnswers sends fixed requests to the real server and checks its
// answers against testdata/ollama-v0.17.4.json (go test -update rewrites
// the file from the server). The emulators are checked against the same
// file without the server.
func TestAnswers(t *testing.T) {
	s := realollama.Start(t, realollama.Options{})
	s.Create(t, realollama.Model{Name: "tiny512", NumCtx: 512})
	tk, err := tokenizer.Parse(tinymodel.TokenizerJSON())
	if err != nil {
		t.Fatal(err)
	}
	rec := recording{tk: tk}
	long := []msg{{"user", rec.text(50, 1500)}}
	multi := rec.conversation(6, 200)
	small := []msg{{"system", "You are brief."}, {"user", "Say hello."}}

	type req struct {
		name, method, path string
		body               map[string]any
	}
	reqs := []req{
		{"chat that fits", "POST", "/api/chat", realollama.ChatBody("tiny", small, 512, nil)},
		{"chat, one message over num_ctx", "POST", "/api/chat", realollama.ChatBody("tiny", long, 512, nil)},
		{"chat, one message over num_ctx, streamed", "POST", "/api/chat", realollama.ChatBody("tiny", long, 512, map[string]any{"stream": true})},
		{"chat, several messages over num_ctx", "POST", "/api/chat", realollama.ChatBody("tiny", multi, 512, nil)},
		{"chat, several messages over num_ctx, truncate false", "POST", "/api/chat", realollama.ChatBody("tiny", multi, 512, map[string]any{"truncate": false})},
		{"chat, one message over num_ctx, truncate false, streamed", "POST", "/api/chat", realollama.ChatBody("tiny", long, 512, map[string]any{"truncate": false, "stream": true})},
		{"generate raw, over num_ctx", "POST", "/api/generate", map[string]any{"model": "tiny", "prompt": long[0].Content, "raw": true, "stream": false, "options": map[string]any{"num_ctx": 512, "num_predict": 4, "temperature": 0}}},
		{"chat, num_ctx 16384 above the trained 8192", "POST", "/api/chat", realollama.ChatBody("tiny", small, 16384, nil)},
		{"chat without num_ctx: the server default", "POST", "/api/chat", realollama.ChatBody("tiny", small, 0, nil)},
		{"show", "POST", "/api/show", map[string]any{"model": "tiny"}},
		{"show, Modelfile num_ctx 512", "POST", "/api/show", map[string]any{"model": "tiny512"}},
		{"chat without num_ctx, Modelfile num_ctx 512, several messages over it", "POST", "/api/chat", realollama.ChatBody("tiny512", multi, 0, nil)},
		{"/v1/chat/completions streamed with include_usage", "POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": small, "stream": true, "stream_options": map[string]any{"include_usage": true}, "max_tokens": 4, "temperature": 0}},
		{"/v1/chat/completions, several messages over the Modelfile's num_ctx 512", "POST", "/v1/chat/completions", map[string]any{"model": "tiny512", "messages": multi, "max_tokens": 4, "temperature": 0}},
		{"embed, one input over num_ctx", "POST", "/api/embed", map[string]any{"model": "tiny", "input": []string{"A short note.", long[0].Content}, "options": map[string]any{"num_ctx": 512}}},
		{"embed, truncate false", "POST", "/api/embed", map[string]any{"model": "tiny", "input": long[0].Content, "truncate": false, "options": map[string]any{"num_ctx": 512}}},
	}

	got := realollama.Answers{
		Ollama: "0.17.4",
		Model:  "internal/tinymodel (llama, 2 layers, hidden 64, byte-level BPE, context_length 8192) as tiny (ChatML TEMPLATE) and tiny512 (the same with PARAMETER num_ctx 512), OLLAMA_NUM_PARALLEL=1, CPU",
		Notes: []string{
			"prompt_eval_count counts every token evaluated (no BOS: the model adds none); tokens_sent is package tokenizer's count of what was sent, rendered with the template for chats",
			"done_reason is \"length\" whenever num_predict (4) is reached, cut or not",
			"kept_messages: the messages Ollama kept when it dropped some (server/prompt.go chatPrompt: the system messages and the first suffix that fits num_ctx)",
		},
	}
	for _, rq := range reqs {
		c := realollama.Case{Name: rq.name}
		c.Request.Method, c.Request.Path = rq.method, rq.path
		body, err := json.Marshal(rq.body)
		if err != nil {
			t.Fatal(err)
		}
		c.Request.Body = body
		mark := s.Log().Len()
		c.Answer = send(t, s, rq.method, rq.path, body)
		for _, r := range s.Log().Records(mark) {
			if r.Level == "WARN" || r.Level == "ERROR" {
				e := map[string]string{"level": r.Level, "msg": r.Msg}
				for k, v := range r.Attrs {
					if k != "time" {
						e[k] = v
					}
				}
				c.Answer.Log = append(c.Answer.Log, e)
			}
		}
		rec.sent(&c.Answer, rq.body)
		if rq.path != "/api/show" {
			c.Answer.LoadedContextLength = loadedWindow(t, s)
		}
		got.Cases = append(got.Cases, c)
	}

	path := filepath.Join("testdata", realollama.AnswersFile)
	if *update {
		out, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want realollama.Answers
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Cases) != len(got.Cases) {
		t.Fatalf("%d cases in %s, %d sent (go test -update after changing them)", len(want.Cases), path, len(got.Cases))
	}
	for i, c := range got.Cases {
		w := want.Cases[i]
		var gb, wb bytes.Buffer
		if json.Compact(&gb, c.Request.Body) != nil || json.Compact(&wb, w.Request.Body) != nil || c.Name != w.Name || !bytes.Equal(gb.Bytes(), wb.Bytes()) {
			t.Errorf("case %d %q: the request differs from the file's (go test -update after changing it)", i, c.Name)
			continue
		}
		g, _ := json.Marshal(c.Answer)
		ww, _ := json.Marshal(w.Answer)
		if !bytes.Equal(g, ww) {
			t.Errorf("case %q: the server answers\n%s\nthe file says\n%s", c.Name, g, ww)
		}
	}
}

// sent fills in the request's own count and, for a chat whose messages
// Ollama dropped, which it kept.
func (r recording) sent(a *realollama.Answer, body map[string]any) {
	count := a.PromptEvalCount
	if count == 0 {
		count = a.PromptTokens
	}
	switch {
	case body["messages"] != nil:
		msgs := body["messages"].([]msg)
		a.TokensSent = r.tk.Count(render(msgs))
		if count == 0 || count == a.TokensSent {
			return
		}
		for i := 1; i < len(msgs); i++ {
			var kept []msg
			var idx []int
			for j, m := range msgs[:i] {
				if m.Role == "system" {
					kept, idx = append(kept, m), append(idx, j)
				}
			}
			for j := i; j < len(msgs); j++ {
				idx = append(idx, j)
			}
			if r.tk.Count(render(append(kept, msgs[i:]...))) == count {
				a.KeptMessages = idx
				return
			}
		}
	case body["prompt"] != nil:
		a.TokensSent = r.tk.Count(body["prompt"].(string))
	case body["input"] != nil:
		switch in := body["input"].(type) {
		case string:
			a.TokensSent = r.tk.Count(in)
		case []string:
			for _, s := range in {
				a.TokensSent += r.tk.Count(s)
			}
		}
	}
}

// send sends one request and reads what is deterministic in its answer.
func send(t *testing.T, s *realollama.Server, method, path string, body []byte) realollama.Answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
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
	a := realollama.Answer{Status: resp.StatusCode}
	type fields struct {
		Error           string         `json:"error"`
		Done            bool           `json:"done"`
		DoneReason      string         `json:"done_reason"`
		PromptEvalCount int            `json:"prompt_eval_count"`
		EvalCount       int            `json:"eval_count"`
		ModelInfo       map[string]any `json:"model_info"`
		Parameters      string         `json:"parameters"`
		Choices         []struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	take := func(f fields) {
		if f.Error != "" {
			a.Error = f.Error
		}
		if f.Done || f.PromptEvalCount > 0 {
			a.PromptEvalCount, a.DoneReason, a.EvalCount = f.PromptEvalCount, f.DoneReason, f.EvalCount
		}
		if n, ok := f.ModelInfo["llama.context_length"].(float64); ok {
			a.ContextLength, a.Parameters = int(n), realollama.SortedParameters(f.Parameters)
		}
		if f.Usage != nil {
			a.PromptTokens = f.Usage.PromptTokens
		}
		for _, c := range f.Choices {
			if c.FinishReason != nil && *c.FinishReason != "" {
				a.DoneReason = *c.FinishReason
			}
		}
	}
	shape := func(s string) {
		if s == "content" && len(a.Stream) > 0 && (a.Stream[len(a.Stream)-1] == "content" || a.Stream[len(a.Stream)-1] == "content*") {
			a.Stream[len(a.Stream)-1] = "content*"
			return
		}
		a.Stream = append(a.Stream, s)
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/x-ndjson"):
		for line := range bytes.Lines(raw) {
			var f fields
			if err := json.Unmarshal(line, &f); err != nil {
				t.Fatalf("%s: chunk %q: %v", path, line, err)
			}
			take(f)
			switch {
			case f.Error != "":
				shape("error")
			case f.Done:
				shape("done:" + f.DoneReason)
			default:
				shape("content")
			}
		}
	case strings.HasPrefix(ct, "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				shape("[DONE]")
				continue
			}
			var f fields
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				t.Fatalf("%s: event %q: %v", path, data, err)
			}
			take(f)
			switch {
			case f.Usage != nil && len(f.Choices) == 0:
				shape("usage")
			case slices.ContainsFunc(f.Choices, func(c struct {
				FinishReason *string `json:"finish_reason"`
			}) bool {
				return c.FinishReason != nil && *c.FinishReason != ""
			}):
				shape("finish:" + a.DoneReason)
			default:
				shape("content")
			}
		}
	default:
		var f fields
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %d %q: %v", path, resp.StatusCode, raw, err)
		}
		take(f)
	}
	return a
}

func loadedWindow(t *testing.T, s *realollama.Server) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+"/api/ps", nil)
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
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) == 0 {
		return 0
	}
	return ps.Models[0].ContextLength
}
