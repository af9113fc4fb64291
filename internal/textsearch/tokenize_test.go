package textsearch

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusDir holds real documents for tests, outside the repository.
const corpusDir = "../../../shared/corpus"

// compareTokens checks the Go tokens of each text against FTS5's.
func compareTokens(t *testing.T, p *ftsProbe, texts []string) {
	t.Helper()
	bad := 0
	for i, want := range p.tokens(t, texts) {
		got := Tokenize(texts[i])
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

// englishWords are English stems before the suffixes of every Porter
// rule, and words that end in stop cases, beyond the 64-byte limit too.
func englishWords() []string {
	stems := []string{"run", "hop", "fil", "generat", "relat", "condition", "ration", "valen", "hesit", "digit",
		"conform", "radic", "differ", "vile", "analog", "vietnam", "predic", "triplic", "formal", "sensitiv",
		"sensibil", "electr", "hope", "good", "revival", "allow", "infer", "airlin", "gyroscop", "adjust",
		"depend", "adopt", "bowdler", "communism", "activ", "angular", "homolog", "effect", "probat", "rate",
		"cease", "controll", "roll", "sky", "happy", "play", "cry", "agree", "feed", "plaster", "bled", "motor",
		"sing", "conflat", "troubl", "siz", "tann", "fall", "hiss", "fizz", "fail", "caress", "pony", "tie",
		"cat", "meetings", "ed", "ing", "eed", "y", "ies", "sses", "s", "ss", "xyz", "quiet", "queue", "abey"}
	suffixes := []string{"", "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "ings", "ational", "tional", "enci",
		"anci", "izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness",
		"fulness", "ousness", "aliti", "iviti", "biliti", "logi", "icate", "ative", "alize", "iciti", "ical", "ful",
		"ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion",
		"tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "le", "ly", "y", "at", "bl", "iz", "ll"}
	var words []string
	for _, st := range stems {
		for _, su := range suffixes {
			words = append(words, st+su)
		}
	}
	return append(words, strings.Repeat("ational", 9), strings.Repeat("a", 64)+"ing", strings.Repeat("b", 61)+"ing")
}

// tokenizerTexts exercise the character classes of unicode61.
var tokenizerTexts = []string{
	"Hello, World! 123 foo_bar e-mail x@example.com C++ 3.14 -42",
	"École ÉCOLE naïve Straße ΣΊΣΥΦΟΣ Ωμέγα Кириллица 日本語のテキスト 한국어",
	"e\u0301te\u0301 \u0301lead combining ﬁnance ǅemal",
	"tabs\tand\nnewlines\r\nand\u00a0nbsp\u2003emsp",
	"emoji 😀 in😀word private \ue000use\ue001 fullwidth ＡＢＣ１２３",
	"digits ٣٤٥ ๑๒๓ Ⅻ ½ ² subscript₂",
	"apostrophes don't it’s o'clock",
	"µ ſ x\u0378y İ K",
	"",
	"    ",
	"a",
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
	t.Run("english", func(t *testing.T) { compareTokens(t, p, englishWords()) })
	t.Run("classes", func(t *testing.T) { compareTokens(t, p, tokenizerTexts) })
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

// scaled is n, or small under the race detector.
func scaled(n, small int) int {
	if underRace {
		return small
	}
	return n
}

func TestTokenOffsets(t *testing.T) {
	text := "ab, ÉCOLE 😀x日本 a\u0301b"
	type tok struct {
		start, end, runeStart, runes int
		folded                       string
	}
	var got []tok
	var tz Tokenizer
	tz.Each(text, func(tk *Token) bool {
		got = append(got, tok{tk.Start, tk.End, tk.RuneStart, tk.Runes, string(tk.Folded)})
		return true
	})
	want := []tok{
		{0, 2, 0, 2, "ab"},
		{4, 10, 4, 5, "ecole"},
		{15, 22, 11, 3, "x日本"},
		{23, 27, 15, 3, "ab"}, // the diacritic is in the token, not in its folded form
	}
	if !slices.Equal(got, want) {
		t.Errorf("tokens = %+v, want %+v", got, want)
	}
	for _, tk := range got {
		if n := utf8.RuneCountInString(text[:tk.start]); n != tk.runeStart {
			t.Errorf("token %q: RuneStart %d, but %d runes precede it", tk.folded, tk.runeStart, n)
		}
	}
	// Stopping early.
	n := 0
	tz.Each(text, func(*Token) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("Each went on for %d tokens after fn returned false at the second", n)
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Hello, wörld! x² C++ e-mail", []string{"Hello", "wörld", "x²", "C", "e", "mail"}},
		{"nai\u0308ve \u0301x", []string{"nai\u0308ve", "x"}}, // a diacritic continues a word, never starts one
		{" ,;😀 ", nil},
		{"alphaᦰbeta", []string{"alpha", "beta"}}, // a New Tai Lue vowel sign is a separator to unicode61
	} {
		if got := Words(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestPlainWord(t *testing.T) {
	for term, want := range map[string]bool{"parser": true, "2024": true, "naïve": true, "日本": true, "x²": true,
		"a\u0301": true, "c++": false, "e-mail": false, "": false, "a b": false, "\u0301a": false, "_": false,
		"x\xff": false, "alphaᦰbeta": false} {
		if got := PlainWord(term); got != want {
			t.Errorf("PlainWord(%q) = %v, want %v", term, got, want)
		}
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"already folded":  "already folded",
		"ÉCOLE-Naïve C++": "ecole-naive c++",
		"Straße ΣΊΣΥΦΟΣ":  "straße σίσυφοσ", // unicode61 removes the diacritics of Latin letters only
		"x\u0301 \xff!":   "x\u0301 \xff!",  // diacritics and invalid bytes stay
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatchAny(t *testing.T) {
	for in, want := range map[string]string{
		`say "hi" OR bye`: `"say" OR "hi" OR "OR" OR "bye"`,
		"NEAR(a b)":       `"NEAR" OR "a" OR "b"`,
		"":                "",
		"++ --":           "",
	} {
		if got := MatchAny(in); got != want {
			t.Errorf("MatchAny(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzTokenizeStable checks, on any input, invalid UTF-8 included, that
// the tokenizer does not panic and that folding is stable: a folded token
// is one token of itself, folding twice changes nothing, and keeps every
// character in place.
func FuzzTokenizeStable(f *testing.F) {
	for _, s := range append(randomTexts(20), tokenizerTexts...) {
		f.Add(s)
	}
	f.Add("x\xffy\xc3")
	f.Fuzz(func(t *testing.T, s string) {
		_ = Tokenize(s)
		var tz, again Tokenizer
		tz.Each(s, func(tk *Token) bool {
			w := string(tk.Folded)
			var got []string
			again.Each(w, func(tk2 *Token) bool {
				got = append(got, string(tk2.Folded))
				return true
			})
			if len(got) != 1 || got[0] != w {
				t.Errorf("the folded token %q of %q tokenizes as %q", w, s[tk.Start:tk.End], got)
			}
			return true
		})
		folded := Fold(s)
		if twice := Fold(folded); twice != folded {
			t.Errorf("Fold(%q) = %q, folded again %q", s, folded, twice)
		}
		if a, b := utf8.RuneCountInString(s), utf8.RuneCountInString(folded); a != b {
			t.Errorf("Fold(%q) = %q: %d characters, not %d", s, folded, b, a)
		}
		for _, w := range Words(s) {
			if !PlainWord(w) {
				t.Errorf("the word %q of %q is not a plain word", w, s)
			}
		}
	})
}
