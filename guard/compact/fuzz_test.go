package compact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fuzzConv builds a conversation from bytes: every message kind, ids from a
// small pool (so they repeat and cross), results without ids, orphans,
// dangling calls, images, and sizes from tiny to big.
func fuzzConv(data []byte) (Conversation, Budget, Options) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	b := Budget{Limit: 50 + next()*10, LowWater: next() * 10, Overhead: next() % 16}
	o := Options{KeepRecent: next()%7 - 1}
	if next()%2 == 0 {
		o.Store = func(ms []Message) (string, error) { return fmt.Sprintf("id-%d", len(ms)), nil }
	}
	if b.Overhead%3 == 1 { // a digest of a size set by the span, or an error
		o.Digest = func(ms []Message) (string, error) {
			if len(ms)%4 == 3 {
				return "", fmt.Errorf("no digest of %d messages", len(ms))
			}
			return words("digest", 10*len(ms)*len(ms)), nil
		}
	}
	var c Conversation
	for i := 0; len(data) > 0 && i < 64; i++ {
		kind, size := next()%8, next()
		text := words(fmt.Sprintf("m%d", i), size*size/64)
		if size%5 == 0 {
			text += strings.Repeat("the same log line again\n", size)
		}
		id := fmt.Sprintf("c%d", next()%6)
		switch kind {
		case 0:
			c.Messages = append(c.Messages, sys(text))
		case 1, 2:
			m := user(text)
			m.Images = size % 3 / 2
			c.Messages = append(c.Messages, m)
		case 3:
			c.Messages = append(c.Messages, asst(text))
		case 4:
			m := asst(text)
			for j := 0; j <= size%3; j++ {
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: fmt.Sprintf("c%d", (size+j)%6), Name: toolNames[j], Args: `{"x":1}`})
			}
			c.Messages = append(c.Messages, m)
		case 5:
			m := asst("")
			m.ToolCalls = []ToolCall{{Name: "ls"}} // no ids: results match by position
			c.Messages = append(c.Messages, m)
		case 6:
			c.Messages = append(c.Messages, result(id, text))
		case 7:
			c.Messages = append(c.Messages, Message{Role: RoleTool, Name: "ls", Text: text})
		}
	}
	return c, b, o
}

func FuzzCompact(f *testing.F) {
	f.Add([]byte{10, 0, 0, 1, 0, 1, 50, 4, 30, 2, 6, 200, 2, 6, 100, 3, 3, 10, 0, 1, 5, 1})
	f.Add([]byte{3, 30, 1, 1, 1, 1, 100, 0, 2, 250, 0, 4, 3, 1, 6, 90, 1, 6, 200, 2, 5, 0, 0, 7, 255, 0, 3, 1, 0, 1, 1, 0})
	f.Add([]byte{1, 0, 2, 0, 0, 255, 0, 1, 255, 0, 4, 1, 0, 6, 255, 1, 6, 255, 2, 4, 40, 0, 3, 9, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, b, o := fuzzConv(data)
		res, err := Compact(c, b, o)
		if err != nil && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("unexpected error %v", err)
		}
		check(t, c, b, o, res, err)
		if o.Digest != nil {
			// a digest never makes a compaction fail
			plain := o
			plain.Digest = nil
			if _, perr := Compact(c, b, plain); (perr == nil) != (err == nil) {
				t.Fatalf("with digests: %v; without: %v", err, perr)
			}
		}
		if err == nil && wellFormed(c.Messages) && !alternates(res.Messages) {
			t.Fatal("alternating input, output does not alternate")
		}
		if err != nil || res.Plan == nil {
			return
		}
		// the next turn replays or extends the plan, with the same guarantees
		c.Messages = append(c.Messages[:len(c.Messages):len(c.Messages)], asst(words("next", 30)), user("go on"))
		o.Previous = res.Plan
		res2, err := Compact(c, b, o)
		if err != nil && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("unexpected error %v", err)
		}
		check(t, c, b, o, res2, err)
	})
}

// wellFormed reports whether a conversation alternates and each result
// with an id answers a call of the assistant message its run follows.
func wellFormed(ms []Message) bool {
	if !alternates(ms) {
		return false
	}
	var calls []ToolCall
	for _, m := range ms {
		switch {
		case len(m.ToolCalls) > 0:
			calls = m.ToolCalls
		case m.Role == RoleTool && m.ToolCallID != "":
			found := false
			for _, c := range calls {
				found = found || c.ID == m.ToolCallID
			}
			if !found {
				return false
			}
		}
	}
	return true
}
