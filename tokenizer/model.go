package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode/utf8"
)

// model turns one pre-tokenized word into ids, appended to dst.
type model interface {
	encode(word string, dst []int) []int
}

func parseModel(m json.RawMessage) (model, error) {
	typ, err := typeOf(m)
	if err != nil {
		return nil, err
	}
	if typ == "" { // old files leave the type out
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(m, &probe); err != nil {
			return nil, err
		}
		switch {
		case probe["merges"] != nil:
			typ = "BPE"
		case probe["max_input_chars_per_word"] != nil:
			typ = "WordPiece"
		case bytes.HasPrefix(bytes.TrimSpace(probe["vocab"]), []byte("[")):
			typ = "Unigram"
		default:
			typ = "WordLevel"
		}
	}
	switch typ {
	case "BPE":
		return parseBPE(m)
	case "WordPiece":
		return parseWordPiece(m)
	case "Unigram":
		return parseUnigram(m)
	case "WordLevel":
		return parseWordLevel(m)
	}
	return nil, fmt.Errorf("unsupported model type %q", typ)
}

func checkVocab(vocab map[string]int) error {
	for tok, id := range vocab {
		if id < 0 {
			return fmt.Errorf("token %q has negative id %d", tok, id)
		}
	}
	return nil
}

// wordCache remembers the ids of short words; it is bounded and locked.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

const (
	cacheMaxWords = 1 << 15
	cacheMaxLen   = 256 // bytes: longer words are not cached
)

func (c *wordCache) get(w string) ([]int, bool) {
	if len(w) > cacheMaxLen {
		return nil, false
	}
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int) {
	if len(w) > cacheMaxLen {
		return
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMaxWords {
		c.m = make(map[string][]int, 1024)
	}
	c.m[strings.Clone(w)] = ids
	c.mu.Unlock()
}

// BPE

type bpe struct {
	vocab        map[string]int
	merges       map[uint64]merge // pair of ids -> merge
	unk          int              // -1: none
	prefix       string           // continuing_subword_prefix
	suffix       string           // end_of_word_suffix
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	// spaceSplit: the vocabulary has "▁" and no token with a "▁" after
	// another character, so no token can cross the start of a "▁" run and
	// a long SentencePiece-style word can be encoded run by run (and
	// cached) with the same result.
	spaceSplit bool
	byteIDs    [256]int // <0xXX> tokens, -1 when missing
	cache      wordCache
}

type merge struct {
	rank, id int
}

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func parseBPE(m json.RawMessage) (*bpe, error) {
	var v struct {
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		Dropout      *float64        `json:"dropout"`
		UnkToken     *string         `json:"unk_token"`
		Prefix       *string         `json:"continuing_subword_prefix"`
		Suffix       *string         `json:"end_of_word_suffix"`
		FuseUnk      bool            `json:"fuse_unk"`
		ByteFallback bool            `json:"byte_fallback"`
		IgnoreMerges bool            `json:"ignore_merges"`
	}
	if err := json.Unmarshal(m, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", "BPE", err)
	}
	if v.Dropout != nil && *v.Dropout != 0 {
		return nil, fmt.Errorf("%s: dropout %g is not supported (counts would be random)", "BPE", *v.Dropout)
	}
	if err := checkVocab(v.Vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", "BPE", err)
	}
	b := &bpe{vocab: v.Vocab, unk: -1, fuseUnk: v.FuseUnk, byteFallback: v.ByteFallback, ignoreMerges: v.IgnoreMerges}
	if v.UnkToken != nil {
		id, ok := v.Vocab[*v.UnkToken]
		if !ok {
			return nil, fmt.Errorf("%s: unk_token %q is not in the vocabulary", "BPE", *v.UnkToken)
		}
		b.unk = id
	}
	if v.Prefix != nil {
		b.prefix = *v.Prefix
	}
	if v.Suffix != nil {
		b.suffix = *v.Suffix
	}
	for i := range b.byteIDs {
		b.byteIDs[i] = -1
		if id, ok := v.Vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.byteIDs[i] = id
		}
	}
	if _, ok := v.Vocab[spaceMark]; ok && b.prefix == "" && b.suffix == "" {
		b.spaceSplit = true
		for tok := range v.Vocab {
			if strings.Contains(strings.TrimLeft(tok, spaceMark), spaceMark) {
				b.spaceSplit = false
				break
			}
		}
	}
	// merges are "a b" strings (older files) or [a, b] pairs (newer ones)
	var pairs [][2]string
	var strs []string
	if !isNull(v.Merges) {
		if err := json.Unmarshal(v.Merges, &strs); err != nil {
			var raw [][]string
			if err2 := json.Unmarshal(v.Merges, &raw); err2 != nil {
				return nil, fmt.Errorf("%s: merges are neither \"a b\" strings (%v) nor [a, b] pairs (%v)", "BPE", err, err2)
			}
			for rank, p := range raw {
				if len(p) != 2 {
					return nil, fmt.Errorf("%s: merge %d has %d parts", "BPE", rank, len(p))
				}
				pairs = append(pairs, [2]string{p[0], p[1]})
			}
		} else {
			pairs = make([][2]string, len(strs))
			for rank, s := range strs {
				l, r, _ := strings.Cut(s, " ")
				if strings.Count(s, " ") != 1 {
					return nil, fmt.Errorf("%s: merge %d %q is not two tokens", "BPE", rank, s)
				}
				pairs[rank] = [2]string{l, r}
			}
		}
	}
	b.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		l, r := p[0], p[1]
		a, ok1 := v.Vocab[l]
		c, ok2 := v.Vocab[r]
		// The merged token drops the right part's continuation prefix.
		nt := l + strings.TrimPrefix(r, b.prefix)
		if b.prefix == "" {
			nt = l + r
		}
		id, ok3 := v.Vocab[nt]
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("%s: merge %d (%q, %q) uses a token not in the vocabulary", "BPE", rank, l, r)
		}
		k := pairKey(a, c)
		if _, dup := b.merges[k]; !dup {
			b.merges[k] = merge{rank: rank, id: id}
		}
	}
	return b, nil
}

