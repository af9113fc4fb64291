package compact

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// rng is a small deterministic generator for test data.
type rng uint64

func (r *rng) intn(n int) int {
	*r = *r*6364136223846793005 + 1442695040888963407
	return int(uint64(*r>>33) % uint64(n))
}

var toolNames = []string{"read_file", "bash", "grep", "list_dir", "run_tests"}

// agentTurn returns one step of an agent loop: an assistant message with one
// or two tool calls and their results (big, some with repeated log lines),
// and now and then a plain exchange.
func agentTurn(r *rng, step int) []Message {
	if r.intn(8) == 0 {
		return []Message{asst(words(fmt.Sprintf("think%d", step), 60+r.intn(200))), user(words(fmt.Sprintf("nudge%d", step), 20+r.intn(40)))}
	}
	ncalls := 1 + r.intn(2)
	a := Message{Role: RoleAssistant, Text: words(fmt.Sprintf("plan%d", step), 20+r.intn(60))}
	var results []Message
	for j := 0; j < ncalls; j++ {
		id := fmt.Sprintf("call_%d_%d", step, j)
		name := toolNames[r.intn(len(toolNames))]
		a.ToolCalls = append(a.ToolCalls, ToolCall{ID: id, Name: name, Args: fmt.Sprintf(`{"path":"src/file%d.go","n":%d}`, step, j)})
		size := 150 + r.intn(1300)
		text := words(fmt.Sprintf("out%d_%d", step, j), size)
		if r.intn(5) == 0 {
			text += strings.Repeat("2026-11-30 ERROR upstream timeout, retrying\n", 20+r.intn(100))
		}
		results = append(results, Message{Role: RoleTool, ToolCallID: id, Name: name, Text: text})
	}
	return append([]Message{a}, results...)
}

// agentHistory is a realistic agent conversation of about n messages.
func agentHistory(n int, seed uint64) Conversation {
	r := rng(seed)
	c := Conversation{
		Messages: []Message{sys(words("system prompt", 1500)), user(words("the task", 300))},
		Tools: []Tool{
			{Name: "read_file", Description: "Read a file.", Schema: `{"type":"object","properties":{"path":{"type":"string"}}}`},
			{Name: "bash", Description: "Run a command.", Schema: `{"type":"object","properties":{"cmd":{"type":"string"}}}`},
		},
	}
	for step := 0; len(c.Messages) < n; step++ {
		c.Messages = append(c.Messages, agentTurn(&r, step)...)
	}
	return c
}

// TestPrefixStability runs a 30-turn agent loop through the guard's path
// (Plans, a shared Cache) and checks that the compacted prompt of each turn
// starts with the previous turn's prompt, byte for byte, except at the few
// turns that replan.
func TestPrefixStability(t *testing.T) {
	c := agentHistory(20, 42)
	r := rng(7)
	o := Options{Plans: NewPlans(0), Cache: NewCache(0), Store: func(ms []Message) (string, error) {
		return fmt.Sprintf("span-%d-%d", len(ms), len(ms[0].Text)), nil
	}}
	b := Budget{Limit: 20000, LowWater: 15000}
	var prev []Message
	replans, compacted := 0, 0
	for turn := 0; turn < 30; turn++ {
		c.Messages = append(c.Messages, agentTurn(&r, 100+turn)...)
		res, err := Compact(c, b, o)
		check(t, c, b, o, res, err)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if res.Compacted {
			compacted++
		}
		if res.Replanned {
			replans++
			same := 0
			for same < len(prev) && same < len(res.Messages) && reflect.DeepEqual(prev[same], res.Messages[same]) {
				same++
			}
			t.Logf("turn %2d replans: the first %d of %d messages unchanged", turn, same, len(prev))
		} else if prev != nil {
			if len(res.Messages) < len(prev) || !reflect.DeepEqual(res.Messages[:len(prev)], prev) {
				t.Fatalf("turn %d: not replanned but the prefix changed (%s)", turn, res.Strategy)
			}
		}
		// the same turn again (a retry) gives the same bytes
		again, _ := Compact(c, b, o)
		if !reflect.DeepEqual(again.Messages, res.Messages) {
			t.Fatalf("turn %d: a retry differs", turn)
		}
		prev = res.Messages
		t.Logf("turn %2d: %3d msgs, %6d -> %6d tokens, %-22s spans %d", turn, len(c.Messages), res.TokensBefore, res.TokensAfter, res.Strategy, len(res.Spans))
	}
	if compacted < 20 || replans == 0 || replans > 8 {
		t.Fatalf("%d compacted turns, %d replans", compacted, replans)
	}
	t.Logf("%d of 30 turns compacted, %d replans", compacted, replans)
}

