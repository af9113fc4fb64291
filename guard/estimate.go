package guard

// Estimate is the guard's default token count, made to err high against
// the tokenizers of current open models: on every kind of text measured
// (English prose, chat with markdown, Go, Python, JavaScript and shell
// code, JSON compact and indented, syslog, nginx and application logs,
// Chinese, Japanese, Korean, Cyrillic, Greek, Arabic, Hebrew, Hindi, Thai,
// accented Latin, emoji, numbers, base64, hex ids, URLs, whitespace runs,
// markdown tables, HTML, SQL and CSV, diffs, stack traces, and the
// documents of the shared test corpus) it counts at least as many tokens
// as Llama 2's SentencePiece BPE, Llama 3's and Qwen 3's byte-level BPE
// each count, whole and in every stretch of about 300 bytes (a short
// message). It is tight where those tokenizers agree and loose where they
// differ, since it must cover the most expensive of them (estimate ÷
// actual, 20 KB of each kind):
//
//	text            Llama 2  Llama 3  Qwen 3
//	English prose      1.31     1.43    1.43
//	chat (markdown)    1.23     1.45    1.43
//	Go code            1.23     1.60    1.59
//	JSON               1.27     1.87    1.44
//	syslog             1.07     1.48    1.16
//	nginx log          1.03     1.49    1.10
//	Chinese            1.22     1.64    2.14
//	Korean             1.16     2.23    2.00
//	emoji              1.36     1.40    2.10
//	numbers            1.03     1.61    1.01
//	base64             1.22     1.37    1.33
//
// (estimate_test.go measures every kind.) The smallest margin is on
// digits, which Llama 2 and Qwen count one each, as Estimate does.
//
// Outside that promise: a single short line can count a token or two
// low (Llama 2 splits rare names and words in capitals finely, and falls
// back to bytes for fullwidth letters and rare symbols); and a
// byte-level vocabulary with few merges counts up to one token per byte,
// which no estimate but the byte count bounds. A byte-level BPE with
// 32,000 merges (Llama 2's vocabulary size) is covered on whole texts of
// ASCII (not CJK, which it splits into bytes); with 5,000 merges English
// prose counts about 15% more than the estimate, with none 3.3 times as
// much. For those the guard's calibration (raised from the backend's own
// counts) or an exact tokenizer (Options.Counter) must correct the count.
//
// The rule, per byte, in one pass:
//
//   - a run of ASCII letters and digits is cut into words at each
//     lowercase-to-uppercase step and around digits; a word counts one
//     token per 4 letters, rounded up, or per 3 when it is in capitals;
//     each digit counts one (Llama 2 and Qwen split numbers into digits);
//   - a run that switches between lowercase, uppercase and digits at least
//     twice and at least once per 4 characters (base64, hex, random ids)
//     counts one token per character, as all three split them;
//   - an ASCII punctuation mark counts one, ¾ when it follows another;
//     a newline, tab or other control character counts one;
//   - a single space is free before a word or punctuation, and counts one
//     before a digit, a control character or the end (where the
//     tokenizers keep it apart); the text starts as if after a space, as
//     SentencePiece prepends one; a run of 2 or more spaces counts 1 plus
//     one per 16;
//   - a non-ASCII character counts by its UTF-8 lead byte, that is, by
//     script: Cyrillic 7/12, most 2- and 3-byte characters (Latin letters
//     with accents, Arabic, Hebrew, CJK ideographs, kana) 1¼, Greek 1⅓,
//     Indic and Thai, general punctuation and symbols, and fullwidth forms
//     1½, Hangul 1⅔, and 4-byte characters (emoji) 4, the bytes Llama 2
//     falls back to.
//
// Counts are kept in sixtieths of a token and rounded up at the end.
// Texts are assumed to be valid UTF-8 (decoded JSON is); stray
// continuation bytes count nothing.
func Estimate(text string) int {
	q := 0      // the count so far, in sixtieths of a token
	tokens := 0 // and in whole tokens
	spaces := 1 // spaces before the current byte (one at the start)
	for i := 0; i < len(text); {
		c := text[i]
		if c == ' ' {
			spaces++
			i++
			continue
		}
		k := byteClass[c]
		if spaces > 0 {
			if spaces >= 2 {
				tokens += 1 + spaces/16
			}
			if k == clsDigit || k == clsControl {
				tokens++
			}
			spaces = 0
		}
		switch k {
		case clsLower, clsUpper:
			// Most runs are one word in lowercase, perhaps capitalized.
			j := i + 1
			for j < len(text) && text[j]-'a' < 26 {
				j++
			}
			if j == len(text) || byteClass[text[j]] > clsDigit {
				tokens += (j - i + 3) / 4
				i = j
				continue
			}
			var n int
			i, n = scanRun(text, i)
			tokens += n
		case clsDigit:
			j := i + 1
			for j < len(text) && text[j]-'0' < 10 {
				j++
			}
			if j == len(text) || byteClass[text[j]] > clsDigit {
				tokens += j - i
				i = j
				continue
			}
			var n int
			i, n = scanRun(text, i)
			tokens += n
		case clsPunct:
			tokens++
			for i++; i < len(text) && byteClass[text[i]] == clsPunct; i++ {
				q += unit * 3 / 4
			}
		case clsControl:
			tokens++
			i++
		case clsLead:
			q += int(leadCost[c])
			for i++; i < len(text) && text[i]&0xC0 == 0x80; i++ {
			}
		default: // a continuation byte
			i++
		}
	}
	switch {
	case spaces >= 2:
		tokens += 1 + spaces/16
	case spaces == 1 && len(text) > 0:
		tokens++
	}
	return tokens + (q+unit-1)/unit
}

