package guard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// recallSecret is the needle of the recall tests: it is only in an early
// tool output, which compaction evicts.
const recallSecret = "KIWI-4411"

const recallWindow = 4096

// recallHistory is an agent conversation in dialect d ("ollama", "openai",
// "anthropic") whose first tool output holds the secret: head words of
// filler, the secret, then tail words; later rounds are filler.
func recallHistory(d string, rounds, fillerWords, head int) []msg {
	var msgs []msg
	if d != "anthropic" {
		msgs = append(msgs, msg{"role": "system", "content": "You are a careful agent."})
	}
	msgs = append(msgs, msg{"role": "user", "content": "Your task: read the files, then answer my question."})
	for i := range rounds {
		out := fmt.Sprintf("file %d: %s", i, strings.Repeat("lorem ipsum dolor ", fillerWords))
		if i == 0 {
			out = fmt.Sprintf("file 0: %sSECRET: %s\n%s", strings.Repeat("alpha beta gamma ", head), recallSecret, strings.Repeat("lorem ipsum dolor ", fillerWords))
		}
		id := fmt.Sprintf("call_%02d", i)
		path := fmt.Sprintf("f%d.txt", i)
		switch d {
		case "ollama":
			msgs = append(msgs, msg{"role": "assistant", "content": "", "tool_calls": []msg{{"function": msg{"name": "read_file", "arguments": msg{"path": path}}}}},
				msg{"role": "tool", "tool_name": "read_file", "content": out})
		case "openai":
			msgs = append(msgs, msg{"role": "assistant", "content": nil, "tool_calls": []msg{{"id": id, "type": "function", "function": msg{"name": "read_file", "arguments": `{"path":"` + path + `"}`}}}},
				msg{"role": "tool", "tool_call_id": id, "content": out})
		case "anthropic":
			msgs = append(msgs, msg{"role": "assistant", "content": []msg{{"type": "tool_use", "id": id, "name": "read_file", "input": msg{"path": path}}}},
				msg{"role": "user", "content": []msg{{"type": "tool_result", "tool_use_id": id, "content": out}}})
		}
	}
	return append(msgs, msg{"role": "assistant", "content": "Done reading."}, msg{"role": "user", "content": "What is the secret?"})
}

// recallRequest is a chat request in dialect d, with a read_file tool
// unless noTools.
func recallRequest(d string, stream, noTools bool, msgs []msg) (path string, req msg) {
	switch d {
	case "ollama":
		req = msg{"model": "llama3.2", "messages": msgs, "stream": stream, "options": msg{"num_ctx": recallWindow}}
		path = "/api/chat"
	case "openai":
		req = msg{"model": "model.gguf", "messages": msgs, "stream": stream}
		path = "/v1/chat/completions"
	case "anthropic":
		req = msg{"model": "claude-sonnet-4-5", "max_tokens": 256, "system": "You are a careful agent.", "messages": msgs, "stream": stream}
		path = "/v1/messages"
	}
	if !noTools {
		if d == "anthropic" {
			req["tools"] = []msg{{"name": "read_file", "description": "read a file", "input_schema": msg{"type": "object", "properties": msg{"path": msg{"type": "string"}}}}}
		} else {
			req["tools"] = []msg{{"type": "function", "function": msg{"name": "read_file", "description": "read a file", "parameters": msg{"type": "object", "properties": msg{"path": msg{"type": "string"}}}}}}
		}
	}
	return path, req
}

// recallSetup starts dialect d's emulator (with responder, if set) and a
// guard over it with opts.
func recallSetup(t *testing.T, d string, opts guard.Options, responder llmemu.Responder) string {
	t.Helper()
	gw, _ := recallSetupRec(t, d, opts, responder)
	return gw
}

