package query

// The representation. Steps and conditions are plain data so that a store
// can compile a prefix of them into its own query language (SQL) and hand
// the rest to [Pipeline.RunFrom].

// Pipeline is a list of steps, run in order.
type Pipeline struct {
	Steps []Step
}

// Step is one step of a pipeline. The concrete types are [Filter], [Search],
// [Sort], [Select], [Exclude], [Limit], [Skip], [Slice], [Sample], [Unique],
// [Flatten], [GroupBy] and [Count]; the set is closed so that a compiler can
// switch on it exhaustively. The parser (offload/pipeline) produces these
// value types; Run accepts pointers to them too.
type Step interface {
	// Name is the step's name, its key in result_pipe's JSON form, such as
	// "filter".
	Name() string
	isStep()
}

// Filter keeps the items that match Cond. It streams.
type Filter struct {
	Cond Cond
}

// Search keeps the items in which Query occurs, ignoring case, as a substring
// of a scalar value (strings as they are, numbers and booleans in their JSON
// form). Fields restricts the values looked at to those under these dot
// paths; empty means every scalar at any depth. It streams.
type Search struct {
	Query  string
	Fields []string
}

// Sort orders the items by Keys, the first key deciding first. The sort is
// stable. Per key, values order as: null or missing, then numbers (booleans
// count as 0 and 1), then strings (by code point), then arrays and objects
// (by their canonical JSON text); Desc reverses that whole order. It
// materialises.
type Sort struct {
	Keys []SortKey
}

// SortKey is one key of a [Sort].
type SortKey struct {
	Path string
	Desc bool
}

// Select keeps only the fields at Paths, in that order. A dotted path puts
// the nested value under the dotted name itself ("author.name": "Ada"), the
// way [GroupBy] names its key. Missing fields are left out; items that are
// not objects pass unchanged. It streams.
type Select struct {
	Paths []string
}

// Exclude removes the fields at Paths; a dotted path removes a nested field.
// It streams.
type Exclude struct {
	Paths []string
}

// Limit keeps the first N items and stops reading the source after them.
type Limit struct {
	N int
}

// Skip drops the first N items. It streams.
type Skip struct {
	N int
}

// Slice keeps the items from index Start up to, not including, End
// (0 <= Start <= End). It streams and stops reading at End.
type Slice struct {
	Start, End int
}

// Sample keeps N items chosen at random, in their original order. With
// Seeded, the choice depends only on Seed and the input, so it repeats. It
// holds N items.
type Sample struct {
	N      int
	Seed   uint64
	Seeded bool
}

// Unique keeps the first item for each distinct value at Path (missing
// counts as null). It streams, remembering the values seen.
type Unique struct {
	Path string
}

// Flatten replaces each item whose value at Path is an array by one copy per
// element, with the element at Path. Items with an empty array disappear;
// items where Path is not an array pass unchanged. It streams.
type Flatten struct {
	Path string
}

// GroupBy groups the items by their value at Path (missing counts as null)
// and yields one object per group, in order of first appearance: the group's
// value under the key Path itself ("author.name": "Ada"), then each metric.
// It materialises the groups.
type GroupBy struct {
	Path    string
	Metrics []Metric
}

// Metric is one aggregate computed per group.
type Metric struct {
	Name string     // the key in the output row
	Func MetricFunc // what to compute
	Path string     // the field it reads; empty for count
}

// MetricFunc names an aggregate function.
type MetricFunc string

// The aggregate functions. Numeric ones read numbers and booleans (as 1 and
// 0) and skip every other value.
const (
	// MetricCount is the number of items in the group.
	MetricCount MetricFunc = "count"
	// MetricSum is the sum of the numbers; 0 when there are none.
	MetricSum MetricFunc = "sum"
	// MetricMean is the arithmetic mean of the numbers; 0 when there are none.
	MetricMean MetricFunc = "mean"
	// MetricMin is the smallest number; null when there are none.
	MetricMin MetricFunc = "min"
	// MetricMax is the largest number; null when there are none.
	MetricMax MetricFunc = "max"
	// MetricMedian is the middle number, or the mean of the two middle ones;
	// null when there are none.
	MetricMedian MetricFunc = "median"
	// MetricStddev is the sample standard deviation (divisor n-1); 0 with
	// fewer than two numbers.
	MetricStddev MetricFunc = "stddev"
	// MetricValues is the distinct non-null values in order of first
	// appearance.
	MetricValues MetricFunc = "values"
)