// scanRun reads the run of ASCII letters and digits at text[i:] and
// returns where it ends and its count. A run that switches between
// lowercase, uppercase and digits at least twice and at least once per 4
// characters counts one token per character; any other is counted as
// words and digits (runWords).
func scanRun(text string, i int) (end, tokens int) {
	// A switch depends on the byte and the two before it: a table lookup
	// per byte, no branch on the classes.
	sw := 0
	var last3 uint8 // the classes of the last three bytes, two bits each
	j := i
	for ; j < len(text); j++ {
		c := byteClass[text[j]]
		if c > clsDigit {
			break
		}
		last3 = (last3<<2 | c) & 63
		sw += int(switches[last3])
	}
	if n := j - i; sw >= 2 && sw*4 >= n {
		return j, n
	}
	return j, runWords(text[i:j])
}

// switches says, for three classes of a run in a row (clsNone before its
// start), whether the last byte is a switch: lowercase to uppercase,
// between letters and digits, or uppercase to lowercase after two or more
// capitals (the "e" of "HTTPServer", not of "Server").
var switches = func() (t [64]uint8) {
	for a := range uint8(4) {
		for b := range uint8(4) {
			for c := uint8(clsLower); c <= clsDigit; c++ {
				switch {
				case b == clsLower && c == clsUpper,
					b == clsDigit && c != clsDigit,
					(b == clsLower || b == clsUpper) && c == clsDigit,
					a == clsUpper && b == clsUpper && c == clsLower:
					t[a<<4|b<<2|c] = 1
				}
			}
		}
	}
	return t
}()

// runWords counts a run of letters and digits as words and digits: it is
// cut into words at each lowercase-to-uppercase step and around digits;
// each digit counts one.
func runWords(run string) int {
	var words, piece, caps int
	prev := clsNone
	for j := 0; j < len(run); {
		k := byteClass[run[j]]
		e := j + 1
		for e < len(run) && byteClass[run[e]] == k {
			e++
		}
		n := e - j
		switch k {
		case clsLower:
			piece += n
		case clsUpper:
			if prev == clsLower {
				words += pieceTokens(piece, caps)
				piece, caps = 0, 0
			}
			piece += n
			caps += n
		default: // digits
			if prev != clsNone {
				words += pieceTokens(piece, caps)
				piece, caps = 0, 0
			}
			words += n
		}
		prev = k
		j = e
	}
	if piece > 0 {
		words += pieceTokens(piece, caps)
	}
	return words
}

// unit is one token in Estimate's count.
const unit = 60

// pieceTokens is the count of a word of n letters, caps of them capitals:
// one token per 4 letters, per 3 in a word in capitals.
func pieceTokens(n, caps int) int {
	if caps == n && n > 1 {
		return (n + 2) / 3
	}
	return (n + 3) / 4
}

// Byte classes of Estimate. The three after clsNone make up letter and
// digit runs.
const (
	clsNone uint8 = iota // before a run
	clsLower
	clsUpper
	clsDigit
	clsSpace
	clsControl
	clsPunct
	clsCont // a UTF-8 continuation byte
	clsLead // the first byte of a multi-byte character
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'a' && c <= 'z':
			t[c] = clsLower
		case c >= 'A' && c <= 'Z':
			t[c] = clsUpper
		case c >= '0' && c <= '9':
			t[c] = clsDigit
		case c == ' ':
			t[c] = clsSpace
		case c < 0x20 || c == 0x7f:
			t[c] = clsControl
		case c < 0x80:
			t[c] = clsPunct
		case c < 0xC0:
			t[c] = clsCont
		default:
			t[c] = clsLead
		}
	}
	return t
}()

// leadCost is what a non-ASCII character costs by its first byte, in
// sixtieths of a token.
var leadCost = func() (t [256]uint8) {
	for c := 0xC0; c < 256; c++ {
		switch {
		case c == 0xCE || c == 0xCF: // Greek
			t[c] = 80
		case c >= 0xD0 && c <= 0xD4: // Cyrillic
			t[c] = 35
		case c < 0xE0: // Latin with accents, IPA, Armenian, Hebrew, Arabic
			t[c] = 75
		case c == 0xE0: // Indic scripts, Thai
			t[c] = 90
		case c == 0xE2: // general punctuation, symbols, arrows, dingbats
			t[c] = 90
		case c >= 0xEA && c <= 0xED: // Hangul
			t[c] = 100
		case c == 0xEE || c == 0xEF: // private use, fullwidth forms
			t[c] = 90
		case c < 0xF0: // Vietnamese, kana, CJK ideographs
			t[c] = 75
		default: // emoji and other 4-byte characters
			t[c] = 240
		}
	}
	return t
}()
