package anthropicadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/anthropicadapter"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// A stored list of tickets, the model's request to group it, and the user
// message that answers it.
func Example() {
	ctx := context.Background()
	e := offload.New(memstore.New(memstore.Options{}))
	// Results of the program's own tools can be stored as Go values.
	type ticket struct {
		ID   int    `json:"id"`
		Team string `json:"team"`
		Open bool   `json:"open"`
	}
	tickets := []ticket{{1, "web", true}, {2, "core", false}, {3, "web", true}, {4, "core", true}, {5, "web", false}}
	if _, err := e.PutValue(ctx, tickets, offload.PutOptions{ID: "tickets", Producer: "list_tickets"}); err != nil {
		log.Fatal(err)
	}

	// Offer the tools in the request.
	params := anthropic.MessageNewParams{Tools: anthropicadapter.Tools(e)}
	fmt.Println("first tool:", params.Tools[0].OfTool.Name)

	// A response as the SDK decodes it: some text, then a tool_use block.
	msg := &anthropic.Message{
		StopReason: anthropic.StopReasonToolUse,
		Content: []anthropic.ContentBlockUnion{
			{Type: "text", Text: "Let me count the open tickets per team."},
			{
				Type: "tool_use", ID: "toolu_01", Name: "result_pipe",
				Input: json.RawMessage(`{"workspace_id": "tickets", "steps": [{"filter": {"open": true}}, {"group_by": {"field": "team", "metrics": {"open": "count"}}}]}`),
			},
		},
	}
	reply := anthropicadapter.HandleToolUse(ctx, e, msg)
	for _, block := range reply.OfUser.Content {
		r := block.OfToolResult
		fmt.Println(r.ToolUseID, "is_error:", r.IsError.Value, r.Content[0].OfText.Text)
	}
	// Output:
	// first tool: result_paginate
	// toolu_01 is_error: false {"count":2,"has_more":false,"items":[{"open":2,"team":"web"},{"open":1,"team":"core"}]}
}
