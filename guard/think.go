package guard

import (
	"encoding/json"
	"strings"
)

// noThink returns body with thinking turned off by the switch the backend
// reads on that path (llm-servers.md §5.3; the wrong one fails silently,
// an empty content with the text in thinking or reasoning_content):
//   - Ollama's /api/chat and /api/generate: "think": false;
//   - Ollama's /v1/*: "reasoning_effort": "none" (it ignores think there);
//   - llama.cpp and OpenAI-compatible servers (vLLM, SGLang, LM Studio):
//     "chat_template_kwargs": {"enable_thinking": false}, the variable their
//     chat templates read;
//   - Anthropic: unchanged (thinking is off unless the request asks).
//
// A switch the client set itself is left as it is, and a body that is not
// a JSON object is returned unchanged.
func noThink(body []byte, k kind, path string) []byte {
	var key string
	var val any
	switch {
	case k == kAnthropic || strings.HasPrefix(path, "/v1/messages"):
		return body
	case k == kOllama && strings.HasPrefix(path, "/api/"):
		key, val = "think", false
	case k == kOllama:
		key, val = "reasoning_effort", "none"
	default:
		key = "chat_template_kwargs"
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return body
	}
	if key == "chat_template_kwargs" {
		var kw map[string]json.RawMessage
		if raw, ok := top[key]; ok && !isNull(raw) {
			if json.Unmarshal(raw, &kw) != nil {
				return body
			}
		}
		if _, ok := kw["enable_thinking"]; ok {
			return body
		}
		if kw == nil {
			kw = map[string]json.RawMessage{}
		}
		kw["enable_thinking"] = json.RawMessage("false")
		val = kw
	} else if raw, ok := top[key]; ok && !isNull(raw) {
		return body
	}
	data, err := json.Marshal(val)
	if err != nil {
		return body
	}
	top[key] = data
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}