// Count replaces the items by {"count": n}. It must be the last step.
type Count struct{}

// Cond is a filter condition: [And], [Or], [Not] or [FieldCond]. The
// parser produces value types, with the fields of one object, and the
// operators on one field, in sorted order.
type Cond interface {
	isCond()
}

// And matches when every condition matches; with none, it matches everything.
type And struct {
	Conds []Cond
}

// Or matches when at least one condition matches; with none, it matches
// nothing.
type Or struct {
	Conds []Cond
}

// Not matches when Cond does not.
type Not struct {
	Cond Cond
}

// FieldCond compares the value at Path with Value. A missing field reads as
// null, so {"note": null} matches items without a note and $ne matches them.
type FieldCond struct {
	Path  string
	Op    Op
	Value any // decoded JSON, see [Decode]; []any for $in and $nin, bool for $exists
}

// Op is a field operator.
type Op string

// The field operators.
const (
	// OpEq: the values are equal (numbers by value, arrays and objects deeply).
	// It is what {"field": value} means.
	OpEq Op = "$eq"
	// OpNe: the values are not equal.
	OpNe Op = "$ne"
	// OpGt, OpGte, OpLt and OpLte order two numbers, or two strings by code
	// point; any other pair (null, missing, mixed types) does not match.
	OpGt  Op = "$gt"
	OpGte Op = "$gte"
	OpLt  Op = "$lt"
	OpLte Op = "$lte"
	// OpIn: the value equals an element of the array Value.
	OpIn Op = "$in"
	// OpNin: the value equals no element of the array Value.
	OpNin Op = "$nin"
	// OpContains: a string value holds Value as a substring (case-sensitive),
	// or an array value has an element equal to Value. Numbers match by their
	// JSON text.
	OpContains Op = "$contains"
	// OpStartsWith: a string value begins with Value (case-sensitive).
	OpStartsWith Op = "$startswith"
	// OpRegex: a string value (or a number's JSON text) matches the RE2
	// pattern Value somewhere in its first MaxRegexInput characters. See
	// MaxRegexLength, MaxRegexProgram and MaxRegexTime for its bounds.
	OpRegex Op = "$regex"
	// OpExists: the field is present and not null (Value true) or missing or
	// null (Value false).
	OpExists Op = "$exists"
)

func (Filter) Name() string  { return "filter" }
func (Search) Name() string  { return "search" }
func (Sort) Name() string    { return "sort" }
func (Select) Name() string  { return "select" }
func (Exclude) Name() string { return "exclude" }
func (Limit) Name() string   { return "limit" }
func (Skip) Name() string    { return "skip" }
func (Slice) Name() string   { return "slice" }
func (Sample) Name() string  { return "sample" }
func (Unique) Name() string  { return "unique" }
func (Flatten) Name() string { return "flatten" }
func (GroupBy) Name() string { return "group_by" }
func (Count) Name() string   { return "count" }

func (Filter) isStep()  {}
func (Search) isStep()  {}
func (Sort) isStep()    {}
func (Select) isStep()  {}
func (Exclude) isStep() {}
func (Limit) isStep()   {}
func (Skip) isStep()    {}
func (Slice) isStep()   {}
func (Sample) isStep()  {}
func (Unique) isStep()  {}
func (Flatten) isStep() {}
func (GroupBy) isStep() {}
func (Count) isStep()   {}

func (And) isCond()       {}
func (Or) isCond()        {}
func (Not) isCond()       {}
func (FieldCond) isCond() {}
