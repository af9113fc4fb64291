package compact

import (
	"container/list"
	"sync"
)

// Plan is a frozen compaction decision for a conversation prefix: which
// messages are evicted, which are collapsed or shrunk (and to what text),
// the removal notices and their store ids. Given the next turn of the same
// conversation (Options.Previous, or found in Plans), Compact replays it
// byte for byte while it still fits, so the prompt's head stays identical
// and the backend's prefix cache keeps hitting; when it no longer fits,
// Compact extends it (never undoing an eviction) down to the low-water mark.
// A Plan is immutable and safe to share.
type Plan struct {
	n        int
	chain    uint64
	collapse bool
	evicted  []bool
	text     []string // replacement text, "" when the original is kept
	fate     []Fate
	shrinkID []string
	removed  []int
	spans    map[[2]int]spanRec
}

// spanRec is what a plan remembers of an evicted span: its marker's exact
// text and where the span was stored.
type spanRec struct {
	id       string
	marker   string
	storeErr string
	// summarized: marker carries a digest; digestErr: why it does not.
	summarized bool
	digestErr  string
	// plain is, while the call that made the digest runs, the notice
	// without it (never kept in a plan).
	plain string
}

// Messages returns the number of messages the plan covers.
func (p *Plan) Messages() int { return p.n }

// Evicted returns the number of messages the plan evicts.
func (p *Plan) Evicted() int {
	n := 0
	for _, e := range p.evicted {
		if e {
			n++
		}
	}
	return n
}

// DefaultPlans is the capacity of a Plans made by NewPlans(0).
const DefaultPlans = 256

// Plans remembers recent plans by the exact conversation prefix they cover,
// so that a proxy that sees each turn as an unrelated request can still
// replay the previous turn's plan (Options.Plans). Two conversations that
// share a task do not clash: a plan is found only by a conversation that
// starts with every message it covers. Safe for concurrent use; least
// recently used plans are dropped first.
type Plans struct {
	mu  sync.Mutex
	max int
	m   map[uint64]*list.Element
	l   list.List
}

// NewPlans returns a Plans holding at most max plans (DefaultPlans if
// max <= 0).
func NewPlans(max int) *Plans {
	if max <= 0 {
		max = DefaultPlans
	}
	return &Plans{max: max, m: make(map[uint64]*list.Element)}
}

// Len returns the number of plans held.
func (p *Plans) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// find returns the plan covering the longest prefix of a conversation whose
// prefix hashes are chain (chain[i] covers the first i messages).
func (p *Plans) find(chain []uint64) *Plan {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(chain) - 1; i > 0; i-- {
		if el, ok := p.m[chain[i]]; ok {
			pl := el.Value.(*Plan)
			if pl.n == i {
				p.l.MoveToFront(el)
				return pl
			}
		}
	}
	return nil
}

func (p *Plans) put(pl *Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.m[pl.chain]; ok {
		el.Value = pl
		p.l.MoveToFront(el)
		return
	}
	p.m[pl.chain] = p.l.PushFront(pl)
	for len(p.m) > p.max {
		last := p.l.Back()
		p.l.Remove(last)
		delete(p.m, last.Value.(*Plan).chain)
	}
}
