package realollama

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// AnswersFile, under testdata/, holds the real server's answers to fixed
// requests (TestAnswers sends them and checks the file; go test -update
// rewrites it), for the emulators (internal/llmemu) to be checked against
// without the server: Recorded reads it.
const AnswersFile = "ollama-v0.17.4.json"

//go:embed testdata/ollama-v0.17.4.json
var answers []byte

// Recorded returns the real server's recorded answers (AnswersFile).
func Recorded() (Answers, error) {
	var a Answers
	if err := json.Unmarshal(answers, &a); err != nil {
		return Answers{}, fmt.Errorf("realollama: %s: %w", AnswersFile, err)
	}
	return a, nil
}

// Answers is the file's content.
type Answers struct {
	Ollama string   `json:"ollama"`
	Model  string   `json:"model"`
	Notes  []string `json:"notes"`
	Cases  []Case   `json:"cases"`
}

// Case is one request and what the server answered.
type Case struct {
	Name    string `json:"name"`
	Request struct {
		Method string          `json:"method"`
		Path   string          `json:"path"`
		Body   json.RawMessage `json:"body,omitempty"`
	} `json:"request"`
	Answer Answer `json:"answer"`
}

// Answer is what is deterministic in an answer.
type Answer struct {
	Status int `json:"status"`
	// Error is the error string of a JSON error body.
	Error string `json:"error,omitempty"`
	// PromptEvalCount, DoneReason and EvalCount are those of the body or
	// of the stream's done chunk; PromptTokens is /v1's usage.prompt_tokens.
	PromptEvalCount int    `json:"prompt_eval_count,omitempty"`
	DoneReason      string `json:"done_reason,omitempty"`
	EvalCount       int    `json:"eval_count,omitempty"`
	PromptTokens    int    `json:"prompt_tokens,omitempty"`
	// TokensSent is the request's own count (package tokenizer on the
	// messages rendered with the model's template, or on the prompt or
	// input), for comparison with PromptEvalCount.
	TokensSent int `json:"tokens_sent,omitempty"`
	// KeptMessages are the indices of the messages Ollama evaluated, when
	// it dropped some (found by counting each candidate suffix).
	KeptMessages []int `json:"kept_messages,omitempty"`
	// Stream is the shape of a streamed answer: one entry a chunk
	// ("content", "done:<reason>", "finish:<reason>", "usage", "[DONE]"),
	// runs of content chunks as one "content*".
	Stream []string `json:"stream,omitempty"`
	// LoadedContextLength is /api/ps's context_length afterwards.
	LoadedContextLength int `json:"loaded_context_length,omitempty"`
	// ContextLength and Parameters are /api/show's
	// model_info["llama.context_length"] and parameters.
	ContextLength int    `json:"context_length,omitempty"`
	Parameters    string `json:"parameters,omitempty"`
	// Log holds the WARN and ERROR records the request caused (time left
	// out).
	Log []map[string]string `json:"log,omitempty"`
}

// SortedParameters returns /api/show's parameters, one "name value" a
// line, in sorted order: Ollama writes them in its map's order, which
// differs from one answer to the next.
func SortedParameters(params string) string {
	lines := strings.Split(strings.TrimSpace(params), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
