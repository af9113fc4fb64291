package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/editdist"
	"github.com/ctxkit/ctxkit/store/query"
)

// StepError says what is wrong with one step, in terms a model can act on:
// which step, what is wrong, and a valid step to copy. Parse returns it for
// every bad step, and [Explain] makes one of every failure of a run that is
// the steps' fault (such as a step that would hold too many items).
type StepError struct {
	// Index is the step's 0-based position, or -1 when the steps argument as
	// a whole is wrong (not an array, too many steps).
	Index int
	// Step is the step's name, or its keys as written when it has none we
	// know; empty when the step is not an object.
	Step string
	// Problem says what is wrong, in one sentence.
	Problem string
	// Example is a valid step in JSON, close to what was meant; with Index
	// -1, a valid steps array.
	Example string

	err error // the run's error, for Explain's
}

// Unwrap returns the *query.StepError that Explain made e from, or nil.
func (e *StepError) Unwrap() error { return e.err }

// Error says which step, what is wrong and the example, as
// query.StepError writes the first two.
func (e *StepError) Error() string {
	msg := (&query.StepError{Index: e.Index, Step: e.Step, Problem: e.Problem}).Error()
	if e.Example != "" {
		msg += "; example: " + e.Example
	}
	return msg
}

// Explain returns err with the *query.StepError of a run (a step that
// would hold too many items, $regex over its time, a hand-built step that
// breaks a rule) made a *StepError, with an example to copy. Other errors,
// Parse's StepErrors included, are returned as they are.
func Explain(err error) error {
	var qe *query.StepError
	if !errors.As(err, &qe) {
		return err
	}
	ex := examples[qe.Step]
	switch {
	case errors.Is(qe, query.ErrTooMany):
		ex = examples["limit"]
	case ex == "":
		ex = examplePipeline
	}
	return &StepError{Index: qe.Index, Step: qe.Step, Problem: qe.Problem, Example: ex, err: err}
}

// problem is a StepError before it knows its step.
type problem struct {
	msg     string
	example string // empty: the step's canonical example
}

func (p *problem) Error() string { return p.msg }

func problemf(format string, args ...any) *problem {
	return &problem{msg: fmt.Sprintf(format, args...)}
}

// stepNames lists the steps in the order the description gives them.
var stepNames = []string{
	"filter", "search", "sort", "select", "exclude", "limit", "skip", "slice",
	"sample", "unique", "flatten", "group_by", "count",
}

// examples holds one valid, typical step per name. The description shows
// the same ones, and a test checks that each parses.
var examples = map[string]string{
	"filter":   `{"filter": {"year": {"$gte": 2023}, "author.name": "Ada"}}`,
	"search":   `{"search": {"query": "machine learning", "fields": ["title", "abstract"]}}`,
	"sort":     `{"sort": [{"field": "score", "order": "desc"}, {"field": "title"}]}`,
	"select":   `{"select": ["title", "year", "author.name"]}`,
	"exclude":  `{"exclude": ["body", "raw"]}`,
	"limit":    `{"limit": 10}`,
	"skip":     `{"skip": 5}`,
	"slice":    `{"slice": [5, 15]}`,
	"sample":   `{"sample": {"n": 10, "seed": 42}}`,
	"unique":   `{"unique": "author.name"}`,
	"flatten":  `{"flatten": "tags"}`,
	"group_by": `{"group_by": {"field": "category", "metrics": {"n": "count", "avg_score": "mean:score"}}}`,
	"count":    `{"count": true}`,
}

const examplePipeline = `[{"filter": {"year": {"$gte": 2023}}}, {"sort": {"field": "score", "order": "desc"}}, {"limit": 10}]`

// Names models reach for that mean something we spell differently.
var (
	stepAliases = map[string]string{
		"where": "filter", "match": "filter", "find": "filter", "query": "filter", "$match": "filter",
		"grep": "search", "text": "search", "contains": "search",
		"order": "sort", "order_by": "sort", "orderby": "sort", "sort_by": "sort", "sortby": "sort", "$sort": "sort",
		"project": "select", "projection": "select", "fields": "select", "pick": "select", "columns": "select", "keep": "select", "$project": "select",
		"omit": "exclude", "drop": "exclude", "remove": "exclude", "without": "exclude",
		"head": "limit", "take": "limit", "top": "limit", "first": "limit", "$limit": "limit",
		"offset": "skip", "$skip": "skip", "range": "slice",
		"random": "sample", "$sample": "sample",
		"distinct": "unique", "dedupe": "unique", "dedup": "unique", "uniq": "unique",
		"unwind": "flatten", "explode": "flatten", "expand": "flatten", "$unwind": "flatten",
		"group": "group_by", "groupby": "group_by", "aggregate": "group_by", "agg": "group_by", "$group": "group_by",
		"len": "count", "length": "count", "size": "count", "total": "count", "$count": "count",
	}
	opAliases = map[string]string{
		"$neq": "$ne", "$not_eq": "$ne", "$noteq": "$ne", "$ge": "$gte", "$le": "$lte",
		"$equals": "$eq", "$eql": "$eq", "$is": "$eq",
		"$includes": "$contains", "$has": "$contains", "$elemmatch": "$contains", "$like": "$regex", "$ilike": "$regex",
		"$starts_with": "$startswith", "$prefix": "$startswith", "$begins_with": "$startswith",
		"$notin": "$nin", "$not_in": "$nin", "$exist": "$exists", "$has_field": "$exists",
		"$re": "$regex", "$regexp": "$regex", "$match": "$regex", "$matches": "$regex",
	}
	metricAliases = map[string]string{
		"avg": "mean", "average": "mean", "total": "sum", "std": "stddev", "stdev": "stddev", "sd": "stddev",
		"distinct": "values", "unique": "values", "list": "values", "set": "values", "med": "median",
		"minimum": "min", "maximum": "max", "cnt": "count", "n": "count",
	}
)

// suggest returns the candidate name meant by name, or "" when none is close.
func suggest(name string, candidates []string, aliases map[string]string) string {
	low := strings.ToLower(strings.TrimSpace(name))
	low = strings.ReplaceAll(strings.ReplaceAll(low, "-", "_"), " ", "_")
	if a, ok := aliases[low]; ok {
		return a
	}
	if slices.Contains(candidates, low) {
		return low
	}
	if near := editdist.Nearest(low, candidates, 2); len(near) > 0 {
		return near[0]
	}
	return ""
}

// quoteList renders names as "a", "b" and "c" for messages.
func quoteList[S ~string](names []S) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(n))
	}
	return b.String()
}

// exampleFor returns the JSON of a tailored example step when it parses,
// else the canonical example for the step name.
func exampleFor(name string, step any) string {
	if step != nil {
		if b, err := query.Marshal(step); err == nil {
			if _, err := parseStepJSON(b); err == nil {
				return string(b)
			}
		}
	}
	return examples[name]
}

// parseStepJSON parses one step written as JSON; it checks examples.
func parseStepJSON(b []byte) (query.Step, error) {
	v, err := query.Decode(b)
	if err != nil {
		return nil, err
	}
	return parseStep(0, v)
}
