package guard

import "testing"

// contextErrorCases are upstreams' overflow errors as they send them (and
// a few that are not overflow errors), with the numbers to read from them.
var contextErrorCases = []struct {
	name          string
	body          string
	nPrompt, nCtx int
	ok            bool
}{
	{"llama.cpp", `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`, 5000, 4096, true},
	{"ollama native path", `{"error":"{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":9000,\"n_ctx\":8192}}"}`, 9000, 8192, true},
	{"ollama truncate false", `{"error":"the prompt is longer than the context length; consider increasing num_ctx"}`, 0, 0, true},
	{"ollama embed", `{"error":"the input length exceeds the context length"}`, 0, 0, true},
	{"ollama other", `{"error":"model \"x\" not found, try pulling it first"}`, 0, 0, false},
	{"openai", `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 130512, 128000, true},
	{"openai with completion", `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 4500 tokens (4000 in the messages, 500 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 4000, 4096, true},
	{"vllm", `{"error":{"message":"This model's maximum context length is 262144 tokens. However, you requested 0 output tokens and your prompt contains at least 262145 input tokens, for a total of at least 262145 tokens. Please reduce the length of the input prompt or the number of requested output tokens.","type":"BadRequestError","param":"input_tokens","code":400}}`, 262145, 262144, true},
	{"vllm legacy", `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, 112946, 32768, true},
	{"sglang", `{"object":"error","message":"Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens). Use a shorter input or enable --allow-auto-truncate.","type":"BadRequestError","param":null,"code":400}`, 160062, 59862, true},
	{"sglang in-band", `{"error":{"code":400,"message":"Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens). Use a shorter input or enable --allow-auto-truncate.","object":"error","param":null,"type":"BAD_REQUEST"}}`, 160062, 59862, true},
	{"anthropic", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, 210000, 200000, true},
	{"openai other", `{"error":{"message":"Invalid 'messages[2]': missing tool_call_id","type":"invalid_request_error","param":"messages","code":null}}`, 0, 0, false},
	{"not json", `upstream connect error`, 0, 0, false},
	{"null error", `{"error":null}`, 0, 0, false},
}

func TestContextError(t *testing.T) {
	for _, tc := range contextErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			nPrompt, nCtx, ok := contextError([]byte(tc.body))
			if nPrompt != tc.nPrompt || nCtx != tc.nCtx || ok != tc.ok {
				t.Errorf("contextError = %d, %d, %v; want %d, %d, %v", nPrompt, nCtx, ok, tc.nPrompt, tc.nCtx, tc.ok)
			}
		})
	}
}
