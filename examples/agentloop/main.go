// Command agentloop is an agent loop that answers a question about a large
// tool result without ever putting that result in the model's context.
//
// The agent has one tool of its own, search_issues, which returns every
// matching issue of a tracker (400 issues in examples/data/issues.json). It
// is registered as an offload producer, so the model gets a short notice
// instead of the issues, and then explores the stored result with the
// engine's result_* tools. The loop uses the OpenAI Chat Completions API
// through offload/openaiadapter.
//
// Run it from the repository root:
//
//	go run ./examples/agentloop
//
// Without OPENAI_API_KEY a scripted model plays the assistant, so the loop
// runs offline: it calls search_issues, groups the stored result by team
// with result_pipe, and answers from the numbers it read. With
// OPENAI_API_KEY set, a real model (OPENAI_MODEL, by default gpt-5.4-mini)
// decides the calls. Each step prints the call and how many characters went
// to the model, next to the size of the full result.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/openaiadapter"
	"github.com/ctxkit/ctxkit/store/memstore"
)

const question = "Which team reported the most open issues, and how many comments do those issues have in all?"

// maxSteps bounds the model's turns, so that a model that never answers
// cannot loop (and spend) forever.
const maxSteps = 10

func main() {
	dataPath := flag.String("data", "examples/data/issues.json", "issues to search (a JSON list)")
	flag.Parse()
	log.SetFlags(0)

	issues, err := loadIssues(*dataPath)
	if err != nil {
		log.Fatalf("%v (run from the repository root, or pass -data)", err)
	}
	var m model = &scriptedModel{}
	if os.Getenv("OPENAI_API_KEY") != "" {
		name := os.Getenv("OPENAI_MODEL")
		if name == "" {
			name = openai.ChatModelGPT5_4Mini
		}
		m = &openaiModel{client: openai.NewClient(), name: name}
		fmt.Printf("model: %s\n", name)
	} else {
		fmt.Println("model: scripted (set OPENAI_API_KEY to use a real one)")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := run(ctx, os.Stdout, m, issues); err != nil {
		log.Fatal(err)
	}
}

// issue is one issue of the tracker.
type issue struct {
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	State     string   `json:"state"`
	Labels    []string `json:"labels"`
	Author    author   `json:"author"`
	Comments  int      `json:"comments"`
	CreatedAt string   `json:"created_at"`
	Body      string   `json:"body"`
}

type author struct {
	Login string `json:"login"`
	Team  string `json:"team"`
}

func loadIssues(path string) ([]issue, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read issues: %w", err)
	}
	var issues []issue
	if err := json.Unmarshal(b, &issues); err != nil {
		return nil, fmt.Errorf("decode issues in %s: %w", path, err)
	}
	return issues, nil
}

type searchArgs struct {
	State string `json:"state,omitempty" jsonschema:"open or closed; empty for both"`
	Label string `json:"label,omitempty" jsonschema:"only issues with this label, such as bug"`
}

// newEngine returns an offload engine with search_issues registered. As a
// producer, its result is stored and the model sees a notice instead.
func newEngine(issues []issue) *offload.Engine {
	e := offload.New(memstore.New(memstore.Options{}))
	offload.AddProducer(e, offload.Producer[searchArgs, []issue]{
		Name:        "search_issues",
		Description: "Search the issue tracker by state and label; returns every matching issue in full.",
		Func: func(_ context.Context, in searchArgs) ([]issue, error) {
			out := []issue{}
			for _, is := range issues {
				if (in.State == "" || is.State == in.State) && (in.Label == "" || slices.Contains(is.Labels, in.Label)) {
					out = append(out, is)
				}
			}
			return out, nil
		},
	})
	return e
}

// report is what a run of the loop found.
type report struct {
	Answer string
	// Read is how many characters of tool output the model read; Full is
	// how many it would have read if every stored result had been sent in
	// full instead of its notice.
	Read, Full int64
}