// spaceMark is SentencePiece's space.
const spaceMark = "▁"

func (b *bpe) encode(w string, dst []int) []int {
	if b.spaceSplit && len(w) > cacheMaxLen {
		// cut before each run of "▁" that follows another character
		start := 0
		for i := 1; i < len(w); {
			j := strings.Index(w[i:], spaceMark)
			if j < 0 {
				break
			}
			i += j
			if !strings.HasSuffix(w[:i], spaceMark) {
				dst = b.encodeWord(w[start:i], dst)
				start = i
			}
			i += len(spaceMark)
		}
		return b.encodeWord(w[start:], dst)
	}
	return b.encodeWord(w, dst)
}

func (b *bpe) encodeWord(w string, dst []int) []int {
	if ids, ok := b.cache.get(w); ok {
		return append(dst, ids...)
	}
	if b.ignoreMerges {
		if id, ok := b.vocab[w]; ok {
			b.cache.put(w, []int{id})
			return append(dst, id)
		}
	}
	ids := b.merge(b.symbols(w))
	b.cache.put(w, ids)
	return append(dst, ids...)
}

// symbols is the word as initial tokens: characters (with prefix and
// suffix), bytes for characters outside the vocabulary when byte_fallback
// is set, else the unknown token.
func (b *bpe) symbols(w string) []int {
	syms := make([]int, 0, len(w))
	lastUnk := false
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+n]
		if i > 0 && b.prefix != "" {
			s = b.prefix + s
		}
		if i+n == len(w) && b.suffix != "" {
			s += b.suffix
		}
		i += n
		if id, ok := b.vocab[s]; ok {
			syms = append(syms, id)
			lastUnk = false
			continue
		}
		if b.byteFallback {
			ok := true
			for k := i - n; k < i; k++ {
				ok = ok && b.byteIDs[w[k]] >= 0
			}
			if ok {
				for k := i - n; k < i; k++ {
					syms = append(syms, b.byteIDs[w[k]])
				}
				lastUnk = false
				continue
			}
		}
		if b.unk < 0 {
			continue // no unknown token: the character is dropped
		}
		if b.fuseUnk && lastUnk {
			continue
		}
		syms = append(syms, b.unk)
		lastUnk = true
	}
	return syms
}

// mergeItem is a candidate merge of the symbol at pos with the next one.
type mergeItem struct {
	rank, pos int
	left, rt  int // ids at the time it was pushed
}

// mergeHeap is a binary min-heap of merges by rank, then position.
type mergeHeap []mergeItem

func (h mergeHeap) less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}

func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *mergeHeap) push(it mergeItem) {
	*h = append(*h, it)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *mergeHeap) pop() mergeItem {
	q := *h
	it := q[0]
	q[0] = q[len(q)-1]
	*h = q[:len(q)-1]
	h.down(0)
	return it
}