// TestPreviousPlanReplays: passing the plan by hand does what Plans does.
func TestPreviousPlanReplays(t *testing.T) {
	c := agentHistory(60, 1)
	b := Budget{Limit: total(c) / 2}
	r1, err := Compact(c, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Messages = append(c.Messages, asst("next"), user("more"))
	r2, err := Compact(c, b, Options{Previous: r1.Plan})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Replanned || r2.Strategy != "replay" || !reflect.DeepEqual(r2.Messages[:len(r1.Messages)], r1.Messages) {
		t.Fatalf("replay: %s replanned=%v", r2.Strategy, r2.Replanned)
	}
	// a plan of another conversation is ignored
	other := agentHistory(60, 2)
	r3, err := Compact(other, b, Options{Previous: r1.Plan})
	check(t, other, b, Options{}, r3, err)
	if err != nil || !r3.Replanned {
		t.Fatalf("foreign plan: %v replanned=%v", err, r3.Replanned)
	}
}

// TestConcurrent shares a Cache and Plans between goroutines (run with
// -race).
func TestConcurrent(t *testing.T) {
	cache, plans := NewCache(0), NewPlans(4)
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func(g int) {
			c := agentHistory(40+g*10, uint64(g%2))
			b := Budget{Limit: total(c) / 2}
			var err error
			for turn := 0; turn < 5 && err == nil; turn++ {
				c.Messages = append(c.Messages, asst(fmt.Sprintf("turn %d", turn)), user("go on"))
				_, err = Compact(c, b, Options{Cache: cache, Plans: plans})
			}
			done <- err
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if plans.Len() > 4 {
		t.Fatalf("%d plans kept, max 4", plans.Len())
	}
}

// TestAlternationKept: when the input alternates user and assistant turns
// (tool results after their calls), so does every compacted output, as
// strict chat templates demand.
func TestAlternationKept(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		c := agentHistory(80, seed)
		if !alternates(c.Messages) {
			t.Fatalf("seed %d: input does not alternate", seed)
		}
		full := total(c)
		for _, share := range []int{90, 60, 30, 10} {
			b := Budget{Limit: full * share / 100}
			o := Options{KeepRecent: 1 + int(seed%5)}
			res, err := Compact(c, b, o)
			check(t, c, b, o, res, err)
			if err == nil && !alternates(res.Messages) {
				t.Fatalf("seed %d, %d%%: output does not alternate", seed, share)
			}
		}
	}
}

// alternates reports whether, after the system messages, user and
// assistant turns alternate and tool results directly follow a call or
// another result.
func alternates(ms []Message) bool {
	var last Role
	for _, m := range ms {
		switch m.Role {
		case RoleSystem:
			continue
		case RoleTool:
			if last != RoleTool && last != "call" {
				return false
			}
			last = RoleTool
			continue
		case RoleUser:
			if last == RoleUser || last == "call" {
				return false
			}
		case RoleAssistant:
			if last == RoleAssistant || last == "call" {
				return false
			}
		}
		last = m.Role
		if len(m.ToolCalls) > 0 {
			last = "call"
		}
	}
	return true
}

// TestPlansSharedTask: two conversations with the same system prompt and
// task, interleaved through one Plans, each replay their own plan.
func TestPlansSharedTask(t *testing.T) {
	a, b := agentHistory(60, 11), agentHistory(60, 11)
	b.Messages = append(b.Messages[:30:30], agentHistory(60, 12).Messages[2:30]...)
	budget := Budget{Limit: total(a) / 2}
	o := Options{Plans: NewPlans(0), Cache: NewCache(0)}
	prev := map[string][]Message{}
	for turn := 0; turn < 4; turn++ {
		for name, c := range map[string]*Conversation{"a": &a, "b": &b} {
			c.Messages = append(c.Messages, asst(fmt.Sprintf("%s %d", name, turn)), user("go on"))
			res, err := Compact(*c, budget, o)
			check(t, *c, budget, o, res, err)
			if err != nil {
				t.Fatal(err)
			}
			if turn > 0 && (res.Replanned || !reflect.DeepEqual(res.Messages[:len(prev[name])], prev[name])) {
				t.Fatalf("%s turn %d: %s, replanned %v", name, turn, res.Strategy, res.Replanned)
			}
			prev[name] = res.Messages
		}
	}
	if n := o.Plans.Len(); n != 8 {
		t.Fatalf("%d plans", n)
	}
	small := NewPlans(3)
	for i := 0; i < 5; i++ {
		small.put(&Plan{n: 1, chain: uint64(i)})
	}
	if small.Len() != 3 || small.find([]uint64{0, 4}) == nil || small.find([]uint64{0, 0}) != nil {
		t.Fatal("LRU")
	}
}

// TestReplayAfterRecount: the same conversation sent again after the count
// rose (a calibration), or into a smaller budget (the window shrank), is
// compacted again, not refused: a message the first plan shrank is shrunk
// further from its original. Issue 19, defect 1: the replayed plan's shrunk
// text was kept and shrink skipped it, so every retry failed with
// ErrTooLarge.
func TestReplayAfterRecount(t *testing.T) {
	giant := "HEAD-MARK " + words("giant", 6000) + " TAIL-MARK"
	single := conv(sys("s"), user(giant))
	multi := conv(sys("s"), user("task"), call("a_1"), result("a_1", words("old", 3000)), asst("a"), user(giant))
	scaled := func(s float64) Counter {
		return CounterFunc(func(t string) int { return int(float64(Estimate(t))*s + 0.999) })
	}
	for _, tc := range []struct {
		name       string
		c          Conversation
		first, two Budget
		counter2   Counter
	}{
		{"single message, count rose", single, Budget{Limit: 2000}, Budget{Limit: 2000}, scaled(1.3)},
		{"single message, window shrank", single, Budget{Limit: 2000}, Budget{Limit: 1000}, nil},
		{"several messages, count rose", multi, Budget{Limit: 2000}, Budget{Limit: 2000}, scaled(1.3)},
		{"several messages, window shrank", multi, Budget{Limit: 2000}, Budget{Limit: 1000}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plans := NewPlans(0)
			o := Options{Plans: plans, Store: func(ms []Message) (string, error) { return "ev", nil }}
			r1, err := Compact(tc.c, tc.first, o)
			check(t, tc.c, tc.first, o, r1, err)
			if err != nil {
				t.Fatal(err)
			}
			o2 := o
			if tc.counter2 != nil {
				o2.Counter = tc.counter2
			}
			r2, err := Compact(tc.c, tc.two, o2)
			check(t, tc.c, tc.two, o2, r2, err)
			if err != nil {
				t.Fatalf("second request refused: %v", err)
			}
			if got := recount(tc.c, r2.Messages, tc.two, o2); got > tc.two.Limit {
				t.Fatalf("second result counts %d, limit %d", got, tc.two.Limit)
			}
			last := r2.Messages[len(r2.Messages)-1].Text
			if !strings.HasPrefix(last, "HEAD") || !strings.HasSuffix(last, "TAIL-MARK") {
				t.Fatalf("the shrunk message lost its head or tail: %.80s … %.80s", last, last[len(last)-80:])
			}
			if strings.Count(last, "[ctxkit:") != 1 {
				t.Fatalf("the message carries %d notices, want 1", strings.Count(last, "[ctxkit:"))
			}
			// And once more: the plan of the second turn replays.
			r3, err := Compact(tc.c, tc.two, o2)
			if err != nil || r3.Strategy != "replay" {
				t.Fatalf("third request: strategy %q, err %v", r3.Strategy, err)
			}
		})
	}
}
