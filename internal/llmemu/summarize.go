package llmemu

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The markers between which a summarization prompt puts the text to
// summarize (see [Summarize]).
const (
	SummaryBegin = "---BEGIN TEXT---"
	SummaryEnd   = "---END TEXT---"
)

// NothingOfNote is the summary of a text without facts.
const NothingOfNote = "Nothing of note."

var summarizeRe = regexp.MustCompile(`(?i)summar`)

// summaryReply answers a summarization prompt, if the question (the last
// user message, or the raw prompt) is one: see Summarize.
func summaryReply(question string) (Reply, bool) {
	if !summarizeRe.MatchString(question) {
		return Reply{}, false
	}
	i := strings.Index(question, SummaryBegin)
	if i < 0 {
		return Reply{}, false
	}
	text := question[i+len(SummaryBegin):]
	if j := strings.LastIndex(text, SummaryEnd); j >= 0 {
		text = text[:j]
	}
	return Reply{Text: Summarize(text)}, true
}

// Summarize is the emulated model's summary of a text, a deterministic
// stand-in for a small model told to keep the facts: the sentences (split
// at line ends and after '.', '!' or '?' followed by a space) that hold a
// digit, a word of two or more capital letters (an id, an acronym) or a
// capitalized word past the sentence's first, each once, in order, one a
// line (of a sentence over 40 words, only the facts with four words either
// side); NothingOfNote when none does. The server cuts it to num_predict
// (max_tokens) tokens like any answer, so a digest asked too short loses
// its last facts.
//
// The model answers this way when the question mentions summarizing
// ("summar", any case) and holds a line SummaryBegin, the text, and a line
// SummaryEnd (lost to truncation, the text runs to the prompt's end).
func Summarize(text string) string {
	var out []string
	seen := map[string]bool{}
	for _, s := range sentences(text) {
		if seen[s] || !factual(s) {
			continue
		}
		seen[s] = true
		if words := strings.Fields(s); len(words) > longSentence {
			s = factWords(words)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return NothingOfNote
	}
	return strings.Join(out, "\n")
}

// longSentence is the most words of a sentence kept whole; of a longer
// one, only the facts with factContext words either side are kept.
const (
	longSentence = 40
	factContext  = 4
)

// factWords keeps, of a long sentence's words, those that are facts and
// factContext words around each, the gaps marked "…".
func factWords(words []string) string {
	keep := make([]bool, len(words))
	for i, w := range words {
		if factual("x " + w) {
			for j := max(0, i-factContext); j <= min(len(words)-1, i+factContext); j++ {
				keep[j] = true
			}
		}
	}
	var b strings.Builder
	gap := false
	for i, w := range words {
		if !keep[i] {
			gap = true
			continue
		}
		if gap {
			b.WriteString("… ")
		}
		b.WriteString(w)
		b.WriteByte(' ')
		gap = false
	}
	if gap {
		b.WriteString("…")
	}
	return strings.TrimSpace(b.String())
}

func sentences(text string) []string {
	var out []string
	start := 0
	add := func(end int) {
		if s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text[start:end]), ImEnd)); s != "" && s != ImStart+"assistant" {
			out = append(out, s)
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			add(i)
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' {
				add(i + 1)
			}
		}
	}
	add(len(text))
	return out
}

// factual reports whether a sentence holds a digit, an all-capital word of
// two or more letters, or a capitalized word past its first word.
func factual(s string) bool {
	for i, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		caps, letters := 0, 0
		for _, r := range w {
			switch {
			case unicode.IsDigit(r):
				return true
			case unicode.IsUpper(r):
				caps++
				letters++
			case unicode.IsLetter(r):
				letters++
			}
		}
		if caps >= 2 && caps == letters {
			return true
		}
		if r, _ := utf8.DecodeRuneInString(w); i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}
