package compact

import (
	"fmt"
	"strings"
	"testing"
)

// words returns a text of about n estimated tokens, distinct per seed.
func words(seed string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n*36/10; i++ {
		fmt.Fprintf(&b, "%s-%d ", seed, i)
	}
	return b.String()
}

func sys(t string) Message  { return Message{Role: RoleSystem, Text: t} }
func user(t string) Message { return Message{Role: RoleUser, Text: t} }
func asst(t string) Message { return Message{Role: RoleAssistant, Text: t} }
func call(ids ...string) Message {
	m := Message{Role: RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "tool_" + strings.SplitN(id, "_", 2)[0], Args: `{"q":"` + id + `"}`})
	}
	return m
}
func result(id string, text string) Message {
	return Message{Role: RoleTool, ToolCallID: id, Text: text}
}

// recount counts an output conversation independently.
func recount(conv Conversation, out []Message, b Budget, o Options) int {
	o = o.normalized()
	n := b.Overhead
	for _, t := range conv.Tools {
		n += o.Counter.Count(t.Name) + o.Counter.Count(t.Description) + o.Counter.Count(t.Schema) + o.MessageOverhead
	}
	for _, m := range out {
		n += o.Counter.Count(m.Text) + o.MessageOverhead + m.Images*o.ImageTokens
		for _, c := range m.ToolCalls {
			n += o.Counter.Count(c.Name) + o.Counter.Count(c.Args) + 3
		}
	}
	return n
}

// check verifies the invariants every result must hold.
func check(t testing.TB, conv Conversation, b Budget, o Options, res *Result, err error) {
	t.Helper()
	if res == nil {
		t.Fatalf("nil result (err %v)", err)
	}
	on := o.normalized()
	msgs := conv.Messages
	n := len(msgs)
	if len(res.Actions) != n {
		t.Fatalf("%d actions for %d messages", len(res.Actions), n)
	}
	if len(res.Source) != len(res.Messages) {
		t.Fatalf("%d sources for %d messages", len(res.Source), len(res.Messages))
	}
	// order preserved, markers are user messages
	last := -1
	kept := make([]bool, n)
	for k, src := range res.Source {
		if src < 0 {
			if res.Messages[k].Role != RoleUser {
				t.Fatalf("inserted notice %d has role %q", k, res.Messages[k].Role)
			}
			if k+1 < len(res.Messages) && res.Messages[k+1].Role == RoleTool {
				t.Fatalf("inserted notice %d stands before a tool result", k)
			}
			if k+1 < len(res.Messages) && res.Messages[k+1].Role == RoleUser || k > 0 && res.Messages[k-1].Role == RoleUser {
				t.Fatalf("inserted notice %d is next to a user message", k)
			}
			continue
		}
		if src <= last {
			t.Fatalf("output %d comes from %d after %d", k, src, last)
		}
		last = src
		kept[src] = true
		m, om := res.Messages[k], msgs[src]
		if m.Role != om.Role || m.ToolCallID != om.ToolCallID || len(m.ToolCalls) != len(om.ToolCalls) || m.Images != om.Images {
			t.Fatalf("output %d changed more than text", k)
		}
		if om.Role == RoleSystem && m.Text != om.Text {
			t.Fatalf("system message %d edited", src)
		}
	}
	task := -1
	for i, m := range msgs {
		if m.Role == RoleUser {
			task = i
			break
		}
	}
	for i, m := range msgs {
		evicted := res.Actions[i].Fate == Evicted
		if evicted == kept[i] {
			t.Fatalf("message %d: fate %v but kept=%v", i, res.Actions[i].Fate, kept[i])
		}
		if evicted && (m.Role == RoleSystem || i == task || i >= n-on.KeepRecent) {
			t.Fatalf("protected message %d (%s) evicted", i, m.Role)
		}
	}
	// no orphans created, by id: a call answered in the input (a result
	// with its id follows before the id is called again) is answered in the
	// output, and a result whose id was called in the input still is
	outMsgs := make([]Message, 0, len(res.Messages))
	outSrc := make([]int, 0, len(res.Messages))
	for k, src := range res.Source {
		if src >= 0 {
			outMsgs = append(outMsgs, res.Messages[k])
			outSrc = append(outSrc, src)
		}
	}
	inPos := make([]int, n)
	for i := range inPos {
		inPos[i] = -1
	}
	for k, src := range outSrc {
		inPos[src] = k
	}
	for k, src := range outSrc {
		m := outMsgs[k]
		for _, c := range m.ToolCalls {
			if c.ID != "" && answered(msgs, src, c.ID) && !answered(outMsgs, k, c.ID) {
				t.Fatalf("orphan call %q (message %d): its result was evicted", c.ID, src)
			}
		}
		if m.Role == RoleTool && m.ToolCallID != "" && called(msgs, m.ToolCallID) && !called(outMsgs, m.ToolCallID) {
			t.Fatalf("orphan result %q (message %d): its call was evicted", m.ToolCallID, src)
		}
	}
	// honest counts
	if got := recount(conv, res.Messages, b, o); got != res.TokensAfter {
		t.Fatalf("TokensAfter %d, recount %d", res.TokensAfter, got)
	}
	if err == nil && res.TokensAfter > b.Limit {
		t.Fatalf("no error but %d > limit %d", res.TokensAfter, b.Limit)
	}
	if err != nil && res.TokensAfter <= b.Limit {
		t.Fatalf("error %v but %d fits %d", err, res.TokensAfter, b.Limit)
	}
}

func answered(ms []Message, i int, id string) bool {
	for _, m := range ms[i+1:] {
		if m.Role == RoleTool && m.ToolCallID == id {
			return true
		}
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return false
			}
		}
	}
	return false
}

func called(ms []Message, id string) bool {
	for _, m := range ms {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return true
			}
		}
	}
	return false
}
