// Package pipeline is the language of the result_pipe tool: a list of steps
// a model sends to filter, sort, reshape and aggregate a stored list without
// reading it into its context.
//
// A pipeline is a JSON array of steps, each an object with one key, the
// step's name:
//
//	filter    {"filter": {"year": {"$gte": 2023}, "author.name": "Ada"}}
//	search    {"search": {"query": "ML", "fields": ["title"]}} or {"search": "ML"}
//	sort      {"sort": {"field": "score", "order": "desc"}} or a list of such keys
//	select    {"select": ["title", "year"]}
//	exclude   {"exclude": ["body"]}
//	limit     {"limit": 10}
//	skip      {"skip": 5}
//	slice     {"slice": [5, 15]}
//	sample    {"sample": {"n": 10, "seed": 42}}
//	unique    {"unique": "author"}
//	flatten   {"flatten": "tags"}
//	group_by  {"group_by": {"field": "cat", "metrics": {"n": "count", "avg": "mean:score"}}}
//	count     {"count": true}
//
// Conditions are Mongo-style: {"field": value} for equality, {"field":
// {"$op": value}} with $eq $ne $gt $gte $lt $lte $in $nin $contains
// $startswith $regex $exists, and $and, $or and $not to combine them. Field
// names are dot paths ("author.name", "tags.0"). A missing field reads as
// null everywhere. $regex is Go's RE2, linear in its input, so it is on by
// default; since the factor of that linear time is the pattern's program
// size, the pattern's length and program, the characters of a value it reads
// and the total time one run spends matching are all bounded. The semantics follow
// the reference engine (ctxtual) and the shared conformance vectors; the doc
// comments on the step and operator types give the details.
//
// [Parse] turns the JSON into a [Pipeline], a typed syntax tree of [Step]
// and [Cond] values, so that a store can compile a prefix of the steps into
// SQL and run the rest with [Pipeline.RunFrom]; such a store reads paths
// by [ArrayIndex]'s rule and computes group metrics with [Aggregate], the
// evaluator's own code, so that its results match to the bit.
// [Pipeline.Run] evaluates a whole pipeline over decoded items (see
// [Decode] for their form), and [Output] shapes the final value for the
// model. Every mistake in the steps is reported as a [*StepError] naming
// the step, the problem and a valid example to copy.
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
// they copy what they change.
package pipeline
