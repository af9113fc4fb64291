package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tsSummary is what e2e/node/client.mjs prints.
type tsSummary struct {
	Steps []struct {
		Name  string `json:"name"`
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	} `json:"steps"`
	Instructions string   `json:"instructions"`
	Tools        []string `json:"tools"`
	Call         *struct {
		IsError              bool   `json:"isError"`
		Text                 string `json:"text"`
		HasStructuredContent bool   `json:"hasStructuredContent"`
		JSONChars            int    `json:"json_chars"`
	} `json:"call"`
	WorkspaceID string  `json:"workspace_id"`
	Page1       *tsPage `json:"page1"`
	Search      struct {
		Passages int    `json:"passages"`
		Page     int    `json:"page"`
		Text     string `json:"text"`
	} `json:"search"`
	FoundPage *tsPage `json:"found_page"`
}

type tsPage struct {
	Page       int    `json:"page"`
	TotalPages int    `json:"total_pages"`
	Text       string `json:"text"`
}

// TestTypeScriptClient drives the wrapper with a client that is not ours:
// the official TypeScript SDK (e2e/node/client.mjs) spawns ctxkit wrap over
// server-filesystem, reads a large file (which it validates against the
// tool's outputSchema), gets the notice and explores the stored result.
func TestTypeScriptClient(t *testing.T) {
	requireNode(t)
	store := isolate(t)
	dir := t.TempDir()
	large := largeMarkdown(600 << 10)
	largePath := filepath.Join(dir, "large.md")
	if err := os.WriteFile(largePath, []byte(large), 0o600); err != nil {
		t.Fatal(err)
	}
	config := map[string]any{
		"command":   ctxkitBin,
		"args":      wrapArgs(store, []string{"--name", "fs"}, "node", nodeServer("server-filesystem"), dir),
		"tool":      "read_text_file",
		"arguments": map[string]any{"path": largePath},
		"query":     needleQuery,
	}
	ctx := testContext(t)
	cmd := exec.CommandContext(ctx, "node", filepath.Join(nodeDir, "client.mjs"), asJSON(t, config))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if testing.Verbose() || err != nil {
		t.Logf("client.mjs stderr (including the wrapper's):\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("node client.mjs: %v\nstdout: %s", err, stdout.String())
	}
	var s tsSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("client.mjs printed no summary: %v\n%s", err, stdout.String())
	}
	// checkSteps reports the failed steps that explore the stored result
	// (result_*), or the failed others.
	checkSteps := func(exploring bool) {
		for _, st := range s.Steps {
			if !st.OK && strings.HasPrefix(st.Name, "result_") == exploring {
				t.Errorf("TypeScript client step %s failed: %s", st.Name, st.Error)
			}
		}
	}
	checkSteps(false)
	for _, name := range []string{"read_text_file", "result_read_page", "result_search_in_text"} {
		if !slices.Contains(s.Tools, name) {
			t.Errorf("tools/list lacks %s: %v", name, s.Tools)
		}
	}
	if s.Call == nil {
		t.Fatal("the large read returned nothing")
	}
	if s.Call.IsError || strings.Contains(s.Call.Text, needle) || s.Call.JSONChars >= threshold/2 {
		t.Fatalf("the large read was not replaced by a notice (isError %v, %d chars of JSON):\n%.1000s",
			s.Call.IsError, s.Call.JSONChars, s.Call.Text)
	}
	if n := parseNotice(t, s.Call.Text); n.StoredResult != s.WorkspaceID {
		t.Errorf("the script read workspace %q from the notice, the test %q", s.WorkspaceID, n.StoredResult)
	}

	checkSteps(true)
	if s.Page1 == nil || s.Page1.Page != 1 || s.Page1.Text == "" || !strings.HasPrefix(large, s.Page1.Text) {
		t.Errorf("result_read_page page 1 is not the start of the file: %+v", s.Page1)
	}
	if s.Search.Passages == 0 || !strings.Contains(s.Search.Text, "quartz heron") {
		t.Errorf("result_search_in_text did not find the sentence first: %+v", s.Search)
	}
	if s.FoundPage == nil || !strings.Contains(s.FoundPage.Text, needle) {
		t.Errorf("the page the search named does not contain the sentence: %+v", s.FoundPage)
	}
}
