package compact

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Defaults of Options.
const (
	DefaultKeepRecent      = 4
	DefaultImageTokens     = 768 // what Ollama counts per image
	DefaultMessageOverhead = 4   // template tokens around each message
	DefaultRepeatMin       = 3
	DefaultMinShrink       = 64
	// DefaultLowWater is the eviction target, as a share of the limit,
	// when Budget.LowWater is zero.
	DefaultLowWater = 0.8
)

// Budget is what the prompt must fit.
type Budget struct {
	// Limit is the most tokens the prompt may count: the backend's loaded
	// window minus the reserved output and a margin. Required.
	Limit int
	// LowWater is where eviction stops once it is needed (0: 80% of
	// Limit). The gap between the two is the hysteresis: the plan then
	// holds, unchanged, until the conversation grows past Limit again.
	LowWater int
	// Overhead is counted once on top of messages and tools (a template's
	// fixed text, BOS).
	Overhead int
}

// Options tune Compact. The zero value is usable.
type Options struct {
	// KeepRecent is how many trailing messages are never deleted (0:
	// DefaultKeepRecent; negative: none).
	KeepRecent int
	// Counter counts tokens (nil: the built-in Estimate).
	Counter Counter
	// Cache keeps counts across calls (nil: counts are kept for this call
	// only). Share one per Counter across the turns of conversations.
	Cache *Cache
	// Store keeps evicted messages and returns an id to get them back; it
	// is called once per new evicted span (with the original messages)
	// and once per shrunk message (with the whole original). Ids should
	// be deterministic (a content hash) so that a replanned span that
	// happens to be the same keeps its notice. nil or an error: the notice
	// says the content was not kept.
	Store func(evicted []Message) (id string, err error)
	// RecallHint tells the model how to get stored content back, given its
	// id (nil: call the context_recall tool with the id).
	RecallHint func(id string) string
	// Previous is the previous turn's plan (Result.Plan), replayed if this
	// conversation starts with the messages it covers.
	Previous *Plan
	// Plans, when Previous is nil, is searched for such a plan, and every
	// new plan is put there.
	Plans *Plans
	// MessageOverhead is counted per message and per tool schema (0:
	// DefaultMessageOverhead; negative: none).
	MessageOverhead int
	// ImageTokens is counted per image (0: DefaultImageTokens; negative:
	// none).
	ImageTokens int
	// RepeatMin is how many times a line must occur in a tool output to be
	// collapsed (0: DefaultRepeatMin; negative: never collapse).
	RepeatMin int
	// MinShrink is the fewest tokens a message shrunk in place keeps,
	// notice included (0: DefaultMinShrink).
	MinShrink int
	// Digest, when set, summarizes a new evicted span (the original
	// messages, as given to Store) and the span's notice carries the
	// digest, marked as a summary and not the original. It is called once
	// per new span, after Store; a replayed span keeps the notice its plan
	// remembers without calling it. An error or an empty digest leaves the
	// plain notice (Span.DigestErr says why), and so does a digest that
	// would put the prompt over Budget.Limit: digests are dropped, the
	// longest first, until the prompt fits, so a digest never makes a
	// compaction fail.
	Digest func(span []Message) (string, error)
}

