// Package benchdata generates the deterministic inputs of ctxkit's
// benchmarks: a JSON list of items of about 400 bytes (100,000 of them make
// the 40 MB list of BENCHMARKS.md) and paragraphs of plain text. The Go
// benchmarks and bench/cli.sh use the same data, so their figures compare.
package benchdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// Words is the vocabulary of the generated data, so benchmarks can search
// for words that occur.
var Words = strings.Fields(`the of and to in is for on that with as by this from at be are or an it
not which have has was were can will more data model system query index search result page token
context agent tool store memory vector graph table stream cache error timeout latency throughput
parser schema field value record batch window offset limit filter group count sort order sample`)

// Categories are the values of the items' category field.
var Categories = []string{"ml", "db", "os", "net", "ui", "sec", "hpc", "pl"}

// WriteList writes a JSON array of n items, one per line, each with id,
// title, body (45 words), category, score, year, tags and author {name, h}.
func WriteList(w io.Writer, n int) error {
	bw := bufio.NewWriter(w)
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string { return Words[r.IntN(len(Words))] }
	bw.WriteString("[")
	body := make([]string, 45)
	for i := range n {
		for j := range body {
			body[j] = word()
		}
		item := map[string]any{
			"id": i, "title": fmt.Sprintf("%s %s %s %d", word(), word(), word(), i),
			"body": strings.Join(body, " "), "category": Categories[r.IntN(len(Categories))],
			"score": float64(r.IntN(10000)) / 100, "year": 2000 + r.IntN(26),
			"tags":   []string{Categories[r.IntN(len(Categories))], word()},
			"author": map[string]any{"name": fmt.Sprintf("author%d", r.IntN(500)), "h": r.IntN(80)},
		}
		b, err := json.Marshal(item)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",\n")
		}
		bw.Write(b)
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// WriteText writes about size bytes of text: lines of 5 to 14 words ending
// in a full stop, with a blank line after about one line in four.
func WriteText(w io.Writer, size int) error {
	bw := bufio.NewWriter(w)
	r := rand.New(rand.NewPCG(3, 4))
	for written := 0; written < size; {
		n := 0
		for range 5 + r.IntN(10) {
			k, _ := bw.WriteString(Words[r.IntN(len(Words))] + " ")
			n += k
		}
		k, _ := bw.WriteString("end.\n")
		n += k
		if r.IntN(4) == 0 {
			bw.WriteByte('\n')
			n++
		}
		written += n
	}
	return bw.Flush()
}
