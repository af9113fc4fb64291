package compact

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func conv(ms ...Message) Conversation { return Conversation{Messages: ms} }

func total(c Conversation) int {
	r, _ := Compact(c, Budget{Limit: 1 << 30}, Options{})
	return r.TokensBefore
}

func TestFitsUnchanged(t *testing.T) {
	c := conv(sys("be brief"), user("hello"), asst("hi"))
	res, err := Compact(c, Budget{Limit: 1000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compacted || res.Strategy != "none" || res.Plan != nil || !reflect.DeepEqual(res.Messages, c.Messages) {
		t.Fatalf("changed a conversation that fits: %+v", res)
	}
	check(t, c, Budget{Limit: 1000}, Options{}, res, err)
}

func TestBadBudget(t *testing.T) {
	if _, err := Compact(conv(user("x")), Budget{}, Options{}); err == nil {
		t.Fatal("zero limit accepted")
	}
}

func TestProtectedNeverDeleted(t *testing.T) {
	c := conv(
		sys(words("sys", 200)),
		user(words("task", 300)),
		asst(words("a1", 500)),
		user(words("u2", 500)),
		asst(words("a2", 500)),
		sys(words("midsys", 50)),
		user(words("u3", 500)),
		asst(words("a3", 100)),
		user(words("u4", 100)),
		asst(words("a4", 100)),
		user(words("u5", 100)),
	)
	b := Budget{Limit: total(c) - 1000}
	res, err := Compact(c, b, Options{})
	check(t, c, b, Options{}, res, err)
	if err != nil {
		t.Fatal(err)
	}
	// u3 goes too: keeping it would leave two user turns adjacent (the task
	// and u3, around a system message that templates hoist)
	for i, want := range []Fate{Kept, Kept, Evicted, Evicted, Evicted, Kept, Evicted, Kept, Kept, Kept, Kept} {
		if res.Actions[i].Fate != want {
			t.Errorf("message %d: %v, want %v", i, res.Actions[i].Fate, want)
		}
	}
}

// TestToolUnits evicts in every shape of calls and results: nothing is left
// orphaned and the unit goes whole.
func TestToolUnits(t *testing.T) {
	big := func(s string) string { return words(s, 800) }
	tail := []Message{user(words("u", 10)), asst(words("a", 10)), user(words("u2", 10)), asst(words("a2", 10))}
	cases := []struct {
		name  string
		mid   []Message
		units [][]int // indices into mid that must share a fate
	}{
		{"parallel calls", []Message{call("a_1", "b_2", "c_3"), result("a_1", big("r1")), result("b_2", big("r2")), result("c_3", big("r3"))}, [][]int{{0, 1, 2, 3}}},
		{"results out of order", []Message{call("a_1", "b_2"), result("b_2", big("r2")), result("a_1", big("r1"))}, [][]int{{0, 1, 2}}},
		{"interleaved calls", []Message{call("a_1"), call("b_2"), result("b_2", big("r2")), result("a_1", big("r1"))}, [][]int{{0, 3}, {1, 2}}},
		{"interleaved results", []Message{call("a_1", "b_2"), result("a_1", big("r1")), call("c_3"), result("b_2", big("r2")), result("c_3", big("r3"))}, [][]int{{0, 1, 3}, {2, 4}}},
		{"result before its call", []Message{result("a_1", big("r1")), asst("x"), call("a_1")}, [][]int{{0, 2}}},
		{"dangling call", []Message{call("a_1"), asst(big("talk")), call("b_2"), result("b_2", big("r2"))}, [][]int{{0}, {2, 3}}},
		{"orphan result in input", []Message{asst("x"), result("zz_9", big("r"))}, nil},
		{"reused ids", []Message{call("c_0"), result("c_0", big("r1")), call("c_0"), result("c_0", big("r2"))}, [][]int{{0, 1}, {2, 3}}},
		{"positional results (no ids)", []Message{
			{Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "ls"}, {Name: "cat"}}},
			{Role: RoleTool, Name: "ls", Text: big("ls")},
			{Role: RoleTool, Name: "cat", Text: big("cat")},
		}, [][]int{{0, 1, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms := []Message{sys("s"), user("task")}
			ms = append(ms, tc.mid...)
			ms = append(ms, tail...)
			c := conv(ms...)
			for limit := total(c) - 100; limit > 300; limit -= 400 {
				b := Budget{Limit: limit}
				res, err := Compact(c, b, Options{})
				check(t, c, b, Options{}, res, err)
				for _, u := range tc.units {
					f := res.Actions[2+u[0]].Fate == Evicted
					for _, i := range u[1:] {
						if (res.Actions[2+i].Fate == Evicted) != f {
							t.Fatalf("limit %d: unit %v split: %v", limit, u, res.Actions)
						}
					}
				}
			}
		})
	}
}

// TestRecentUnitProtected: a result in the recent window protects its call,
// however old.
func TestRecentUnitProtected(t *testing.T) {
	c := conv(sys("s"), user("task"), asst(words("x", 2000)), call("a_1"), asst("x"), user("u"), asst("a"), user("u2"), result("a_1", "late result"))
	b := Budget{Limit: 300}
	res, err := Compact(c, b, Options{})
	check(t, c, b, Options{}, res, err)
	if res.Actions[3].Fate == Evicted {
		t.Fatal("the call of a protected result was evicted")
	}
	if res.Actions[2].Fate != Evicted {
		t.Fatalf("big message not evicted: %v", res.Actions[2])
	}
}

func TestCollapseFirst(t *testing.T) {
	var log strings.Builder
	for i := 0; i < 500; i++ {
		log.WriteString("WARN connection refused, retrying in 1s\n")
		if i%100 == 0 {
			fmt.Fprintf(&log, "INFO attempt %d\n", i)
		}
	}
	c := conv(sys("s"), user("task"), call("a_1"), result("a_1", log.String()), asst("done"), user("next"), asst("ok"), user("and"))
	b := Budget{Limit: total(c) / 4}
	res, err := Compact(c, b, Options{})
	check(t, c, b, Options{}, res, err)
	if err != nil {
		t.Fatal(err)
	}
	if res.Strategy != "collapse" || res.Actions[3].Fate != Collapsed {
		t.Fatalf("strategy %q, fate %v", res.Strategy, res.Actions[3].Fate)
	}
	got := res.Messages[3].Text
	if !strings.Contains(got, "WARN connection refused, retrying in 1s  [repeated 500 times]") || !strings.Contains(got, "INFO attempt 400") {
		t.Fatalf("collapsed text:\n%s", got)
	}
}

func TestCollapseLeavesShortLines(t *testing.T) {
	text := strings.Repeat("{\n  }\n", 100)
	if _, ok := collapseRepeats(text, 3, nil); ok {
		t.Fatal("collapsed short lines")
	}
}

// TestEvictionOrder: tool units before chat, biggest first.
func TestEvictionOrder(t *testing.T) {
	c := conv(
		sys("s"), user("task"),
		asst(words("chat-big", 3000)),                   // 2: chat goes last
		call("a_1"), result("a_1", words("small", 500)), // 3,4
		call("b_2"), result("b_2", words("large", 1500)), // 5,6
		user("u"), asst("a"), user("u2"), asst("a2"),
	)
	tot := total(c)
	b := Budget{Limit: tot - 200, LowWater: tot - 1000}
	res, err := Compact(c, b, Options{})
	check(t, c, b, Options{}, res, err)
	if err != nil {
		t.Fatal(err)
	}
	got := []Fate{res.Actions[2].Fate, res.Actions[4].Fate, res.Actions[6].Fate}
	if want := []Fate{Kept, Kept, Evicted}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fates %v, want %v", got, want)
	}
	// a little more: the small tool unit goes before the chat message
	b = Budget{Limit: tot - 1700, LowWater: tot - 1900}
	res, err = Compact(c, b, Options{})
	check(t, c, b, Options{}, res, err)
	got = []Fate{res.Actions[2].Fate, res.Actions[4].Fate, res.Actions[6].Fate}
	if want := []Fate{Kept, Evicted, Evicted}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fates %v, want %v", got, want)
	}
}

