package sqlitestore

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	_ "modernc.org/sqlite"
)

// sqliteTokens returns, for each text, the terms SQLite's FTS5 tokenizer
// tokenizer produces, in order, read back through an fts5vocab table.
func sqliteTokens(t testing.TB, tokenizer string, texts []string) [][]string {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '` + tokenizer + `')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if _, err := tx.Exec(`INSERT INTO t (rowid, x) VALUES (?, ?)`, i, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT doc, term FROM v ORDER BY doc, offset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := make([][]string, len(texts))
	for rows.Next() {
		var doc int
		var term string
		if err := rows.Scan(&doc, &term); err != nil {
			t.Fatal(err)
		}
		out[doc] = append(out[doc], term)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// goTokens returns the folded tokens of text, stemmed when stem is set.
func goTokens(text string, stem bool) []string {
	var out []string
	tokenize(text, func(t *token) bool {
		b := slices.Clone(t.folded)
		if stem {
			b = porterStem(b)
		}
		out = append(out, string(b))
		return true
	})
	return out
}

// stemmerWords returns English-like words built from stems and suffixes
// that exercise every Porter rule, plus random letter strings for the
// corner cases no dictionary has.
func stemmerWords() []string {
	stems := []string{"run", "hop", "fil", "generat", "relat", "condition", "ration", "valen", "hesit", "digit",
		"conform", "radic", "differ", "vile", "analog", "vietnam", "predic", "triplic", "formal", "sensitiv",
		"sensibil", "electr", "hope", "good", "revival", "allow", "infer", "airlin", "gyroscop", "adjust",
		"depend", "adopt", "bowdler", "communism", "activ", "angular", "homolog", "effect", "probat", "rate",
		"cease", "controll", "roll", "sky", "happy", "play", "cry", "agree", "feed", "plaster", "bled", "motor",
		"sing", "conflat", "troubl", "siz", "tann", "fall", "hiss", "fizz", "fail", "fil", "caress", "pony", "tie",
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
	r := rand.New(rand.NewPCG(11, 12))
	letters := "aeiouybcdfglmnrstvwxz"
	for range 20000 {
		b := make([]byte, 1+r.IntN(14))
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		words = append(words, string(b))
	}
	// Tokens beyond the stemmer's 64-byte limit pass through.
	words = append(words, strings.Repeat("ational", 9), strings.Repeat("a", 64)+"ing", strings.Repeat("b", 61)+"ing")
	return words
}

// TestPorterMatchesSQLite checks the Go stemmer against SQLite's porter
// tokenizer, word by word.
func TestPorterMatchesSQLite(t *testing.T) {
	words := stemmerWords()
	want := sqliteTokens(t, "porter ascii", words)
	bad := 0
	for i, w := range words {
		got := goTokens(w, true)
		if !slices.Equal(got, want[i]) {
			if bad++; bad <= 20 {
				t.Errorf("stem(%q) = %q, SQLite %q", w, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d words stemmed differently", bad, len(words))
	}
}

// tokenizerTexts are texts that exercise the token classes of unicode61.
var tokenizerTexts = []string{
	"Hello, World! 123 foo_bar e-mail x@example.com C++ 3.14 -42",
	"École ÉCOLE naïve Straße ΣΊΣΥΦΟΣ Ωμέγα Кириллица 日本語のテキスト 한국어",
	"e\u0301te\u0301 \u0301lead combining ﬁnance ǅemal",
	"tabs\tand\nnewlines\r\nand\u00a0nbsp\u2003emsp",
	"emoji 😀 in😀word private \ue000use\ue001 fullwidth ＡＢＣ１２３",
	"digits ٣٤٥ ๑๒๓ Ⅻ ½ ² subscript₂",
	"apostrophes don't it’s o'clock",
	"",
	"    ",
	"a",
}

// TestTokenizeMatchesSQLite checks the Go tokenizer against SQLite's
// unicode61 with remove_diacritics 0. The index never depends on SQLite's
// tokenizer (see index.go), so this only shows that tokens are what
// unicode61 users expect. Go folds with unicode.ToLower, like store.Terms,
// where SQLite uses Unicode case folding: they differ on a few hundred
// rare characters (İ, ſ, µ, final sigma, Georgian, recent additions), and
// SQLite's tables predate recent letters.
func TestTokenizeMatchesSQLite(t *testing.T) {
	want := sqliteTokens(t, "unicode61 remove_diacritics 0", tokenizerTexts)
	for i, text := range tokenizerTexts {
		if got := goTokens(text, false); !slices.Equal(got, want[i]) {
			t.Errorf("tokens of %q:\n got %q\nwant %q", text, got, want[i])
		}
	}
}

// TestTokenOffsets checks the byte and rune positions tokenize reports.
func TestTokenOffsets(t *testing.T) {
	text := "ab, ÉCOLE 😀x日本"
	type tok struct {
		start, end, runeStart, runes int
		folded                       string
	}
	var got []tok
	tokenize(text, func(tk *token) bool {
		got = append(got, tok{tk.start, tk.end, tk.runeStart, tk.runes, string(tk.folded)})
		return true
	})
	want := []tok{
		{0, 2, 0, 2, "ab"},
		{4, 10, 4, 5, "école"},
		{15, 22, 11, 3, "x日本"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("tokens = %+v, want %+v", got, want)
	}
	for _, tk := range got {
		if n := utf8.RuneCountInString(text[:tk.start]); n != tk.runeStart {
			t.Errorf("token %q: runeStart %d, but %d runes precede it", tk.folded, tk.runeStart, n)
		}
	}
}

// FuzzTokenizeMatchesSQLite compares the Go tokenizer and stemmer with
// SQLite's on arbitrary valid UTF-8.
func FuzzTokenizeMatchesSQLite(f *testing.F) {
	for _, s := range tokenizerTexts {
		f.Add(s)
	}
	f.Add("generalizations relational hopping")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
			t.Skip("SQLite and Go decode invalid UTF-8 and NUL differently")
		}
		for _, r := range text {
			if r >= 0x250 || r == 0xB5 || r == 0x130 || r == 0x17F {
				t.Skip("folding differs beyond Latin (see TestTokenizeMatchesSQLite)")
			}
		}
		want := sqliteTokens(t, "porter unicode61 remove_diacritics 0", []string{text})[0]
		if got := goTokens(text, true); !slices.Equal(got, want) {
			t.Errorf("tokens of %q:\n got %q\nwant %q", text, got, want)
		}
	})
}

// TestIndexTerms checks that index terms are the distinct stems, in order.
func TestIndexTerms(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", ""},
		{"Running runs RUN ran", "run ran"},
		{"The parser parses; parsers parse.", "the parser pars"},
		{"x@example.com 2025-03-04", "x exampl com 2025 03 04"},
		{"École école ECOLE", "école ecol"},
	} {
		got := string((&termBuilder{}).indexTerms(nil, tc.text))
		if got != tc.want {
			t.Errorf("indexTerms(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	// Enough distinct words to make the dedup set grow several times.
	var words []string
	for i := range 1000 {
		words = append(words, fmt.Sprintf("w%d", i), fmt.Sprintf("w%d", i/2))
	}
	got := strings.Fields(string((&termBuilder{}).indexTerms(nil, strings.Join(words, " "))))
	if len(got) != 1000 {
		t.Errorf("indexTerms of 1000 distinct words in 2000 = %d terms", len(got))
	}
}

func TestSubstringFilter(t *testing.T) {
	for _, tc := range []struct{ term, want string }{
		{"c++", ""},
		{"e-mail", ""},
		{"x@example.com", `"exampl"`},
		{"2025-03-04", `"03"`},
		{"a-b-c-b-d", `"b" AND "c"`},
		{"-running-", `"run"`},
		{"%", ""},
	} {
		if got := substringFilter("", tc.term); got != tc.want {
			t.Errorf("substringFilter(%q) = %q, want %q", tc.term, got, tc.want)
		}
	}
}
