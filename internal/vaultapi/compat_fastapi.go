package vaultapi

// Requests and errors of the /ctxvault routes as FastAPI (with pydantic 2)
// makes them: a body or query string that does not fit the route's model
// is a 422 whose detail lists every field at fault, each as {type, loc,
// msg, input} (and ctx for a bound), in the model's field order; fields
// the model does not have are ignored; every other error is
// {"detail": "message"}. Beside detail, every error answer carries
// ctxkit's structured error ("error": {code, message, fix, details}), so
// that a model reading it still gets the fix.
//
// A model is a struct: each field's json tag names it, its Go type gives
// pydantic's type (string: str; int, float64, bool; a pointer: the same
// type or None; map[string]any: dict; map[string]float64: dict[str,
// float]; []string: list[str]), and its fastapi tag the rest:
// "required", "nullable" (null reads as absent), bounds "ge=N", "le=N",
// "gt=N", and "oneof=a|b|c" (a Literal). Values are coerced as pydantic's
// lax mode does for JSON: "5" and 5.0 are the integer 5, "true", "yes",
// 1 and 0 are booleans; a string field takes only a string.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ctxkit/ctxkit/internal/english"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// fieldError is one item of FastAPI's 422 detail list.
type fieldError struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// validationError is FastAPI's request validation error: a 422.
type validationError struct{ items []fieldError }

func (e *validationError) Error() string {
	var b strings.Builder
	for i, it := range e.items {
		if i > 0 {
			b.WriteString("; ")
		}
		loc := make([]string, len(it.Loc))
		for j, l := range it.Loc {
			loc[j] = fmt.Sprint(l)
		}
		fmt.Fprintf(&b, "%s: %s", strings.Join(loc, "."), it.Msg)
	}
	return b.String()
}

// invalidField returns a 422 about one field.
func invalidField(where, field, typ, msg string, input any) *validationError {
	return &validationError{items: []fieldError{{Type: typ, Loc: []any{where, field}, Msg: msg, Input: input}}}
}

// decodeBody reads req's JSON body into dst, a model: a 422 for a body
// that is missing, not JSON, not an object, or does not fit the model; the
// MaxBytesError of a body over the limit.
func decodeBody(req *http.Request, dst any) error {
	var raw []byte
	if req.Body != nil {
		var err error
		if raw, err = io.ReadAll(req.Body); err != nil {
			return fmt.Errorf("read the request body: %w", err)
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return &validationError{items: []fieldError{{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}}}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("extra data after the JSON value")
		}
	}
	if err != nil {
		at := int64(len(raw)) // an unexpected end
		var se *json.SyntaxError
		if errors.As(err, &se) {
			at = se.Offset
		}
		return &validationError{items: []fieldError{{Type: "json_invalid", Loc: []any{"body", at}, Msg: "JSON decode error",
			Input: map[string]any{}, Ctx: map[string]any{"error": err.Error()}}}}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return &validationError{items: []fieldError{{Type: "model_attributes_type", Loc: []any{"body"},
			Msg: "Input should be a valid dictionary or object to extract fields from", Input: v}}}
	}
	return fill(dst, "body", func(name string) (any, bool) { v, ok := obj[name]; return v, ok }, obj)
}

// decodeParams reads the query string into dst, a model of scalars; a
// parameter given more than once counts with its last value, as FastAPI
// reads it.
func decodeParams(req *http.Request, dst any) error {
	vals := req.URL.Query()
	return fill(dst, "query", func(name string) (any, bool) {
		vs, ok := vals[name]
		if !ok {
			return nil, false
		}
		return vs[len(vs)-1], true
	}, nil)
}

// fill sets the fields of *dst from get, checking each against its type
// and tags, and returns every field at fault as one 422. whole is the
// input a missing field's error shows (FastAPI shows the whole body).
func fill(dst any, where string, get func(name string) (any, bool), whole any) error {
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	var bad []fieldError
	for i := range t.NumField() {
		f := t.Field(i)
		name := queryName(f)
		tags := parseTags(f.Tag.Get("fastapi"))
		in, present := get(name)
		loc := []any{where, name}
		if !present {
			if tags["required"] != "" {
				bad = append(bad, fieldError{Type: "missing", Loc: loc, Msg: "Field required", Input: whole})
			}
			continue
		}
		if in == nil && (f.Type.Kind() == reflect.Pointer || tags["nullable"] != "") {
			continue
		}
		bad = append(bad, setField(v.Field(i), f.Type, loc, in, tags)...)
	}
	if len(bad) > 0 {
		return &validationError{items: bad}
	}
	return nil
}

// parseTags reads a fastapi tag: "required,ge=1,le=100" gives required,
// ge and le ("required" maps to itself).
func parseTags(tag string) map[string]string {
	m := map[string]string{}
	for part := range strings.SplitSeq(tag, ",") {
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			val = k
		}
		m[k] = val
	}
	return m
}

