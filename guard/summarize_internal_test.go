package guard

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard/compact"
)

func TestChunkText(t *testing.T) {
	lines := strings.Repeat("tool read_file result: some words and more words here\n", 200)
	cases := []struct {
		name   string
		text   string
		limit  int
		chunks int // 0: don't check
	}{
		{"fits one chunk", "user:\nhello there\n", 100, 1},
		{"empty", "", 100, 1},
		{"many lines", lines, 300, 0},
		{"one giant line", strings.Repeat("lorem ipsum dolor ", 2000), 500, 0},
		{"no spaces, multibyte", strings.Repeat("é", 5000), 200, 0},
		{"giant line after short ones", "a\nb\n" + strings.Repeat("x y z ", 3000) + "\nc\n", 400, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := chunkText(tc.text, tc.limit, Estimate)
			if strings.Join(got, "") != tc.text {
				t.Fatal("chunks do not add up to the text")
			}
			total := 0
			for i, c := range got {
				n := Estimate(c)
				total += n
				if n > tc.limit {
					t.Fatalf("chunk %d counts %d > %d", i, n, tc.limit)
				}
				if i < len(got)-1 && n < tc.limit/2 && strings.Count(tc.text, "\n") < 3 {
					t.Fatalf("chunk %d counts %d: a long line should fill chunks", i, n)
				}
			}
			if tc.chunks > 0 && len(got) != tc.chunks {
				t.Fatalf("%d chunks, want %d", len(got), tc.chunks)
			}
			// no more chunks than twice the minimum
			if min := (Estimate(tc.text) + tc.limit - 1) / tc.limit; len(got) > 2*min+1 {
				t.Fatalf("%d chunks for %d tokens in chunks of %d", len(got), Estimate(tc.text), tc.limit)
			}
		})
	}
}

func TestGroupParts(t *testing.T) {
	parts := []string{strings.Repeat("a ", 100), strings.Repeat("b ", 100), strings.Repeat("c ", 100), strings.Repeat("d ", 300)}
	cases := []struct {
		limit int
		want  []int // sizes of the groups
	}{
		{10000, []int{4}},
		{250, []int{2, 1, 1}},
		{50, []int{1, 1, 1, 1}},
	}
	for _, tc := range cases {
		got := groupParts(parts, tc.limit, Estimate)
		var sizes []int
		var all []string
		for _, g := range got {
			sizes = append(sizes, len(g))
			all = append(all, g...)
		}
		if strings.Join(all, "|") != strings.Join(parts, "|") || len(sizes) != len(tc.want) {
			t.Fatalf("limit %d: groups %v, want %v", tc.limit, sizes, tc.want)
		}
		for i := range sizes {
			if sizes[i] != tc.want[i] {
				t.Fatalf("limit %d: groups %v, want %v", tc.limit, sizes, tc.want)
			}
		}
	}
}

func TestSpanText(t *testing.T) {
	got := spanText([]compact.Message{
		{Role: compact.RoleUser, Text: "read it"},
		{Role: compact.RoleAssistant, ToolCalls: []compact.ToolCall{{Name: "read_file", Args: `{"path":"a.txt"}`}}},
		{Role: compact.RoleTool, Name: "read_file", Text: "contents 42"},
	})
	want := "user:\nread it\n\nassistant:\n(called read_file {\"path\":\"a.txt\"})\n\ntool read_file result:\ncontents 42\n\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
