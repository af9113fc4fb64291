package ingest

import (
	"encoding/json"
	"strconv"
)

// Span is where a JSON value is in its enclosing document: data[Start:End].
type Span struct{ Start, End int }

// ObjectSpans returns where each top-level field's value is in data, a JSON
// object, without decoding the values (for a caller that needs one field of a
// large document). Repeated keys keep the last value, as decoders do.
func ObjectSpans(data []byte) (map[string]Span, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	fields := map[string]Span{}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return fields, skipSpace(data, i+1) == len(data)
	}
	for i < len(data) {
		keyEnd := ValueEnd(data, i)
		if keyEnd < 0 || data[i] != '"' {
			return nil, false
		}
		key, err := strconv.Unquote(string(data[i:keyEnd]))
		if err != nil {
			var s string
			if json.Unmarshal(data[i:keyEnd], &s) != nil {
				return nil, false
			}
			key = s
		}
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		end := ValueEnd(data, i)
		if end < 0 {
			return nil, false
		}
		fields[key] = Span{i, end}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == '}' {
			return fields, skipSpace(data, i+1) == len(data)
		}
		if i >= len(data) || data[i] != ',' {
			return nil, false
		}
		i = skipSpace(data, i+1)
	}
	return nil, false
}

// ArraySpans returns where the elements of the JSON array at s in data are.
func ArraySpans(data []byte, s Span) []Span {
	var out []Span
	i := skipSpace(data, s.Start)
	if i >= s.End || data[i] != '[' {
		return nil
	}
	i = skipSpace(data, i+1)
	for i < s.End && data[i] != ']' {
		end := ValueEnd(data, i)
		if end < 0 {
			return nil
		}
		out = append(out, Span{i, end})
		i = skipSpace(data, end)
		if i < s.End && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return out
}