func (o Options) normalized() Options {
	def := func(v, d int) int {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	o.KeepRecent = def(o.KeepRecent, DefaultKeepRecent)
	o.MessageOverhead = def(o.MessageOverhead, DefaultMessageOverhead)
	o.ImageTokens = def(o.ImageTokens, DefaultImageTokens)
	o.RepeatMin = def(o.RepeatMin, DefaultRepeatMin)
	o.MinShrink = def(o.MinShrink, DefaultMinShrink)
	if o.Counter == nil {
		o.Counter = EstimateCounter{}
	}
	if o.RecallHint == nil {
		o.RecallHint = defaultRecallHint
	}
	return o
}

func defaultRecallHint(id string) string {
	return fmt.Sprintf(`call the context_recall tool with {"id": %q} to read the original`, id)
}

// Fate is what compaction did to one original message.
type Fate uint8

// Fates, from least to most change.
const (
	Kept      Fate = iota // unchanged
	Collapsed             // repeated lines collapsed
	Shrunk                // middle removed in place, head and tail kept
	Evicted               // removed; a notice stands where it was
)

func (f Fate) String() string {
	switch f {
	case Kept:
		return "kept"
	case Collapsed:
		return "collapsed"
	case Shrunk:
		return "shrunk"
	case Evicted:
		return "evicted"
	}
	return fmt.Sprintf("Fate(%d)", uint8(f))
}

// Action is what happened to one original message.
type Action struct {
	Fate Fate
	// Marker is set when a removal notice was merged into this message's
	// text (Span names which).
	Marker bool
	// Span is the index in Result.Spans of the span an evicted message
	// belongs to, or of the notice merged into it; -1 otherwise.
	Span int
	// StoreID is where a shrunk message's original is stored.
	StoreID      string
	TokensBefore int
	TokensAfter  int
}

// Placement is where a span's notice went.
type Placement uint8

// Placements of a notice. A notice is never a system message: it is a user
// message of its own when that keeps user and assistant turns alternating,
// and otherwise merged into the adjacent user message (or, between a call
// and its results, into the next tool result).
const (
	Inserted  Placement = iota // a user message of its own
	Prepended                  // at the start of the next message
	Appended                   // at the end of the previous (user) message
)

// Span is a run of consecutive evicted messages (kept system messages
// between them do not split it; they stay in place) and its notice.
type Span struct {
	First, Last int // original indices, inclusive
	Messages    int
	Tokens      int
	// Tools counts the evicted calls per tool name.
	Tools    map[string]int
	StoreID  string
	StoreErr string
	Notice   string
	// Summarized is set when Notice carries a digest (Options.Digest);
	// DigestErr says why a span has none when Options.Digest was set.
	Summarized bool
	DigestErr  string
	Placement
	// At is the output index of the notice's message.
	At int

	target int // the original message a merged notice went into
}

// Result is a compacted conversation and the report of what was done.
type Result struct {
	// Messages is the conversation to send (the input's own slice when
	// nothing changed).
	Messages []Message
	// Source is, per output message, the index of the original message it
	// comes from, or -1 for an inserted notice.
	Source []int
	// Actions is, per original message, what happened to it.
	Actions []Action
	Spans   []Span
	// Compacted reports whether anything changed.
	Compacted bool
	// Replanned reports whether a new plan was made this turn (false when
	// the previous plan was replayed unchanged or none was needed): the
	// prompt's head changed from the previous turn only when it is set.
	Replanned    bool
	TokensBefore int
	TokensAfter  int
	// EvictedTokens is every token removed: the evicted messages' whole
	// counts, and what shrinking and collapsing took out of kept ones.
	EvictedTokens int
	Limit         int
	// Strategy names what was done: "none"; "replay" (the previous plan,
	// unchanged); or the steps of a new plan joined by "+" (collapse,
	// evict, shrink), after "extend" when it extends the previous plan.
	Strategy string
	// Plan is the plan to replay next turn (nil when nothing was needed).
	Plan *Plan
	// Counted is the number of texts counted by the Counter (the rest came
	// from the cache).
	Counted int
}

// ErrTooLarge is matched (errors.Is) by the error of a prompt that cannot
// fit even with everything removable removed; the guard answers 413.
var ErrTooLarge = errors.New("prompt does not fit the context window")

// TooLargeError says why a prompt cannot fit.
type TooLargeError struct {
	// Need is the smallest count compaction reached; Limit the budget.
	Need, Limit int
	// Protected is what the untouchable part counts: system messages, tool
	// schemas, tool calls, images and the budget's overhead.
	Protected int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("compact: %v: %d tokens after compaction, limit %d (system messages, tools and calls alone count %d)",
		ErrTooLarge, e.Need, e.Limit, e.Protected)
}

// Unwrap returns ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// Compact fits a conversation into a budget. See the package doc for the
// rules. The conversation is not modified. On ErrTooLarge the Result still
// describes the best it could do.
func Compact(conv Conversation, b Budget, opts Options) (*Result, error) {
	if b.Limit <= 0 {
		return nil, fmt.Errorf("compact: budget limit %d: must be positive", b.Limit)
	}
	low := b.LowWater
	if low <= 0 || low > b.Limit {
		low = int(float64(b.Limit) * DefaultLowWater)
		if low < 1 {
			low = 1
		}
	}
	e := newEngine(conv, opts.normalized())
	e.fixed += b.Overhead
	before := e.fixed
	for _, t := range e.tok0 {
		before += t
	}
	if before <= b.Limit {
		return e.result(before, b.Limit, "none", false, nil), nil
	}

	plan := e.o.Previous
	if plan == nil && e.o.Plans != nil {
		plan = e.o.Plans.find(e.chain)
	}
	var steps []string
	replayed := false
	if plan != nil && e.apply(plan) {
		replayed = true
		if e.collapse {
			e.collapseFrom(plan.n)
		}
		total := e.render(true) // every span is known: nothing is stored
		if total <= b.Limit {
			return e.done(e.finish(before, b.Limit, []string{"replay"}, false, true))
		}
		steps = append(steps, "extend")
	}
	if !e.collapse && e.o.RepeatMin > 0 {
		e.collapse = true
		e.collapseFrom(0)
		if !replayed {
			if total := e.render(true); total <= b.Limit {
				return e.done(e.finish(before, b.Limit, steps, true, true))
			}
		}
	}

	cands := e.candidates()
	ci := 0
	markerEst, _ := e.k.text(e.notice(12, 12345, map[string]int{"tool": 1}, "ctx-0123456789abcdef"))
	markerEst += e.o.MessageOverhead
	est := e.render(false)
	for {
		for ci < len(cands) && est > low {
			est += e.evictUnit(cands[ci], markerEst)
			ci++
		}
		e.fillGaps(markerEst)
		e.keepAlternation()
		total := e.render(false)
		if total <= low || (total <= b.Limit && ci == len(cands)) {
			break
		}
		if ci < len(cands) {
			est = total
			// the estimate was short: evict at least one more unit
			est += e.evictUnit(cands[ci], markerEst)
			ci++
			continue
		}
		if e.shrink(total - low) {
			e.render(false)
		}
		break
	}
	return e.done(e.finish(before, b.Limit, steps, true, false))
}

// done keeps the plan of a result that fits, or returns the error of one
// that does not.
func (e *engine) done(res *Result) (*Result, error) {
	if res.TokensAfter > res.Limit {
		res.Plan = nil
		return res, &TooLargeError{Need: res.TokensAfter, Limit: res.Limit, Protected: e.untouchable()}
	}
	if e.o.Plans != nil {
		e.o.Plans.put(res.Plan)
	}
	return res, nil
}

// engine is one Compact call's state, per original message.
type engine struct {
	o     Options
	k     *counting
	msgs  []Message
	tok0  []int    // original tokens
	rest  []int    // tokens outside Text (calls, images, overhead)
	chain []uint64 // chain[i]: hash of the first i messages
	unit  []int
	prot  []bool // never deleted (after closing over units)
	task  int    // the first user message, -1 if none

	text     []string // current text ("" with Kept/Evicted: the original)
	tok      []int    // current tokens
	fate     []Fate
	evicted  []bool
	planned  []bool // evicted by the replayed plan: never brought back
	prevFate []Fate // fate before this call evicted the message
	shrinkID []string
	removed  []int // tokens a shrink or a collapse took out of the message
	collapse bool
	spanRec  map[[2]int]spanRec
	ownSpans bool // spanRec is this call's (not a plan's) and may be written
	fixed    int

	// output of the last render
	out    []Message
	source []int
	spans  []Span
	carry  []int // per original message: span whose notice it carries, or -1
	total  int
}

func newEngine(conv Conversation, o Options) *engine {
	n := len(conv.Messages)
	e := &engine{
		o:        o,
		k:        &counting{c: o.Counter, cache: o.Cache},
		msgs:     conv.Messages,
		tok0:     make([]int, n),
		rest:     make([]int, n),
		chain:    make([]uint64, n+1),
		text:     make([]string, n),
		tok:      make([]int, n),
		fate:     make([]Fate, n),
		evicted:  make([]bool, n),
		planned:  make([]bool, n),
		prevFate: make([]Fate, n),
		shrinkID: make([]string, n),
		removed:  make([]int, n),
		task:     -1,
	}
	if o.Cache == nil {
		e.k.local = make(map[uint64]int32, 2*n)
	}
	roleHash := map[Role]uint64{}
	for i := range conv.Messages {
		m := &conv.Messages[i]
		tt, th := e.k.text(m.Text)
		rh, ok := roleHash[m.Role]
		if !ok {
			rh = hashString(string(m.Role))
			roleHash[m.Role] = rh
		}
		h := mix(rh, th)
		h = mix(h, hashString(m.Name))
		h = mix(h, hashString(m.ToolCallID))
		h = mix(h, uint64(m.Images))
		rest := o.MessageOverhead + m.Images*o.ImageTokens
		for _, c := range m.ToolCalls {
			nt, nh := e.k.text(c.Name)
			at, ah := e.k.text(c.Args)
			rest += nt + at + 3
			h = mix(mix(mix(h, hashString(c.ID)), nh), ah)
		}
		e.rest[i] = rest
		e.tok0[i] = tt + rest
		e.tok[i] = e.tok0[i]
		e.chain[i+1] = mix(e.chain[i], h)
		if e.task < 0 && m.Role == RoleUser {
			e.task = i
		}
	}
	for _, t := range conv.Tools {
		a, _ := e.k.text(t.Name)
		d, _ := e.k.text(t.Description)
		s, _ := e.k.text(t.Schema)
		e.fixed += a + d + s + o.MessageOverhead
	}
	e.unit = units(conv.Messages)
	e.prot = make([]bool, n)
	protUnit := make(map[int]bool)
	for i := range conv.Messages {
		if conv.Messages[i].Role == RoleSystem || i == e.task || i >= n-o.KeepRecent {
			protUnit[e.unit[i]] = true
		}
	}
	for i := range conv.Messages {
		e.prot[i] = protUnit[e.unit[i]]
	}
	return e
}

// untouchable counts what no step can reduce.
func (e *engine) untouchable() int {
	n := e.fixed
	for i, m := range e.msgs {
		if m.Role == RoleSystem {
			n += e.tok0[i]
		} else {
			n += e.rest[i]
		}
	}
	return n
}

// apply replays a plan; it reports false (and changes nothing) when the
// plan does not cover a prefix of this conversation or would delete what is
// now protected or split a unit.
func (e *engine) apply(p *Plan) bool {
	if p.n > len(e.msgs) || e.chain[p.n] != p.chain {
		return false
	}
	ev := make(map[int]bool) // unit -> evicted
	for i := range e.msgs {
		x := i < p.n && p.evicted[i]
		if x && e.prot[i] {
			return false
		}
		u := e.unit[i]
		if prev, ok := ev[u]; ok && prev != x {
			return false
		}
		ev[u] = x
	}
	e.planned = make([]bool, len(e.msgs))
	for i := 0; i < p.n; i++ {
		e.evicted[i] = p.evicted[i]
		e.planned[i] = p.evicted[i]
		e.fate[i] = p.fate[i]
		e.shrinkID[i] = p.shrinkID[i]
		e.removed[i] = p.removed[i]
		if p.text[i] != "" {
			e.setText(i, p.text[i])
		}
	}
	e.collapse = p.collapse
	e.spanRec = p.spans
	return true
}

func (e *engine) setText(i int, s string) {
	e.text[i] = s
	t, _ := e.k.text(s)
	e.tok[i] = t + e.rest[i]
}

func (e *engine) curText(i int) string {
	if e.text[i] != "" {
		return e.text[i]
	}
	return e.msgs[i].Text
}

func (e *engine) collapseFrom(from int) {
	counts := make(map[string]int)
	for i := from; i < len(e.msgs); i++ {
		if e.msgs[i].Role != RoleTool || e.fate[i] != Kept || e.evicted[i] {
			continue
		}
		if s, ok := collapseRepeats(e.msgs[i].Text, e.o.RepeatMin, counts); ok {
			e.setText(i, s)
			e.fate[i] = Collapsed
			e.removed[i] = max(e.tok0[i]-e.tok[i], 0)
		}
	}
}

// unitCand is an evictable unit.
type unitCand struct {
	members []int
	tokens  int
	tool    bool
}

// candidates lists the evictable units, stale tool output first, then
// biggest first, then oldest first.
func (e *engine) candidates() []unitCand {
	idx := make(map[int]int)
	var cs []unitCand
	for i := range e.msgs {
		if e.prot[i] || e.evicted[i] {
			continue
		}
		u := e.unit[i]
		j, ok := idx[u]
		if !ok {
			j = len(cs)
			idx[u] = j
			cs = append(cs, unitCand{})
		}
		c := &cs[j]
		c.members = append(c.members, i)
		c.tokens += e.tok[i]
		if e.msgs[i].Role == RoleTool || len(e.msgs[i].ToolCalls) > 0 {
			c.tool = true
		}
	}
	sort.SliceStable(cs, func(a, b int) bool {
		x, y := &cs[a], &cs[b]
		if x.tool != y.tool {
			return x.tool
		}
		if x.tokens != y.tokens {
			return x.tokens > y.tokens
		}
		return x.members[0] < y.members[0]
	})
	return cs
}

// evictUnit evicts a unit and returns the estimated change of the total:
// its tokens go, a notice comes for each new span.
func (e *engine) evictUnit(c unitCand, markerEst int) int {
	d := 0
	n := len(e.msgs)
	for _, i := range c.members {
		d -= e.tok[i]
		left := i > 0 && e.evicted[i-1]
		right := i+1 < n && e.evicted[i+1]
		switch {
		case left && right:
			d -= markerEst
		case !left && !right:
			d += markerEst
		}
		e.evicted[i] = true
		e.prevFate[i], e.fate[i] = e.fate[i], Evicted
	}
	return d
}

// fillGaps evicts what stands between two evicted spans when it counts no
// more than the notice it saves, so that evictions form contiguous blocks
// with fewer notices at no cost in tokens. Only gaps made of whole
// evictable units are filled.
func (e *engine) fillGaps(markerEst int) {
	n := len(e.msgs)
	for i := 0; i < n; i++ {
		if !e.evicted[i] || i+1 >= n || e.evicted[i+1] {
			continue
		}
		a := i + 1 // a kept gap starts here
		b := a
		for b < n && !e.evicted[b] {
			b++
		}
		if b == n { // no span after it
			return
		}
		if e.gapEvictable(a, b, markerEst) {
			for x := a; x < b; x++ {
				e.evicted[x] = true
				e.prevFate[x], e.fate[x] = e.fate[x], Evicted
			}
		}
		i = b - 1
	}
}

func (e *engine) gapEvictable(a, b, markerEst int) bool {
	tokens := 0
	for x := a; x < b; x++ {
		if e.prot[x] {
			return false
		}
		tokens += e.tok[x]
		if tokens > markerEst {
			return false
		}
	}
	// every unit touching the gap lies in it or is already evicted
	for x := a; x < b; x++ {
		for y := range e.msgs {
			if e.unit[y] == e.unit[x] && (y < a || y >= b) && !e.evicted[y] {
				return false
			}
		}
	}
	return true
}

// keepAlternation repairs spans whose eviction left two user messages
// adjacent (strict templates demand alternation): it evicts the user
// message before the span, or else the one after it, when that is allowed;
// or else it brings back the span's last assistant unit evicted by this
// call (which may then be shrunk). Adjacency that was in the input stays.
func (e *engine) keepAlternation() {
	n := len(e.msgs)
	for changed := true; changed; {
		changed = false
		for i := 0; i < n; i++ {
			if !e.evicted[i] {
				continue
			}
			j := i
			onlyUsers := true
			for ; j < n && (e.evicted[j] || e.msgs[j].Role == RoleSystem); j++ {
				if e.evicted[j] && e.msgs[j].Role != RoleUser {
					onlyUsers = false
				}
			}
			p := i - 1
			for p >= 0 && e.msgs[p].Role == RoleSystem && !e.evicted[p] {
				p--
			}
			if p < 0 || j >= n || onlyUsers || e.msgs[p].Role != RoleUser || e.msgs[j].Role != RoleUser {
				i = j
				continue
			}
			if e.evictWhole(p) || e.evictWhole(j) || e.unevictOne(i, j) {
				changed = true
				break
			}
			i = j
		}
	}
}

// unevictOne brings back the last assistant unit in [i, j) that lies
// wholly in it and was evicted by this call, not by a replayed plan.
func (e *engine) unevictOne(i, j int) bool {
	for x := j - 1; x >= i; x-- {
		if !e.evicted[x] || e.planned[x] || e.msgs[x].Role != RoleAssistant {
			continue
		}
		ok := true
		for y := range e.msgs {
			if e.unit[y] == e.unit[x] && (y < i || y >= j || e.planned[y]) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for y := range e.msgs {
			if e.unit[y] == e.unit[x] {
				e.evicted[y] = false
				e.fate[y] = e.prevFate[y]
			}
		}
		return true
	}
	return false
}

// evictWhole evicts message i with its unit if none of it is protected.
func (e *engine) evictWhole(i int) bool {
	if e.prot[i] || e.evicted[i] {
		return false
	}
	for y := range e.msgs {
		if e.unit[y] == e.unit[i] {
			e.evicted[y] = true
			e.prevFate[y], e.fate[y] = e.fate[y], Evicted
		}
	}
	return true
}

// shrink cuts kept messages in place, middle-out, biggest first and the
// task last, until need tokens are gone. It reports whether it cut any. A
// message a replayed plan shrank already is cut again, from its original
// text, when its shrunk text no longer fits (the count rose, or the window
// shrank): it keeps one notice and its stored id.
func (e *engine) shrink(need int) bool {
	var order []int
	for i, m := range e.msgs {
		if e.evicted[i] || m.Role == RoleSystem {
			continue
		}
		if e.tok[i]-e.rest[i] > e.o.MinShrink {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := order[a], order[b]
		if (x == e.task) != (y == e.task) {
			return y == e.task
		}
		return e.tok[x]-e.rest[x] > e.tok[y]-e.rest[y]
	})
	did := false
	for _, i := range order {
		if need <= 0 {
			break
		}
		have := e.tok[i] - e.rest[i]
		target := have - need
		if target < e.o.MinShrink {
			target = e.o.MinShrink
		}
		if target >= have {
			continue
		}
		id := e.shrinkID[i]
		if e.fate[i] != Shrunk || id == "" {
			id, _ = e.store([]Message{e.msgs[i]})
		}
		notice := func(removed int) string {
			return e.shrinkNotice("message", removed, id)
		}
		orig := e.tok0[i] - e.rest[i]
		s, removed := middleOut(e.k, e.msgs[i].Text, orig, target, notice)
		before := e.tok[i]
		e.setText(i, s)
		e.fate[i] = Shrunk
		e.shrinkID[i] = id
		e.removed[i] = removed
		need -= before - e.tok[i]
		did = true
	}
	return did
}

func (e *engine) store(msgs []Message) (id, errText string) {
	if e.o.Store == nil {
		return "", ""
	}
	id, err := e.o.Store(msgs)
	if err != nil {
		return "", err.Error()
	}
	return id, ""
}

func (e *engine) shrinkNotice(what string, removed int, id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[ctxkit: %d tokens were removed from the middle of this %s to fit the context window.", removed, what)
	if id != "" {
		fmt.Fprintf(&b, " The whole %s is stored as %q: %s.]", what, id, e.o.RecallHint(id))
	} else {
		b.WriteString(" It was not kept: if you need it, produce it again rather than guessing.]")
	}
	return b.String()
}

// notice is the text standing for an evicted span. It carries no live
// counter: the same span gives the same bytes on every turn.
func (e *engine) notice(messages, tokens int, tools map[string]int, id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[ctxkit: %d earlier message", messages)
	if messages != 1 {
		b.WriteByte('s')
	}
	fmt.Fprintf(&b, " (%d tokens) were removed here to fit the context window", tokens)
	if len(tools) > 0 {
		names := make([]string, 0, len(tools))
		calls := 0
		for n, c := range tools {
			names = append(names, n)
			calls += c
		}
		sort.Strings(names)
		if calls == 1 {
			b.WriteString(", including 1 tool call and its output (")
		} else {
			fmt.Fprintf(&b, ", including %d tool calls and their output (", calls)
		}
		for j, n := range names {
			if j == 8 {
				fmt.Fprintf(&b, ", and %d more", len(names)-j)
				break
			}
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s ×%d", n, tools[n])
		}
		b.WriteString(")")
	}
	if id != "" {
		fmt.Fprintf(&b, ". They are stored as %q: %s.]", id, e.o.RecallHint(id))
	} else {
		b.WriteString(". They were not kept: if you need them, run the tools again or ask rather than guessing.]")
	}
	return b.String()
}

// render builds the output: evicted runs become spans with notices (new
// spans are stored when final is set, otherwise a placeholder id stands in)
// and returns the exact total.
func (e *engine) render(final bool) int {
	n := len(e.msgs)
	e.out = e.out[:0]
	e.source = e.source[:0]
	e.spans = e.spans[:0]
	if e.carry == nil {
		e.carry = make([]int, n)
	}
	for i := range e.carry {
		e.carry[i] = -1
	}
	pre := make(map[int]string)  // message -> notice to prepend
	post := make(map[int]string) // message -> notice to append
	insert := make(map[int]int)  // first evicted index -> span
	for i := 0; i < n; {
		if !e.evicted[i] {
			i++
			continue
		}
		j := i
		for {
			if j+1 < n && e.evicted[j+1] {
				j++
				continue
			}
			// kept system messages between evicted ones stay in place
			// but do not split the span
			s := j + 1
			for s < n && !e.evicted[s] && e.msgs[s].Role == RoleSystem {
				s++
			}
			if s > j+1 && s < n && e.evicted[s] {
				j = s
				continue
			}
			break
		}
		sp := Span{First: i, Last: j}
		var evicted []Message
		for x := i; x <= j; x++ {
			if !e.evicted[x] {
				continue
			}
			sp.Messages++
			if final {
				evicted = append(evicted, e.msgs[x])
			}
			sp.Tokens += e.tok0[x]
			for _, c := range e.msgs[x].ToolCalls {
				if sp.Tools == nil {
					sp.Tools = make(map[string]int)
				}
				sp.Tools[c.Name]++
			}
		}
		key := [2]int{i, j}
		rec, ok := e.spanRec[key]
		if !ok {
			if final {
				var id, errText string
				id, errText = e.store(evicted)
				rec = spanRec{id: id, storeErr: errText}
				rec.marker = e.notice(sp.Messages, sp.Tokens, sp.Tools, id)
				e.digest(&rec, evicted)
				if !e.ownSpans {
					e.spanRec = copySpanRecs(e.spanRec)
					e.ownSpans = true
				}
				e.spanRec[key] = rec
			} else {
				rec.marker = e.notice(sp.Messages, sp.Tokens, sp.Tools, "ctx-0123456789abcdef")
			}
		}
		sp.StoreID, sp.StoreErr, sp.Notice = rec.id, rec.storeErr, rec.marker
		sp.Summarized, sp.DigestErr = rec.summarized, rec.digestErr
		k := len(e.spans)
		// the neighbours, seen through kept system messages (which
		// templates hoist and which are never edited)
		p, q := i-1, j+1
		for p >= 0 && e.msgs[p].Role == RoleSystem {
			p--
		}
		for q < n && e.msgs[q].Role == RoleSystem {
			q++
		}
		var prevRole, nextRole Role
		if p >= 0 {
			prevRole = e.msgs[p].Role
		}
		if q < n {
			nextRole = e.msgs[q].Role
		}
		switch {
		case nextRole == RoleUser || nextRole == RoleTool:
			sp.Placement = Prepended
			sp.target = q
			pre[q] = rec.marker
			e.carry[q] = k
		case prevRole == RoleUser:
			sp.Placement = Appended
			sp.target = p
			post[p] = rec.marker
			e.carry[p] = k
		default:
			sp.Placement = Inserted
			insert[i] = k
		}
		e.spans = append(e.spans, sp)
		i = j + 1
	}
	total := e.fixed
	for i := 0; i < n; i++ {
		if k, ok := insert[i]; ok {
			e.spans[k].At = len(e.out)
			m := Message{Role: RoleUser, Text: e.spans[k].Notice}
			t, _ := e.k.text(m.Text)
			total += t + e.o.MessageOverhead
			e.out = append(e.out, m)
			e.source = append(e.source, -1)
		}
		if e.evicted[i] {
			continue
		}
		m := e.msgs[i]
		m.Text = e.curText(i)
		p, hasPre := pre[i]
		q, hasPost := post[i]
		if hasPre || hasPost {
			var b strings.Builder
			if hasPre {
				b.WriteString(p)
				b.WriteString("\n\n")
			}
			b.WriteString(m.Text)
			if hasPost {
				b.WriteString("\n\n")
				b.WriteString(q)
			}
			m.Text = b.String()
			t, _ := e.k.text(m.Text)
			total += t + e.rest[i]
			for k := range e.spans {
				if e.spans[k].Placement != Inserted && e.spans[k].target == i {
					e.spans[k].At = len(e.out)
				}
			}
		} else {
			total += e.tok[i]
		}
		e.out = append(e.out, m)
		e.source = append(e.source, i)
	}
	e.total = total
	return total
}

func copySpanRecs(m map[[2]int]spanRec) map[[2]int]spanRec {
	c := make(map[[2]int]spanRec, len(m)+4)
	for k, v := range m {
		c[k] = v
	}
	return c
}

// finish renders the final output (storing new spans) unless rendered is
// set, and builds the result and the plan.
func (e *engine) finish(before, limit int, steps []string, replanned, rendered bool) *Result {
	if !rendered {
		e.render(true)
		e.fitDigests(limit)
	}
	n := len(e.msgs)
	res := &Result{
		Messages:     append([]Message(nil), e.out...),
		Source:       append([]int(nil), e.source...),
		Actions:      make([]Action, n),
		Spans:        append([]Span(nil), e.spans...),
		Compacted:    true,
		Replanned:    replanned,
		TokensBefore: before,
		TokensAfter:  e.total,
		Limit:        limit,
		Counted:      e.k.calls,
	}
	has := map[Fate]bool{}
	for i := range e.msgs {
		a := Action{Fate: e.fate[i], Span: -1, StoreID: e.shrinkID[i], TokensBefore: e.tok0[i]}
		if e.evicted[i] {
			a.Fate = Evicted
			res.EvictedTokens += e.tok0[i]
		} else {
			res.EvictedTokens += e.removed[i]
		}
		has[a.Fate] = true
		e.actions(i, &a)
		res.Actions[i] = a
	}
	for k, sp := range res.Spans {
		for i := sp.First; i <= sp.Last; i++ {
			if e.evicted[i] {
				res.Actions[i].Span = k
			}
		}
	}
	for o, src := range res.Source {
		if src < 0 {
			continue
		}
		t, _ := e.k.text(res.Messages[o].Text)
		res.Actions[src].TokensAfter = t + e.rest[src]
	}
	if replanned {
		for _, s := range []struct {
			f    Fate
			name string
		}{{Collapsed, "collapse"}, {Evicted, "evict"}, {Shrunk, "shrink"}} {
			if has[s.f] {
				steps = append(steps, s.name)
			}
		}
	}
	res.Strategy = strings.Join(steps, "+")
	if res.Strategy == "" {
		res.Strategy = "none"
	}
	p := &Plan{
		n:        n,
		chain:    e.chain[n],
		collapse: e.collapse,
		evicted:  append([]bool(nil), e.evicted...),
		text:     append([]string(nil), e.text...),
		fate:     append([]Fate(nil), e.fate...),
		shrinkID: append([]string(nil), e.shrinkID...),
		removed:  append([]int(nil), e.removed...),
		spans:    make(map[[2]int]spanRec, len(e.spans)),
	}
	for _, sp := range e.spans {
		p.spans[[2]int{sp.First, sp.Last}] = spanRec{id: sp.StoreID, marker: sp.Notice, storeErr: sp.StoreErr, summarized: sp.Summarized, digestErr: sp.DigestErr}
	}
	res.Plan = p
	return res
}

// actions marks a message that carries a notice.
func (e *engine) actions(i int, a *Action) {
	if e.carry != nil && e.carry[i] >= 0 {
		a.Marker = true
		a.Span = e.carry[i]
	}
}

// result is the answer when nothing needs doing.
func (e *engine) result(before, limit int, strategy string, compacted bool, plan *Plan) *Result {
	n := len(e.msgs)
	res := &Result{
		Messages:     e.msgs,
		Source:       make([]int, n),
		Actions:      make([]Action, n),
		Compacted:    compacted,
		TokensBefore: before,
		TokensAfter:  before,
		Limit:        limit,
		Strategy:     strategy,
		Plan:         plan,
		Counted:      e.k.calls,
	}
	for i := range res.Source {
		res.Source[i] = i
		res.Actions[i] = Action{Fate: Kept, Span: -1, TokensBefore: e.tok0[i], TokensAfter: e.tok0[i]}
	}
	return res
}
