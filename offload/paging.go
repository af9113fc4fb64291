package offload

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/store"
)

// Text pages have a nominal length; each break moves back from its nominal
// offset to the best boundary within the last fifth of the page. Because the
// break depends only on the text just before the nominal offset, page k can
// be read from a bounded window without paging through the text before it,
// and consecutive pages always meet exactly.

// textPages is the number of pages of cpp chars in a text of chars chars.
func textPages(chars, cpp int64) int64 {
	return max((chars+cpp-1)/cpp, 1)
}

// pageStart returns the char offset where page k (0-based) begins.
func (e *Engine) pageStart(ctx context.Context, ws *store.Workspace, k, cpp int64) (int64, error) {
	nominal := k * cpp
	if k <= 0 {
		return 0, nil
	}
	if nominal >= ws.Chars {
		return ws.Chars, nil
	}
	window := cpp / 5
	from := nominal - window
	text, err := e.store.TextSlice(ctx, ws.ID, from, window)
	if err != nil {
		return 0, fmt.Errorf("read page break of %q: %w", ws.ID, err)
	}
	return from + int64(breakAt([]rune(text))), nil
}

// pageOf returns the page (1-based) holding the char at offset.
func (e *Engine) pageOf(ctx context.Context, ws *store.Workspace, offset, cpp int64) (int64, error) {
	k := offset / cpp // the page whose nominal range holds offset
	next, err := e.pageStart(ctx, ws, k+1, cpp)
	if err != nil {
		return 0, err
	}
	if offset >= next {
		return k + 2, nil
	}
	return k + 1, nil
}

// breakAt returns where in window a page should end: after the last blank
// line, else after the last newline, else after the last sentence end, else
// after the last space, else at the end of the window.
func breakAt(window []rune) int {
	last := func(match func(i int) bool) int {
		for i := len(window) - 1; i >= 0; i-- {
			if match(i) {
				return i + 1
			}
		}
		return -1
	}
	rules := []func(i int) bool{
		func(i int) bool { return window[i] == '\n' && i > 0 && window[i-1] == '\n' },
		func(i int) bool { return window[i] == '\n' },
		func(i int) bool {
			return i > 0 && (window[i] == ' ' || window[i] == '\t') && (window[i-1] == '.' || window[i-1] == '!' || window[i-1] == '?')
		},
		func(i int) bool { return window[i] == ' ' || window[i] == '\t' },
	}
	for _, rule := range rules {
		if at := last(rule); at > 0 {
			return at
		}
	}
	return len(window)
}