// run asks question and lets m call tools until it answers, printing each
// step to w.
func run(ctx context.Context, w io.Writer, m model, issues []issue) (*report, error) {
	e := newEngine(issues)
	// A session keeps this conversation's stored results apart from any
	// other conversation sharing the store.
	ctx = offload.WithSession(ctx, "demo")
	tools := openaiadapter.Tools(e)
	history := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(e.SystemPrompt("You answer questions about our issue tracker. Use the tools and never guess a number.")),
		openai.UserMessage(question),
	}
	fmt.Fprintf(w, "question: %s\n", question)

	rep := &report{}
	for step := 1; step <= maxSteps; step++ {
		msg, err := m.Next(ctx, history, tools)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", step, err)
		}
		history = append(history, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			rep.Answer = msg.Content
			fmt.Fprintf(w, "answer: %s\n", msg.Content)
			fmt.Fprintf(w, "context: the model read %d chars of tool output; sending the results in full would have taken %d chars (%.0f%% saved)\n",
				rep.Read, rep.Full, 100*(1-float64(rep.Read)/float64(max(rep.Full, 1))))
			return rep, nil
		}
		// One tool message per call, in the order of the calls.
		replies := openaiadapter.HandleToolCalls(ctx, e, msg)
		for i, r := range replies {
			call := msg.ToolCalls[i].Function
			out := r.OfTool.Content.OfString.Value
			fmt.Fprintf(w, "step %d: %s %s\n", step, call.Name, cut(call.Arguments, 300))
			read, full := int64(len([]rune(out))), int64(len([]rune(out)))
			if notice, ok := readNotice(out); ok {
				full = notice.Chars
				fmt.Fprintf(w, "  -> notice of %d chars instead of the full result of %d chars (stored as %s): %s\n",
					read, full, notice.StoredResult, cut(out, 160))
			} else {
				fmt.Fprintf(w, "  -> %d chars: %s\n", read, cut(out, 300))
			}
			rep.Read += read
			rep.Full += full
		}
		history = append(history, replies...)
	}
	return nil, fmt.Errorf("no answer after %d steps", maxSteps)
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// model answers a conversation with the next assistant message.
type model interface {
	Next(ctx context.Context, history []openai.ChatCompletionMessageParamUnion, tools []openai.ChatCompletionToolUnionParam) (openai.ChatCompletionMessage, error)
}

// openaiModel is a model behind the OpenAI Chat Completions API.
type openaiModel struct {
	client openai.Client
	name   string
}

func (m *openaiModel) Next(ctx context.Context, history []openai.ChatCompletionMessageParamUnion, tools []openai.ChatCompletionToolUnionParam) (openai.ChatCompletionMessage, error) {
	resp, err := m.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    m.name,
		Messages: history,
		Tools:    tools,
	})
	if err != nil {
		return openai.ChatCompletionMessage{}, fmt.Errorf("chat completion: %w", err)
	}
	if len(resp.Choices) == 0 {
		return openai.ChatCompletionMessage{}, errors.New("chat completion: no choices")
	}
	return resp.Choices[0].Message, nil
}

// scriptedModel plays the assistant offline. It makes the calls a model
// would make, reading the workspace id and the numbers it needs from the
// tool messages, as a model reads them.
type scriptedModel struct {
	turn int
}

func (m *scriptedModel) Next(_ context.Context, history []openai.ChatCompletionMessageParamUnion, _ []openai.ChatCompletionToolUnionParam) (openai.ChatCompletionMessage, error) {
	m.turn++
	last := lastToolOutput(history)
	switch m.turn {
	case 1:
		return toolCall("call_1", "search_issues", `{"state": "open"}`), nil
	case 2:
		notice, ok := readNotice(last)
		if !ok {
			return openai.ChatCompletionMessage{}, fmt.Errorf("scripted model: expected a notice, got %s", last)
		}
		steps := `[{"group_by": {"field": "author.team", "metrics": {"issues": "count", "comments": "sum:comments"}}}, ` +
			`{"sort": [{"field": "issues", "order": "desc"}]}]`
		return toolCall("call_2", "result_pipe", fmt.Sprintf(`{"workspace_id": %q, "steps": %s}`, notice.StoredResult, steps)), nil
	default:
		var rows struct {
			Items []struct {
				Team     string  `json:"author.team"`
				Issues   int     `json:"issues"`
				Comments float64 `json:"comments"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(last), &rows); err != nil || len(rows.Items) == 0 {
			return openai.ChatCompletionMessage{}, fmt.Errorf("scripted model: expected grouped rows, got %s", last)
		}
		top := rows.Items[0]
		return openai.ChatCompletionMessage{Role: "assistant", Content: fmt.Sprintf(
			"The %s team reported the most open issues: %d, with %.0f comments in all.", top.Team, top.Issues, top.Comments)}, nil
	}
}

func toolCall(id, name, args string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{
		Role: "assistant",
		ToolCalls: []openai.ChatCompletionMessageToolCallUnion{{
			ID: id, Type: "function",
			Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: name, Arguments: args},
		}},
	}
}

// storedNotice is the part of an offload.Notice this program reads.
type storedNotice struct {
	StoredResult string `json:"stored_result"`
	Chars        int64  `json:"chars"`
}

// readNotice reports whether a tool output is a notice of a stored result.
func readNotice(out string) (storedNotice, bool) {
	var n storedNotice
	err := json.Unmarshal([]byte(out), &n)
	return n, err == nil && n.StoredResult != ""
}

// lastToolOutput returns the content of the last tool message, or "".
func lastToolOutput(history []openai.ChatCompletionMessageParamUnion) string {
	for i := len(history) - 1; i >= 0; i-- {
		if t := history[i].OfTool; t != nil {
			return t.Content.OfString.Value
		}
	}
	return ""
}
