package llmemu

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropicMessages serves Ollama's Anthropic compatibility, POST
// /v1/messages: the request is converted to a chat and goes through the
// same rendered path as /api/chat, so an over-long prompt is cut silently
// (whole messages from the front, then the token cut) and answered
// 200, with usage.input_tokens the tokens kept. Errors are Anthropic's
// envelope with an HTTP status (Ollama sends no in-band error events).
// Ollama has no /v1/messages/count_tokens.
func (s *Ollama) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if req.MaxTokens == nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	}
	model := s.resolve(req.Model)
	if model == "" {
		anthropicError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("model %q not found, try pulling it first", req.Model))
		return
	}
	msgs, tools, err := req.convert()
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	cut, run, ev := s.compatChat(r.URL.Path, req.Model, model, msgs, tools)
	if cut.status != 0 {
		ev.Status = cut.status
		s.addEval(ev)
		anthropicError(w, cut.status, "invalid_request_error", cut.errMsg)
		return
	}
	reply, finish := s.answer(cut, tools, run, *req.MaxTokens, true)
	ev.Status, ev.Reply = http.StatusOK, reply
	s.addEval(ev)
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	writeAnthropic(w, r, &s.Recorder, &req, reply, finish, replyTokensWith(s.counter, reply), cut.eval, s.ids.Add(1), s.opts.ChunkDelay)
}
