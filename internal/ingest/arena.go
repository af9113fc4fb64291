package ingest

import (
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// validString returns b as a string with invalid UTF-8 bytes replaced by
// U+FFFD (one per byte).
func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(jsonscan.AppendValidUTF8(make([]byte, 0, len(b)+len(b)/8), b))
}

// arena hands out byte slices for rewritten items from large shared blocks,
// so that a 100,000-item list costs a few dozen allocations rather than one
// per item. Slices already handed out stay valid when a new block starts.
type arena struct {
	buf []byte
}

const arenaBlock = 1 << 20

// add appends the compact form of v (see jsonscan.AppendCompact) and
// returns it as its own slice.
func (a *arena) add(v []byte, fixUTF8 bool) []byte {
	// Compaction only shrinks a value, except that each invalid UTF-8 byte
	// grows to three; append copes with that case by reallocating.
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, max(arenaBlock, len(v)))
	}
	start := len(a.buf)
	a.buf = jsonscan.AppendCompact(a.buf, v, fixUTF8)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// addRaw appends v unchanged and returns it as its own slice.
func (a *arena) addRaw(v []byte) []byte {
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, max(arenaBlock, len(v)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, v...)
	return a.buf[start:len(a.buf):len(a.buf)]
}
