package offload_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestNoticeGolden pins what the model sees for each shape and format.
func TestNoticeGolden(t *testing.T) {
	e, _ := newEngine(t)
	var lines strings.Builder
	for i := range 300 {
		lines.WriteString(`{"level":"error","msg":"disk full on node ` + string(rune('a'+i%26)) + `","code":507}` + "\n")
	}
	tests := []struct {
		name string
		data string
		opts offload.PutOptions
	}{
		{"list", string(papers(200)), offload.PutOptions{Producer: "search_papers", ID: "papers"}},
		{"dict", `{"name":"ctxkit","servers":[{"host":"a","port":1},{"host":"b","port":2}],"owner":{"team":"core","oncall":null},"notes":"` + strings.Repeat("very long note ", 40) + `"}`, offload.PutOptions{Producer: "get_config", ID: "config"}},
		{"text", strings.Repeat("Installation. Download the archive, unpack it and run the installer.\n\n", 300), offload.PutOptions{Producer: "read_wiki_contents", ID: "wiki"}},
		{"ndjson", lines.String(), offload.PutOptions{Producer: "tail_logs", ID: "logs"}},
		{"csv", "city,population,zip\nParis,2102650,75001\nBoston,675647,02134\n", offload.PutOptions{Producer: "export", ID: "cities", TTL: -1}},
		{"saved", "", offload.PutOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []byte
			if tt.name == "saved" {
				res := e.Dispatch(t.Context(), "result_pipe", `{"workspace_id":"papers","steps":[{"filter":{"category":"ml"}},{"select":["id","title"]}],"save_as":"ml"}`)
				if res.IsError {
					t.Fatal(string(res.Output))
				}
				got = res.Output
			} else {
				n := put(t, e, t.Context(), []byte(tt.data), tt.opts)
				got = []byte(n.String())
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", "notice_"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("notice differs from %s (go test -update rewrites it):\ngot:\n%s", path, pretty.Bytes())
			}
		})
	}
}

// TestDescribeLine pins the one-line summary of result_list and `ctxkit
// offload ls`: sizes counted in words that agree with the number, and an
// expired workspace said to have expired, with when, never a future time.
func TestDescribeLine(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		ws   store.Workspace
		want string
	}{
		{"no expiry", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeText, Chars: 12345},
			"a · t · text · 12,345 chars · no expiry"},
		{"expires later", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeList, Items: 3, Producer: "search", ExpiresAt: now.Add(90*time.Minute + 10*time.Second)},
			"a · t · list · 3 items from search · expires in 1 hour 30 minutes"},
		{"expires within a minute", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeList, Items: 3, ExpiresAt: now.Add(20 * time.Second)},
			"a · t · list · 3 items · expires in 20 seconds"},
		{"expired hours ago", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeDict, Items: 2, ExpiresAt: now.Add(-3 * time.Hour)},
			"a · t · dict · 2 keys · expired 3 hours ago (2026-12-01T09:00:00Z)"},
		{"expired just now", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeText, Chars: 5, ExpiresAt: now},
			"a · t · text · 5 chars · expired 1 second ago (2026-12-01T12:00:00Z)"},
		{"one item", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeList, Items: 1},
			"a · t · list · 1 item · no expiry"},
		{"one key", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeDict, Items: 1},
			"a · t · dict · 1 key · no expiry"},
		{"one char", store.Workspace{ID: "a", Type: "t", Shape: store.ShapeText, Chars: 1},
			"a · t · text · 1 char · no expiry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := offload.DescribeLine(&tt.ws, now); got != tt.want {
				t.Errorf("DescribeLine\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
