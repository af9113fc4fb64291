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
// null everywhere.
//
// This package is the language: [Parse] reads the JSON steps, lenient in
// form (a step object alone, the array sent as a string, Mongo's sort
// form is explained), into a query.Pipeline, the neutral representation
// in package store/query, which also evaluates it ([query.Pipeline.Run]),
// and which a store may run natively in part (store.Piper). Every mistake
// in the steps is reported as a [*StepError] naming the step, the problem
// and a valid example to copy; [Explain] turns a run's query.StepError
// into one. [Description] and [StepsSchema] describe the tool to the model
// and [Output] shapes the final value for it.
package pipeline
