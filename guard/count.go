package guard

import (
	"math"
	"sync"

	"github.com/ctxkit/ctxkit/guard/compact"
)

// minSampleChars is the smallest prompt whose reported token count may
// move a calibration: a 26-character prompt reported as 19 tokens once
// poisoned the reference proxy's ratio.
const minSampleChars = 1000

// maxScale bounds a calibration.
const maxScale = 8

// calibration is one backend model's correction of compact.Estimate: a
// factor that only ever rises, fed by what the backend says it counted.
type calibration struct {
	mu      sync.Mutex
	scale   float64
	samples int
	cache   *compact.Cache // counts under the current scale
}

func (g *Guard) calibrationFor(k kind, model string) *calibration {
	key := string(k) + "\x00" + model
	if c, ok := g.calib.Load(key); ok {
		return c.(*calibration)
	}
	c, _ := g.calib.LoadOrStore(key, &calibration{scale: 1, cache: compact.NewCache(0)})
	return c.(*calibration)
}

// counter is a snapshot of a calibration: the counter and its cache.
type counter struct {
	scale float64
	c     compact.Counter
	cache *compact.Cache
}

func (c *calibration) snapshot(base compact.Counter) counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return counter{scale: c.scale, cache: c.cache, c: scaled(base, c.scale)}
}

// scaled is base times s.
func scaled(base compact.Counter, s float64) compact.Counter {
	if s == 1 {
		return base
	}
	return compact.CounterFunc(func(text string) int {
		return int(math.Ceil(float64(base.Count(text)) * s))
	})
}

// observe feeds one sample: the backend counted actual tokens for a prompt
// of chars characters that the snapshot cnt counted as counted. It reports
// whether the scale rose.
func (c *calibration) observe(cnt counter, chars, counted, actual int) bool {
	if chars < minSampleChars || counted <= 0 || actual <= counted {
		return false
	}
	s := math.Min(cnt.scale*float64(actual)/float64(counted)*1.02, maxScale)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples++
	if s <= c.scale {
		return false
	}
	c.scale = s
	c.cache = compact.NewCache(0)
	return true
}

// countConversation counts a conversation the way compact does: texts,
// tool calls, images, per-message and per-tool overhead, and the budget's
// overhead. It does no compaction work (strict policy).
func countConversation(conv compact.Conversation, c compact.Counter, overhead int) (tokens, chars int) {
	tokens = overhead
	for _, m := range conv.Messages {
		tokens += c.Count(m.Text) + compact.DefaultMessageOverhead + m.Images*compact.DefaultImageTokens
		chars += len(m.Text)
		for _, tc := range m.ToolCalls {
			tokens += c.Count(tc.Name) + c.Count(tc.Args)
			chars += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range conv.Tools {
		tokens += c.Count(t.Name) + c.Count(t.Description) + c.Count(t.Schema) + compact.DefaultMessageOverhead
		chars += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return tokens, chars
}