// setField coerces in into fv, of type t, and checks the bounds.
func setField(fv reflect.Value, t reflect.Type, loc []any, in any, tags map[string]string) []fieldError {
	if t.Kind() == reflect.Pointer {
		p := reflect.New(t.Elem())
		bad := setField(p.Elem(), t.Elem(), loc, in, tags)
		if len(bad) == 0 {
			fv.Set(p)
		}
		return bad
	}
	fail := func(typ, msg string) []fieldError {
		return []fieldError{{Type: typ, Loc: loc, Msg: msg, Input: in}}
	}
	switch t.Kind() {
	case reflect.String:
		s, ok := in.(string)
		if !ok {
			return fail("string_type", "Input should be a valid string")
		}
		if lit := tags["oneof"]; lit != "" {
			opts := strings.Split(lit, "|")
			if !slices.Contains(opts, s) {
				want := literalList(opts)
				return []fieldError{{Type: "literal_error", Loc: loc, Msg: "Input should be " + want, Input: in, Ctx: map[string]any{"expected": want}}}
			}
		}
		fv.SetString(s)
	case reflect.Int:
		n, typ, msg := toInt(in)
		if typ != "" {
			return fail(typ, msg)
		}
		if bad := checkBounds(float64(n), loc, in, tags); bad != nil {
			return bad
		}
		fv.SetInt(n)
	case reflect.Float64:
		x, typ, msg := toFloat(in)
		if typ != "" {
			return fail(typ, msg)
		}
		if bad := checkBounds(x, loc, in, tags); bad != nil {
			return bad
		}
		fv.SetFloat(x)
	case reflect.Bool:
		b, typ, msg := toBool(in)
		if typ != "" {
			return fail(typ, msg)
		}
		fv.SetBool(b)
	case reflect.Slice: // []string
		list, ok := in.([]any)
		if !ok {
			return fail("list_type", "Input should be a valid list")
		}
		out := make([]string, 0, len(list))
		var bad []fieldError
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				bad = append(bad, fieldError{Type: "string_type", Loc: append(append([]any{}, loc...), i), Msg: "Input should be a valid string", Input: x})
			}
			out = append(out, s)
		}
		if bad != nil {
			return bad
		}
		fv.Set(reflect.ValueOf(out))
	case reflect.Map:
		obj, ok := in.(map[string]any)
		if !ok {
			return fail("dict_type", "Input should be a valid dictionary")
		}
		if t.Elem().Kind() == reflect.Float64 { // dict[str, float]
			out := make(map[string]float64, len(obj))
			var bad []fieldError
			for k, x := range obj {
				f, typ, msg := toFloat(x)
				if typ != "" {
					bad = append(bad, fieldError{Type: typ, Loc: append(append([]any{}, loc...), k), Msg: msg, Input: x})
				}
				out[k] = f
			}
			if bad != nil {
				return bad
			}
			fv.Set(reflect.ValueOf(out))
			return nil
		}
		fv.Set(reflect.ValueOf(plainJSON(obj).(map[string]any)))
	default:
		panic(fmt.Sprintf("vaultapi: model field of type %s", t))
	}
	return nil
}

// plainJSON turns the json.Numbers of a decoded value into float64, as
// encoding/json decodes them by default.
func plainJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plainJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainJSON(e)
		}
		return out
	}
	return v
}

// literalList is pydantic's list of a Literal's values: 'a', 'b' or 'c'.
func literalList(opts []string) string {
	q := make([]string, len(opts))
	for i, o := range opts {
		q[i] = "'" + o + "'"
	}
	return english.Or(q)
}

// toInt coerces a JSON value or a query string to an integer, or names
// pydantic's error.
func toInt(in any) (int64, string, string) {
	const notInt = "Input should be a valid integer"
	switch x := in.(type) {
	case bool:
		if x {
			return 1, "", ""
		}
		return 0, "", ""
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, "", ""
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) || math.Abs(f) >= 1<<62 {
			return 0, "int_parsing", notInt + ", unable to parse string as an integer"
		}
		if f != math.Trunc(f) {
			return 0, "int_from_float", notInt + ", got a number with a fractional part"
		}
		return int64(f), "", ""
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, "int_parsing", notInt + ", unable to parse string as an integer"
		}
		return n, "", ""
	}
	return 0, "int_type", notInt
}

// toFloat coerces a JSON value or a query string to a number, or names
// pydantic's error.
func toFloat(in any) (float64, string, string) {
	const notNumber = "Input should be a valid number"
	switch x := in.(type) {
	case bool:
		if x {
			return 1, "", ""
		}
		return 0, "", ""
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, "float_parsing", notNumber + ", unable to parse string as a number"
		}
		return f, "", ""
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, "float_parsing", notNumber + ", unable to parse string as a number"
		}
		return f, "", ""
	}
	return 0, "float_type", notNumber
}

// toBool coerces a JSON value or a query string to a boolean, or names
// pydantic's error.
func toBool(in any) (bool, string, string) {
	const cannot = "Input should be a valid boolean, unable to interpret input"
	switch x := in.(type) {
	case bool:
		return x, "", ""
	case json.Number:
		switch x {
		case "0":
			return false, "", ""
		case "1":
			return true, "", ""
		}
		return false, "bool_parsing", cannot
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "0", "off", "f", "false", "n", "no":
			return false, "", ""
		case "1", "on", "t", "true", "y", "yes":
			return true, "", ""
		}
		return false, "bool_parsing", cannot
	}
	return false, "bool_type", "Input should be a valid boolean"
}

// checkBounds checks x against the ge, le and gt tags.
func checkBounds(x float64, loc []any, in any, tags map[string]string) []fieldError {
	for _, b := range []struct{ tag, typ, words string }{
		{"ge", "greater_than_equal", "greater than or equal to"},
		{"gt", "greater_than", "greater than"},
		{"le", "less_than_equal", "less than or equal to"},
	} {
		lim, ok := tags[b.tag]
		if !ok {
			continue
		}
		l, err := strconv.ParseFloat(lim, 64)
		if err != nil {
			panic(fmt.Sprintf("vaultapi: bound %s=%s", b.tag, lim))
		}
		var fails bool
		switch b.tag {
		case "ge":
			fails = x < l
		case "gt":
			fails = x <= l
		case "le":
			fails = x > l
		}
		if fails {
			var shown any = json.Number(lim)
			return []fieldError{{Type: b.typ, Loc: loc, Msg: "Input should be " + b.words + " " + lim, Input: in, Ctx: map[string]any{b.tag: shown}}}
		}
	}
	return nil
}
