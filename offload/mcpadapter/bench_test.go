package mcpadapter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/benchdata"
)

// benchResult is a tools/call result holding n bytes of text, typed and on
// the wire.
func benchResult(b *testing.B, n int) (*mcp.CallToolResult, []byte) {
	b.Helper()
	var text strings.Builder
	if err := benchdata.WriteText(&text, n); err != nil {
		b.Fatal(err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}}
	raw, err := json.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	return res, raw
}

// BenchmarkPrepareJSON stores a 50 MB text result from its wire bytes, as
// ctxkit wrap does for stdio upstreams (the copy of the bytes it hands over
// is made outside the timer).
func BenchmarkPrepareJSON(b *testing.B) {
	_, raw := benchResult(b, 50<<20)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		wire := bytes.Clone(raw)
		b.StartTimer()
		if _, ok := offloadJSON(b, newTestAdapter(DefaultThreshold), "fetch", wire); !ok {
			b.Fatal("not offloaded")
		}
	}
}

// BenchmarkDecodeAndOffload is the path without PrepareJSON: the SDK
// decodes the result, then Offload stores it.
func BenchmarkDecodeAndOffload(b *testing.B) {
	_, raw := benchResult(b, 50<<20)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			b.Fatal(err)
		}
		if out := newTestAdapter(DefaultThreshold).Offload(b.Context(), callReq("fetch"), &res); out == &res {
			b.Fatal("not offloaded")
		}
	}
}

// BenchmarkPassThrough is the cost of deciding that a small result stays.
func BenchmarkPassThrough(b *testing.B) {
	res, raw := benchResult(b, 2000)
	a := newTestAdapter(DefaultThreshold)
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a.Offload(b.Context(), callReq("fetch"), res) != res {
				b.Fatal("offloaded")
			}
		}
	})
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a.PrepareJSON(callReq("fetch"), raw) != nil {
				b.Fatal("offloaded")
			}
		}
	})
}
