package llmemu

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// userOf returns a chat request body with one user message of content,
// which the template turns into the content's tokens plus userOverhead().
func userOf(content string, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": "m", "stream": stream, "messages": []map[string]string{{"role": "user", "content": content}}})
	return string(b)
}

// TestLlamaCppOverflowBody checks the 400 byte for byte against the body
// captured from llama-server (llm-servers.md §2.1), for streaming and
// non-streaming requests, and the >= boundary.
func TestLlamaCppOverflowBody(t *testing.T) {
	_, base := oaiClient(t, NewLlamaCpp(LlamaCppOptions{}))
	oh := userOverhead()
	const want = `{"error":{"code":400,"message":"request (4170 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4170,"n_ctx":4096}}`
	tests := []struct {
		name    string
		tokens  int // content tokens; the template adds oh
		stream  bool
		status  int
		body    string
		path    string
		rawBody string
	}{
		{name: "chat", tokens: 4170 - oh, status: 400, body: want, path: "/v1/chat/completions"},
		{name: "chat streaming", tokens: 4170 - oh, stream: true, status: 400, body: want, path: "/v1/chat/completions"},
		{name: "exactly n_ctx is refused", tokens: 4096 - oh, status: 400, body: string(LlamaCppOverflowBody(4096, 4096)), path: "/v1/chat/completions"},
		{name: "n_ctx-1 fits", tokens: 4095 - oh, status: 200, path: "/v1/chat/completions"},
		{name: "completion", status: 400, body: want, path: "/completion", rawBody: `{"prompt":"` + filler(4170) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.rawBody
			if body == "" {
				body = userOf(filler(tt.tokens), tt.stream)
			}
			resp, got := post(t, base+tt.path, body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d: %s", resp.StatusCode, got)
			}
			if tt.status != 400 {
				return
			}
			if string(got) != tt.body {
				t.Fatalf("body =\n%s\nwant\n%s", got, tt.body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Fatalf("Content-Type = %q", ct)
			}
		})
	}
}

func TestLlamaCppChatThroughSDK(t *testing.T) {
	s := NewLlamaCpp(LlamaCppOptions{NCtx: 8192})
	c, base := oaiClient(t, s)
	ctx := context.Background()
	msgs := oaiNeedle("SECRET: ANANAS-7734", 3, 100)
	want := oaiCount("SECRET: ANANAS-7734", 3, 100)

	res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "ANANAS-7734" || res.Usage.PromptTokens != int64(want) {
		t.Fatalf("response = %+v", res)
	}
	var timings struct {
		Timings llamaTimings `json:"timings"`
	}
	if err := json.Unmarshal([]byte(res.RawJSON()), &timings); err != nil || timings.Timings.PromptN+timings.Timings.CacheN != want {
		t.Fatalf("timings = %+v, %v", timings, err)
	}

	// Same prompt streamed: the prompt cache serves all but the last token.
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "ANANAS-7734" || acc.Usage.PromptTokens != int64(want) || acc.Usage.PromptTokensDetails.CachedTokens != int64(want-1) {
		t.Fatalf("accumulated = %+v", acc.ChatCompletion)
	}

	// The 400 through the SDK.
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: oaiNeedle("x", 50, 200)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "exceed_context_size_error" {
		t.Fatalf("err = %v", err)
	}

	// Generation stops at the slot's end: finish_reason length.
	const question = "SECRET: LONG-ANSWER-WORDS what is the secret?"
	room := 3 // tokens left for the answer, which takes more
	if TinyBPE().Count("LONG-ANSWER-WORDS") <= room {
		t.Fatal("the answer fits the room")
	}
	head := countChatWith(TinyBPE(), []Message{{Role: "user", Content: question}}, nil, false)
	_, body := post(t, base+"/v1/chat/completions", userOf(question+filler(8192-room-head), false))
	var out struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Choices[0].FinishReason != "length" {
		t.Fatalf("at the slot's end: %s", body)
	}
}