// TestShrinkDeadlock: one giant message in the protected window is shrunk
// middle-out and the prompt fits.
func TestShrinkDeadlock(t *testing.T) {
	giant := "HEAD-MARK " + words("giant", 20000) + " TAIL-MARK"
	c := conv(sys("s"), user("task"), call("a_1"), result("a_1", giant), asst("a"), user("u"))
	var stored [][]Message
	o := Options{Store: func(ms []Message) (string, error) {
		stored = append(stored, ms)
		return fmt.Sprintf("ev%d", len(stored)), nil
	}}
	b := Budget{Limit: 2000}
	res, err := Compact(c, b, o)
	check(t, c, b, o, res, err)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Actions[3]
	if a.Fate != Shrunk || a.StoreID == "" {
		t.Fatalf("action %+v", a)
	}
	got := res.Messages[res.indexOf(3)].Text
	if !strings.HasPrefix(got, "HEAD-MARK") || !strings.HasSuffix(got, "TAIL-MARK") || !strings.Contains(got, `stored as "`+a.StoreID+`"`) {
		t.Fatalf("shrunk text: %.200s … %.200s", got, got[len(got)-200:])
	}
	if len(stored) != 1 || stored[0][0].Text != giant {
		t.Fatal("the whole original was not stored")
	}
	if !strings.Contains(res.Strategy, "shrink") {
		t.Fatalf("strategy %q", res.Strategy)
	}
	// The tokens shrinking removed are reported, as its notice says
	// (issue 19: they were reported as 0 evicted).
	var said int
	if _, err := fmt.Sscanf(got[strings.Index(got, "[ctxkit: "):], "[ctxkit: %d tokens were removed", &said); err != nil {
		t.Fatal(err)
	}
	if said < 10000 || res.EvictedTokens != said {
		t.Fatalf("evicted tokens %d, the notice says %d removed", res.EvictedTokens, said)
	}
}

