package ingest

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// Calibration of EstimateTokens (November 2026). The costs were fitted by
// weighted least squares (relative error, each sample weighted alike) to the
// mean of cl100k_base and o200k_base counts (js-tiktoken 1.0.21) over 16 KB
// chunks of these samples; "est" is EstimateTokens summed over the chunks.
//
//	sample                          chars  cl100k  o200k    est  est/mean  chars/4/mean
//	prose: Newton's Opticks        191358   47234  46804  43346    0.92      1.02
//	prose: GPL-3                    35149    7455   7446   7350    0.99      1.18
//	markdown: otel CHANGELOG       191233   50944  51758  53239    1.04      0.93
//	markdown: cobra docs            39172    9851   9849   9847    1.00      0.99
//	Go: net/http/server.go         131143   34491  34102  35088    1.02      0.96
//	Go: encoding/json/decode.go     36006   10254  10213  10441    1.02      0.88
//	JSON compact: go list std      192000   48053  49453  49553    1.02      0.98
//	JSON tab-indented: go list std 191722   64406  66838  63430    0.97      0.73
//	JSON Python-spaced: same       192000   55453  56073  57009    1.02      0.86
//	JSON compact: issue records    171838   48882  49681  51415    1.04      0.87
//	JSON indented: issue records   166557   52864  52864  54530    1.03      0.79
//	NDJSON: conformance cases      175691   69214  69168  63397    0.92      0.63
//	CSV: module zip hashes         191284  110170 108406 107095    0.98      0.44
//	TSV: package list              191076   62063  62376  61820    0.99      0.77
//	Chinese: package summaries      41274   26758  20594  23095    0.98      0.44
//	Japanese: package summaries      2221    1629   1230   1464    1.02      0.39
//	Russian: package summaries       3354    1375    976   1175    1.00      0.71
//
// Held out of the fit: Apache-2.0 0.98, runtime/proc.go 0.94, go env -json
// 0.94, a Markdown changelog 0.98, Chinese summaries 0.97, a TSV 1.00.

func TestEstimateTokensRules(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello", 1},                // one letter run: 0.9
		{"hello world", 2},          // two runs, the space joins the second: 1.8
		{"internationalization", 3}, // 20 letters = 3 parts of 8: 2.7
		{"1234567", 5},              // 3 groups of up to 3 digits: 4.35
		{`{"a":1}`, 6},              // symbol runs {" ": } (3), a (0.9), 1 (1.45): 5.35
		{"a\n\n    b", 3},           // 2 words (1.8) + one break-and-indent run (1.15)
		{"日本語", 3},                  // 3 wide characters: 2.79
		{"éé", 1},                   // 2 other non-ASCII characters: 0.8
	}
	for _, tt := range tests {
		if got := EstimateTokens([]byte(tt.in)); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestEstimateTokensAgainstTokenizers compares estimates with what
// cl100k_base and o200k_base counted for short texts outside the fitting
// corpus. Short inputs of one kind stray further than the corpus did: digit
// groups cost 1.45 on average, but in dates and decimals they are cheaper.
func TestEstimateTokensAgainstTokenizers(t *testing.T) {
	tests := []struct {
		in        string
		cl100k    int
		o200k     int
		tolerance float64
	}{
		{"The store keeps one row per item, so paging, search and mutations never load the whole list into memory at once.", 24, 24, 0.25},
		{`[{"id":1024,"login":"octocat","site_admin":false,"url":"https://api.github.com/users/octocat"},{"id":2048,"login":"hubot","site_admin":true,"url":"https://api.github.com/users/hubot"}]`, 58, 56, 0.25},
		{"id,name,amount,created_at\n1,alpha,12.50,2024-01-05T10:00:00Z\n2,beta,7.25,2024-01-06T11:30:00Z\n3,gamma,100.00,2024-01-07T09:15:00Z\n", 73, 74, 0.25},
		{"大型工具结果被存储为工作区，模型只看到简短的通知，然后可以分页、搜索和过滤。", 40, 25, 0.25},
		{"func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Println(i)\n\t}\n}\n", 26, 26, 0.25},
	}
	for _, tt := range tests {
		mean := float64(tt.cl100k+tt.o200k) / 2
		got := EstimateTokens([]byte(tt.in))
		if ratio := float64(got) / mean; math.Abs(ratio-1) > tt.tolerance {
			t.Errorf("EstimateTokens(%.30q…) = %d, tokenizers %d and %d (ratio %.2f)", tt.in, got, tt.cl100k, tt.o200k, ratio)
		}
	}
}

// TestEstimateTokensSampled checks that the windowed estimate of a large
// input stays close to counting all of it.
func TestEstimateTokensSampled(t *testing.T) {
	for _, data := range [][]byte{
		benchArray(t, 10_000, false),
		bytes.Repeat([]byte("Plain prose, with some words and numbers 12345.\n"), 60_000),
		[]byte(strings.Repeat("日本語のテキスト、", 200_000)),
	} {
		if len(data) <= 1<<20 {
			t.Fatalf("input of %d bytes is not sampled", len(data))
		}
		var c tokenCounts
		c.add(data)
		full, sampled := c.estimate(), EstimateTokens(data)
		if r := float64(sampled) / float64(full); math.Abs(r-1) > 0.02 {
			t.Errorf("sampled estimate %d, full count %d (ratio %.3f)", sampled, full, r)
		}
	}
}

func BenchmarkEstimateTokens(b *testing.B) {
	data := benchArray(b, 2_000, false) // under 1 MB: counted in full
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		EstimateTokens(data)
	}
}
