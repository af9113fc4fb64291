package offload_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

type listOrdersArgs struct {
	Customer string `json:"customer" jsonschema:"Customer whose orders to list."`
}

type order struct {
	ID     int     `json:"id"`
	Status string  `json:"status"`
	Total  float64 `json:"total"`
}

// An agent loop registers its own tool as a producer: the model gets a short
// notice instead of the orders, then asks for exactly what it needs.
func Example() {
	ctx := context.Background()
	e := offload.New(memstore.New(memstore.Options{}))
	offload.AddProducer(e, offload.Producer[listOrdersArgs, []order]{
		Name:        "list_orders",
		Description: "List a customer's orders.",
		Key:         "orders_{customer}",
		Func: func(_ context.Context, in listOrdersArgs) ([]order, error) {
			var orders []order
			for i := range 1000 {
				orders = append(orders, order{ID: i, Status: []string{"paid", "open", "refunded"}[i%3], Total: float64(i % 50)})
			}
			return orders, nil
		},
	})

	// The model calls the producer (arguments may arrive as a JSON string).
	res := e.Dispatch(ctx, "list_orders", `{"customer": "acme"}`)
	var notice struct {
		ID    string `json:"stored_result"`
		Items int    `json:"items"`
	}
	_ = json.Unmarshal(res.Output, &notice)
	fmt.Println(notice.ID, notice.Items)

	// Then it explores the stored result.
	res = e.Dispatch(ctx, "result_pipe", map[string]any{
		"workspace_id": notice.ID,
		"steps": []any{
			map[string]any{"filter": map[string]any{"status": "refunded"}},
			map[string]any{"group_by": map[string]any{"field": "status", "metrics": map[string]any{"n": "count", "sum": "sum:total"}}},
		},
	})
	fmt.Println(string(res.Output))

	// A mistake comes back as an error the model can fix.
	res = e.Dispatch(ctx, "result_get_item", map[string]any{"workspace_id": notice.ID, "index": 5000})
	var fix struct {
		Action string `json:"suggested_action"`
	}
	_ = json.Unmarshal(res.Output, &fix)
	fmt.Println(res.IsError, fix.Action)
	// Output:
	// orders_acme 1000
	// {"count":1,"has_more":false,"items":[{"n":333,"status":"refunded","sum":8150}]}
	// true use an index from 0 to 999
}

func ExampleChunkText() {
	text := "First paragraph, short.\n\nSecond paragraph, a little longer than the first.\n\nThird."
	for _, c := range offload.ChunkText(text, 60, 0) {
		fmt.Printf("%q\n", c)
	}
	// Output:
	// "First paragraph, short.\n\nSecond paragraph, a little longer "
	// "than the first.\n\nThird."
}
