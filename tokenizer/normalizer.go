package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a section of text before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

type normFunc func(string) string

func (f normFunc) normalize(s string) string { return f(s) }

type normSeq []normalizer

func (q normSeq) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// patternJSON is the pattern of Replace and Split: {"String": s} or
// {"Regex": r}.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func parseNormalizer(m json.RawMessage) (normalizer, error) {
	if isNull(m) {
		return nil, nil
	}
	typ, err := typeOf(m)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		q, err := parseSequence(m, "normalizers", parseNormalizer)
		if err != nil {
			return nil, err
		}
		return normSeq(q), nil
	case "NFC":
		return normFunc(norm.NFC.String), nil
	case "NFD":
		return normFunc(norm.NFD.String), nil
	case "NFKC":
		return normFunc(norm.NFKC.String), nil
	case "NFKD":
		return normFunc(norm.NFKD.String), nil
	case "Lowercase":
		return normFunc(lower), nil
	case "Nmt":
		return normFunc(nmt), nil
	case "StripAccents":
		return normFunc(removeMarks), nil
	case "Strip":
		v := struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}{true, true}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Strip", err)
		}
		return normFunc(func(s string) string {
			if v.Left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if v.Right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}), nil
	case "Prepend":
		var v struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Prepend", err)
		}
		return normFunc(func(s string) string {
			if s == "" {
				return s
			}
			return v.Prepend + s
		}), nil
	case "Replace":
		var v struct {
			Pattern patternJSON `json:"pattern"`
			Content string      `json:"content"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Replace", err)
		}
		switch {
		case v.Pattern.String != nil:
			if *v.Pattern.String == "" {
				return nil, fmt.Errorf("%s: empty pattern", "Replace")
			}
			old := *v.Pattern.String
			return normFunc(func(s string) string { return strings.ReplaceAll(s, old, v.Content) }), nil
		case v.Pattern.Regex != nil:
			re, err := compileRegex(*v.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", "Replace", err)
			}
			return normFunc(func(s string) string {
				var b strings.Builder
				last := 0
				re.each(s, func(start, end int) {
					b.WriteString(s[last:start])
					b.WriteString(v.Content)
					last = end
				})
				b.WriteString(s[last:])
				return b.String()
			}), nil
		}
		return nil, fmt.Errorf("%s: pattern is neither String nor Regex", "Replace")
	case "BertNormalizer":
		v := struct {
			CleanText    bool  `json:"clean_text"`
			Chinese      bool  `json:"handle_chinese_chars"`
			StripAccents *bool `json:"strip_accents"`
			Lowercase    bool  `json:"lowercase"`
		}{CleanText: true, Chinese: true, Lowercase: true}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "BertNormalizer", err)
		}
		strip := v.Lowercase
		if v.StripAccents != nil {
			strip = *v.StripAccents
		}
		return bertNormalizer(v.CleanText, v.Chinese, strip, v.Lowercase), nil
	case "Precompiled":
		var v struct {
			Charsmap *string `json:"precompiled_charsmap"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", "Precompiled", err)
		}
		if v.Charsmap == nil || *v.Charsmap == "" {
			return nil, nil // no rules: the text is left as it is
		}
		p, err := newPrecompiled(*v.Charsmap)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", "Precompiled", err)
		}
		return p, nil
	case "":
		return nil, fmt.Errorf("normalizer without a type")
	}
	return nil, fmt.Errorf("unsupported normalizer type %q", typ)
}

// bertNormalizer is BertNormalizer: with cleanText, control characters
// dropped and BERT's white space made ' '; with chinese, CJK ideographs
// padded with spaces; with strip, the marks removed after NFD; with
// lowercase, the text lower-cased (in that order, as the Rust library does).
func bertNormalizer(cleanText, chinese, strip, lowercase bool) normalizer {
	return normFunc(func(s string) string {
		if cleanText || chinese {
			var b strings.Builder
			b.Grow(len(s))
			for _, r := range s {
				if r < utf8.RuneSelf && r > 0x20 && r != 0x7f {
					b.WriteByte(byte(r)) // printable ASCII: kept
					continue
				}
				if cleanText {
					if r == 0 || r == 0xFFFD || isBertControl(r) {
						continue
					}
					if isBertWhitespace(r) {
						r = ' '
					}
				}
				if chinese && isCJK(r) {
					b.WriteByte(' ')
					b.WriteRune(r)
					b.WriteByte(' ')
					continue
				}
				b.WriteRune(r)
			}
			s = b.String()
		}
		if strip {
			s = removeMarks(norm.NFD.String(s))
		}
		if lowercase {
			s = lower(s)
		}
		return s
	})
}

// lower lower-cases s character by character as Rust's char::to_lowercase
// does: like strings.ToLower, except that İ becomes i and a combining dot.
func lower(s string) string {
	if strings.Contains(s, "\u0130") {
		s = strings.ReplaceAll(s, "\u0130", "i\u0307")
	}
	return strings.ToLower(s)
}

// nmt is SentencePiece's NMT normalization as the tokenizers library
// does it: some control characters dropped, some white space and format
// characters made spaces.
func nmt(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x01 && r <= 0x08, r == 0x0B, r >= 0x0E && r <= 0x1F, r == 0x7F, r == 0x8F, r == 0x9F:
			return -1
		case r == 0x09, r == 0x0A, r == 0x0C, r == 0x0D, r == 0x1680, r >= 0x200B && r <= 0x200F,
			r == 0x2028, r == 0x2029, r == 0x2581, r == 0xFEFF, r == 0xFFFD:
			return ' '
		}
		return r
	}, s)
}

// removeMarks drops the non-spacing marks (Mn), as StripAccents does.
func removeMarks(s string) string {
	if isASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isBertWhitespace is BERT's white space: space, tab, newline, carriage
// return and the Zs category.
func isBertWhitespace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// isBertControl is BERT's control character: the C categories except tab,
// newline and carriage return.
func isBertControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isBertPunct is BERT's punctuation: ASCII punctuation and the Unicode P
// categories.
func isBertPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK reports the CJK ideograph blocks BERT pads with spaces.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// regex is a compiled Split or Replace pattern.
type regex struct {
	re *regexp2.Regexp
}

func compileRegex(pat string) (*regex, error) {
	re, err := regexp2.Compile(pat, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", pat, err)
	}
	return &regex{re: re}, nil
}

// each calls fn with the byte offsets of each non-empty match in s.
func (r *regex) each(s string, fn func(start, end int)) {
	// s is valid UTF-8 (Encode sanitizes), so rune i starts at offs[i].
	runes := make([]rune, 0, len(s))
	offs := make([]int, 0, len(s)+1)
	for i, c := range s {
		runes = append(runes, c)
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	m, err := r.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		if m.Length > 0 {
			fn(offs[m.Index], offs[m.Index+m.Length])
		}
		m, err = r.re.FindNextMatch(m)
	}
}
