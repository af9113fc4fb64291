package llmemu

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tinymodel"
)

var counterTexts = []string{
	"",
	"The quick brown fox jumps over the lazy dog.",
	"SECRET: ANANAS-7734",
	"func (s *Server) URL() string { return \"http://\" + s.host }\n\tfor i := 0; i < n; i++ {}\n",
	"2026-12-01T23:13:10.567Z level=WARN msg=\"truncating input prompt\" limit=2048 prompt=6026\n",
	"héllo wörld, naïve café; 世界 こんにちは 안녕하세요 Привет мир",
	"emoji 👍🏽 🎉 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, zero\u200bwidth",
	"  leading   spaces\n\n\n  \t tabs \r\n crlf   \n",
	"<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
	"a<|im_end|>b <|endoftext|> <|im_start|",
}

// TestTinyBPESplit: the pieces of the tiny model's vocabulary give the
// text back, one piece an id.
func TestTinyBPESplit(t *testing.T) {
	b := TinyBPE()
	for _, text := range counterTexts {
		pieces := b.Split(text)
		if got := strings.Join(pieces, ""); got != text {
			t.Errorf("%q: pieces join to %q", text, got)
		}
		if n := b.Count(text); n != len(pieces) || n != len(b.Encode(text)) {
			t.Errorf("%q: Count %d, %d pieces, %d ids", text, n, len(pieces), len(b.Encode(text)))
		}
	}
	// The control tokens are one token each.
	if got := b.Split(ImStart + "user\nhi" + ImEnd); got[0] != ImStart || got[len(got)-1] != ImEnd {
		t.Errorf("control tokens split: %q", got)
	}
}

// TestOllamaCountsNotByTheRule: the Ollama emulator's default counter is
// the tiny model's BPE, not the emulators' rule (which is the guard's
// default estimate): on these texts the two disagree.
func TestOllamaCountsNotByTheRule(t *testing.T) {
	c := NewOllama(OllamaOptions{}).Counter()
	differ := 0
	for _, text := range counterTexts[1:] {
		if c.Count(text) != CountTokens(text) {
			differ++
		}
	}
	if differ < len(counterTexts)-3 {
		t.Fatalf("the default counter agrees with the rule on %d of %d texts", len(counterTexts)-1-differ, len(counterTexts)-1)
	}
	if _, ok := c.(*BPE); !ok {
		t.Fatalf("default counter is %T", c)
	}
}

// TestBPEAdditive: a rendered chat counts as the sum of its parts (the
// tools block and generation prompt, and each message), which the
// emulator's message-level truncation relies on.
func TestBPEAdditive(t *testing.T) {
	b := TinyBPE()
	tools := []Tool{{Name: "read_file", Description: "Reads a file.", Parameters: []byte(`{"type":"object"}`)}}
	var msgs []Message
	for i, text := range counterTexts {
		role := []string{"system", "user", "assistant", "tool"}[i%4]
		msgs = append(msgs, Message{Role: role, Content: text})
	}
	msgs = append(msgs, Message{Role: "assistant", ToolCalls: []ToolCall{{Name: "read_file", Arguments: []byte(`{"path":"a b.go"}`)}}})
	for _, tl := range [][]Tool{nil, tools} {
		sum := b.Count(RenderChat(nil, tl))
		for _, m := range msgs {
			var sb strings.Builder
			renderMessage(&sb, m)
			sum += b.Count(sb.String())
		}
		if whole := b.Count(RenderChat(msgs, tl)); whole != sum {
			t.Errorf("tools %d: whole %d, parts %d", len(tl), whole, sum)
		}
	}
}

func TestNewBPERefuses(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":  `{`,
		"WordLevel": `{"model":{"type":"WordLevel","vocab":{"a":0,"[UNK]":1},"unk_token":"[UNK]"},"pre_tokenizer":{"type":"Whitespace"}}`,
		"SentencePiece-style vocabulary": `{"model":{"type":"BPE","vocab":{"▁a":0,"▁":1,"a":2},"merges":["▁ a"]},` +
			`"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}}`,
	} {
		if _, err := NewBPE([]byte(data)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewBPE(tinymodel.TokenizerJSON()); err != nil {
		t.Fatal(err)
	}
}
