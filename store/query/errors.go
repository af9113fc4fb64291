package query

import (
	"errors"
	"fmt"
	"strings"
)

// ErrTooMany is wrapped by the StepError of a step that would hold more
// than MaxHeldItems items, groups or values.
var ErrTooMany = errors.New("too many items held")

// StepError says what is wrong with one step of a pipeline: a hand-built
// step that breaks a rule (offload/pipeline's parser checks the same ones
// and explains them to the model), a count before the last step, a step
// that would hold too many items, $regex over its time budget.
type StepError struct {
	// Index is the step's 0-based position in the whole pipeline, or -1
	// for the pipeline as a whole.
	Index int
	// Step is the step's name, "" when not known.
	Step string
	// Problem says what is wrong, in one sentence.
	Problem string
	// Err is ErrTooMany for a step that would hold too many items, else nil.
	Err error
}

func (e *StepError) Error() string {
	var b strings.Builder
	if e.Index < 0 {
		b.WriteString("steps: ")
	} else {
		fmt.Fprintf(&b, "step %d", e.Index)
		if e.Step != "" {
			fmt.Fprintf(&b, " (%s)", e.Step)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

func (e *StepError) Unwrap() error { return e.Err }

// problem is a StepError before it knows its step.
type problem struct{ msg string }

func (p *problem) Error() string { return p.msg }

func problemf(format string, args ...any) *problem {
	return &problem{msg: fmt.Sprintf(format, args...)}
}

// stepError makes a problem with step i a StepError.
func stepError(i int, step Step, err error) error {
	var p *problem
	if !errors.As(err, &p) {
		return err
	}
	name := ""
	if step != nil {
		name = step.Name()
	}
	return &StepError{Index: i, Step: name, Problem: p.msg}
}

// holdError reports a step that would hold more than MaxHeldItems.
func holdError(i int, step, what string) error {
	return &StepError{Index: i, Step: step, Err: ErrTooMany,
		Problem: fmt.Sprintf("%s would hold more than %d items; filter or limit before it", what, MaxHeldItems)}
}
