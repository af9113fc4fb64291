package guard

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// bigChat is an /api/chat body of about size bytes: an agent's history of
// read_file calls whose results are 64 KB of log lines.
func bigChat(size int) []byte {
	var out strings.Builder
	for i := 0; out.Len() < 64<<10; i++ {
		fmt.Fprintf(&out, "2026-11-%02dT07:%02d:%02dZ\tINFO\tworker-%d\t\"GET /api/v1/items?page=%d\" 200 %d bytes\n", 1+i%28, i%60, (i*7)%60, i%17, i, 1000+i*37%9000)
	}
	result := out.String()
	msgs := []map[string]any{{"role": "system", "content": "You are a careful agent."}, {"role": "user", "content": "Your task."}}
	for n := 0; n < size; n += len(result) + 120 {
		i := len(msgs)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"function": map[string]any{"name": "read_file", "arguments": map[string]any{"path": fmt.Sprintf("logs/%d.log", i)}}}}},
			map[string]any{"role": "tool", "tool_name": "read_file", "content": fmt.Sprintf("file %d:\n%s", i, result)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "What is the secret?"})
	body, err := json.Marshal(map[string]any{"model": "llama3.2", "stream": false, "messages": msgs})
	if err != nil {
		panic(err)
	}
	return body
}

// BenchmarkParseCompact parses a 4 MB chat, compacts it into an
// 8,192-token budget with its evicted messages encoded as the store gets
// them, and builds the body that goes upstream: the guard's own work on a
// large request, allocations included (-benchmem; B/op over the body's
// size is what the guard allocates per byte received).
func BenchmarkParseCompact(b *testing.B) {
	body := bigChat(4 << 20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := parseChat(body, ollamaDialect{})
		if err != nil {
			b.Fatal(err)
		}
		store := func(msgs []compact.Message) (string, error) {
			data, err := encodeMessages(msgs)
			return fmt.Sprintf("evicted_%d", len(data)), err
		}
		res, err := compact.Compact(req.conv, compact.Budget{Limit: 8192, Overhead: templateOverhead},
			compact.Options{Counter: compact.CounterFunc(Estimate), Store: store})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := req.build(res, ollamaDialect{}); err != nil {
			b.Fatal(err)
		}
	}
}
