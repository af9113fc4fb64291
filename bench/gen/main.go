// Command gen writes the benchmark inputs of bench/cli.sh: a JSON list of
// 100,000 items of about 400 bytes (about 40 MB) and a 50 MB text, both
// deterministic.
//
//	go run ./bench/gen -out DIR
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

var words = strings.Fields(`the of and to in is for on that with as by this from at be are or an it
not which have has was were can will more data model system query index search result page token
context agent tool store memory vector graph table stream cache error timeout latency throughput
parser schema field value record batch window offset limit filter group count sort order sample`)

func main() {
	out := flag.String("out", ".", "directory to write list.json and text.txt into")
	items := flag.Int("items", 100_000, "list items")
	textMB := flag.Int("text-mb", 50, "text size in MB")
	flag.Parse()
	if err := writeList(filepath.Join(*out, "list.json"), *items); err != nil {
		log.Fatal(err)
	}
	if err := writeText(filepath.Join(*out, "text.txt"), *textMB<<20); err != nil {
		log.Fatal(err)
	}
}

func writeList(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(1, 2))
	cats := []string{"ml", "db", "os", "net", "ui", "sec", "hpc", "pl"}
	word := func() string { return words[r.IntN(len(words))] }
	w.WriteString("[")
	for i := range n {
		body := make([]string, 30)
		for j := range body {
			body[j] = word()
		}
		item := map[string]any{
			"id": i, "title": fmt.Sprintf("%s %s %s %d", word(), word(), word(), i),
			"body": strings.Join(body, " "), "category": cats[r.IntN(len(cats))], "score": float64(r.IntN(10000)) / 100,
			"year": 2000 + r.IntN(26), "tags": []string{cats[r.IntN(len(cats))], word()},
			"author": map[string]any{"name": fmt.Sprintf("author%d", r.IntN(500)), "h": r.IntN(80)},
		}
		b, err := json.Marshal(item)
		if err != nil {
			return err
		}
		if i > 0 {
			w.WriteString(",\n")
		}
		w.Write(b)
	}
	w.WriteString("]\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func writeText(path string, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(3, 4))
	written := 0
	for written < size {
		var line strings.Builder
		for range 5 + r.IntN(10) {
			line.WriteString(words[r.IntN(len(words))])
			line.WriteByte(' ')
		}
		line.WriteString("end.\n")
		if r.IntN(4) == 0 {
			line.WriteByte('\n')
		}
		n, _ := w.WriteString(line.String())
		written += n
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
