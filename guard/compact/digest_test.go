package compact

import (
	"errors"
	"strings"
	"testing"
)

// agentConv is a task, three big tool rounds and a short recent tail: the
// tool rounds are evicted as one span.
func agentConv() Conversation {
	return conv(
		sys("you are an agent"),
		user("task: find the answer"),
		call("a_1"), result("a_1", words("r1", 900)),
		call("b_2"), result("b_2", words("r2", 900)),
		call("c_3"), result("c_3", words("r3", 900)),
		asst("done looking"),
		user(words("u2", 20)), asst(words("a2", 20)), user(words("u3", 20)),
	)
}

func TestDigest(t *testing.T) {
	c := agentConv()
	full := total(c)
	store := func([]Message) (string, error) { return "evicted_0123", nil }
	cases := []struct {
		name       string
		limit      int
		store      func([]Message) (string, error)
		digest     func([]Message) (string, error)
		summarized bool
		digestErr  string
		in, notIn  []string
	}{
		{"digest carried", full / 2, store, func(span []Message) (string, error) { return "  the answer is 42\n", nil }, true, "",
			[]string{"a summary, not the original", `stored as "evicted_0123"`, "\nthe answer is 42\n]"}, nil},
		{"no store", full / 2, nil, func([]Message) (string, error) { return "the answer is 42", nil }, true, "",
			[]string{"a summary, not the original, which was not kept", "the answer is 42"}, nil},
		{"digest error", full / 2, store, func([]Message) (string, error) { return "", errors.New("summarizer down") }, false, "summarizer down",
			[]string{`stored as "evicted_0123"`}, []string{"Digest", "summary"}},
		{"empty digest", full / 2, store, func([]Message) (string, error) { return " \n", nil }, false, "empty digest",
			nil, []string{"Digest"}},
		{"digest over budget", 0, store, func([]Message) (string, error) { return words("digest", 5000), nil }, false, DigestOverBudget,
			[]string{`stored as "evicted_0123"`}, []string{"Digest"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				// the budget the plain notice fits and a 5000-token digest does not
				res, err := Compact(c, Budget{Limit: full / 2}, Options{Store: tc.store})
				if err != nil {
					t.Fatal(err)
				}
				limit = res.TokensAfter + 200
			}
			b := Budget{Limit: limit}
			var calls int
			var got []Message
			o := Options{Store: tc.store, Digest: func(span []Message) (string, error) {
				calls++
				got = span
				return tc.digest(span)
			}}
			res, err := Compact(c, b, o)
			check(t, c, b, o, res, err)
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 || len(res.Spans) != 1 {
				t.Fatalf("%d digest calls, %d spans: want 1 and 1", calls, len(res.Spans))
			}
			sp := res.Spans[0]
			if len(got) != sp.Messages || got[1].Text != c.Messages[sp.First+1].Text {
				t.Fatalf("digest got %d messages, not the span's %d originals", len(got), sp.Messages)
			}
			if sp.Summarized != tc.summarized || sp.DigestErr != tc.digestErr {
				t.Fatalf("summarized %v, err %q; want %v, %q", sp.Summarized, sp.DigestErr, tc.summarized, tc.digestErr)
			}
			msg := res.Messages[sp.At]
			if msg.Role == RoleSystem || !strings.Contains(msg.Text, sp.Notice) {
				t.Fatalf("notice not in a non-system message: %+v", msg)
			}
			if !strings.HasPrefix(sp.Notice, "[ctxkit: ") || !strings.HasSuffix(sp.Notice, "]") {
				t.Fatalf("notice not bracketed: %q", sp.Notice)
			}
			for _, s := range tc.in {
				if !strings.Contains(sp.Notice, s) {
					t.Errorf("notice lacks %q:\n%s", s, sp.Notice)
				}
			}
			for _, s := range tc.notIn {
				if strings.Contains(sp.Notice, s) {
					t.Errorf("notice has %q:\n%s", s, sp.Notice)
				}
			}
		})
	}
}

// TestDigestReplay: the next turn replays the notice with its digest byte
// for byte without calling Digest again; a turn that extends the plan
// digests only the new span.
func TestDigestReplay(t *testing.T) {
	c := agentConv()
	b := Budget{Limit: total(c) / 2}
	calls := 0
	o := Options{
		Store:  func([]Message) (string, error) { return "evicted_0123", nil },
		Digest: func(span []Message) (string, error) { calls++; return "digest of " + string(span[0].Role), nil },
		Plans:  NewPlans(0),
	}
	first, err := Compact(c, b, o)
	if err != nil {
		t.Fatal(err)
	}
	next := c
	next.Messages = append(append([]Message(nil), c.Messages...), asst("ok"), user("and then?"))
	second, err := Compact(next, b, o)
	check(t, next, b, o, second, err)
	if err != nil {
		t.Fatal(err)
	}
	if second.Strategy != "replay" || calls != 1 {
		t.Fatalf("strategy %q, %d digest calls: want replay and 1", second.Strategy, calls)
	}
	if second.Spans[0].Notice != first.Spans[0].Notice || !second.Spans[0].Summarized {
		t.Fatalf("replayed notice differs:\n%s\n%s", first.Spans[0].Notice, second.Spans[0].Notice)
	}
	for i := 0; i < len(first.Messages)-1; i++ {
		if first.Messages[i].Text != second.Messages[i].Text {
			t.Fatalf("message %d changed across turns", i)
		}
	}
}
