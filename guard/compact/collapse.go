package compact

import (
	"strconv"
	"strings"
)

const (
	// collapseMinBytes: shorter texts are left alone.
	collapseMinBytes = 400
	// collapseMinLine: shorter lines (after trimming) never collapse, so
	// that braces and blank lines of code and JSON stay.
	collapseMinLine = 12
)

// collapseRepeats keeps once every line of text that occurs at least min
// times, with the suffix "  [repeated N times]", and drops its other
// occurrences. It reports whether anything changed. counts is scratch
// space, cleared first (nil: a new map), so that a caller going through
// many texts counts their lines in one map.
func collapseRepeats(text string, min int, counts map[string]int) (string, bool) {
	if len(text) < collapseMinBytes || min < 2 {
		return text, false
	}
	if counts == nil {
		counts = make(map[string]int)
	}
	clear(counts)
	any := false
	for rest := text; rest != ""; {
		line, tail, _ := strings.Cut(rest, "\n")
		rest = tail
		if len(strings.TrimSpace(line)) < collapseMinLine {
			continue
		}
		counts[line]++
		if counts[line] == min {
			any = true
		}
	}
	if !any {
		return text, false
	}
	var b strings.Builder
	b.Grow(len(text) / 2)
	first := true
	for rest := text; ; {
		line, tail, more := strings.Cut(rest, "\n")
		n := counts[line]
		switch {
		case n >= min:
			if !first {
				b.WriteByte('\n')
			}
			b.WriteString(line)
			b.WriteString("  [repeated ")
			b.WriteString(strconv.Itoa(n))
			b.WriteString(" times]")
			counts[line] = -1 // written: drop the others
			first = false
		case n == -1:
			// a later occurrence of a collapsed line
		default:
			if !first {
				b.WriteByte('\n')
			}
			b.WriteString(line)
			first = false
		}
		if !more {
			break
		}
		rest = tail
	}
	return b.String(), true
}
