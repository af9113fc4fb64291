package jsonscan

import "bytes"

// AppendCompact appends the valid JSON value v to dst without whitespace
// between tokens and, when fixUTF8 is set, with every byte of invalid UTF-8
// inside strings replaced by U+FFFD, so that the result is compact, valid
// UTF-8 and means the same as v. (Outside strings, valid JSON is ASCII.)
// [CheckValue]'s Layout tells whether a value needs it.
func AppendCompact(dst, v []byte, fixUTF8 bool) []byte {
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case c == '"':
			j := stringEnd(v, i+1)
			if fixUTF8 {
				dst = AppendValidUTF8(dst, v[i:j])
			} else {
				dst = append(dst, v[i:j]...)
			}
			i = j
		case IsSpace(c):
			i = SkipSpace(v, i+1)
		default:
			// Copy a run of tokens (punctuation, numbers, literals) at once.
			j := i + 1
			for j < len(v) && v[j] != '"' && !IsSpace(v[j]) {
				j++
			}
			dst = append(dst, v[i:j]...)
			i = j
		}
	}
	return dst
}

// stringEnd returns the index just past the closing quote of the string
// whose contents start at data[i] (just after the opening quote) in valid
// JSON, or len(data) when the string is not closed.
func stringEnd(data []byte, i int) int {
	for {
		k := bytes.IndexByte(data[i:], '"')
		if k < 0 {
			return len(data)
		}
		j := i + k
		// The quote is escaped when an odd number of backslashes precede it.
		// Runs of backslashes end at quotes, so counting them stays linear.
		n := 0
		for p := j - 1; p >= i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
}
