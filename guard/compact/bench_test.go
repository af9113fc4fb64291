package compact

import "testing"

// benchHistory is a 400-message agent history of about 160k tokens:
// a system prompt, the task, and tool calls with big outputs.
func benchHistory(tb testing.TB) Conversation {
	c := agentHistory(400, 160)
	c.Messages = c.Messages[:400]
	for i, m := range c.Messages {
		if m.Role == RoleTool {
			c.Messages[i].Text = m.Text[:len(m.Text)*2/3]
		}
	}
	if n := total(c); n < 150_000 || n > 175_000 {
		tb.Fatalf("bench history counts %d tokens", n)
	}
	return c
}

// BenchmarkCompact compacts a 160k-token, 400-message history into a 64k
// budget:
//   - first-turn: nothing cached, no plan (every text counted, every tool
//     output scanned for repeats);
//   - warm-cache: counts cached, no plan (a new plan is made);
//   - replay: counts cached and the previous turn's plan found in Plans
//     (the guard's steady state between re-plans);
//   - extend: counts cached, the previous plan no longer fits and is
//     extended.
func BenchmarkCompact(b *testing.B) {
	c := benchHistory(b)
	budget := Budget{Limit: 64_000}
	store := func(ms []Message) (string, error) { return "span-0123456789ab", nil }
	prev := c
	prev.Messages = c.Messages[:len(c.Messages)-2]
	b.Run("first-turn", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compact(c, budget, Options{Cache: NewCache(0), Store: store}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm-cache", func(b *testing.B) {
		cache := NewCache(0)
		Compact(c, budget, Options{Cache: cache, Store: store})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compact(c, budget, Options{Cache: cache, Store: store}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		cache, plans := NewCache(0), NewPlans(0)
		r, err := Compact(prev, budget, Options{Cache: cache, Store: store, Plans: plans})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := Compact(c, budget, Options{Cache: cache, Store: store, Previous: r.Plan})
			if err != nil || res.Strategy != "replay" {
				b.Fatal(err, res.Strategy)
			}
		}
	})
	b.Run("extend", func(b *testing.B) {
		cache := NewCache(0)
		older := c
		older.Messages = c.Messages[:300]
		r, err := Compact(older, budget, Options{Cache: cache, Store: store})
		if err != nil {
			b.Fatal(err)
		}
		Compact(c, budget, Options{Cache: cache, Store: store})
		b.ReportAllocs()
		for b.Loop() {
			res, err := Compact(c, budget, Options{Cache: cache, Store: store, Previous: r.Plan})
			if err != nil || !res.Replanned {
				b.Fatal(err, res.Strategy)
			}
		}
	})
}

func BenchmarkCompactPrompt(b *testing.B) {
	p := words("raw", 160_000)
	cache := NewCache(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompactPrompt(p, Budget{Limit: 64_000}, Options{Cache: cache}); err != nil {
			b.Fatal(err)
		}
	}
}
