package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// EmbedTruncatedHeader lists, on an /api/embed answer, the inputs that
// were longer than the embedding model's window (comma-separated indices):
// Ollama cut their end and said nothing.
const EmbedTruncatedHeader = "X-Ctxkit-Embed-Truncated"

// EmbedReport is the ctxkit field of an /api/embed answer.
type EmbedReport struct {
	Policy Policy `json:"policy"`
	// Window is the embedding model's window, and WindowSource where it
	// comes from (0 and "" when Ollama did not say).
	Window       int    `json:"window"`
	WindowSource string `json:"window_source,omitempty"`
	// Tokens are each input's count, an estimate that errs high unless a
	// tokenizer is set.
	Tokens []int `json:"tokens"`
	// OverWindow are the inputs longer than Window, whose end Ollama cut.
	OverWindow []int `json:"inputs_over_window,omitempty"`
	// PromptEvalCount is Ollama's count of what it embedded.
	PromptEvalCount int `json:"prompt_eval_count,omitempty"`
}

// ollamaEmbed serves /api/embed. Ollama cuts the end of an input longer
// than the embedding model's window and says nothing (truncate defaults to
// true), so a document's embedding silently stands for its beginning only.
// The guard counts each input against the window (options.num_ctx, else the
// model's loaded context_length; for a model not loaded yet, read after
// Ollama loaded it to answer), and says which inputs were cut: the
// X-Ctxkit-Embed-Truncated header and a ctxkit field. Under strict, a
// request with an input over a known window is refused with 413 before it
// is sent. A request with truncate false (Ollama then refuses honestly)
// or that cannot be parsed goes through untouched.
func (g *Guard) ollamaEmbed(w http.ResponseWriter, r *http.Request, b *backend, body []byte) {
	var req struct {
		Model    string          `json:"model"`
		Input    json.RawMessage `json:"input"`
		Truncate *bool           `json:"truncate"`
		Options  ollamaOptions   `json:"options"`
	}
	var inputs []string
	if json.Unmarshal(body, &req) != nil || (req.Truncate != nil && !*req.Truncate) || !parseInputs(req.Input, &inputs) {
		b.proxy.ServeHTTP(w, withBody(r, body))
		return
	}
	o := req.Options
	rep := &EmbedReport{Policy: g.policy(r), Tokens: make([]int, len(inputs))}
	cnt := g.calibrationFor(b.kind, req.Model).snapshot(g.base)
	for i, in := range inputs {
		rep.Tokens[i] = cnt.c.Count(in)
	}
	rep.Window, rep.WindowSource = g.embedWindow(r.Context(), b, req.Model, o)
	rep.over()
	if rep.Policy == PolicyStrict && len(rep.OverWindow) > 0 {
		g.stats.refused.Add(1)
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{
			"error": map[string]any{"type": "context_overflow", "message": fmt.Sprintf("inputs %v are longer than the embedding model's window (%d tokens): Ollama would embed only their beginning; split them", rep.OverWindow, rep.Window),
				"inputs_over_window": rep.OverWindow, "window": rep.Window},
			"ctxkit": rep,
		})
		return
	}
	resp, err := g.send(r.Context(), r, b, body)
	if err != nil {
		g.writeUpstreamError(w, r, err, nil)
		return
	}
	defer resp.Body.Close()
	out, err := readLimited(resp.Body, maxUpstreamBody, "upstream body")
	if err != nil {
		writeError(w, http.StatusBadGateway, "upstream_failed", err.Error(), nil)
		return
	}
	if resp.StatusCode == http.StatusOK {
		rep.PromptEvalCount = jsonInt(out, "prompt_eval_count")
		if rep.Window == 0 {
			// The model is loaded now, for this request: /api/ps shows
			// its window, and the server's default.
			g.learnDefault(r.Context(), b, req.Model, sourceConfigured)
			rep.Window, rep.WindowSource = g.loadedWindow(r.Context(), b, req.Model)
			rep.over()
		}
		if len(rep.OverWindow) > 0 {
			g.stats.truncated.Add(1)
			g.log.Warn("ollama truncated embedding inputs", "model", req.Model, "inputs", rep.OverWindow, "window", rep.Window)
		}
		if data, err := json.Marshal(rep); err == nil {
			out = appendField(out, "ctxkit", data)
		}
	}
	h := w.Header()
	copyHeaders(h, resp.Header)
	if len(rep.OverWindow) > 0 {
		idx := make([]string, len(rep.OverWindow))
		for i, n := range rep.OverWindow {
			idx[i] = strconv.Itoa(n)
		}
		h.Set(EmbedTruncatedHeader, strings.Join(idx, ","))
	}
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// over sets OverWindow from Tokens and Window.
func (rep *EmbedReport) over() {
	rep.OverWindow = nil
	for i, n := range rep.Tokens {
		if rep.Window > 0 && n > rep.Window {
			rep.OverWindow = append(rep.OverWindow, i)
		}
	}
}

// embedWindow is an embedding model's window, resolved as a chat's
// (ollamaWindow), but for the guard's configured default, a chat model's
// guess, too often wrong for an embedding model (512 to 8,192) to judge
// its inputs by: 0 then, until the model's load shows its window.
func (g *Guard) embedWindow(ctx context.Context, b *backend, model string, o ollamaOptions) (int, string) {
	n, source := g.ollamaWindow(ctx, b, model, o)
	if source == sourceConfigured {
		return 0, ""
	}
	return n, source
}

// parseInputs reads /api/embed's input, a string or a list of strings.
func parseInputs(raw json.RawMessage, out *[]string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		*out = []string{one}
		return true
	}
	return json.Unmarshal(raw, out) == nil && len(*out) > 0
}
