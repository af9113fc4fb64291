package compact

import "sync"

// Counter counts the tokens of a text. The guard supplies exact counters
// (a tokenizer, a server's /tokenize) or calibrated estimates; a Counter
// must be safe for concurrent use if it is shared between requests.
type Counter interface {
	Count(text string) int
}

// CounterFunc adapts a function to a Counter.
type CounterFunc func(text string) int

// Count calls f.
func (f CounterFunc) Count(text string) int { return f(text) }

// EstimateCounter is the built-in estimate, [Estimate], as a Counter.
type EstimateCounter struct{}

// Count returns Estimate(text).
func (EstimateCounter) Count(text string) int { return Estimate(text) }

// Estimate is a fast token estimate that errs high: one token per 3.6 ASCII
// bytes (prose runs about 4, code and JSON about 3) and one per non-ASCII
// character (CJK text is about one per character; accented Latin is
// overestimated, which is the safe side).
func Estimate(text string) int {
	ascii, other := 0, 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c < 0x80:
			ascii++
		case c >= 0xC0: // the leading byte of a multi-byte character
			other++
		}
	}
	return (ascii*10+35)/36 + other
}

// DefaultCacheEntries is the capacity of a Cache made by NewCache(0).
const DefaultCacheEntries = 1 << 16

// Cache remembers token counts by a hash of the counted text, so that a
// conversation that grows turn by turn is counted once: each turn counts only
// its new messages. A Cache belongs to one Counter; when the counter changes
// (a recalibration), call Reset or use a new Cache. It is safe for concurrent
// use. When full it forgets everything and starts again.
type Cache struct {
	mu  sync.Mutex
	m   map[uint64]int32
	max int
}

// NewCache returns a cache of at most max entries (DefaultCacheEntries if
// max <= 0).
func NewCache(max int) *Cache {
	if max <= 0 {
		max = DefaultCacheEntries
	}
	return &Cache{m: make(map[uint64]int32), max: max}
}

// Len returns the number of cached counts.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Reset forgets every count.
func (c *Cache) Reset() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

func (c *Cache) get(h uint64) (int, bool) {
	c.mu.Lock()
	n, ok := c.m[h]
	c.mu.Unlock()
	return int(n), ok
}

func (c *Cache) put(h uint64, n int) {
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[h] = int32(n)
	c.mu.Unlock()
}

// counting counts texts through the cache (or a per-call map without one).
type counting struct {
	c     Counter
	cache *Cache
	local map[uint64]int32
	calls int // Counter.Count calls made, for tests and reports
}

// text returns the tokens of s and its hash.
func (k *counting) text(s string) (int, uint64) {
	if s == "" {
		return 0, 0
	}
	h := hashString(s)
	return k.hashed(s, h), h
}

func (k *counting) hashed(s string, h uint64) int {
	if s == "" {
		return 0
	}
	if k.cache != nil {
		if n, ok := k.cache.get(h); ok {
			return n
		}
	} else if n, ok := k.local[h]; ok {
		return int(n)
	}
	n := k.c.Count(s)
	k.calls++
	if k.cache != nil {
		k.cache.put(h, n)
	} else {
		k.local[h] = int32(n)
	}
	return n
}
