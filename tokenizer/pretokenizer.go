package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer splits the words of a section into smaller words. first is
// true when the section starts the text (Metaspace's prepend_scheme
// "first").
type preTokenizer interface {
	split(words []string, first bool) []string
}

type preSeq []preTokenizer

func (q preSeq) split(words []string, first bool) []string {
	for _, p := range q {
		words = p.split(words, first)
	}
	return words
}

// splitter is a pre-tokenizer that splits each word on its own.
type splitter func(w string, first bool, dst []string) []string

func (f splitter) split(words []string, first bool) []string {
	out := make([]string, 0, len(words))
	for i, w := range words {
		out = f(w, first && i == 0, out)
	}
	return out
}

// behavior is how a Split keeps the matches.
type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

func parseBehavior(s string) (behavior, error) {
	switch s {
	case "Removed":
		return removed, nil
	case "Isolated":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("unsupported split behavior %q", s)
}

// span is a part of a word, matched by the pattern or not.
type span struct {
	start, end int
	match      bool
}

// applyBehavior cuts w at the matches and appends the pieces to dst.
// matches are byte ranges, in order, not overlapping, non-empty.
func applyBehavior(w string, matches [][2]int, b behavior, invert bool, dst []string) []string {
	spans := make([]span, 0, 2*len(matches)+1)
	prev := 0
	for _, m := range matches {
		if m[0] > prev {
			spans = append(spans, span{prev, m[0], invert})
		}
		spans = append(spans, span{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < len(w) {
		spans = append(spans, span{prev, len(w), invert})
	}
	switch b {
	case removed:
		for _, s := range spans {
			if !s.match {
				dst = append(dst, w[s.start:s.end])
			}
		}
	case isolated:
		for _, s := range spans {
			dst = append(dst, w[s.start:s.end])
		}
	case mergedWithPrevious:
		// a match joins the piece before it unless that was a match too
		var pieces [][2]int
		prevMatch := false
		for _, sp := range spans {
			if sp.match && !prevMatch && len(pieces) > 0 {
				pieces[len(pieces)-1][1] = sp.end
			} else {
				pieces = append(pieces, [2]int{sp.start, sp.end})
			}
			prevMatch = sp.match
		}
		for _, p := range pieces {
			dst = append(dst, w[p[0]:p[1]])
		}
	case mergedWithNext:
		// a match joins the piece after it unless that is a match too
		n := len(dst)
		nextMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !nextMatch && len(dst) > n {
				last := dst[len(dst)-1]
				dst[len(dst)-1] = w[sp.start : sp.end+len(last)]
			} else {
				dst = append(dst, w[sp.start:sp.end])
			}
			nextMatch = sp.match
		}
		slices.Reverse(dst[n:])
	case contiguous:
		for i := 0; i < len(spans); {
			j := i + 1
			if spans[i].match {
				for j < len(spans) && spans[j].match {
					j++
				}
			}
			dst = append(dst, w[spans[i].start:spans[j-1].end])
			i = j
		}
	}
	return dst
}

// runeMatches returns one match per rune of w for which pred holds.
func runeMatches(w string, pred func(rune) bool) [][2]int {
	var ms [][2]int
	for i, r := range w {
		if pred(r) {
			ms = append(ms, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	return ms
}

func parsePreTokenizer(m json.RawMessage) (preTokenizer, error) {
	if isNull(m) {
		return nil, nil
	}
	typ, err := typeOf(m)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		q, err := parseSequence(m, "pretokenizers", parsePreTokenizer)
		if err != nil {
			return nil, err
		}
		return preSeq(q), nil
	case "Split":
		var v struct {
			Pattern  patternJSON `json:"pattern"`
			Behavior string      `json:"behavior"`
			Invert   bool        `json:"invert"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Split", err)
		}
		b, err := parseBehavior(v.Behavior)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", "Split", err)
		}
		var find func(w string) [][2]int
		switch {
		case v.Pattern.String != nil:
			lit := *v.Pattern.String
			if lit == "" {
				return nil, fmt.Errorf("%s: empty pattern", "Split")
			}
			find = func(w string) [][2]int {
				var ms [][2]int
				for off := 0; ; {
					i := strings.Index(w[off:], lit)
					if i < 0 {
						return ms
					}
					ms = append(ms, [2]int{off + i, off + i + len(lit)})
					off += i + len(lit)
				}
			}
		case v.Pattern.Regex != nil:
			if sc := knownScanner(*v.Pattern.Regex); sc != nil {
				find = sc
				break
			}
			re, err := compileRegex(*v.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", "Split", err)
			}
			find = func(w string) [][2]int {
				var ms [][2]int
				re.each(w, func(s, e int) { ms = append(ms, [2]int{s, e}) })
				return ms
			}
		default:
			return nil, fmt.Errorf("%s: pattern is neither String nor Regex", "Split")
		}
		return splitter(func(w string, _ bool, dst []string) []string {
			return applyBehavior(w, find(w), b, v.Invert, dst)
		}), nil
	case "ByteLevel":
		v := struct {
			AddPrefixSpace bool `json:"add_prefix_space"`
			UseRegex       bool `json:"use_regex"`
		}{AddPrefixSpace: true, UseRegex: true}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "ByteLevel", err)
		}
		return splitter(func(w string, _ bool, dst []string) []string {
			if v.AddPrefixSpace && !strings.HasPrefix(w, " ") {
				w = " " + w
			}
			n := len(dst)
			if v.UseRegex {
				dst = applyBehavior(w, gpt2Matches(w), isolated, false, dst)
			} else {
				dst = append(dst, w)
			}
			for i := n; i < len(dst); i++ {
				dst[i] = byteLevel(dst[i])
			}
			return dst
		}), nil
	case "Metaspace":
		var v struct {
			Replacement    *string `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
			Split          *bool   `json:"split"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Metaspace", err)
		}
		repl := "▁"
		if v.Replacement != nil {
			repl = *v.Replacement
		}
		if repl == "" {
			return nil, fmt.Errorf("%s: empty replacement", "Metaspace")
		}
		scheme := "always"
		if v.AddPrefixSpace != nil && !*v.AddPrefixSpace {
			scheme = "never"
		}
		if v.PrependScheme != nil {
			scheme = *v.PrependScheme
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return nil, fmt.Errorf("%s: unsupported prepend_scheme %q", "Metaspace", scheme)
		}
		split := v.Split == nil || *v.Split
		return splitter(func(w string, first bool, dst []string) []string {
			w = strings.ReplaceAll(w, " ", repl)
			if (scheme == "always" || (scheme == "first" && first)) && !strings.HasPrefix(w, repl) {
				w = repl + w
			}
			if !split {
				return append(dst, w)
			}
			var ms [][2]int
			for off := 0; ; {
				i := strings.Index(w[off:], repl)
				if i < 0 {
					break
				}
				ms = append(ms, [2]int{off + i, off + i + len(repl)})
				off += i + len(repl)
			}
			return applyBehavior(w, ms, mergedWithNext, false, dst)
		}), nil
	case "Whitespace":
		return splitter(func(w string, _ bool, dst []string) []string {
			// \w+|[^\w\s]+, the rest removed
			start, cls := 0, 0 // cls: 0 space, 1 word, 2 other
			for i, r := range w {
				c := 2
				switch {
				case isWordRune(r):
					c = 1
				case unicode.IsSpace(r):
					c = 0
				}
				if c != cls {
					if cls != 0 && i > start {
						dst = append(dst, w[start:i])
					}
					start, cls = i, c
				}
			}
			if cls != 0 && len(w) > start {
				dst = append(dst, w[start:])
			}
			return dst
		}), nil
	case "CharDelimiterSplit":
		var v struct {
			Delimiter string `json:"delimiter"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "CharDelimiterSplit", err)
		}
		if utf8.RuneCountInString(v.Delimiter) != 1 {
			return nil, fmt.Errorf("%s: delimiter %q is not one character", "CharDelimiterSplit", v.Delimiter)
		}
		return splitter(func(w string, _ bool, dst []string) []string {
			for _, f := range strings.Split(w, v.Delimiter) {
				if f != "" {
					dst = append(dst, f)
				}
			}
			return dst
		}), nil
	case "WhitespaceSplit":
		return splitter(func(w string, _ bool, dst []string) []string {
			return append(dst, strings.FieldsFunc(w, unicode.IsSpace)...)
		}), nil
	case "BertPreTokenizer":
		return splitter(bertPreTokenize), nil
	case "Punctuation":
		v := struct {
			Behavior string `json:"behavior"`
		}{"Isolated"}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Punctuation", err)
		}
		b, err := parseBehavior(v.Behavior)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", "Punctuation", err)
		}
		return splitter(func(w string, _ bool, dst []string) []string {
			return applyBehavior(w, runeMatches(w, isBertPunct), b, false, dst)
		}), nil
	case "Digits":
		var v struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Digits", err)
		}
		b := contiguous
		if v.Individual {
			b = isolated
		}
		return splitter(func(w string, _ bool, dst []string) []string {
			return applyBehavior(w, runeMatches(w, unicode.IsNumber), b, false, dst)
		}), nil
	case "":
		return nil, fmt.Errorf("pre-tokenizer without a type")
	}
	return nil, fmt.Errorf("unsupported pre-tokenizer type %q", typ)
}

// bertPreTokenize is BertPreTokenizer: w split at white space, each
// punctuation character a word of its own.
func bertPreTokenize(w string, _ bool, dst []string) []string {
	for _, f := range strings.FieldsFunc(w, unicode.IsSpace) {
		dst = applyBehavior(f, runeMatches(f, isBertPunct), isolated, false, dst)
	}
	return dst
}

// byteToRune is GPT-2's map of bytes to printable characters.
var byteToRune = func() [256]rune {
	var t [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}()

// byteLevel maps each byte of w to its GPT-2 character.
func byteLevel(w string) string {
	n := 0
	for i := 0; i < len(w); i++ {
		n += utf8.RuneLen(byteToRune[w[i]])
	}
	b := make([]byte, 0, n)
	for i := 0; i < len(w); i++ {
		b = utf8.AppendRune(b, byteToRune[w[i]])
	}
	return string(b)
}
