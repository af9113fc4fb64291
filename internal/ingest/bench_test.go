package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchItem is a record shaped like a typical API result: an issue with a
// nested author, labels and a body of prose.
type benchItem struct {
	ID        int      `json:"id"`
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	State     string   `json:"state"`
	Author    benchRef `json:"author"`
	Labels    []string `json:"labels"`
	Comments  int      `json:"comments"`
	Score     float64  `json:"score"`
	Draft     bool     `json:"draft"`
	Milestone *string  `json:"milestone"`
	CreatedAt string   `json:"created_at"`
	Body      string   `json:"body"`
}

type benchRef struct {
	Login string `json:"login"`
	ID    int    `json:"id"`
	URL   string `json:"url"`
}

// benchArray returns a JSON array of n items of about 400 bytes each,
// written compactly or, with indent, as Python's json.dumps(indent=2) would.
func benchArray(tb testing.TB, n int, indent bool) []byte {
	tb.Helper()
	words := strings.Fields("the store keeps one row per item so paging search and mutations never load the whole list into memory at once")
	items := make([]benchItem, n)
	for i := range items {
		var body strings.Builder
		for j := range 28 {
			body.WriteString(words[(i*7+j*3)%len(words)])
			body.WriteByte(' ')
		}
		items[i] = benchItem{
			ID: 1000000 + i, Number: i, Title: fmt.Sprintf("Issue %d: %s %s", i, words[i%len(words)], words[(i/3)%len(words)]),
			State:  []string{"open", "closed"}[i%2],
			Author: benchRef{Login: fmt.Sprintf("user%d", i%500), ID: i % 500, URL: fmt.Sprintf("https://example.com/u/%d", i%500)},
			Labels: []string{"bug", "p" + fmt.Sprint(i%4)}, Comments: i % 17, Score: float64(i%1000) / 7,
			CreatedAt: "2026-07-28T12:00:00Z", Body: body.String(),
		}
	}
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(items, "", "  ")
	} else {
		b, err = json.Marshal(items)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkParseArray parses a 100,000-item array of about 40 MB.
func BenchmarkParseArray(b *testing.B) {
	for _, indent := range []bool{false, true} {
		data := benchArray(b, 100_000, indent)
		b.Run(fmt.Sprintf("indent=%v", indent), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				res, err := Parse(data)
				if err != nil || res.Items != 100_000 {
					b.Fatal(res.Items, err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// reportCPU reports the process CPU time per iteration since start, which
// includes the garbage collector's work on the other core.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkDecoderSplit measures the alternative Parse does not use:
// json.Decoder's Token and More with one Decode per item into a RawMessage.
func BenchmarkDecoderSplit(b *testing.B) {
	data := benchArray(b, 100_000, false)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		dec := json.NewDecoder(bytes.NewReader(data))
		if _, err := dec.Token(); err != nil {
			b.Fatal(err)
		}
		var items []json.RawMessage
		for dec.More() {
			var m json.RawMessage
			if err := dec.Decode(&m); err != nil {
				b.Fatal(err)
			}
			items = append(items, m)
		}
		if len(items) != 100_000 {
			b.Fatal(len(items))
		}
	}
	reportCPU(b, cpu)
}

// benchRows converts benchArray's items to CSV rows, or NDJSON lines.
func benchRows(tb testing.TB, n int, csv bool) []byte {
	tb.Helper()
	var items []map[string]any
	if err := json.Unmarshal(benchArray(tb, n, false), &items); err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if csv {
		b.WriteString("id,number,title,state,author,comments,score,created_at,body\n")
	}
	for _, it := range items {
		if csv {
			fmt.Fprintf(&b, "%v,%v,%q,%v,%v,%v,%v,%v,%q\n", it["id"], it["number"], it["title"], it["state"],
				it["author"].(map[string]any)["login"], it["comments"], it["score"], it["created_at"], it["body"])
			continue
		}
		line, err := json.Marshal(it)
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkParseTable parses a 100,000-row CSV and the same records as NDJSON.
func BenchmarkParseTable(b *testing.B) {
	for _, format := range []string{FormatCSV, FormatNDJSON} {
		data := benchRows(b, 100_000, format == FormatCSV)
		b.Run(format, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				res, err := Parse(data)
				if err != nil || res.Items != 100_000 || res.Format != format {
					b.Fatal(res.Format, res.Items, err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}
