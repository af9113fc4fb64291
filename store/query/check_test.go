package query

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckOp(t *testing.T) {
	for _, tt := range []struct {
		op      Op
		v       any
		problem string // "" when v is a valid argument
	}{
		{OpEq, []any{1.0}, ""},
		{OpNe, nil, ""},
		{OpGt, 1.0, ""},
		{OpLte, "b", ""},
		{OpGte, json.Number("12345678901234567890"), ""},
		{OpLt, true, "number or a string, not the boolean true"},
		{OpIn, []any{}, ""},
		{OpNin, "x", `takes an array of values, not the string "x"`},
		{OpContains, 1.0, ""},
		{OpContains, nil, "not null"},
		{OpContains, []any{"a"}, "use $in"},
		{OpStartsWith, "a", ""},
		{OpStartsWith, 5.0, "takes a string, not the number 5"},
		{OpRegex, "^a+$", ""},
		{OpRegex, "(a", "not valid RE2"},
		{OpRegex, strings.Repeat("a", MaxRegexLength+1), "more than the 1000 allowed"},
		{OpRegex, `(?:\w+\s*){300}`, "instructions"},
		{OpExists, false, ""},
		{OpExists, "yes", "true or false"},
		{"$nope", 1.0, "unknown operator"},
	} {
		err := CheckOp(tt.op, tt.v)
		if tt.problem == "" && err != nil || tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)) {
			t.Errorf("CheckOp(%s, %#v) = %v, want %q", tt.op, tt.v, err, tt.problem)
		}
	}
}

func TestCheckPath(t *testing.T) {
	for path, ok := range map[string]bool{"a": true, "a.b.0": true, "": false, strings.Repeat("x", MaxPathLen): true, strings.Repeat("x", MaxPathLen+1): false} {
		if err := CheckPath(path); (err == nil) != ok {
			t.Errorf("CheckPath(%.20q) = %v, want ok %v", path, err, ok)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{true, "the boolean true"},
		{"a<b>", `the string "a<b>"`},
		{[]any{1.0, 2.0}, "an array of length 2"},
		{map[string]any{}, "an object"},
		{2024.0, "the number 2024"},
		{json.Number("1e400"), "the number 1e400"},
		{struct{}{}, "a struct {}"},
		{strings.Repeat("é", 100), `the string "` + strings.Repeat("é", 59) + "…"},
	} {
		if got := Describe(tt.v); got != tt.want {
			t.Errorf("Describe(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestStepError(t *testing.T) {
	e := &StepError{Index: 2, Step: "sort", Problem: "sort would hold too much", Err: ErrTooMany}
	if got := e.Error(); got != "step 2 (sort): sort would hold too much" || !errors.Is(e, ErrTooMany) {
		t.Errorf("Error() = %q, Is(ErrTooMany) = %v", got, errors.Is(e, ErrTooMany))
	}
	if got := (&StepError{Index: -1, Problem: "p"}).Error(); got != "steps: p" {
		t.Errorf("Error() = %q", got)
	}
}
