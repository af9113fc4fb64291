package ingest_test

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/ingest"
)

func ExampleParse() {
	raw := []byte("id,name,zip\n1,Ann,02134\n2,Bob,10001\n")
	res, err := ingest.ParseOptions{MaxItems: 10_000}.Parse(raw)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Shape, res.Format, res.Items)
	for _, it := range res.Content.Items {
		fmt.Println(string(it))
	}
	fields, omitted := ingest.Fields(res.Schema, 10)
	fmt.Println(fields, omitted)
	// Output:
	// list csv 2
	// {"id":1,"name":"Ann","zip":"02134"}
	// {"id":2,"name":"Bob","zip":"10001"}
	// [{id integer} {name string} {zip string}] 0
}

func ExampleInferSchema() {
	schema := ingest.InferSchema([]json.RawMessage{
		json.RawMessage(`{"id":1,"tags":["a"],"author":{"name":"x"}}`),
		json.RawMessage(`{"id":2,"tags":[],"author":null}`),
	})
	fmt.Println(string(schema))
	// Output:
	// {"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"author":{"type":["object","null"],"properties":{"name":{"type":"string"}},"required":["name"]}},"required":["id","tags","author"]}
}