func (r *Result) indexOf(src int) int {
	for k, s := range r.Source {
		if s == src {
			return k
		}
	}
	return -1
}

func TestTooLarge(t *testing.T) {
	c := conv(sys(words("sys", 5000)), user("task"), asst("a"))
	b := Budget{Limit: 1000}
	res, err := Compact(c, b, Options{})
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) {
		t.Fatalf("err %v", err)
	}
	if tl.Limit != 1000 || tl.Protected < 5000 || res == nil || res.Plan != nil {
		t.Fatalf("error %+v, result %+v", tl, res)
	}
	check(t, c, b, Options{}, res, err)
}

func TestNoticePlacement(t *testing.T) {
	big := words("big", 1000)
	tail := []Message{asst("t1"), user("t2"), asst("t3"), user("t4")}
	cases := []struct {
		name string
		ms   []Message
		tail []Message
		keep int
		want Placement
		at   Role // role of the message the notice is in
	}{
		{"between assistants", []Message{user("task"), asst("a"), user(big), asst("b"), user("c")}, tail, 0, Inserted, RoleUser},
		{"assistant before, user after", []Message{user("task"), asst("a"), asst(big), user("c")}, tail, 0, Prepended, RoleUser},
		{"user before, assistant after", []Message{user("task"), asst(big), asst("b")}, tail, 0, Appended, RoleUser},
		{"inside a call's results", []Message{user("task"), call("x_1", "y_2"), result("x_1", "r"), user(big), result("y_2", "r2")}, tail[:2], 3, Prepended, RoleTool},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := conv(append(append([]Message{sys("s")}, tc.ms...), tc.tail...)...)
			b := Budget{Limit: total(c) - 500}
			o := Options{KeepRecent: tc.keep}
			res, err := Compact(c, b, o)
			check(t, c, b, o, res, err)
			if err != nil || len(res.Spans) != 1 {
				t.Fatalf("err %v, spans %+v", err, res.Spans)
			}
			sp := res.Spans[0]
			if sp.Placement != tc.want || res.Messages[sp.At].Role != tc.at || !strings.Contains(res.Messages[sp.At].Text, sp.Notice) {
				t.Fatalf("placement %v at %d (%s), want %v", sp.Placement, sp.At, res.Messages[sp.At].Role, tc.want)
			}
		})
	}
}

