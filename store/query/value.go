package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Decode parses one JSON value into the form the pipeline works on: objects
// are map[string]any, arrays []any, and numbers float64, except integers a
// float64 cannot hold exactly (such as 64-bit ids), which stay json.Number so
// that they keep every digit. Strings, booleans and null are string, bool and
// nil. Text after the value is an error.
func Decode(data []byte) (any, error) {
	// Without a run of 16 digits, no number can be an integer a float64
	// rounds, and plain Unmarshal, which is faster, gives the same value.
	if !longDigitRun(data) {
		var v any
		if err := json.Unmarshal(data, &v); err == nil {
			return v, nil
		}
		// Out-of-range numbers fail here but not below; syntax errors fail
		// both ways, with the same message.
	}
	return decodeNumbers(data)
}

// longDigitRun reports whether data holds 16 or more digits in a row.
func longDigitRun(data []byte) bool {
	run := 0
	for _, c := range data {
		if '0' <= c && c <= '9' {
			if run++; run >= 16 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// decodeNumbers is Decode keeping every number's text until it knows the
// number's form.
func decodeNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode JSON: unexpected data after the value")
	}
	return fixNumbers(v), nil
}

// fixNumbers replaces json.Number by float64 where that loses nothing. It
// changes v in place, which is safe only on values the decoder just made.
func fixNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return numberFromLiteral(string(t))
	case map[string]any:
		for k, x := range t {
			switch x.(type) {
			case json.Number, map[string]any, []any:
				t[k] = fixNumbers(x)
			}
		}
	case []any:
		for i, x := range t {
			switch x.(type) {
			case json.Number, map[string]any, []any:
				t[i] = fixNumbers(x)
			}
		}
	}
	return v
}

// numberFromLiteral turns a JSON number into a float64, or keeps it as
// json.Number when it is an integer a float64 would round, or out of range.
func numberFromLiteral(s string) any {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return json.Number(s)
	}
	digits := strings.TrimPrefix(s, "-")
	if len(digits) > 15 && !strings.ContainsAny(digits, ".eE") {
		// Integers of up to 15 digits are below 2^53 and always exact.
		if strconv.FormatFloat(f, 'f', -1, 64) != s {
			return json.Number(s)
		}
	}
	return f
}

// Number reports the numeric value of v, a number of any Go type (float64,
// json.Number, the integer types); booleans are not numbers.
func Number(v any) (float64, bool) { return number(v, false) }

// number is Number, with booleans as 1 and 0 when bools is set.
func number(v any, bools bool) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f, true
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case int32:
		return float64(t), true
	case uint:
		return float64(t), true
	case uint64:
		return float64(t), true
	case uint32:
		return float64(t), true
	case float32:
		return float64(t), true
	case bool:
		if !bools {
			return 0, false
		}
		if t {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// canonNumber returns the number v (as reported by number) in the form
// Decode gives it: float64, or json.Number for a value a float64 cannot hold
// exactly, so that two equal numbers always have the same form.
func canonNumber(v any, f float64) any {
	switch t := v.(type) {
	case float64:
		return t
	case json.Number:
		return numberFromLiteral(string(t))
	case int64, uint64, int, uint:
		if math.Abs(f) < 1<<53 {
			return f
		}
		return numberFromLiteral(fmt.Sprint(t))
	}
	return f
}

// cmpNumbers orders two numbers exactly; fa and fb are their float64 values.
func cmpNumbers(a, b any, fa, fb float64) int {
	if fa < fb {
		return -1
	}
	if fa > fb {
		return 1
	}
	// Equal as floats: only values a float64 cannot hold can still differ.
	_, af := a.(float64)
	_, bf := b.(float64)
	if af && bf {
		return 0
	}
	ra, rb := exactNumber(canonNumber(a, fa)), exactNumber(canonNumber(b, fb))
	if ra == nil || rb == nil {
		return 0
	}
	return ra.Cmp(rb)
}

// exactNumber returns a canonical number (see canonNumber) as a rational.
func exactNumber(v any) *big.Rat {
	switch t := v.(type) {
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(t)); ok {
			return r
		}
	case float64:
		if !math.IsInf(t, 0) && !math.IsNaN(t) {
			return new(big.Rat).SetFloat64(t)
		}
	}
	return nil
}

