package index_test

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/vault/index"
)

// corpusDir holds real documents for tests, outside the repository.
const corpusDir = "../../../shared/corpus"

// compareTokens checks the Go tokens of each text against FTS5's.
func compareTokens(t *testing.T, p *ftsProbe, texts []string) {
	t.Helper()
	bad := 0
	for i, want := range p.tokens(t, texts) {
		got := index.Tokenize(texts[i])
		if !slices.Equal(got, want) {
			t.Errorf("%q:\n Go   %q\n FTS5 %q", texts[i], got, want)
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
}

// porterWords are words that reach every step and condition of the Porter
// stemmer: stems of every measure and shape before every suffix it knows.
func porterWords() []string {
	stems := []string{"", "b", "y", "s", "e", "ab", "ba", "sy", "ee", "tr", "bl", "at", "iz", "ss",
		"bab", "hop", "fil", "toy", "cr", "eed", "agr", "ped", "x", "w", "conn", "rel", "fail", "abab",
		"gener", "oper", "controll", "hopp", "tann", "fizz", "fall", "hiss", "sing", "feel", "tapp",
		"formal", "sens", "electr", "adjust", "depend", "communic", "effect", "bowdler", "triplic",
		"rat", "luxur", "analog", "sensit", "valen", "digit", "radic", "hesit", "revers", "ski", "sky"}
	suffixes := []string{"", "s", "ss", "sses", "ies", "ed", "eed", "ing", "y", "e", "l", "ll", "at", "bl", "iz",
		"ational", "tional", "enci", "anci", "izer", "abli", "bli", "alli", "entli", "eli", "ousli", "ization",
		"ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi",
		"icate", "ative", "alize", "iciti", "ical", "ful", "ness",
		"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion",
		"ou", "ism", "ate", "iti", "ous", "ive", "ize", "ly", "li"}
	var out []string
	for _, s := range stems {
		for _, a := range suffixes {
			out = append(out, s+a)
			for _, b := range []string{"s", "ed", "ing", "ly", "ness", "e"} {
				out = append(out, s+a+b)
			}
		}
	}
	return out
}

// randomWords are words of 1 to 14 letters over an alphabet rich in
// vowels, y and the letters of Porter's suffixes.
func randomWords(n int) []string {
	r := rand.New(rand.NewPCG(7, 11))
	const letters = "aeiouybcdlmnstwxzgrfpv"
	out := make([]string, n)
	for i := range out {
		b := make([]byte, 1+r.IntN(14))
		for j := range b {
			b[j] = letters[r.IntN(len(letters))]
		}
		out[i] = string(b)
	}
	return out
}

// randomTexts mix ASCII, punctuation, digits, case, accented Latin and
// other scripts, combining diacritics, symbols and long words.
func randomTexts(n int) []string {
	r := rand.New(rand.NewPCG(3, 5))
	pieces := []string{"the", "Running", "CONNECTIONS", "hopping", "e-mail", "naïve", "Café", "résumé",
		"ÉLÉPHANT", "Straße", "STRASSE", "ẞ", "İstanbul", "øre", "Œuvre", "ĳzer", "Ærø", "ǅungla", "ǖ", "Ångström",
		"e\u0301", "u\u0308ber", "a\u0340b", "x\u0331y", "\u0301lead", "Ελληνικά", "ΣΊΣΥΦΟΣ", "Москва", "ПРИВЕТ",
		"日本語", "中文字", "한국어", "עברית", "العربية", "हिन्दी", "😀", "a😀b", "ｆｕｌｌ", "Ｗｉｄｔｈ", "½", "x²", "Ⅻ",
		"3.14", "1,000", "v2", "x86_64", "C++", "don't", "o'clock", "foo@bar.com", "http://x.y/z?q=1",
		"\t", "\n", "  ", ".", ",", ";", "(", ")", "\"", "'", "—", "…", "\u00a0", "\u200b", "\ufeff",
		strings.Repeat("abcdefghij", 7) + "ing", strings.Repeat("é", 40) + "ness", "\U000E0041", "\U0010FFFD"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
			if r.IntN(3) > 0 {
				b.WriteString(" ")
			}
		}
		out[i] = b.String()
	}
	return out
}

func TestTokenizeMatchesFTS5(t *testing.T) {
	p := newFTSProbe(t)
	t.Run("porter", func(t *testing.T) { compareTokens(t, p, porterWords()) })
	t.Run("random words", func(t *testing.T) { compareTokens(t, p, randomWords(scaled(20000, 4000))) })
	t.Run("random text", func(t *testing.T) { compareTokens(t, p, randomTexts(scaled(5000, 1000))) })
	t.Run("corpus", func(t *testing.T) {
		if _, err := os.Stat(corpusDir); err != nil {
			t.Skipf("no corpus at %s: %v", corpusDir, err)
		}
		var texts []string
		err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ext := filepath.Ext(path); ext == ".txt" || ext == ".md" {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				texts = append(texts, strings.Split(string(b), "\n")...)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		compareTokens(t, p, texts)
	})
}

// FuzzTokenize compares the Go tokens of any valid UTF-8 text with FTS5's
// (invalid UTF-8 is skipped: SQLite and Go decode it differently).
func FuzzTokenize(f *testing.F) {
	for _, s := range randomTexts(20) {
		f.Add(s)
	}
	f.Add("generalizations")
	p := newFTSProbe(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("invalid UTF-8")
		}
		compareTokens(t, p, []string{s})
	})
}
