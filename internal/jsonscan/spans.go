package jsonscan

// Span is where a JSON value is in the text it was found in: data[Start:End].
type Span struct{ Start, End int }

// Member is one member of a JSON object.
type Member struct {
	Key     string // the key, decoded
	KeySpan Span   // where the key's string literal is, quotes included
	Value   Span   // where the value is
}

// Members returns the members of data, one JSON object with optional
// whitespace around it, in document order, a repeated key as often as it
// occurs; ok is false when data is not one valid object. Values are not
// decoded, only validated.
func Members(data []byte) (ms []Member, ok bool) {
	if ms, ok = AppendMembers([]Member{}, data); !ok {
		return nil, false
	}
	return ms, true
}

// AppendMembers is [Members] appending to dst, so that a caller reading
// many small objects can size the slice once. On invalid input it returns
// dst unchanged and false.
func AppendMembers(dst []Member, data []byte) ([]Member, bool) {
	ms := dst
	ok := eachMember(data, func(key, v Span) {
		k, _ := Unquote(data[key.Start:key.End])
		ms = append(ms, Member{Key: k, KeySpan: key, Value: v})
	})
	if !ok {
		return dst, false
	}
	return ms, true
}

// ObjectSpans returns where the value of each key of data, one JSON object
// with optional whitespace around it, is; ok is false when data is not one
// valid object. A repeated key has its last value, as decoders keep it.
// It suits a caller that needs a few members of a large document.
func ObjectSpans(data []byte) (map[string]Span, bool) {
	fields := map[string]Span{}
	ok := eachMember(data, func(key, v Span) {
		k, _ := Unquote(data[key.Start:key.End])
		fields[k] = v
	})
	if !ok {
		return nil, false
	}
	return fields, true
}

// eachMember calls f with where each member's key literal and value are,
// in order, and reports whether data is one valid object.
func eachMember(data []byte, f func(key, v Span)) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	s := scanner{data: data}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return SkipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		keyEnd := s.str(i + 1)
		if keyEnd < 0 {
			return false
		}
		j := SkipSpace(data, keyEnd)
		if j >= len(data) || data[j] != ':' {
			return false
		}
		j = SkipSpace(data, j+1)
		end := s.value(j, 1)
		if end < 0 {
			return false
		}
		f(Span{i, keyEnd}, Span{j, end})
		if i = SkipSpace(data, end); i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = SkipSpace(data, i+1)
		case '}':
			return SkipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// ArraySpans returns where the elements of data, one JSON array with
// optional whitespace around it, are; ok is false when data is not one
// valid array.
func ArraySpans(data []byte) ([]Span, bool) {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, false
	}
	s := scanner{data: data}
	out := []Span{}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		if SkipSpace(data, i+1) != len(data) {
			return nil, false
		}
		return out, true
	}
	for {
		end := s.value(i, 1)
		if end < 0 {
			return nil, false
		}
		out = append(out, Span{i, end})
		if i = SkipSpace(data, end); i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = SkipSpace(data, i+1)
		case ']':
			if SkipSpace(data, i+1) != len(data) {
				return nil, false
			}
			return out, true
		default:
			return nil, false
		}
	}
}
