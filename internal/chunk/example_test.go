package chunk_test

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/chunk"
	"github.com/ctxkit/ctxkit/internal/extract"
)

func ExampleSplit() {
	md := "# Guide\n\n## Install\n\nRun the installer. Then restart.\n\n## Use\n\nOpen a vault and query it."
	doc, err := extract.ExtractBytes(context.Background(), "guide.md", []byte(md))
	if err != nil {
		panic(err)
	}
	for _, c := range chunk.Split(doc, chunk.Options{Words: 4, Overlap: 1}) {
		fmt.Printf("%d %q\n", c.Index, c.Text)
	}
	// Output:
	// 0 "Guide > Install\n\nRun the installer."
	// 1 "Guide > Install\n\ninstaller. Then restart."
	// 2 "Guide > Use\n\nOpen a vault and"
	// 3 "Guide > Use\n\nand query it."
}
