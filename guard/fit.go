package guard

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// templateOverhead is counted once per prompt (BOS, the generation prompt).
const templateOverhead = 8

// fit is one chat request on its way through the guard.
type fit struct {
	b       *backend
	d       dialect
	req     *chatRequest
	body    []byte
	model   string
	window  int
	reserve int
	rep     *Report
	cal     *calibration
	cnt     counter
	// rebuild, when set, builds the body instead of req.build (Anthropic,
	// whose messages do not map one to one).
	rebuild func(*compact.Result) ([]byte, error)
	// sent and chars are what the body sent upstream counts.
	sent, chars int
	// includeUsage: an OpenAI stream was asked for its usage chunk.
	includeUsage bool
}

func (g *Guard) budget(window, reserve int) int {
	if reserve > window/2 {
		reserve = window / 2
	}
	b := window - reserve - g.opts.Margin
	if b < window/4 {
		b = window / 4
	}
	return b
}

// apply runs the policy on the request and sets f.body to what goes
// upstream. It answers the client itself (413) and returns false when the
// request must not go upstream.
func (g *Guard) apply(ctx context.Context, w http.ResponseWriter, f *fit, original []byte) bool {
	f.cnt = f.cal.snapshot(g.base)
	f.rep.Budget = g.budget(f.window, f.reserve)
	f.rep.Window = f.window
	f.rep.Strategy = "none"
	f.body = original
	tokens, chars := countConversation(f.req.conv, f.cnt.c, templateOverhead)
	f.sent, f.chars = tokens, chars
	f.rep.TokensBefore, f.rep.TokensAfter = tokens, tokens
	switch f.rep.Policy {
	case PolicyStrict:
		if tokens > f.rep.Budget {
			g.stats.refused.Add(1)
			writeError(w, http.StatusRequestEntityTooLarge, "context_overflow",
				fmt.Sprintf("prompt is about %d tokens, budget is %d (window %d); refusing rather than truncating silently", tokens, f.rep.Budget, f.window),
				f.rep, "n_prompt_tokens", tokens, "budget", f.rep.Budget, "window", f.window)
			return false
		}
		return true
	case PolicyObserve:
		if tokens > f.rep.Budget {
			res, _ := compact.Compact(f.req.conv, compact.Budget{Limit: f.rep.Budget, Overhead: templateOverhead}, g.compactOptions(f, nil))
			if res != nil {
				f.rep.WouldEvictTokens = res.TokensBefore - res.TokensAfter
				f.rep.Strategy = "observe:" + res.Strategy
			}
		}
		return true
	}
	return g.compactInto(ctx, w, f)
}

func (g *Guard) compactOptions(f *fit, store func([]compact.Message) (string, error)) compact.Options {
	return compact.Options{KeepRecent: g.opts.KeepRecent, Counter: f.cnt.c, Cache: f.cnt.cache, Store: store, RecallHint: g.recallHint, Plans: g.plans}
}

// compactInto compacts f.req into f.rep.Budget (a no-op when it fits).
func (g *Guard) compactInto(ctx context.Context, w http.ResponseWriter, f *fit) bool {
	o := g.compactOptions(f, g.storeFunc(ctx))
	if g.sum != nil {
		sctx, cancel := context.WithTimeout(ctx, g.sum.timeout)
		defer cancel()
		o.Digest = g.digestFunc(sctx, f)
	}
	res, err := compact.Compact(f.req.conv, compact.Budget{Limit: f.rep.Budget, Overhead: templateOverhead}, o)
	var tl *compact.TooLargeError
	if errors.As(err, &tl) {
		if res != nil {
			f.rep.fill(f.req.conv, res)
		}
		g.stats.refused.Add(1)
		writeError(w, http.StatusRequestEntityTooLarge, "context_overflow_uncompactable",
			fmt.Sprintf("prompt still about %d tokens after compaction, budget is %d: the part that cannot be removed (system messages, tools, images) counts %d", tl.Need, tl.Limit, tl.Protected),
			f.rep, "n_prompt_tokens", tl.Need, "budget", tl.Limit, "protected_tokens", tl.Protected)
		return false
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "compaction_failed", err.Error(), f.rep)
		return false
	}
	f.rep.fill(f.req.conv, res)
	if !res.Compacted {
		return true
	}
	var body []byte
	if f.rebuild != nil {
		body, err = f.rebuild(res)
	} else {
		body, err = f.req.build(res, f.d)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "compaction_failed", err.Error(), f.rep)
		return false
	}
	f.body = body
	f.sent = res.TokensAfter
	f.chars = 0
	for _, m := range res.Messages {
		f.chars += len(m.Text)
	}
	g.compacted(f, res.EvictedTokens)
	g.log.Info("compacted", "backend", f.b.kind, "model", f.model, "before", res.TokensBefore, "after", res.TokensAfter,
		"budget", f.rep.Budget, "window", f.window, "evicted", res.EvictedTokens, "strategy", res.Strategy)
	return true
}

// maxBytesPerToken bounds the bytes one token holds on average over a
// whole prompt. The widest tokenizers measured average under 5 bytes a
// token on English and under 8 on long runs of repeated characters: a
// backend that counts fewer tokens than the text's bytes divided by this
// did not read the whole text.
const maxBytesPerToken = 12

// observed is the backend's own count of the prompt: it calibrates the
// estimate and, where the backend truncates silently, detects it.
func (g *Guard) observed(f *fit, promptTokens int, truncates bool) {
	if promptTokens <= 0 || f.rep.UpstreamTruncated {
		return
	}
	f.rep.PromptEvalCount = promptTokens
	if why := truncation(f, promptTokens); truncates && why != "" {
		f.rep.UpstreamTruncated = true
		g.stats.truncated.Add(1)
		g.log.Warn("upstream truncated the prompt silently", "backend", f.b.kind, "model", f.model, "sent", f.sent, "window", f.window, "prompt_eval_count", promptTokens, "sign", why)
		// The count is capped, not the prompt's: the prompt was over
		// the window, which is all it says. The calibration rises so
		// that the same prompt counts over the window next time.
		if f.sent <= f.window {
			f.cal.observe(f.cnt, max(f.chars, minSampleChars), f.sent, f.window+1)
		}
		return
	}
	f.cal.observe(f.cnt, f.chars, f.sent, promptTokens)
}

// truncation says why the backend's count shows that it cut the prompt,
// or "" when it does not:
//   - it evaluated the whole window (Ollama v0.17 cuts one message too
//     long to exactly num_ctx tokens, then goes on generating with context
//     shift: its done_reason says nothing);
//   - the prompt sent counts at least the window and the backend
//     evaluated less;
//   - it evaluated fewer tokens than the text sent can hold (Ollama drops
//     whole messages from the front, and says nothing), which holds even
//     when the guard's estimate is short.
func truncation(f *fit, promptTokens int) string {
	switch {
	case promptTokens >= f.window:
		return "evaluated the whole window"
	case f.sent >= f.window && promptTokens < f.window:
		return "evaluated less than the prompt sent"
	case promptTokens*maxBytesPerToken < f.chars:
		return "evaluated fewer tokens than the text can hold"
	}
	return ""
}
