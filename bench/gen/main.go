// Command gen writes the inputs of bench/cli.sh: list.json, a JSON list of
// 100,000 items of about 400 bytes (about 40 MB), and text.txt, 50 MB of
// text, both deterministic (see internal/benchdata).
//
//	go run ./bench/gen -out DIR
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/internal/benchdata"
)

func main() {
	out := flag.String("out", ".", "directory to write list.json and text.txt into")
	items := flag.Int("items", 100_000, "list items")
	textMB := flag.Int("text-mb", 50, "text size in MB")
	flag.Parse()
	if err := write(filepath.Join(*out, "list.json"), func(f *os.File) error { return benchdata.WriteList(f, *items) }); err != nil {
		log.Fatal(err)
	}
	if err := write(filepath.Join(*out, "text.txt"), func(f *os.File) error { return benchdata.WriteText(f, *textMB<<20) }); err != nil {
		log.Fatal(err)
	}
}

func write(path string, fill func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
