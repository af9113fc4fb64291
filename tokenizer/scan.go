package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The split patterns of the most common models, run by hand-written
// scanners instead of the backtracking regexp2 engine (same matches, see
// TestScannersMatchRegex and FuzzScanners).
const (
	patGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// scanner is one of the known patterns.
type scanner struct {
	llama     bool // the Llama 3 / Qwen 2 family rather than GPT-2
	maxDigits int  // Llama 3: 3, Qwen 2: 1, GPT-2: unlimited (0)
}

// knownScanner returns a matcher for pat if it is a known pattern.
func knownScanner(pat string) func(string) [][2]int {
	var sc scanner
	switch pat {
	case patGPT2:
		sc = scanner{}
	case patLlama3:
		sc = scanner{llama: true, maxDigits: 3}
	case patQwen2:
		sc = scanner{llama: true, maxDigits: 1}
	default:
		return nil
	}
	return sc.matches
}

// gpt2Matches splits w as ByteLevel's use_regex does.
func gpt2Matches(w string) [][2]int { return scanner{}.matches(w) }

func (sc scanner) matches(w string) [][2]int {
	ms := make([][2]int, 0, len(w)/4+1)
	for i := 0; i < len(w); {
		e := sc.next(w, i)
		ms = append(ms, [2]int{i, e})
		i = e
	}
	return ms
}

func isL(r rune) bool {
	return r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') || r >= utf8.RuneSelf && unicode.IsLetter(r)
}
func isN(r rune) bool { return '0' <= r && r <= '9' || r >= utf8.RuneSelf && unicode.IsNumber(r) }
func isS(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}
func isOther(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// runeAt decodes the rune at i (size 0 at the end).
func runeAt(w string, i int) (rune, int) {
	if i >= len(w) {
		return -1, 0
	}
	if c := w[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(w[i:])
}

// run returns the end of the run of runes from i for which pred holds.
func run(w string, i int, pred func(rune) bool) int {
	for i < len(w) {
		r, n := runeAt(w, i)
		if !pred(r) {
			break
		}
		i += n
	}
	return i
}

// next returns the end of the match that starts at i (there is always
// one: the last alternative \s+ and the others cover every rune).
func (sc scanner) next(w string, i int) int {
	r, n := runeAt(w, i)
	// contractions
	if r == '\'' {
		if e := sc.contraction(w, i+1); e > 0 {
			return e
		}
	}
	if sc.llama {
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if r != '\r' && r != '\n' && !isL(r) && !isN(r) {
			if r2, _ := runeAt(w, i+n); r2 >= 0 && isL(r2) {
				return run(w, i+n, isL)
			}
		} else if isL(r) {
			return run(w, i, isL)
		}
		// \p{N}{1,max}
		if isN(r) {
			e := i
			for k := 0; k < sc.maxDigits; k++ {
				r2, n2 := runeAt(w, e)
				if r2 < 0 || !isN(r2) {
					break
				}
				e += n2
			}
			return e
		}
		// ?[^\s\p{L}\p{N}]+[\r\n]*
		j := i
		if r == ' ' {
			j++
		}
		if r2, _ := runeAt(w, j); r2 >= 0 && isOther(r2) {
			e := run(w, j, isOther)
			return run(w, e, func(r rune) bool { return r == '\r' || r == '\n' })
		}
		// \s*[\r\n]+ : up to the last newline of the white space run
		if isS(r) {
			end := run(w, i, isS)
			last := -1
			for k := i; k < end; {
				r2, n2 := runeAt(w, k)
				k += n2
				if r2 == '\r' || r2 == '\n' {
					last = k
				}
			}
			if last > 0 {
				return last
			}
			return sc.spaces(w, i, end)
		}
		return i + n // unreachable: every rune is L, N, S or other
	}
	// GPT-2: ' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+'
	j := i
	if r == ' ' {
		j++
	}
	if r2, _ := runeAt(w, j); r2 >= 0 {
		switch {
		case isL(r2):
			return run(w, j, isL)
		case isN(r2):
			return run(w, j, isN)
		case isOther(r2):
			return run(w, j, isOther)
		}
	}
	return sc.spaces(w, i, run(w, i, isS))
}

// spaces is \s+(?!\S)|\s+ for the white space run [i, end): all of it at
// the end of w, else all but its last rune, else that single rune.
func (sc scanner) spaces(w string, i, end int) int {
	if end >= len(w) {
		return end
	}
	_, n := utf8.DecodeLastRuneInString(w[i:end])
	if end-n > i {
		return end - n
	}
	return end
}

// contraction returns the end of 's|'t|'re|'ve|'m|'ll|'d after the quote
// at i-1, or 0.
func (sc scanner) contraction(w string, i int) int {
	lower := func(k int) byte {
		if k >= len(w) {
			return 0
		}
		c := w[k]
		if sc.llama && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	switch lower(i) {
	case 's', 't', 'm', 'd':
		return i + 1
	case 'r', 'v':
		if lower(i+1) == 'e' {
			return i + 2
		}
	case 'l':
		if lower(i+1) == 'l' {
			return i + 2
		}
	}
	return 0
}
