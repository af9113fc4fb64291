package guard

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
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
// a JSON object is returned unchanged; otherwise the switch is spliced into
// the body, which is kept byte for byte.
func noThink(body []byte, k kind, path string) []byte {
	var key string
	var val []byte
	switch {
	case k == kAnthropic || strings.HasPrefix(path, "/v1/messages"):
		return body
	case k == kOllama && strings.HasPrefix(path, "/api/"):
		key, val = "think", []byte("false")
	case k == kOllama:
		key, val = "reasoning_effort", []byte(`"none"`)
	default:
		key = "chat_template_kwargs"
	}
	fields, ok := jsonscan.ObjectSpans(body)
	if !ok {
		return body
	}
	var cur json.RawMessage
	if s, ok := fields[key]; ok {
		cur = body[s.Start:s.End]
	}
	switch {
	case key == "chat_template_kwargs" && !isNull(cur):
		kw, ok := jsonscan.ObjectSpans(cur)
		if !ok {
			return body
		}
		if _, ok := kw["enable_thinking"]; ok {
			return body
		}
		val = setMember(cur, kw, "enable_thinking", []byte("false"))
	case key == "chat_template_kwargs":
		val = []byte(`{"enable_thinking":false}`)
	case !isNull(cur):
		return body
	}
	return setMember(body, fields, key, val)
}

// setMember returns obj, one JSON object whose members fields locates,
// with key set to the JSON value v: its value replaced where it is (the
// last one, which decoders keep, when it is repeated), or the member added
// last; the rest of obj is kept byte for byte.
func setMember(obj []byte, fields map[string]jsonscan.Span, key string, v []byte) []byte {
	if s, ok := fields[key]; ok {
		out := make([]byte, 0, len(obj)-(s.End-s.Start)+len(v))
		out = append(out, obj[:s.Start]...)
		out = append(out, v...)
		return append(out, obj[s.End:]...)
	}
	end := bytes.LastIndexByte(obj, '}') // the object's closing brace
	lit := jsonscan.AppendQuote(nil, key)
	out := make([]byte, 0, len(obj)+len(lit)+len(v)+2)
	out = append(out, obj[:end]...)
	if len(fields) > 0 {
		out = append(out, ',')
	}
	out = append(out, lit...)
	out = append(out, ':')
	out = append(out, v...)
	return append(out, obj[end:]...)
}
