package tinymodel

import (
	_ "embed"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The control tokens, at the end of the vocabulary.
const (
	// EndOfText is the BOS token (never added by the tokenizer).
	EndOfText = "<|endoftext|>"
	// IMStart opens a ChatML turn.
	IMStart = "<|im_start|>"
	// IMEnd closes a ChatML turn; it is the EOS token.
	IMEnd = "<|im_end|>"
)

// maxMerges bounds the merges learned from the corpus.
const maxMerges = 3000

//go:embed corpus.txt
var corpus string

// commonWords are frequent English words and programming terms, most
// frequent first, one a line; BPE learns them as if each had been seen
// several times mid-sentence (after a space), the first ones more often,
// so that the vocabulary covers common English beyond the small corpus.
//
//go:embed words.txt
var commonWords string

// vocabulary is the tokenizer: token strings by id (bytes as GPT-2's
// unicode characters), the merges in rank order, and the ids of the
// control tokens.
type vocabulary struct {
	tokens       []string
	merges       [][2]string
	bos, eos     int
	firstControl int // tokens[firstControl:] are control tokens
}

// vocab is learned once, on first use; it is never changed afterwards.
var vocab = sync.OnceValue(learn)

// byteRunes is GPT-2's byte-to-unicode mapping: printable Latin-1 bytes
// stand for themselves, the others (controls, space, 0x7f-0xa0, 0xad) for
// U+0100 upwards, in byte order.
func byteRunes() [256]rune {
	var m [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		switch {
		case b >= '!' && b <= '~', b >= 0xa1 && b <= 0xac, b >= 0xae:
			m[b] = rune(b)
		default:
			m[b] = next
			next++
		}
	}
	return m
}

// learn builds the vocabulary: the 256 byte tokens, then a token for each
// merge learned from the corpus, then the control tokens.
func learn() *vocabulary {
	br := byteRunes()
	v := &vocabulary{}
	known := map[string]bool{}
	for b := 0; b < 256; b++ {
		s := string(br[b])
		v.tokens = append(v.tokens, s)
		known[s] = true
	}

	// Each distinct pre-token of the corpus, as its byte symbols, with its
	// number of occurrences.
	type word struct {
		syms  []string
		count int
	}
	index := map[string]int{}
	var words []word
	add := func(piece string, count int) {
		if i, ok := index[piece]; ok {
			words[i].count += count
			return
		}
		syms := make([]string, 0, len(piece))
		for i := 0; i < len(piece); i++ {
			syms = append(syms, string(br[piece[i]]))
		}
		index[piece] = len(words)
		words = append(words, word{syms: syms, count: count})
	}
	for _, piece := range preSplit(corpus) {
		add(piece, 1)
	}
	list := strings.Fields(commonWords)
	for rank, w := range list {
		add(" "+w, 2+8*(len(list)-rank)/len(list))
	}

	// counts holds the occurrences of each adjacent pair of symbols; a
	// merge updates it for the words it changes only.
	counts := map[[2]string]int{}
	tally := func(w word, sign int) {
		for i := 0; i+1 < len(w.syms); i++ {
			p := [2]string{w.syms[i], w.syms[i+1]}
			counts[p] += sign * w.count
			if counts[p] == 0 {
				delete(counts, p)
			}
		}
	}
	for _, w := range words {
		tally(w, 1)
	}
	for len(v.merges) < maxMerges {
		// The most frequent pair; ties go to the smaller pair, so the
		// result never depends on map order.
		var best [2]string
		bestN := 0
		for p, n := range counts {
			if n > bestN || n == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		v.merges = append(v.merges, best)
		joined := best[0] + best[1]
		if !known[joined] {
			v.tokens = append(v.tokens, joined)
			known[joined] = true
		}
		for wi, w := range words {
			if !hasPair(w.syms, best) {
				continue
			}
			tally(w, -1)
			out := make([]string, 0, len(w.syms))
			for i := 0; i < len(w.syms); i++ {
				if i+1 < len(w.syms) && w.syms[i] == best[0] && w.syms[i+1] == best[1] {
					out = append(out, joined)
					i++
					continue
				}
				out = append(out, w.syms[i])
			}
			words[wi].syms = out
			tally(words[wi], 1)
		}
	}

	v.firstControl = len(v.tokens)
	v.bos = len(v.tokens)
	v.tokens = append(v.tokens, EndOfText, IMStart)
	v.eos = len(v.tokens)
	v.tokens = append(v.tokens, IMEnd)
	return v
}

// hasPair reports whether p occurs in syms.
func hasPair(syms []string, p [2]string) bool {
	for i := 0; i+1 < len(syms); i++ {
		if syms[i] == p[0] && syms[i+1] == p[1] {
			return true
		}
	}
	return false
}

// preSplit cuts text into the pieces BPE is learned on, roughly as GPT-2's
// pre-tokenizer does (contractions, an optional space and a run of
// letters, of digits or of other symbols, runs of spaces); merges never
// cross a piece's edge.
func preSplit(text string) []string {
	var out []string
	for len(text) > 0 {
		n := 0
		if text[0] == '\'' {
			for _, c := range []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"} {
				if strings.HasPrefix(text, c) {
					n = len(c)
					break
				}
			}
		}
		if n == 0 {
			start := 0
			if text[0] == ' ' && len(text) > 1 {
				start = 1
			}
			r, _ := utf8.DecodeRuneInString(text[start:])
			class := runeClass(r)
			if start == 1 && class == classSpace {
				start, class = 0, classSpace
			}
			n = start
			for n < len(text) {
				r, size := utf8.DecodeRuneInString(text[n:])
				if runeClass(r) != class {
					break
				}
				n += size
			}
			// As GPT-2's \s+(?!\S): a space before a word goes with the word.
			if class == classSpace && n > 1 && n < len(text) && text[n-1] == ' ' {
				n--
			}
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

// The rune classes of preSplit.
const (
	classLetter = iota
	classDigit
	classSpace
	classOther
)

func runeClass(r rune) int {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classDigit
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}
