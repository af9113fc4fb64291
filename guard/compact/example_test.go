package compact_test

import (
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/guard/compact"
)

func Example() {
	conv := compact.Conversation{Messages: []compact.Message{
		{Role: compact.RoleSystem, Text: "You are a coding agent."},
		{Role: compact.RoleUser, Text: "Fix the failing test."},
		{Role: compact.RoleAssistant, ToolCalls: []compact.ToolCall{{ID: "c1", Name: "run_tests", Args: `{}`}}},
		{Role: compact.RoleTool, ToolCallID: "c1", Name: "run_tests", Text: strings.Repeat("ok   pkg/a 0.01s\nFAIL pkg/b: expected 2, got 3 in TestSum\n", 400)},
		{Role: compact.RoleAssistant, ToolCalls: []compact.ToolCall{{ID: "c2", Name: "read_file", Args: `{"path":"b.go"}`}}},
		{Role: compact.RoleTool, ToolCallID: "c2", Name: "read_file", Text: "func Sum(a, b int) int { return a + b + 1 }"},
		{Role: compact.RoleAssistant, Text: "Found it: Sum adds one too many."},
		{Role: compact.RoleUser, Text: "Go ahead."},
	}}
	opts := compact.Options{
		Cache:     compact.NewCache(0),
		Plans:     compact.NewPlans(0),
		Store:     func(evicted []compact.Message) (string, error) { return "ev-1", nil },
		RepeatMin: -1, // no collapsing, to show an eviction
	}
	res, err := compact.Compact(conv, compact.Budget{Limit: 300}, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Strategy, res.TokensBefore, "->", res.TokensAfter)
	for i, a := range res.Actions {
		fmt.Println(i, a.Fate, a.Marker)
	}
	fmt.Println(res.Messages[1].Text)
	// Output:
	// evict 6532 -> 140
	// 0 kept false
	// 1 kept true
	// 2 evicted false
	// 3 evicted false
	// 4 kept false
	// 5 kept false
	// 6 kept false
	// 7 kept false
	// Fix the failing test.
	//
	// [ctxkit: 2 earlier messages (6460 tokens) were removed here to fit the context window, including 1 tool call and its output (run_tests ×1). They are stored as "ev-1": call the context_recall tool with {"id": "ev-1"} to read the original.]
}