func TestLlamaCppEndpoints(t *testing.T) {
	s := NewLlamaCpp(LlamaCppOptions{NCtx: 65536, Slots: 2, Model: "qwen3.gguf", TrainedContext: 262144, AddBOS: true})
	_, base := oaiClient(t, s)

	resp, body := get(t, base+"/health")
	if resp.StatusCode != 200 || string(body) != `{"status":"ok"}` {
		t.Fatalf("health = %d %s", resp.StatusCode, body)
	}
	s.SetLoading(true)
	resp, body = get(t, base+"/health")
	if resp.StatusCode != 503 || string(body) != `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}` {
		t.Fatalf("health loading = %d %s", resp.StatusCode, body)
	}
	s.SetLoading(false)

	var props struct {
		DefaultGenerationSettings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int `json:"total_slots"`
	}
	_, body = get(t, base+"/props")
	if err := json.Unmarshal(body, &props); err != nil || props.DefaultGenerationSettings.NCtx != 65536 || props.TotalSlots != 2 {
		t.Fatalf("props = %s", body)
	}
	var slots []struct {
		NCtx int `json:"n_ctx"`
	}
	_, body = get(t, base+"/slots")
	if err := json.Unmarshal(body, &slots); err != nil || len(slots) != 2 || slots[1].NCtx != 65536 {
		t.Fatalf("slots = %s", body)
	}
	var models struct {
		Data []struct {
			ID   string `json:"id"`
			Meta struct {
				NCtxTrain int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	_, body = get(t, base+"/v1/models")
	if err := json.Unmarshal(body, &models); err != nil || models.Data[0].ID != "qwen3.gguf" || models.Data[0].Meta.NCtxTrain != 262144 {
		t.Fatalf("models = %s", body)
	}

	// /apply-template then /tokenize gives the exact count the server uses.
	chat := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello world"}]}`
	var tmpl struct {
		Prompt string `json:"prompt"`
	}
	_, body = post(t, base+"/apply-template", chat)
	if err := json.Unmarshal(body, &tmpl); err != nil || tmpl.Prompt != RenderChat([]Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "hello world"}}, nil) {
		t.Fatalf("apply-template = %s", body)
	}
	tokReq, _ := json.Marshal(map[string]any{"content": tmpl.Prompt, "add_special": true})
	var toks struct {
		Tokens []int `json:"tokens"`
	}
	_, body = post(t, base+"/tokenize", string(tokReq))
	if err := json.Unmarshal(body, &toks); err != nil || len(toks.Tokens) != TinyBPE().Count(tmpl.Prompt)+1 || toks.Tokens[0] != BOSID {
		t.Fatalf("tokenize = %s", body)
	}
	_, body = post(t, base+"/v1/chat/completions", `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello world"}]}`)
	var res struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Usage.PromptTokens != len(toks.Tokens) {
		t.Fatalf("chat usage = %s, want %d", body, len(toks.Tokens))
	}
	// Pieces are the vocabulary's: text, or bytes when a piece holds part
	// of a character.
	for _, text := range []string{"hello world", "naïve 世界"} {
		var pieces struct {
			Tokens []struct {
				ID    int             `json:"id"`
				Piece json.RawMessage `json:"piece"`
			} `json:"tokens"`
		}
		req, _ := json.Marshal(map[string]any{"content": text, "with_pieces": true})
		_, body = post(t, base+"/tokenize", string(req))
		if err := json.Unmarshal(body, &pieces); err != nil || len(pieces.Tokens) != TinyBPE().Count(text) {
			t.Fatalf("tokenize with pieces = %s", body)
		}
		var joined []byte
		for i, p := range pieces.Tokens {
			var s string
			var b []byte
			if json.Unmarshal(p.Piece, &s) == nil {
				joined = append(joined, s...)
			} else if err := json.Unmarshal(p.Piece, &b); err == nil {
				joined = append(joined, b...)
			} else {
				t.Fatalf("piece %s", p.Piece)
			}
			if p.ID != TinyBPE().Encode(text)[i] {
				t.Fatalf("piece %d id %d", i, p.ID)
			}
		}
		if string(joined) != text {
			t.Fatalf("pieces join to %q", joined)
		}
	}
	_, body = post(t, base+"/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"hello world"}]}`)
	if string(body) != `{"input_tokens":`+jsonInt(countChatWith(TinyBPE(), []Message{{Role: "user", Content: "hello world"}}, nil, true))+`}` {
		t.Fatalf("count_tokens = %s", body)
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// userOverhead is what userOf's template adds to its content's tokens,
// by the default counter.
func userOverhead() int { return countChatWith(TinyBPE(), []Message{{Role: "user"}}, nil, false) }

// TestLlamaCppCompletion checks /completion, non-streaming and streaming
// (SSE data lines, no [DONE], a final stop:true object).
func TestLlamaCppCompletion(t *testing.T) {
	_, base := oaiClient(t, NewLlamaCpp(LlamaCppOptions{}))
	_, body := post(t, base+"/completion", `{"prompt":"SECRET: Q-42\nwhat is the secret?"}`)
	var out struct {
		Content            string `json:"content"`
		Stop               bool   `json:"stop"`
		StopType           string `json:"stop_type"`
		TokensEvaluated    int    `json:"tokens_evaluated"`
		GenerationSettings struct {
			NCtx int `json:"n_ctx"`
		} `json:"generation_settings"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Content != "Q-42" || !out.Stop || out.StopType != "eos" || out.TokensEvaluated != TinyBPE().Count("SECRET: Q-42\nwhat is the secret?") || out.GenerationSettings.NCtx != 4096 {
		t.Fatalf("completion = %s", body)
	}
	resp, err := http.Post(base+"/completion", "application/json", strings.NewReader(`{"prompt":"SECRET: Q-42\nwhat is the secret?","stream":true,"n_predict":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := sseData(t, resp.Body)
	var text strings.Builder
	for i, e := range events {
		var ch struct {
			Content  string `json:"content"`
			Stop     bool   `json:"stop"`
			StopType string `json:"stop_type"`
		}
		if err := json.Unmarshal([]byte(e), &ch); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		text.WriteString(ch.Content)
		if last := i == len(events)-1; ch.Stop != last || (last && ch.StopType != "limit") {
			t.Fatalf("event %d = %s", i, e)
		}
	}
	if want := strings.Join(TinyBPE().Split("Q-42")[:2], ""); text.String() != want {
		t.Fatalf("streamed = %q", text.String())
	}
}

func TestLlamaCppStrictTemplate(t *testing.T) {
	_, base := oaiClient(t, NewLlamaCpp(LlamaCppOptions{StrictTemplate: true}))
	const want = `{"error":{"code":500,"message":"Jinja Exception: System message must be at the beginning.","type":"server_error"}}`
	tests := []struct {
		name, path, body string
		status           int
	}{
		{"system first", "/v1/chat/completions", `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`, 200},
		{"mid-conversation system", "/v1/chat/completions", `{"messages":[{"role":"user","content":"u"},{"role":"system","content":"removed: 3 messages"},{"role":"user","content":"u"}]}`, 500},
		{"apply-template", "/apply-template", `{"messages":[{"role":"user","content":"u"},{"role":"system","content":"s"}]}`, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, base+tt.path, tt.body)
			if resp.StatusCode != tt.status || (tt.status == 500 && string(body) != want) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestLlamaCppInBandStreamError(t *testing.T) {
	_, base := oaiClient(t, NewLlamaCpp(LlamaCppOptions{InBandStreamErrors: true}))
	resp, body := post(t, base+"/v1/chat/completions", userOf(filler(4170-userOverhead()), true))
	if want := "data: " + string(LlamaCppOverflowBody(4170, 4096)) + "\n\n"; resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	// Non-streaming requests still get the 400.
	if resp, _ := post(t, base+"/v1/chat/completions", userOf(filler(4170-userOverhead()), false)); resp.StatusCode != 400 {
		t.Fatalf("non-streaming: %d", resp.StatusCode)
	}
}
