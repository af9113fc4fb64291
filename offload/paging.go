package offload

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/textsplit"
	"github.com/ctxkit/ctxkit/store"
)

// Text pages have a nominal length; each break moves back from its nominal
// offset to the best boundary within reach (textsplit.Break). Because the
// break depends only on the text just before the nominal offset, page k is
// read from two bounded windows without paging through the text before it,
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
	from := max(nominal-int64(textsplit.Reach(int(cpp))), 0)
	window, err := e.store.TextSlice(ctx, ws.ID, from, nominal-from)
	if err != nil {
		return 0, fmt.Errorf("read page break of %q: %w", ws.ID, err)
	}
	return from + int64(textsplit.Break(window, int(nominal-from))), nil
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
