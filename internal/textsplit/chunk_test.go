package textsplit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunkText(t *testing.T) {
	tests := []struct {
		name          string
		text          string
		size, overlap int
		want          []string
	}{
		{"empty", "", 10, 2, nil},
		{"fits", "short text", 10, 2, []string{"short text"}},
		{"size below 1", "some text", 0, 0, []string{"some text"}},
		{"paragraphs", "one two.\n\nthree four.\n\nfive", 14, 0,
			[]string{"one two.\n\n", "three four.\n\n", "five"}},
		{"lines before sentences", "aaa. bbb\nccc ddd eee", 12, 0,
			[]string{"aaa. bbb\n", "ccc ddd eee"}},
		{"sentences before words", "Aa bb. Cc dd ee ff", 12, 0,
			[]string{"Aa bb. ", "Cc dd ee ff"}},
		{"words", "alpha beta gamma delta", 12, 0,
			[]string{"alpha beta ", "gamma delta"}},
		{"hard cut", "abcdefghij", 4, 0, []string{"abcd", "efgh", "ij"}},
		{"overlap", "abcdefghij", 4, 2, []string{"abcd", "cdef", "efgh", "ghij"}},
		{"overlap clamped to half", "abcdefghij", 4, 9, []string{"abcd", "cdef", "efgh", "ghij"}},
		{"negative overlap", "abcdefgh", 4, -1, []string{"abcd", "efgh"}},
		{"overlap with words", "one two three four five six", 10, 4,
			[]string{"one two ", "two three ", "ree four ", "our five ", "ive six"}},
		// A boundary in the first half of the chunk is not taken: the
		// chunk would be too short.
		{"boundary too early", "a\n\nbcdefghijklmnop", 8, 0, []string{"a\n\nbcdef", "ghijklmn", "op"}},
		{"multibyte", "ééééé ñññññ", 6, 0, []string{"ééééé ", "ñññññ"}},
		{"invalid UTF-8", "ab\xffcd\xfe", 3, 1, []string{"ab\xff", "\xffcd", "d\xfe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChunkText(tt.text, tt.size, tt.overlap)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("ChunkText(%q, %d, %d) =\n %q\nwant\n %q", tt.text, tt.size, tt.overlap, got, tt.want)
			}
			checkChunks(t, tt.text, tt.size, tt.overlap, got)
		})
	}
}

func TestChunkTextLarge(t *testing.T) {
	text := strings.Repeat(strings.Repeat("Words in a sentence here. ", 12)+"\n\n", 300)
	for _, tc := range []struct{ size, overlap int }{{1000, 100}, {257, 0}, {64, 32}} {
		chunks := ChunkText(text, tc.size, tc.overlap)
		checkChunks(t, text, tc.size, tc.overlap, chunks)
		// Paragraphs are 314 characters, so chunks of 1000 end at them.
		if tc.size == 1000 {
			for i, c := range chunks[:len(chunks)-1] {
				if !strings.HasSuffix(c, "\n\n") {
					t.Errorf("chunk %d does not end at a paragraph", i)
				}
			}
		}
	}
}

// checkChunks asserts ChunkText's guarantees: chunks are non-empty, hold at
// most size characters, repeat the overlap exactly, and reassemble to text.
func checkChunks(t *testing.T, text string, size, overlap int, chunks []string) {
	t.Helper()
	if text == "" {
		if chunks != nil {
			t.Fatalf("empty text gave chunks %q", chunks)
		}
		return
	}
	if size < 1 {
		if len(chunks) != 1 || chunks[0] != text {
			t.Fatalf("size %d: got %q, want the text whole", size, chunks)
		}
		return
	}
	overlap = min(max(overlap, 0), size/2)
	var b strings.Builder
	for i, c := range chunks {
		n := utf8.RuneCountInString(c)
		if n == 0 || n > size {
			t.Fatalf("chunk %d has %d characters, size %d", i, n, size)
		}
		if i == 0 {
			b.WriteString(c)
			continue
		}
		if n <= overlap {
			t.Fatalf("chunk %d has %d characters, no more than the overlap %d", i, n, overlap)
		}
		head := byteOffset(c, 0, overlap)
		prev := chunks[i-1]
		if !strings.HasSuffix(prev, c[:head]) {
			t.Fatalf("chunk %d does not start with the last %d characters of chunk %d", i, overlap, i-1)
		}
		b.WriteString(c[head:])
	}
	if b.String() != text {
		t.Fatalf("chunks do not reassemble the text")
	}
}

func BenchmarkChunkText(b *testing.B) {
	text := strings.Repeat(strings.Repeat("Words in a sentence here. ", 12)+"\n\n", 3000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		ChunkText(text, 1000, 100)
	}
}