func TestNoticeContent(t *testing.T) {
	c := conv(sys("s"), user("task"),
		call("a_1", "b_2"), result("a_1", words("r1", 800)), result("b_2", words("r2", 800)),
		call("a_3"), result("a_3", words("r3", 800)),
		asst("a"), user("u"), asst("a2"), user("u2"))
	var got []Message
	o := Options{Store: func(ms []Message) (string, error) { got = ms; return "span-1", nil }}
	b := Budget{Limit: 400}
	res, err := Compact(c, b, o)
	check(t, c, b, o, res, err)
	if err != nil || len(res.Spans) != 1 {
		t.Fatalf("err %v spans %+v", err, res.Spans)
	}
	sp := res.Spans[0]
	want := fmt.Sprintf(`[ctxkit: 5 earlier messages (%d tokens) were removed here to fit the context window, including 3 tool calls and their output (tool_a ×2, tool_b ×1). They are stored as "span-1": call the context_recall tool with {"id": "span-1"} to read the original.]`, sp.Tokens)
	if sp.Notice != want {
		t.Fatalf("notice\n%s\nwant\n%s", sp.Notice, want)
	}
	if !reflect.DeepEqual(got, c.Messages[2:7]) {
		t.Fatal("store did not get the original span")
	}
	if res.EvictedTokens != sp.Tokens || sp.Tokens != res.TokensBefore-recount(c, append(c.Messages[:2:2], c.Messages[7:]...), b, o) {
		t.Fatalf("evicted %d, span %d", res.EvictedTokens, sp.Tokens)
	}
	// a failing store: the notice says so
	o.Store = func([]Message) (string, error) { return "", errors.New("disk full") }
	res, err = Compact(c, b, o)
	if err != nil || res.Spans[0].StoreErr != "disk full" || !strings.Contains(res.Spans[0].Notice, "were not kept") {
		t.Fatalf("err %v span %+v", err, res.Spans[0])
	}
}

func TestDeterministic(t *testing.T) {
	c := agentHistory(120, 7)
	b := Budget{Limit: total(c) / 3}
	r1, err1 := Compact(c, b, Options{})
	r2, err2 := Compact(c, b, Options{Cache: NewCache(0)})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !reflect.DeepEqual(r1.Messages, r2.Messages) || !reflect.DeepEqual(r1.Actions, r2.Actions) {
		t.Fatal("two runs differ")
	}
	check(t, c, b, Options{}, r1, err1)
}

