package vault

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/extract/extracttest"
	"github.com/ctxkit/ctxkit/vault/index"
)

func TestLocatorOf(t *testing.T) {
	tests := []struct {
		in       index.Locator
		label    string // "" for no locator
		page     int
		recorded bool
	}{
		{index.Locator{Unit: index.Page, Start: 3, End: 4}, "pages 3-4", 3, true},
		{index.Locator{Unit: index.Page, Start: 3, End: 3}, "page 3", 3, true},
		{index.Locator{Unit: index.Paragraph, Start: 2, End: 5}, "paragraphs 2-5", 0, true},
		{index.Locator{Unit: index.Paragraph, Start: 7, End: 7}, "paragraph 7", 0, true},
		{index.Locator{Unit: index.Line, Start: 10, End: 24}, "lines 10-24", 0, true},
		{index.Locator{Unit: index.Line, Start: 1, End: 1}, "line 1", 0, true},
		{index.Locator{}, "", 0, true},                                  // HTML: no positions
		{index.Locator{Unit: index.Unrecorded, Start: 2}, "", 2, false}, // an old PDF chunk
		{index.Locator{Unit: index.Unrecorded}, "", 0, false},
	}
	for _, tt := range tests {
		loc, page, recorded := locatorOf(tt.in)
		label := ""
		if loc != nil {
			label = loc.Label
			if loc.Unit != string(tt.in.Unit) || loc.Start != tt.in.Start || loc.End != tt.in.End {
				t.Errorf("%+v: locator %+v", tt.in, loc)
			}
		}
		if label != tt.label || page != tt.page || recorded != tt.recorded {
			t.Errorf("%+v: label %q, page %d, recorded %v; want %q, %d, %v", tt.in, label, page, recorded, tt.label, tt.page, tt.recorded)
		}
	}
}

// TestQueryLocators: a query's passages say where they are in their files
// (a PDF's pages, a Markdown file's lines, nothing for HTML); passages of
// an index made before locators (as the migration leaves it: chunks
// unrecorded, hashes cleared) have none and the answer says so, until the
// next index extracts them again.
func TestQueryLocators(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	dir := e.semantic(t, "notes", map[string]string{
		"a.md":      "# A\n\nalpha words here\nmore alpha\n",
		"page.html": "<h1>H</h1><p>html alpha</p>",
	})
	writeFile(t, dir, "paper.pdf", string(extracttest.MakePDF("Paper", [][]string{{"alpha on the first page"}, {"and the second"}})))
	if _, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	query := func() (map[string]Passage, string) {
		t.Helper()
		res, err := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: "alpha"})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Passage{}
		for _, p := range res.Results {
			got[p.Path] = p
		}
		if len(got) != 3 {
			t.Fatalf("results %+v", res.Results)
		}
		return got, res.Warning
	}
	label := func(p Passage) string {
		if p.Locator == nil {
			return ""
		}
		return p.Locator.Label
	}
	check := func(when string) {
		t.Helper()
		got, warning := query()
		if label(got["a.md"]) != "lines 3-4" || label(got["paper.pdf"]) != "pages 1-2" || got["paper.pdf"].Page != 1 ||
			got["page.html"].Locator != nil || warning != "" {
			t.Errorf("%s: %s %s (page %d), html %+v, warning %q", when, label(got["a.md"]), label(got["paper.pdf"]), got["paper.pdf"].Page,
				got["page.html"].Locator, warning)
		}
	}
	check("indexed")

	// The index as the migration leaves it.
	v, err := e.svc.lookup(ctx, Owner(), "notes")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := e.b.Index(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ path, text string }{{"a.md", "A\n\nalpha words here\nmore alpha"}, {"paper.pdf", "alpha on the first page\n\nand the second"}} {
		loc := index.Locator{Unit: index.Unrecorded}
		if d.path == "paper.pdf" {
			loc.Start = 1
		}
		if err := idx.Put(ctx, index.Doc{Path: d.path}, []index.Chunk{{Text: d.text, Loc: loc}}); err != nil {
			t.Fatal(err)
		}
	}
	got, warning := query()
	if got["a.md"].Locator != nil || got["paper.pdf"].Locator != nil || got["paper.pdf"].Page != 1 ||
		!strings.HasPrefix(warning, "2 of these passages come from documents indexed before") || !strings.Contains(warning, "index the vault again") {
		t.Errorf("old index: %+v, warning %q", got, warning)
	}
	rep, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	if err != nil || rep.Indexed != 2 || rep.Unchanged != 1 {
		t.Fatalf("index after the migration: %+v, %v", rep, err)
	}
	check("indexed again")
}
