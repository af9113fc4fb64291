package textsplit_test

import (
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/internal/textsplit"
)

func ExampleChunkText() {
	text := "Offload stores big results.\n\nThe model pages, searches and filters them. It never sees the whole."
	for _, c := range textsplit.ChunkText(text, 40, 10) {
		fmt.Printf("%q\n", c)
	}
	// Output:
	// "Offload stores big results.\n\n"
	// "results.\n\nThe model pages, searches and "
	// "rches and filters them. It never sees "
	// "ever sees the whole."
}

func ExampleSplitMarkdownSections() {
	md := "Intro.\n\n# Install\n\n```sh\n# not a heading\ngo install\n```\n\n## Options\n\nSee below.\n"
	for _, s := range textsplit.SplitMarkdownSections(md) {
		fmt.Printf("%d %q at %d: %q\n", s.Level, s.Heading, s.Offset, s.Body)
	}
	// Output:
	// 0 "" at 0: "Intro."
	// 1 "Install" at 8: "```sh\n# not a heading\ngo install\n```"
	// 2 "Options" at 57: "See below."
}

// The engine computes the break between pages k-1 and k from a window
// that ends at k*perPage and reaches back Reach(perPage) characters.
func ExampleBreak() {
	text := []rune("First paragraph ends here.\n\nThe second one is cut somewhere in the middle.")
	perPage, k := 32, 1
	start := k*perPage - textsplit.Reach(perPage)
	b := start + textsplit.Break(string(text[start:k*perPage]), k*perPage-start)
	fmt.Printf("page 0: %q\npage 1 starts: %q\n", string(text[:b]), string(text[b:b+10]))
	// Output:
	// page 0: "First paragraph ends here.\n\n"
	// page 1 starts: "The second"
}

func ExamplePages() {
	text := strings.Repeat("A short sentence. ", 8)
	for _, p := range textsplit.Pages(text, 64) {
		fmt.Printf("%q\n", p)
	}
	// Output:
	// "A short sentence. A short sentence. A short sentence. "
	// "A short sentence. A short sentence. A short sentence. A short sentence. "
	// "A short sentence. "
}