// recallSetupRec is recallSetup that also returns the backend's record of
// what it was sent and did.
func recallSetupRec(t *testing.T, d string, opts guard.Options, responder llmemu.Responder) (string, *llmemu.Recorder) {
	t.Helper()
	opts.Windows = map[string]int{"model.gguf": recallWindow, "claude-sonnet-4-5": recallWindow}
	var rec *llmemu.Recorder
	switch d {
	case "ollama":
		emu := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: recallWindow, Responder: responder})
		opts.Ollama, rec = serve(t, emu), &emu.Recorder
	case "openai":
		emu := llmemu.NewOpenAI(llmemu.OpenAIOptions{MaxContext: recallWindow, Models: []string{"model.gguf"}, Responder: responder})
		opts.OpenAI, rec = serve(t, emu), &emu.Recorder
	case "anthropic":
		emu := llmemu.NewAnthropic(llmemu.AnthropicOptions{MaxContext: recallWindow, Responder: responder})
		opts.Anthropic, rec = serve(t, emu), &emu.Recorder
	}
	return newGuard(t, opts), rec
}

// reply is what a client got, read from the wire.
type reply struct {
	text       string
	rep        *guard.Report
	toolCalls  int    // tool calls the client saw
	openings   int    // role chunks (OpenAI), message_start events (Anthropic)
	finals     int    // done chunks (Ollama), finish chunks (OpenAI), message_delta (Anthropic)
	finish     string // done_reason, finish_reason, stop_reason
	badIndexes bool   // Anthropic: block indices not 0, 1, 2, ... or deltas for unknown blocks
}

