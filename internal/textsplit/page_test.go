package textsplit

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundaryKinds(t *testing.T) {
	tests := []struct {
		text string // the boundary tested is at its end
		kind boundary
		want bool
	}{
		{"a\n\n", paragraph, true},
		{"a\n \t\r\n", paragraph, true},
		{"a\n", paragraph, false},
		{"\n", paragraph, false},
		{"a\nb\n", paragraph, false},
		{"a\n", line, true},
		{"a\r", line, false},
		{"end. ", sentence, true},
		{"end.\n", sentence, true},
		{"what? ", sentence, true},
		{"stop!\t", sentence, true},
		{`said "stop." `, sentence, true},
		{"(see below.) ", sentence, true},
		{"end.", sentence, false},
		{"3.14", sentence, false},
		{"a, ", sentence, false},
		{" . ", sentence, true},
		{"終わり。", sentence, true},
		{"本当？", sentence, true},
		{"a ", word, true},
		{"a\n", word, true},
		{"a\r", word, false},
		{"ab", word, false},
		{"日本", word, true},
		{"a\u00a0", word, true},
		{"é", word, false},
		{"\ufffd", word, false},
	}
	for _, tt := range tests {
		rs := []rune(tt.text)
		if got := tt.kind.is(rs, len(rs)); got != tt.want {
			t.Errorf("kind %d at the end of %q = %v, want %v", tt.kind, tt.text, got, tt.want)
		}
	}
}

func TestBreak(t *testing.T) {
	tests := []struct {
		name    string
		window  string
		nominal int
		want    int
	}{
		{"paragraph wins over later line", "one.\n\ntwo\nthree four", 20, 6},
		{"last paragraph", "a\n\nb\n\nc d", 9, 6},
		{"line wins over later sentence", "one\ntwo. three four", 19, 4},
		{"sentence wins over later word", "One. Two! Three? four five", 26, 17},
		{"sentence with closing quote", `He said "Stop." Then he left`, 28, 16},
		{"word", "alpha beta gamma", 16, 11},
		{"break at nominal itself", "alpha beta gamma", 11, 11},
		{"no boundary: nominal", "abcdefgh", 5, 5},
		{"text after nominal is ignored", "aaaa bbbb\n\ncccc", 7, 5},
		{"nominal past the end is clamped", "ab cd", 99, 3},
		{"zero nominal", "ab cd", 0, 0},
		{"negative nominal", "ab cd", -3, 0},
		{"empty window", "", 4, 0},
		{"CRLF paragraph", "a\r\n\r\nb c", 8, 5},
		{"blank line at the start", "\n\nabc", 5, 2},
		{"CJK sentence", "これは文です。次の文が続く", 12, 7},
		{"CJK characters are word boundaries", "日本語のテキスト", 5, 5},
		{"multibyte counted in characters", "héllo wörld ünïcode", 17, 12},
		{"invalid UTF-8 bytes are one character each", "a\xff\xfe b\xffc", 7, 4},
		{"CJK comma", "一、ab", 4, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Break(tt.window, tt.nominal); got != tt.want {
				t.Errorf("Break(%q, %d) = %d, want %d", tt.window, tt.nominal, got, tt.want)
			}
		})
	}
}

func TestReach(t *testing.T) {
	for _, tt := range []struct{ perPage, want int }{{-1, 0}, {0, 0}, {4, 0}, {5, 1}, {20000, 4000}, {9, 1}} {
		if got := Reach(tt.perPage); got != tt.want {
			t.Errorf("Reach(%d) = %d, want %d", tt.perPage, got, tt.want)
		}
	}
}

// pageTexts are texts to page: prose with paragraphs, lines, sentences,
// text without any boundary, CJK, and invalid UTF-8.
func pageTexts() []string {
	var prose strings.Builder
	for i := range 60 {
		fmt.Fprintf(&prose, "Sentence %d of paragraph %d goes on. ", i%4, i/4)
		if i%4 == 3 {
			prose.WriteString("\n\n")
		} else if i%7 == 0 {
			prose.WriteString("\n")
		}
	}
	return []string{
		prose.String(),
		strings.Repeat("x", 503),
		strings.Repeat("日本語のテキストです。", 40),
		strings.Repeat("ab \xff\xc3 cd\r\n", 50),
		"short",
		"",
	}
}

// enginePageBreak computes b(k) the way Break's documentation tells the
// engine to: from a window of the text around k*perPage only.
func enginePageBreak(runes []rune, k, perPage int) int {
	n := len(runes)
	nominal := k * perPage
	if k == 0 {
		return 0
	}
	if nominal >= n {
		return n
	}
	start := max(0, nominal-Reach(perPage))
	return start + Break(string(runes[start:nominal]), nominal-start)
}

func TestPages(t *testing.T) {
	for _, text := range pageTexts() {
		// string([]rune(text)) turns invalid bytes into U+FFFD, one each,
		// which keeps every character offset the same.
		runes := []rune(text)
		for _, perPage := range []int{1, 3, 5, 7, 50, 137, 1000, 100000} {
			pages := Pages(text, perPage)
			if got := strings.Join(pages, ""); got != text {
				t.Fatalf("Pages(%.20q, %d) do not reassemble the text", text, perPage)
			}
			if len(text) == 0 && pages != nil {
				t.Errorf("empty text has pages %q", pages)
			}
			// A break moves back by less than Reach (not at all when it is 0),
			// so a page has perPage characters give or take slack.
			slack := max(Reach(perPage)-1, 0)
			b := 0
			for k, p := range pages {
				n := utf8.RuneCountInString(p)
				if n == 0 {
					t.Fatalf("Pages(%.20q, %d): page %d is empty", text, perPage, k)
				}
				last := k == len(pages)-1
				if !last && (n < perPage-slack || n > perPage+slack) {
					t.Errorf("Pages(%.20q, %d): page %d has %d characters, want [%d, %d]", text, perPage, k, n, perPage-slack, perPage+slack)
				}
				if got := enginePageBreak(runes, k, perPage); got != b {
					t.Errorf("Pages(%.20q, %d): page %d starts at %d, the windowed rule says %d", text, perPage, k, b, got)
				}
				b += n
			}
		}
	}
}

func TestPagesPreferParagraphs(t *testing.T) {
	// Paragraphs of the prose are about 150 characters, so the reach of
	// pages of 800 (160) always finds the end of one.
	text := pageTexts()[0]
	pages := Pages(text, 800)
	if len(pages) < 3 {
		t.Fatalf("%d pages, want at least 3", len(pages))
	}
	for k, p := range pages[:len(pages)-1] {
		if !strings.HasSuffix(p, "\n\n") {
			t.Errorf("page %d does not end at a paragraph: %q", k, p[max(0, len(p)-30):])
		}
	}
}
