package openaiadapter_test

import (
	"context"
	"fmt"
	"log"

	"github.com/openai/openai-go/v3"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/offload/openaiadapter"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// A stored list of tickets, the model's request to group it, and the tool
// message that answers it.
func Example() {
	ctx := context.Background()
	e := offload.New(memstore.New(memstore.Options{}))
	tickets := `[{"id":1,"team":"web","open":true},{"id":2,"team":"core","open":false},
		{"id":3,"team":"web","open":true},{"id":4,"team":"core","open":true},{"id":5,"team":"web","open":false}]`
	if _, err := e.Put(ctx, []byte(tickets), offload.PutOptions{ID: "tickets", Producer: "list_tickets"}); err != nil {
		log.Fatal(err)
	}

	// Offer the tools in the request.
	params := openai.ChatCompletionNewParams{Tools: openaiadapter.Tools(e)}
	fmt.Println("first tool:", params.Tools[0].GetFunction().Name)

	// The assistant message of a response, as the SDK decodes it.
	msg := openai.ChatCompletionMessage{
		Role: "assistant",
		ToolCalls: []openai.ChatCompletionMessageToolCallUnion{{
			ID:   "call_1",
			Type: "function",
			Function: openai.ChatCompletionMessageFunctionToolCallFunction{
				Name:      "result_pipe",
				Arguments: `{"workspace_id": "tickets", "steps": [{"filter": {"open": true}}, {"group_by": {"field": "team", "metrics": {"open": "count"}}}]}`,
			},
		}},
	}
	for _, m := range openaiadapter.HandleToolCalls(ctx, e, msg) {
		fmt.Println(m.OfTool.ToolCallID, m.OfTool.Content.OfString.Value)
	}
	// Output:
	// first tool: result_paginate
	// call_1 {"count":2,"has_more":false,"items":[{"open":2,"team":"web"},{"open":1,"team":"core"}]}
}
