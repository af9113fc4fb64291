package tinymodel_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/realollama"
	"github.com/ctxkit/ctxkit/internal/tinymodel"
	"github.com/ctxkit/ctxkit/tokenizer"
)

// TestCountsMatchRealOllama: package tokenizer, reading TokenizerJSON,
// counts every text as the real Ollama counts the GGUF file (llama.cpp's
// tokenizer): prompt_eval_count of a raw /api/generate is the prompt's
// token count (no BOS is added), and of /api/embed the input's.
func TestCountsMatchRealOllama(t *testing.T) {
	s := realollama.Start(t, realollama.Options{})
	tk, err := tokenizer.Parse(tinymodel.TokenizerJSON())
	if err != nil {
		t.Fatal(err)
	}
	heldout, err := os.ReadFile(filepath.Join("testdata", "heldout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"The quick brown fox jumps over the lazy dog.",
		string(heldout),
		"func (s *Server) URL() string { return \"http://\" + s.host }\n\n\tfor i := 0; i < n; i++ {\n\t\tx[i] = y[i]*2 + 1\n\t}\n",
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"options":{"num_ctx":2048}}`,
		"2026-12-01T23:13:10.567Z level=WARN source=runner.go:153 msg=\"truncating input prompt\" limit=2048 prompt=6026\n",
		"héllo wörld, naïve café; 世界 こんにちは 안녕하세요 Привет мир ١٢٣ 12345 3.14159",
		"don't I'll we've they're she's it'd you'RE DON'T",
		"  leading   spaces\n\n\n  \t tabs \r\n crlf   \n",
		"emoji 👍🏽 🎉 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, zero\u200bwidth, nbsp\u00a0here",
		"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
		"a<|im_end|>b <|endoftext|> <|im_start|",
	}
	for i, text := range texts {
		var gen struct {
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		code := realollama.PostJSON(t, s.URL()+"/api/generate", map[string]any{
			"model": realollama.DefaultModel, "prompt": text, "raw": true, "stream": false,
			"options": map[string]any{"num_predict": 1},
		}, &gen)
		if code != http.StatusOK {
			t.Fatalf("text %d: /api/generate %d", i, code)
		}
		if want := tk.Count(text); gen.PromptEvalCount != want {
			t.Errorf("text %d %q: Ollama counts %d tokens, package tokenizer %d", i, short(text), gen.PromptEvalCount, want)
		}
	}

	// /api/embed counts the same way.
	var emb struct {
		PromptEvalCount int `json:"prompt_eval_count"`
	}
	in := texts[0] + " " + texts[2]
	if code := realollama.PostJSON(t, s.URL()+"/api/embed", map[string]any{"model": realollama.DefaultModel, "input": in}, &emb); code != http.StatusOK {
		t.Fatalf("/api/embed %d", code)
	}
	if want := tk.Count(in); emb.PromptEvalCount != want {
		t.Errorf("/api/embed counts %d tokens, package tokenizer %d", emb.PromptEvalCount, want)
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
