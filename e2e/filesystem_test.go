package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilesystem wraps @modelcontextprotocol/server-filesystem over a folder
// with a small and a large markdown file: the small read is the upstream's
// answer byte for byte, the large one is replaced by a notice, and the
// exploration tools find and read the sentence in the middle of it.
func TestFilesystem(t *testing.T) {
	requireNode(t)
	store := isolate(t)
	dir := t.TempDir()
	large := largeMarkdown(600 << 10)
	smallPath, largePath := filepath.Join(dir, "small.md"), filepath.Join(dir, "large.md")
	for p, s := range map[string]string{smallPath: smallMarkdown, largePath: large} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testContext(t)
	server := []string{"node", nodeServer("server-filesystem"), dir}
	direct := mustStartVersion(t, ctx, legacyProtocol, nil, server[0], server[1:]...)
	wrapped := mustStartVersion(t, ctx, legacyProtocol, nil, ctxkitBin, wrapArgs(store, []string{"--name", "fs"}, server...)...)

	wrappedTools := sameTools(t, ctx, direct, wrapped)
	readTool := wrappedTools["read_text_file"]
	if readTool == nil {
		t.Fatal("the wrapper does not list read_text_file")
	}

	t.Run("small read passes through", func(t *testing.T) {
		args := map[string]any{"path": smallPath}
		want := call(t, ctx, direct, "read_text_file", args)
		got := call(t, ctx, wrapped, "read_text_file", args)
		if texts(want) != smallMarkdown {
			t.Fatalf("the upstream itself read %q, want the file's text", texts(want))
		}
		if a, b := asJSON(t, want), asJSON(t, got); a != b {
			t.Errorf("small read differs through the wrapper:\n direct: %s\nwrapped: %s", a, b)
		}
	})

	t.Run("large read is offloaded and explored", func(t *testing.T) {
		args := map[string]any{"path": largePath}
		if got := texts(call(t, ctx, direct, "read_text_file", args)); got != large {
			t.Fatalf("the upstream itself read %d chars, want the file's %d", len(got), len(large))
		}
		res := call(t, ctx, wrapped, "read_text_file", args)
		text := texts(res)
		if strings.Contains(text, needle) {
			t.Fatalf("the offloaded result still holds the file's content (%d chars of text)", len(text))
		}
		if size := len(asJSON(t, res)); size >= threshold/2 {
			t.Errorf("the offloaded result is %d chars of JSON, want well under the threshold %d", size, threshold)
		}
		n := parseNotice(t, text)
		checkOutputSchema(t, readTool, res)

		if n.Shape != "text" || n.Chars != int64(len(large)) {
			t.Errorf("notice says shape %q and %d chars, want text and the file's %d chars", n.Shape, n.Chars, len(large))
		}

		var found struct {
			Passages []struct {
				Page int    `json:"page"`
				Text string `json:"text"`
			} `json:"passages"`
		}
		callJSON(t, ctx, wrapped, "result_search_in_text",
			map[string]any{"workspace_id": n.StoredResult, "query": needleQuery}, &found)
		if len(found.Passages) == 0 || !strings.Contains(found.Passages[0].Text, "quartz heron") {
			t.Fatalf("result_search_in_text(%q) did not find the sentence first: %+v", needleQuery, found.Passages)
		}

		var page struct {
			Page       int    `json:"page"`
			TotalPages int    `json:"total_pages"`
			Text       string `json:"text"`
		}
		callJSON(t, ctx, wrapped, "result_read_page",
			map[string]any{"workspace_id": n.StoredResult, "page": found.Passages[0].Page}, &page)
		if !strings.Contains(page.Text, needle) {
			t.Errorf("page %d of %d does not contain the sentence the search placed on it", page.Page, page.TotalPages)
		}
		if !strings.Contains(large, page.Text) {
			t.Errorf("page %d is not a verbatim slice of the file", page.Page)
		}
	})
}