// equal reports whether two decoded JSON values are equal: numbers by value
// whatever their Go type, arrays and objects element by element. Booleans
// never equal numbers.
func equal(a, b any) bool {
	switch t := a.(type) {
	case nil:
		return b == nil
	case string:
		u, ok := b.(string)
		return ok && t == u
	case bool:
		u, ok := b.(bool)
		return ok && t == u
	case []any:
		u, ok := b.([]any)
		if !ok || len(t) != len(u) {
			return false
		}
		for i := range t {
			if !equal(t[i], u[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		u, ok := b.(map[string]any)
		if !ok || len(t) != len(u) {
			return false
		}
		for k, x := range t {
			y, ok := u[k]
			if !ok || !equal(x, y) {
				return false
			}
		}
		return true
	}
	fa, ok := number(a, false)
	if !ok {
		return false
	}
	fb, ok := number(b, false)
	return ok && cmpNumbers(a, b, fa, fb) == 0
}

// compositeKey is a map key standing for an array or object: its canonical
// encoding, so that equal values share a key.
type compositeKey string

// hashKey returns a comparable key such that hashKey(a) == hashKey(b) exactly
// when equal(a, b), for use in maps (unique, group_by, $in).
func hashKey(v any) any {
	switch t := v.(type) {
	case nil, bool, string:
		return v
	case float64:
		if t == 0 { // -0 and 0 are one value
			return float64(0)
		}
		return v
	case []any, map[string]any:
		return compositeKey(appendKey(nil, v))
	}
	if f, ok := number(v, false); ok {
		switch c := canonNumber(v, f).(type) {
		case float64:
			if c == 0 {
				return float64(0)
			}
			return c
		case json.Number:
			if r := exactNumber(c); r != nil {
				return json.Number(r.RatString())
			}
			return c
		}
	}
	return compositeKey(appendKey(nil, v))
}

// appendKey appends an unambiguous canonical encoding of v: object keys
// sorted, numbers by value.
func appendKey(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if t {
			return append(b, 't')
		}
		return append(b, 'f')
	case string:
		b = append(b, 's')
		b = strconv.AppendInt(b, int64(len(t)), 10)
		b = append(b, ':')
		return append(b, t...)
	case []any:
		b = append(b, '[')
		for _, x := range t {
			b = appendKey(b, x)
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for _, k := range slices.Sorted(maps.Keys(t)) {
			b = appendKey(b, k)
			b = appendKey(b, t[k])
		}
		return append(b, '}')
	}
	switch k := hashKey(v).(type) {
	case float64:
		b = append(b, 'd')
		b = strconv.AppendFloat(b, k, 'g', -1, 64)
		return append(b, ';')
	case json.Number:
		b = append(b, 'D')
		b = append(b, k...)
		return append(b, ';')
	}
	// A Go value that is not decoded JSON: key it by its JSON text.
	text, _ := json.Marshal(v)
	b = append(b, 'x')
	b = strconv.AppendInt(b, int64(len(text)), 10)
	b = append(b, ':')
	return append(b, text...)
}

// appendNumberText appends a number's JSON text the way encoding/json writes
// a float64, so that 2024 reads "2024" and 1e21 reads "1e+21".
func appendNumberText(b []byte, v any) []byte {
	if n, ok := v.(json.Number); ok {
		return append(b, n...)
	}
	f, _ := number(v, false)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Shorten e-07 to e-7 as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// scalarText returns the text search and string operators see for a scalar:
// strings as they are, numbers and booleans in their JSON form.
func scalarText(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case nil, []any, map[string]any:
		return "", false
	}
	if _, ok := number(v, false); ok {
		return string(appendNumberText(nil, v)), true
	}
	return "", false
}

// finite returns f, or nil when JSON cannot hold it (a sum that overflowed).
func finite(f float64) any {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	return f
}