// readReply parses a response body of dialect d.
// postReply posts req to url, wants 200, and reads the reply; body is the
// answer as received.
func postReply(t *testing.T, url, d string, stream bool, req any) (r reply, body []byte) {
	t.Helper()
	resp, body := postJSON(t, url, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	return readReply(t, d, stream, body), body
}

func readReply(t *testing.T, d string, stream bool, body []byte) reply {
	t.Helper()
	var r reply
	setRep := func(raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		r.rep = &guard.Report{}
		if err := json.Unmarshal(raw, r.rep); err != nil {
			t.Fatalf("report %s: %v", raw, err)
		}
	}
	type obj struct {
		Ctxkit  json.RawMessage `json:"ctxkit"`
		Done    bool            `json:"done"`
		Reason  string          `json:"done_reason"`
		Type    string          `json:"type"`
		Index   int             `json:"index"`
		Message struct {
			Content   json.RawMessage   `json:"content"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		Choices []struct {
			Message struct {
				Content   *string           `json:"content"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"message"`
			Delta struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason   string `json:"stop_reason"`
		ContentBlock *struct {
			Type string `json:"type"`
		} `json:"content_block"`
		Delta struct {
			Type       string `json:"type"`
			Text       string `json:"text"`
			StopReason string `json:"stop_reason"`
		} `json:"delta"`
	}
	var text strings.Builder
	blocks := 0
	handle := func(data []byte) {
		var o obj
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		setRep(o.Ctxkit)
		switch d {
		case "ollama":
			var content string
			_ = json.Unmarshal(o.Message.Content, &content)
			text.WriteString(content)
			r.toolCalls += len(o.Message.ToolCalls)
			if o.Done {
				r.finals++
				r.finish = o.Reason
			}
		case "openai":
			for _, c := range o.Choices {
				if c.Message.Content != nil {
					text.WriteString(*c.Message.Content)
				}
				if c.Delta.Content != nil {
					text.WriteString(*c.Delta.Content)
				}
				if c.Delta.Role != "" {
					r.openings++
				}
				r.toolCalls += len(c.Message.ToolCalls)
				for _, tc := range c.Delta.ToolCalls {
					if tc.ID != "" { // a call's first delta
						r.toolCalls++
					}
				}
				if c.FinishReason != nil && *c.FinishReason != "" {
					r.finals++
					r.finish = *c.FinishReason
				}
			}
		case "anthropic":
			if !stream {
				for _, b := range o.Content {
					text.WriteString(b.Text)
					if b.Type == "tool_use" {
						r.toolCalls++
					}
				}
				r.finish = o.StopReason
				return
			}
			switch o.Type {
			case "message_start":
				r.openings++
			case "content_block_start":
				if o.Index != blocks {
					r.badIndexes = true
				}
				blocks++
				if o.ContentBlock != nil && o.ContentBlock.Type == "tool_use" {
					r.toolCalls++
				}
			case "content_block_delta", "content_block_stop":
				if o.Index >= blocks {
					r.badIndexes = true
				}
				text.WriteString(o.Delta.Text)
			case "message_delta":
				r.finals++
				r.finish = o.Delta.StopReason
			}
		}
	}
	if !stream {
		handle(body)
		r.text = text.String()
		return r
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if d != "ollama" {
			rest, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok || !bytes.HasPrefix(rest, []byte("{")) {
				continue
			}
			line = rest
		}
		if len(bytes.TrimSpace(line)) > 0 {
			handle(line)
		}
	}
	r.text = text.String()
	return r
}

var dialects = []string{"ollama", "openai", "anthropic"}

// TestRecallNeedle: the secret is only in an evicted tool output. Without
// --recall the model cannot answer; with it, the model calls
// context_recall, the guard answers the call itself, and the client gets
// the secret in one coherent answer that never shows the call.
func TestRecallNeedle(t *testing.T) {
	for _, d := range dialects {
		for _, stream := range []bool{false, true} {
			for _, recall := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/stream=%v/recall=%v", d, stream, recall), func(t *testing.T) {
					gw := recallSetup(t, d, guard.Options{Recall: recall}, nil)
					path, req := recallRequest(d, stream, false, recallHistory(d, 12, 250, 0))
					r, body := postReply(t, gw+path, d, stream, req)
					if r.rep == nil || !r.rep.Compacted {
						t.Fatalf("no compaction reported: %+v", r.rep)
					}
					if bytes.Contains(body, []byte(guard.RecallTool)) || r.toolCalls != 0 {
						t.Errorf("the client saw context_recall or a tool call: %s", body)
					}
					if !recall {
						if r.text != llmemu.Dont || r.rep.RecallRounds != 0 {
							t.Errorf("without recall: %q %+v", r.text, r.rep)
						}
						return
					}
					if r.text != recallSecret {
						t.Errorf("answer %q, want %q; report %+v", r.text, recallSecret, r.rep)
					}
					if r.rep.RecallRounds < 1 || len(r.rep.Recalled) != r.rep.RecallRounds || !strings.HasPrefix(r.rep.Recalled[0], "evicted_") || r.rep.RecallLimitReached {
						t.Errorf("report %+v", r.rep)
					}
					if stream {
						want := 1
						if d == "ollama" {
							want = 0
						}
						if r.openings != want || r.finals != 1 || r.badIndexes {
							t.Errorf("stream not coherent: openings %d finals %d bad indexes %v\n%s", r.openings, r.finals, r.badIndexes, body)
						}
					}
				})
			}
		}
	}
}

// TestRecallPaged: the secret sits deep in one huge evicted output, past
// the first page: the model follows the pages (each round's request is
// compacted again to fit, never losing the page just added).
func TestRecallPaged(t *testing.T) {
	for _, d := range dialects {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", d, stream), func(t *testing.T) {
				var mu sync.Mutex
				var turns []llmemu.Turn
				record := func(tu llmemu.Turn) llmemu.Reply {
					mu.Lock()
					turns = append(turns, tu)
					mu.Unlock()
					return llmemu.Think(tu)
				}
				// A page holds fewer bytes of the emulated model's
				// tokens (2.3 to 3 bytes a token) than of a real one's:
				// the secret is some pages in.
				gw, rec := recallSetupRec(t, d, guard.Options{Recall: true, RecallRounds: 8}, record)
				path, req := recallRequest(d, stream, false, recallHistory(d, 6, 200, 500))
				r, _ := postReply(t, gw+path, d, stream, req)
				if r.text != recallSecret || r.rep == nil || r.rep.RecallRounds < 2 {
					t.Fatalf("answer %q report %+v", r.text, r.rep)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(turns) != r.rep.RecallRounds+1 {
					t.Errorf("%d upstream turns for %d rounds", len(turns), r.rep.RecallRounds)
				}
				// Each request fitted as the backend counts it (the Ollama
				// emulator with a real BPE vocabulary, not the guard's
				// rule): nothing cut, nothing refused.
				for i, ev := range rec.Evals() {
					if ev.SentTokens > recallWindow || ev.Truncated || ev.Status != http.StatusOK {
						t.Errorf("request %d: %d tokens for a %d window, truncated %v, status %d", i, ev.SentTokens, recallWindow, ev.Truncated, ev.Status)
					}
				}
				for i, tu := range turns {
					if i > 0 && !strings.Contains(tu.Messages[len(tu.Messages)-1].Content, "[context_recall evicted_") {
						t.Errorf("turn %d does not end with the recall result: %q", i, tu.Messages[len(tu.Messages)-1].Content)
					}
				}
			})
		}
	}
}

// TestRecallBound: a model that keeps calling context_recall is stopped
// after Options.RecallRounds rounds; the last request goes without the
// tool, the calls it still makes are removed, and the report says so.
func TestRecallBound(t *testing.T) {
	for _, d := range dialects {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", d, stream), func(t *testing.T) {
				var mu sync.Mutex
				var offered []bool
				always := func(tu llmemu.Turn) llmemu.Reply {
					has := false
					for _, tool := range tu.Tools {
						has = has || tool.Name == guard.RecallTool
					}
					mu.Lock()
					offered = append(offered, has)
					mu.Unlock()
					return llmemu.Reply{Text: "Let me look.", ToolCalls: []llmemu.ToolCall{{Name: guard.RecallTool, Arguments: json.RawMessage(`{"id":"evicted_0000000000000000"}`)}}}
				}
				gw := recallSetup(t, d, guard.Options{Recall: true, RecallRounds: 2}, always)
				path, req := recallRequest(d, stream, false, recallHistory(d, 12, 250, 0))
				r, body := postReply(t, gw+path, d, stream, req)
				if r.rep == nil || r.rep.RecallRounds != 2 || !r.rep.RecallLimitReached || len(r.rep.Recalled) != 2 {
					t.Errorf("report %+v", r.rep)
				}
				if bytes.Contains(body, []byte(guard.RecallTool)) || r.toolCalls != 0 {
					t.Errorf("the client saw context_recall: %s", body)
				}
				if r.finish == "tool_calls" || r.finish == "tool_use" {
					t.Errorf("finish %q with no call left", r.finish)
				}
				mu.Lock()
				defer mu.Unlock()
				if fmt.Sprint(offered) != "[true true false]" {
					t.Errorf("tool offered per upstream request: %v", offered)
				}
			})
		}
	}
}

// TestRecallUnknownID: a call with an id nothing is stored under gets a
// tool result that says so, and the model can act on it.
func TestRecallUnknownID(t *testing.T) {
	echo := func(tu llmemu.Turn) llmemu.Reply {
		last := tu.Messages[len(tu.Messages)-1]
		if last.Role == "tool" || strings.HasPrefix(last.Content, "<tool_response>") {
			return llmemu.Reply{Text: last.Content}
		}
		return llmemu.Reply{ToolCalls: []llmemu.ToolCall{{Name: guard.RecallTool, Arguments: json.RawMessage(`{"id":"evicted_ffffffffffffffff"}`)}}}
	}
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			gw := recallSetup(t, d, guard.Options{Recall: true}, echo)
			path, req := recallRequest(d, false, false, recallHistory(d, 12, 250, 0))
			r, _ := postReply(t, gw+path, d, false, req)
			if !strings.Contains(r.text, `nothing is stored under "evicted_ffffffffffffffff"`) || r.rep.RecallRounds != 1 {
				t.Errorf("%q %+v", r.text, r.rep)
			}
		})
	}
}

// TestRecallToolOffered: the tool is added (and counted) only to requests
// that carry tools, always then (the prompt head stays the same whether or
// not something is evicted), and never without --recall.
func TestRecallToolOffered(t *testing.T) {
	for _, d := range dialects {
		for _, tc := range []struct {
			recall, noTools, small bool
			want                   string
		}{
			{true, false, false, "[read_file context_recall]"},
			{true, false, true, "[read_file context_recall]"},
			{true, true, false, "[]"},
			{false, false, false, "[read_file]"},
		} {
			t.Run(fmt.Sprintf("%s/%+v", d, tc), func(t *testing.T) {
				var mu sync.Mutex
				var got []string
				rec := func(tu llmemu.Turn) llmemu.Reply {
					mu.Lock()
					defer mu.Unlock()
					got = got[:0]
					for _, tool := range tu.Tools {
						got = append(got, tool.Name)
					}
					return llmemu.Reply{Text: "OK"}
				}
				gw := recallSetup(t, d, guard.Options{Recall: tc.recall}, rec)
				rounds := 12
				if tc.small {
					rounds = 1
				}
				path, req := recallRequest(d, false, tc.noTools, recallHistory(d, rounds, 250, 0))
				resp, body := postJSON(t, gw+path, req)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				mu.Lock()
				defer mu.Unlock()
				if fmt.Sprint(got) != tc.want {
					t.Errorf("tools %v, want %s", got, tc.want)
				}
			})
		}
	}
}

// TestRecallClients: the real clients (Ollama's Go client, openai-go,
// anthropic-sdk-go), streaming and not, get the secret through --recall
// and parse every chunk.
func TestRecallClients(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("ollama/stream=%v", stream), func(t *testing.T) {
			gw := recallSetup(t, "ollama", guard.Options{Recall: true}, nil)
			u, err := url.Parse(gw)
			if err != nil {
				t.Fatal(err)
			}
			_, req := recallRequest("ollama", stream, false, recallHistory("ollama", 12, 250, 0))
			data, _ := json.Marshal(req)
			var creq ollama.ChatRequest
			if err := json.Unmarshal(data, &creq); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			calls := 0
			err = ollama.NewClient(u, http.DefaultClient).Chat(ctx, &creq, func(r ollama.ChatResponse) error {
				text.WriteString(r.Message.Content)
				calls += len(r.Message.ToolCalls)
				return nil
			})
			if err != nil || text.String() != recallSecret || calls != 0 {
				t.Errorf("%q %d %v", text.String(), calls, err)
			}
		})
		t.Run(fmt.Sprintf("openai/stream=%v", stream), func(t *testing.T) {
			gw := recallSetup(t, "openai", guard.Options{Recall: true}, nil)
			_, req := recallRequest("openai", stream, false, recallHistory("openai", 12, 250, 0))
			c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
			params := openai.ChatCompletionNewParams{Model: "model.gguf", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("placeholder")}}
			opts := []option.RequestOption{option.WithJSONSet("messages", req["messages"]), option.WithJSONSet("tools", req["tools"])}
			if !stream {
				resp, err := c.Chat.Completions.New(ctx, params, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if m := resp.Choices[0].Message; m.Content != recallSecret || len(m.ToolCalls) != 0 || resp.Choices[0].FinishReason != "stop" {
					t.Errorf("%+v", resp.Choices[0])
				}
				return
			}
			s := c.Chat.Completions.NewStreaming(ctx, params, opts...)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if m := acc.Choices[0].Message; m.Content != recallSecret || len(m.ToolCalls) != 0 || m.Role != "assistant" {
				t.Errorf("%+v", m)
			}
		})
		t.Run(fmt.Sprintf("anthropic/stream=%v", stream), func(t *testing.T) {
			gw := recallSetup(t, "anthropic", guard.Options{Recall: true}, nil)
			_, req := recallRequest("anthropic", stream, false, recallHistory("anthropic", 12, 250, 0))
			c := anthropic.NewClient(aoption.WithBaseURL(gw), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0))
			params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("placeholder"))}}
			opts := []aoption.RequestOption{aoption.WithJSONSet("messages", req["messages"]), aoption.WithJSONSet("system", req["system"]), aoption.WithJSONSet("tools", req["tools"])}
			var m anthropic.Message
			if !stream {
				resp, err := c.Messages.New(ctx, params, opts...)
				if err != nil {
					t.Fatal(err)
				}
				m = *resp
			} else {
				s := c.Messages.NewStreaming(ctx, params, opts...)
				for s.Next() {
					if err := m.Accumulate(s.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
			}
			if len(m.Content) != 1 || m.Content[0].Text != recallSecret || m.StopReason != "end_turn" {
				t.Errorf("%+v", m)
			}
		})
	}
}

// TestRecallMixedCalls: a turn that calls context_recall and a client tool
// is a recall round; the client tool's call is dropped unexecuted (the
// emulators would answer 400 to a call left without its result), and the
// client gets the answer only.
func TestRecallMixedCalls(t *testing.T) {
	mixed := func(tu llmemu.Turn) llmemu.Reply {
		r := llmemu.Think(tu)
		if len(r.ToolCalls) == 1 && r.ToolCalls[0].Name == guard.RecallTool {
			r.ToolCalls = append([]llmemu.ToolCall{{Name: "read_file", Arguments: json.RawMessage(`{"path":"x"}`)}}, r.ToolCalls...)
		}
		return r
	}
	for _, d := range dialects {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", d, stream), func(t *testing.T) {
				gw := recallSetup(t, d, guard.Options{Recall: true}, mixed)
				path, req := recallRequest(d, stream, false, recallHistory(d, 12, 250, 0))
				r, _ := postReply(t, gw+path, d, stream, req)
				if r.text != recallSecret || r.toolCalls != 0 || r.rep.RecallRounds < 1 {
					t.Errorf("%q calls %d %+v", r.text, r.toolCalls, r.rep)
				}
			})
		}
	}
}

// TestRecallClientToolPassesThrough: with --recall, a turn that calls only
// the client's tools reaches the client whole, streamed or not.
func TestRecallClientToolPassesThrough(t *testing.T) {
	for _, d := range dialects {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", d, stream), func(t *testing.T) {
				gw := recallSetup(t, d, guard.Options{Recall: true}, nil)
				msgs := recallHistory(d, 12, 250, 0)
				msgs[len(msgs)-1] = msg{"role": "user", "content": `Now call tool read_file {"path":"g.txt"}`}
				path, req := recallRequest(d, stream, false, msgs)
				r, body := postReply(t, gw+path, d, stream, req)
				if r.toolCalls != 1 || !bytes.Contains(body, []byte("g.txt")) || r.rep == nil || r.rep.RecallRounds != 0 || r.badIndexes {
					t.Errorf("calls %d report %+v\n%s", r.toolCalls, r.rep, body)
				}
				if d != "ollama" && r.finish != "tool_calls" && r.finish != "tool_use" {
					t.Errorf("finish %q", r.finish)
				}
			})
		}
	}
}

// TestRecallRoundFailsInBand: when a recall round's upstream request fails
// after the client's stream has begun, the stream ends with an error in
// its dialect's in-band shape, with the report, instead of just stopping.
func TestRecallRoundFailsInBand(t *testing.T) {
	want := map[string]string{"ollama": `{"error":"a context_recall round failed`, "openai": `data: {"error":{"message":"a context_recall round failed`, "anthropic": "event: error\ndata: {\"error\":{\"message\":\"a context_recall round failed"}
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			var emu http.Handler
			opts := guard.Options{Recall: true, Windows: map[string]int{"model.gguf": recallWindow, "claude-sonnet-4-5": recallWindow}}
			switch d {
			case "ollama":
				emu = llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: recallWindow})
			case "openai":
				emu = llmemu.NewOpenAI(llmemu.OpenAIOptions{MaxContext: recallWindow, Models: []string{"model.gguf"}})
			case "anthropic":
				emu = llmemu.NewAnthropic(llmemu.AnthropicOptions{MaxContext: recallWindow})
			}
			// The backend answers the first generation (the model calls
			// context_recall) and fails every one after it.
			var gens atomic.Int64
			up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path != "/api/show" && gens.Add(1) > 1 {
					http.Error(w, `{"error":"backend went away"}`, http.StatusInternalServerError)
					return
				}
				emu.ServeHTTP(w, r)
			}))
			switch d {
			case "ollama":
				opts.Ollama = up
			case "openai":
				opts.OpenAI = up
			case "anthropic":
				opts.Anthropic = up
			}
			gw := newGuard(t, opts)
			path, req := recallRequest(d, true, false, recallHistory(d, 12, 250, 0))
			resp, body := postJSON(t, gw+path, req)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want[d]) || !strings.Contains(string(body), "backend went away") || !strings.Contains(string(body), `"recall_rounds":1`) {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		})
	}
}
