package llmemu_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/ctxkit/ctxkit/internal/llmemu"
)

// An overflowing chat sent to the Ollama emulator is truncated silently:
// 200 OK, the secret in the first user message is gone, and only
// prompt_eval_count tells.
func Example() {
	ollama := llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 2048})
	srv := httptest.NewServer(ollama)
	defer srv.Close()

	body := `{"model":"llama3.2","stream":false,"messages":[` +
		`{"role":"user","content":"SECRET: ANANAS-7734"},` +
		`{"role":"user","content":"` + strings.Repeat("filler ", 3000) + `"},` +
		`{"role":"user","content":"What is the secret?"}]}`
	resp, err := http.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)

	ev, _ := ollama.LastEval()
	fmt.Println(resp.StatusCode, ev.Reply.Text)
	fmt.Printf("kept %d of %d messages, %d of %d tokens\n", ev.KeptMessages, ev.SentMessages, ev.PromptTokens, ev.SentTokens)
	// Output:
	// 200 I don't know
	// kept 1 of 3 messages, 22 of 6046 tokens
}
