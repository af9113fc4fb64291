package guard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// Report is what the guard did to one request. It rides in the response
// body as the "ctxkit" field (in a stream, in the final chunk) and, in
// short, in the X-Ctxkit-* headers.
type Report struct {
	Policy        Policy `json:"policy"`
	Backend       string `json:"backend"`
	Compacted     bool   `json:"compacted"`
	TokensBefore  int    `json:"tokens_before"`
	TokensAfter   int    `json:"tokens_after"`
	Window        int    `json:"window"`
	WindowSource  string `json:"window_source"`
	Budget        int    `json:"budget"`
	EvictedTokens int    `json:"evicted_tokens"`
	Strategy      string `json:"strategy"`
	// ExactCounts is set when TokensAfter is the backend's own count of
	// the prompt sent (llama.cpp's template and tokenizer); otherwise
	// counts are calibrated estimates.
	ExactCounts bool `json:"exact_counts"`
	// Messages is what happened to each original message that changed
	// (kept messages are left out).
	Messages []MessageReport `json:"messages,omitempty"`
	// Evicted are the removed spans and where to get them back.
	Evicted []SpanReport `json:"evicted,omitempty"`
	// WouldEvictTokens is, under the observe policy, what compaction would
	// have removed.
	WouldEvictTokens int `json:"would_evict_tokens,omitempty"`
	// Recovered reports a retry after an upstream context error.
	Recovered     bool   `json:"recovered_from_upstream_error,omitempty"`
	UpstreamError string `json:"upstream_error,omitempty"`
	// PromptEvalCount is the upstream's own count of the prompt, when
	// it reported one.
	PromptEvalCount int `json:"prompt_eval_count,omitempty"`
	// UpstreamTruncated is set when the upstream evaluated fewer tokens
	// than the window holds while the prompt sent was over it: it cut the
	// prompt silently.
	UpstreamTruncated bool `json:"upstream_truncated,omitempty"`
	// UpstreamCut is set when the upstream's answer ended early (a stream
	// without its last event, a body cut short): the client gets an error
	// with this report, never a cut answer that looks whole.
	UpstreamCut bool `json:"upstream_cut,omitempty"`
	// RecallRounds is how many context_recall rounds the guard answered
	// itself (Options.Recall); Recalled the ids the model asked for, one
	// per call, in order.
	RecallRounds int      `json:"recall_rounds,omitempty"`
	Recalled     []string `json:"recalled,omitempty"`
	// RecallLimitReached is set when the model still called
	// context_recall after the last allowed round (those calls were
	// removed from the answer).
	RecallLimitReached bool `json:"recall_limit_reached,omitempty"`
	// RecallCompactions counts the rounds whose request had to be
	// compacted again to fit.
	RecallCompactions int `json:"recall_compactions,omitempty"`
}

// MessageReport is the fate of one original message.
type MessageReport struct {
	Index        int    `json:"index"`
	Role         string `json:"role"`
	Action       string `json:"action"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
	StoreID      string `json:"store_id,omitempty"`
}

// SpanReport is one evicted run of messages.
type SpanReport struct {
	First    int    `json:"first"`
	Last     int    `json:"last"`
	Messages int    `json:"messages"`
	Tokens   int    `json:"tokens"`
	StoreID  string `json:"store_id,omitempty"`
	StoreErr string `json:"store_error,omitempty"`
	// Summarized is set when the span's notice carries a digest
	// (Options.Summarize); SummaryErr says why it does not.
	Summarized bool   `json:"summarized,omitempty"`
	SummaryErr string `json:"summary_error,omitempty"`
}

func (rep *Report) setHeaders(h http.Header) {
	h.Set("X-Ctxkit-Compacted", strconv.FormatBool(rep.Compacted))
	h.Set("X-Ctxkit-Evicted-Tokens", strconv.Itoa(rep.EvictedTokens))
	h.Set("X-Ctxkit-Budget", strconv.Itoa(rep.Budget))
}

// fill copies a compaction result into the report.
func (rep *Report) fill(conv compact.Conversation, res *compact.Result) {
	rep.Compacted = res.Compacted
	rep.TokensBefore, rep.TokensAfter, rep.EvictedTokens = res.TokensBefore, res.TokensAfter, res.EvictedTokens
	rep.Strategy = res.Strategy
	rep.Messages = rep.Messages[:0]
	for i, a := range res.Actions {
		if a.Fate == compact.Kept && !a.Marker {
			continue
		}
		act := a.Fate.String()
		if a.Marker {
			act += "+notice"
		}
		rep.Messages = append(rep.Messages, MessageReport{Index: i, Role: string(conv.Messages[i].Role), Action: act, TokensBefore: a.TokensBefore, TokensAfter: a.TokensAfter, StoreID: a.StoreID})
	}
	rep.Evicted = rep.Evicted[:0]
	for _, s := range res.Spans {
		rep.Evicted = append(rep.Evicted, SpanReport{First: s.First, Last: s.Last, Messages: s.Messages, Tokens: s.Tokens, StoreID: s.StoreID, StoreErr: s.StoreErr,
			Summarized: s.Summarized, SummaryErr: s.DigestErr})
	}
}

// inject adds the report to a JSON object as its "ctxkit" field; anything
// that is not an object is returned unchanged.
func (rep *Report) inject(obj []byte) []byte {
	data, err := json.Marshal(rep)
	if err != nil {
		return obj
	}
	return appendField(obj, "ctxkit", data)
}

// appendField adds "key": value at the end of the JSON object obj, leaving
// its bytes as they were; anything that is not an object is returned as
// it is.
func appendField(obj []byte, key string, value []byte) []byte {
	t := bytes.TrimRight(obj, " \t\r\n")
	if len(t) < 2 || t[len(t)-1] != '}' || bytes.TrimLeft(t, " \t\r\n")[0] != '{' {
		return obj
	}
	out := make([]byte, 0, len(obj)+len(key)+len(value)+16)
	out = append(out, t[:len(t)-1]...)
	if len(bytes.TrimSpace(t[:len(t)-1])) > 1 {
		out = append(out, ',')
	}
	out = strconv.AppendQuote(out, key)
	out = append(out, ':')
	out = append(out, value...)
	out = append(out, '}')
	return append(out, obj[len(t):]...)
}
