// Package query is the representation of a query over a stored list and
// its reference evaluator: a [Pipeline] of steps ([Filter] with
// Mongo-style conditions on dot paths, [Search], [Sort], [Select],
// [Exclude], [Limit], [Skip], [Slice], [Sample], [Unique], [Flatten],
// [GroupBy] with its metrics, [Count]) and [Pipeline.Run], which evaluates
// it in Go over decoded items.
//
// It lives below both the stores and the engine: package
// offload/pipeline parses the result_pipe language into a Pipeline, and a
// store that runs a prefix of a pipeline natively (store.Piper; SQLite
// compiles it to SQL) hands the rest to [Pipeline.RunFrom], reads paths by
// [ArrayIndex]'s rule and computes group metrics with [Aggregate], the
// evaluator's own code, so that its results match to the bit. The
// conformance suite (store/storetest) holds such a store to Run's answers.
//
// Semantics: a missing field reads as null everywhere. Paths split at
// dots; a segment of digits indexes an array. Values compare as decoded
// JSON: numbers by value whatever their form, arrays and objects deeply.
// $regex is Go's RE2, linear in its input, with the pattern's length and
// program, the characters of a value it reads and the total time one run
// spends matching all bounded. The doc comments on the step and operator
// types give the details; the semantics follow the reference engine
// (ctxtual) and the shared conformance vectors (package querytest reads
// them).
//
// Steps are evaluated as a chain of iterators. filter, search, select,
// exclude, flatten, unique, limit, skip and slice stream: they pass items on
// one at a time, and limit and slice stop reading the source once they have
// enough. sort and group_by materialise their input (a sort directly
// followed by limit or slice keeps only the top items, in a heap), sample
// keeps n items, and unique remembers the values it has seen; each step that
// holds items holds at most [MaxHeldItems].
//
// Items are decoded JSON: map[string]any, []any, string, bool, nil, and
// float64 for numbers, except integers that a float64 would round, which
// stay json.Number (see [Decode]). Steps never change the items they read;
// they copy what they change. A step that cannot run is reported as a
// [*StepError].
package query