// merge applies the merges in rank order (leftmost first on ties).
func (b *bpe) merge(ids []int) []int {
	n := len(ids)
	if n < 2 {
		return ids
	}
	next := make([]int, n)
	prev := make([]int, n)
	for i := range ids {
		next[i], prev[i] = i+1, i-1
	}
	next[n-1] = -1
	h := make(mergeHeap, 0, n)
	push := func(p int) {
		q := next[p]
		if p < 0 || q < 0 {
			return
		}
		if m, ok := b.merges[pairKey(ids[p], ids[q])]; ok {
			h.push(mergeItem{rank: m.rank, pos: p, left: ids[p], rt: ids[q]})
		}
	}
	for i := 0; i < n-1; i++ {
		if m, ok := b.merges[pairKey(ids[i], ids[i+1])]; ok {
			h = append(h, mergeItem{rank: m.rank, pos: i, left: ids[i], rt: ids[i+1]})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	dead := make([]bool, n)
	for len(h) > 0 {
		it := h.pop()
		p := it.pos
		if dead[p] || ids[p] != it.left {
			continue
		}
		q := next[p]
		if q < 0 || ids[q] != it.rt {
			continue
		}
		ids[p] = b.merges[pairKey(it.left, it.rt)].id
		dead[q] = true
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		if prev[p] >= 0 {
			push(prev[p])
		}
		push(p)
	}
	out := make([]int, 0, n)
	for i := 0; i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}

// WordPiece

type wordPiece struct {
	vocab    map[string]int
	unk      int
	prefix   string
	maxChars int
	cache    wordCache
}

func parseWordPiece(m json.RawMessage) (*wordPiece, error) {
	v := struct {
		Vocab    map[string]int `json:"vocab"`
		Unk      string         `json:"unk_token"`
		Prefix   *string        `json:"continuing_subword_prefix"`
		MaxChars int            `json:"max_input_chars_per_word"`
	}{Unk: "[UNK]", MaxChars: 100}
	if err := json.Unmarshal(m, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", "WordPiece", err)
	}
	prefix := "##"
	if v.Prefix != nil {
		prefix = *v.Prefix
	}
	return newWordPiece(v.Vocab, v.Unk, prefix, v.MaxChars)
}

func newWordPiece(vocab map[string]int, unkToken, prefix string, maxChars int) (*wordPiece, error) {
	if err := checkVocab(vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", "WordPiece", err)
	}
	unk, ok := vocab[unkToken]
	if !ok {
		return nil, fmt.Errorf("%s: unk_token %q is not in the vocabulary", "WordPiece", unkToken)
	}
	return &wordPiece{vocab: vocab, unk: unk, prefix: prefix, maxChars: maxChars}, nil
}

func (wp *wordPiece) encode(w string, dst []int) []int {
	if ids, ok := wp.cache.get(w); ok {
		return append(dst, ids...)
	}
	if utf8.RuneCountInString(w) > wp.maxChars {
		return append(dst, wp.unk)
	}
	var ids []int
	var buf []byte // prefix + piece, for the lookups after the first piece
	for start := 0; start < len(w); {
		end := len(w)
		found := -1
		for end > start {
			var id int
			var ok bool
			if start == 0 {
				id, ok = wp.vocab[w[:end]]
			} else {
				buf = append(append(buf[:0], wp.prefix...), w[start:end]...)
				id, ok = wp.vocab[string(buf)] // no allocation
			}
			if ok {
				found = id
				break
			}
			_, n := utf8.DecodeLastRuneInString(w[start:end])
			end -= n
		}
		if found < 0 {
			ids = []int{wp.unk}
			break
		}
		ids = append(ids, found)
		start = end
	}
	wp.cache.put(w, ids)
	return append(dst, ids...)
}

// WordLevel

type wordLevel struct {
	vocab map[string]int
	unk   int
}

func parseWordLevel(m json.RawMessage) (*wordLevel, error) {
	var v struct {
		Vocab map[string]int `json:"vocab"`
		Unk   *string        `json:"unk_token"`
	}
	if err := json.Unmarshal(m, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", "WordLevel", err)
	}
	if err := checkVocab(v.Vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", "WordLevel", err)
	}
	wl := &wordLevel{vocab: v.Vocab, unk: -1}
	if v.Unk != nil {
		id, ok := v.Vocab[*v.Unk]
		if !ok {
			return nil, fmt.Errorf("%s: unk_token %q is not in the vocabulary", "WordLevel", *v.Unk)
		}
		wl.unk = id
	}
	return wl, nil
}

func (wl *wordLevel) encode(w string, dst []int) []int {
	if id, ok := wl.vocab[w]; ok {
		return append(dst, id)
	}
	if wl.unk >= 0 {
		return append(dst, wl.unk)
	}
	return dst
}

// Unigram

type unigram struct {
	pieces       map[string]int
	scores       []float64 // by id
	unk          int       // -1: none
	unkScore     float64
	maxLen       int // bytes of the longest piece
	byteFallback bool
	byteIDs      [256]int
	cache        wordCache
}

func parseUnigram(m json.RawMessage) (*unigram, error) {
	var v struct {
		Vocab        [][2]json.RawMessage `json:"vocab"`
		UnkID        *int                 `json:"unk_id"`
		ByteFallback bool                 `json:"byte_fallback"`
	}
	if err := json.Unmarshal(m, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", "Unigram", err)
	}
	if len(v.Vocab) == 0 {
		return nil, fmt.Errorf("%s: empty vocabulary", "Unigram")
	}
	u := &unigram{pieces: make(map[string]int, len(v.Vocab)), scores: make([]float64, len(v.Vocab)), unk: -1, byteFallback: v.ByteFallback}
	minScore := math.Inf(1)
	for id, e := range v.Vocab {
		var p string
		var s float64
		if err := json.Unmarshal(e[0], &p); err != nil {
			return nil, fmt.Errorf("%s: piece %d: %w", "Unigram", id, err)
		}
		if err := json.Unmarshal(e[1], &s); err != nil {
			return nil, fmt.Errorf("%s: score of piece %d: %w", "Unigram", id, err)
		}
		u.pieces[p] = id // a duplicate piece: the last id wins, as in Rust
		u.scores[id] = s
		minScore = min(minScore, s)
		u.maxLen = max(u.maxLen, len(p))
	}
	if v.UnkID != nil {
		if *v.UnkID < 0 || *v.UnkID >= len(v.Vocab) {
			return nil, fmt.Errorf("%s: unk_id %d is out of the vocabulary", "Unigram", *v.UnkID)
		}
		u.unk = *v.UnkID
	}
	u.unkScore = minScore - 10
	for i := range u.byteIDs {
		u.byteIDs[i] = -1
		if id, ok := u.pieces[fmt.Sprintf("<0x%02X>", i)]; ok {
			u.byteIDs[i] = id
		}
	}
	return u, nil
}

func (u *unigram) encode(w string, dst []int) []int {
	if ids, ok := u.cache.get(w); ok {
		return append(dst, ids...)
	}
	ids := u.viterbi(w)
	u.cache.put(w, ids)
	return append(dst, ids...)
}

// viterbi finds the segmentation of w with the best total score; a
// character no piece covers becomes the unknown token (runs fused),
// or its bytes with byte_fallback.
func (u *unigram) viterbi(w string) []int {
	n := len(w)
	best := make([]float64, n+1)
	from := make([]int, n+1) // start of the last piece ending here
	tok := make([]int, n+1)  // its id, -2 for unknown
	for i := 1; i <= n; i++ {
		best[i] = math.Inf(-1)
	}
	for i := 0; i < n; {
		if math.IsInf(best[i], -1) {
			_, sz := utf8.DecodeRuneInString(w[i:])
			i += sz
			continue
		}
		_, sz := utf8.DecodeRuneInString(w[i:])
		single := false
		for e := i; e < n && e-i < u.maxLen; {
			_, m := utf8.DecodeRuneInString(w[e:])
			e += m
			if e-i > u.maxLen {
				break
			}
			id, ok := u.pieces[w[i:e]]
			if !ok {
				continue
			}
			if e == i+sz {
				single = true
			}
			if s := best[i] + u.scores[id]; s > best[e] {
				best[e], from[e], tok[e] = s, i, id
			}
		}
		if !single {
			if s := best[i] + u.unkScore; s > best[i+sz] {
				best[i+sz], from[i+sz], tok[i+sz] = s, i, -2
			}
		}
		i += sz
	}
	// walk back
	var rev [][3]int // start, end, id
	for e := n; e > 0; e = from[e] {
		rev = append(rev, [3]int{from[e], e, tok[e]})
	}
	var ids []int
	unkStart := -1
	flush := func(end int) {
		if unkStart < 0 {
			return
		}
		if u.byteFallback {
			ok := true
			for k := unkStart; k < end; k++ {
				ok = ok && u.byteIDs[w[k]] >= 0
			}
			if ok {
				for k := unkStart; k < end; k++ {
					ids = append(ids, u.byteIDs[w[k]])
				}
				unkStart = -1
				return
			}
		}
		if u.unk >= 0 {
			ids = append(ids, u.unk)
		}
		unkStart = -1
	}
	for k := len(rev) - 1; k >= 0; k-- {
		p := rev[k]
		if p[2] == -2 {
			if unkStart < 0 {
				unkStart = p[0]
			}
			continue
		}
		flush(p[0])
		ids = append(ids, p[2])
	}
	flush(n)
	return ids
}