func TestCacheCountsOnlyNewTexts(t *testing.T) {
	c := agentHistory(100, 3)
	cache := NewCache(0)
	b := Budget{Limit: total(c) / 2}
	r1, err := Compact(c, b, Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	c2 := c
	c2.Messages = append(c.Messages[:len(c.Messages):len(c.Messages)], asst("new text"))
	r2, err := Compact(c2, b, Options{Cache: cache, Previous: r1.Plan})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Counted < 100 || r2.Counted > 3 {
		t.Fatalf("counted %d then %d", r1.Counted, r2.Counted)
	}
}

func TestRawPrompt(t *testing.T) {
	p := "SECRET-AT-START " + words("p", 10000) + " QUESTION-AT-END"
	o := Options{Store: func(ms []Message) (string, error) { return "raw-1", nil }}
	res, err := CompactPrompt(p, Budget{Limit: 1000, Overhead: 10}, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.TokensAfter > 1000 || res.TokensAfter != Estimate(res.Prompt)+10 || res.StoreID != "raw-1" {
		t.Fatalf("%+v", res)
	}
	if !strings.HasPrefix(res.Prompt, "SECRET-AT-START") || !strings.HasSuffix(res.Prompt, "QUESTION-AT-END") || !strings.Contains(res.Prompt, `"raw-1"`) {
		t.Fatal("head, tail or notice missing")
	}
	small, err := CompactPrompt("short", Budget{Limit: 1000}, o)
	if err != nil || small.Compacted || small.Prompt != "short" {
		t.Fatalf("%+v %v", small, err)
	}
	if _, err := CompactPrompt(p, Budget{Limit: 10}, o); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("tiny budget: %v", err)
	}
}

func TestMiddleOutBoundaries(t *testing.T) {
	k := &counting{c: EstimateCounter{}, local: map[uint64]int32{}}
	text := strings.Repeat("héllo wörld ünïcode ", 2000)
	out, removed := middleOut(k, text, Estimate(text), 500, func(r int) string { return fmt.Sprintf("[cut %d]", r) })
	if !strings.Contains(out, "[cut ") || removed <= 0 || Estimate(out) > 500 {
		t.Fatalf("removed %d, out %d tokens", removed, Estimate(out))
	}
	if !strings.HasPrefix(out, "héllo") || !strings.HasSuffix(out, "ünïcode ") {
		t.Fatal("head or tail lost")
	}
	for _, r := range out {
		if r == '\uFFFD' {
			t.Fatal("cut inside a character")
		}
	}
}

// TestGapFill: a kept message smaller than a notice between two evicted
// spans goes too, leaving one block and one notice.
func TestGapFill(t *testing.T) {
	c := conv(sys("s"), user("task"),
		call("a_1"), result("a_1", words("r1", 900)),
		asst("ok"),
		call("b_2"), result("b_2", words("r2", 900)),
		asst(words("kept", 200)), user("u"), asst("a"), user("u2"), asst("a2"))
	b := Budget{Limit: 600}
	res, err := Compact(c, b, Options{})
	check(t, c, b, Options{}, res, err)
	if err != nil || len(res.Spans) != 1 || res.Spans[0].First != 2 || res.Spans[0].Last != 6 {
		t.Fatalf("err %v spans %+v", err, res.Spans)
	}
	if res.Actions[7].Fate != Kept {
		t.Fatal("a bigger message was evicted to fill a gap")
	}
}

// TestAlternationBetweenProtected: evicting the only assistant turn between
// the task and a protected user message would leave two user turns
// adjacent; it is shrunk instead.
func TestAlternationBetweenProtected(t *testing.T) {
	c := conv(sys("s"), user("task"), asst(words("big", 3000)), user("u"), asst("a"), user("u2"))
	b := Budget{Limit: 400}
	o := Options{KeepRecent: 3}
	res, err := Compact(c, b, o)
	check(t, c, b, o, res, err)
	if err != nil {
		t.Fatal(err)
	}
	if res.Actions[2].Fate != Shrunk || !alternates(res.Messages) {
		t.Fatalf("fate %v, strategy %s", res.Actions[2].Fate, res.Strategy)
	}
}

// TestDanglingCallAtEnd: a call still waiting for its result, last in the
// conversation, stays, and so does its unit.
func TestDanglingCallAtEnd(t *testing.T) {
	for _, keep := range []int{-1, 1, 3} {
		c := conv(sys("s"), user("task"), call("a_1"), result("a_1", words("r", 2000)), asst("a"), user("u"), call("z_9", "y_8"))
		b := Budget{Limit: 300}
		o := Options{KeepRecent: keep}
		res, err := Compact(c, b, o)
		check(t, c, b, o, res, err)
		if err != nil || res.Actions[3].Fate != Evicted || res.Actions[2].Fate != Evicted {
			t.Fatalf("keep %d: %v %v", keep, err, res.Actions)
		}
		if keep > 0 && res.Messages[len(res.Messages)-1].ToolCalls[0].ID != "z_9" {
			t.Fatalf("keep %d: the dangling call was not kept last", keep)
		}
	}
}

func TestCountsToolsAndImages(t *testing.T) {
	m := user("look")
	m.Images = 2
	c := Conversation{Messages: []Message{m}, Tools: []Tool{{Name: "read_file", Description: "Read a file.", Schema: `{"type":"object"}`}}}
	res, err := Compact(c, Budget{Limit: 1 << 20, Overhead: 7}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := 7 + Estimate("read_file") + Estimate("Read a file.") + Estimate(`{"type":"object"}`) + DefaultMessageOverhead +
		Estimate("look") + 2*DefaultImageTokens + DefaultMessageOverhead
	if res.TokensBefore != want {
		t.Fatalf("counted %d, want %d", res.TokensBefore, want)
	}
	res, _ = Compact(c, Budget{Limit: 1 << 20}, Options{ImageTokens: 100, MessageOverhead: -1, Counter: CounterFunc(func(s string) int { return len(s) })})
	if want := len("read_file") + len("Read a file.") + len(`{"type":"object"}`) + 4 + 200; res.TokensBefore != want {
		t.Fatalf("counted %d, want %d", res.TokensBefore, want)
	}
}
