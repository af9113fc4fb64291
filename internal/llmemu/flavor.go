package llmemu

import (
	"fmt"
	"net/http"
)

// Flavor is the OpenAI-compatible server an OpenAI emulator imitates: they
// share the chat wire format but refuse an over-long prompt each in its own
// words and envelope, which the guard must recognise.
type Flavor string

// The flavors.
const (
	// FlavorOpenAI: 400 {"error":{"message","type":"invalid_request_error",
	// "param":"messages","code":"context_length_exceeded"}}.
	FlavorOpenAI Flavor = ""
	// FlavorVLLM: 400 {"error":{"message","type":"BadRequestError",
	// "param":"input_tokens","code":400}} from _token_len_check ("...your
	// prompt contains at least N input tokens...").
	FlavorVLLM Flavor = "vllm"
	// FlavorVLLMLegacy: older vLLM, 400 {"object":"error","message",
	// "type":"BadRequestError","param":null,"code":400} ("...you requested
	// T tokens (P in the messages, C in the completion)...").
	FlavorVLLMLegacy Flavor = "vllm-legacy"
	// FlavorSGLang: 400 {"object":"error",...} from validate_input_length
	// ("Input length (N tokens) exceeds the maximum allowed length (M
	// tokens)..."); a streaming request gets 200 and the error as its
	// first SSE event.
	FlavorSGLang Flavor = "sglang"
)

// overflow answers an over-long prompt of n tokens (plus out requested
// output tokens) for a window of max, as the flavor does; stream says the
// client asked for SSE.
func (f Flavor) overflow(w http.ResponseWriter, max, n, out int, stream bool) {
	switch f {
	case FlavorVLLM:
		msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens.", max, out, n, n+out)
		writeJSON(w, http.StatusBadRequest, "application/json", map[string]any{
			"error": map[string]any{"message": msg, "type": "BadRequestError", "param": "input_tokens", "code": 400},
		})
	case FlavorVLLMLegacy:
		msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", max, n+out, n, out)
		writeJSON(w, http.StatusBadRequest, "application/json", map[string]any{
			"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": 400,
		})
	case FlavorSGLang:
		limit := max - 1 // the emulator admits window − 1 input tokens
		msg := fmt.Sprintf("Input length (%d tokens) exceeds the maximum allowed length (%d tokens). Use a shorter input or enable --allow-auto-truncate.", n, limit)
		if stream {
			data, _ := marshal(map[string]any{"error": map[string]any{"code": 400, "message": msg, "object": "error", "param": nil, "type": "BAD_REQUEST"}})
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("data: " + string(data) + "\n\n"))
			return
		}
		writeJSON(w, http.StatusBadRequest, "application/json", map[string]any{
			"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": 400,
		})
	default:
		msg := ContextLengthExceeded(max, n)
		if n <= max {
			msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", max, n+out, n, out)
		}
		openaiError(w, http.StatusBadRequest, msg, "invalid_request_error", strp("messages"), strp("context_length_exceeded"))
	}
}
