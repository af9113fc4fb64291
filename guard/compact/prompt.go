package compact

import "fmt"

// PromptResult is a compacted raw prompt and its report.
type PromptResult struct {
	Prompt        string
	Compacted     bool
	TokensBefore  int
	TokensAfter   int
	EvictedTokens int
	Limit         int
	// StoreID is where the whole original prompt is stored ("" if not).
	StoreID  string
	StoreErr string
	Strategy string // "none" or "middle-out"
}

// CompactPrompt fits a raw prompt (/api/generate, /v1/completions) into
// Limit minus Overhead: the head (two fifths of what is kept) and the tail
// (three fifths) stay, and a notice replaces the middle, naming the id under
// which Options.Store kept the whole prompt. Only Counter, Cache, Store and
// RecallHint of opts are used.
func CompactPrompt(prompt string, b Budget, opts Options) (*PromptResult, error) {
	if b.Limit <= 0 {
		return nil, fmt.Errorf("compact: budget limit %d: must be positive", b.Limit)
	}
	o := opts.normalized()
	k := &counting{c: o.Counter, cache: o.Cache, local: map[uint64]int32{}}
	have, _ := k.text(prompt)
	res := &PromptResult{Prompt: prompt, TokensBefore: have + b.Overhead, TokensAfter: have + b.Overhead, Limit: b.Limit, Strategy: "none"}
	if have+b.Overhead <= b.Limit {
		return res, nil
	}
	e := &engine{o: o, k: k}
	id, storeErr := e.store([]Message{{Role: RoleUser, Text: prompt}})
	target := b.Limit - b.Overhead
	notice := func(removed int) string { return e.shrinkNotice("prompt", removed, id) }
	out, removed := middleOut(k, prompt, have, target, notice)
	after, _ := k.text(out)
	res.Prompt, res.Compacted, res.TokensAfter = out, true, after+b.Overhead
	res.EvictedTokens, res.StoreID, res.StoreErr, res.Strategy = removed, id, storeErr, "middle-out"
	if res.TokensAfter > b.Limit {
		return res, &TooLargeError{Need: res.TokensAfter, Limit: b.Limit, Protected: b.Overhead}
	}
	return res, nil
}
