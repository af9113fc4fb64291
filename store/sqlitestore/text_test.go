package sqlitestore

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

// TestTextBytesSurvive checks that text which is not valid UTF-8, or holds
// NUL bytes, comes back byte for byte, and that offsets count each invalid
// byte as one character, as utf8.RuneCountInString does.
func TestTextBytesSurvive(t *testing.T) {
	for _, chunkRunes := range []int{0, 16} {
		s := openTemp(t, Options{chunkRunes: chunkRunes})
		text := "caf\xe9 \x00 nul and \xff\xfe invalid; 日本 \xe6\x97 cut 😀 end"
		ws := &store.Workspace{ID: "bytes", Type: "t", Shape: store.ShapeText, Producer: "p"}
		if err := s.Put(t.Context(), ws, &store.Content{Text: text}); err != nil {
			t.Fatal(err)
		}
		raw, err := s.Raw(t.Context(), ws.ID)
		if err != nil || string(raw) != text {
			t.Errorf("chunk size %d: Raw = %q, %v; want %q", chunkRunes, raw, err, text)
		}
		n := int64(utf8.RuneCountInString(text))
		for off := int64(0); off <= n; off++ {
			got, err := s.TextSlice(t.Context(), ws.ID, off, 4)
			if err != nil {
				t.Fatal(err)
			}
			want := sliceRunes(text, off, 4)
			if got != want {
				t.Errorf("chunk size %d: TextSlice(%d, 4) = %q, want %q", chunkRunes, off, got, want)
			}
		}
		hits, err := s.SearchText(t.Context(), ws.ID, store.TextQuery{Text: "invalid"})
		if err != nil || len(hits) != 1 || hits[0].Offset != int64(utf8.RuneCountInString(text[:strings.Index(text, "invalid")])) {
			t.Errorf("chunk size %d: SearchText(invalid) = %+v, %v", chunkRunes, hits, err)
		}
		s.Close()
	}
}

// sliceRunes cuts n characters from off, counting as utf8 does.
func sliceRunes(s string, off, n int64) string {
	i := 0
	for ; off > 0 && i < len(s); off-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	j := i
	for ; n > 0 && j < len(s); n-- {
		_, w := utf8.DecodeRuneInString(s[j:])
		j += w
	}
	return s[i:j]
}
