package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Description is the description of the result_pipe tool, written for the
// model that calls it. Every step in backquotes is a valid example; a test
// parses each one.
const Description = "Run a pipeline of steps over a stored list in one call, so only the answer enters the context. " +
	"Steps run in order; each is an object with one key, the step name.\n" +
	"\n" +
	"Steps:\n" +
	"- filter: keep items matching conditions (below). `{\"filter\": {\"year\": {\"$gte\": 2023}, \"author.name\": \"Ada\"}}`\n" +
	"- search: keep items where the query occurs as a substring, ignoring case, in any value or only in the given fields. " +
	"`{\"search\": {\"query\": \"machine learning\", \"fields\": [\"title\", \"abstract\"]}}` or `{\"search\": \"timeout\"}`\n" +
	"- sort: by one or more fields, order \"asc\" (default) or \"desc\"; null and missing sort first in asc. " +
	"`{\"sort\": [{\"field\": \"score\", \"order\": \"desc\"}, {\"field\": \"title\"}]}`\n" +
	"- select: keep only these fields; \"author.name\" keeps the nested value in place. `{\"select\": [\"title\", \"year\", \"author.name\"]}`\n" +
	"- exclude: drop these fields. `{\"exclude\": [\"body\", \"raw\"]}`\n" +
	"- limit, skip, slice: `{\"limit\": 10}`, `{\"skip\": 5}`, `{\"slice\": [5, 15]}` (items 5 to 14)\n" +
	"- sample: n random items, in their original order; the same seed gives the same sample. `{\"sample\": {\"n\": 10, \"seed\": 42}}`\n" +
	"- unique: keep the first item for each distinct value of a field. `{\"unique\": \"author.name\"}`\n" +
	"- flatten: one item per element of an array field; items whose array is empty drop out. `{\"flatten\": \"tags\"}`\n" +
	"- group_by: one row per distinct value, {\"<field>\": value, \"<metric name>\": result}. Metrics: \"count\", \"sum:f\", \"mean:f\", " +
	"\"min:f\", \"max:f\", \"median:f\", \"stddev:f\" (sample), \"values:f\" (distinct values); they read numbers (true=1, false=0) and skip other values. " +
	"`{\"group_by\": {\"field\": \"category\", \"metrics\": {\"n\": \"count\", \"avg_score\": \"mean:score\"}}}`\n" +
	"- count: the number of items, as {\"count\": n}; only as the last step. `{\"count\": true}`\n" +
	"\n" +
	"Conditions: {\"field\": value} tests equality; dot paths reach nested fields and array elements (\"author.name\", \"tags.0\"); " +
	"all fields in one object must match. Operators go inside a field, {\"field\": {\"$op\": value}}: " +
	"$eq, $ne; $gt, $gte, $lt, $lte (numbers with numbers, strings with strings); $in, $nin (value in an array of values); " +
	"$contains (substring of a string, or element of an array); $startswith; $regex; $exists (true: present and not null). " +
	"Combine with {\"$or\": [...]}, {\"$and\": [...]}, {\"$not\": {...}}. A missing field counts as null: $ne and $nin match it, comparisons do not. " +
	"`{\"filter\": {\"$or\": [{\"tags\": {\"$contains\": \"gpu\"}}, {\"score\": {\"$gt\": 90}}], \"status\": {\"$nin\": [\"draft\", \"retracted\"]}}}`\n" +
	"$regex is on and uses RE2 (Go regexp): linear time, so any pattern is safe, but no backreferences or lookaround; " +
	"case-sensitive unless it starts with (?i); patterns up to 1000 characters (and 1000 compiled instructions, so no huge counted repeats); " +
	"a value is matched on its first 10000 characters; matching may take 10 s per call in all. " +
	"`{\"filter\": {\"title\": {\"$regex\": \"(?i)^deep (learning|nets)\"}}}`\n" +
	"\n" +
	"Result: a list comes back as {\"items\": the first 50, \"count\": total, \"has_more\": true if items were left out}; " +
	"count returns {\"count\": n}. With save_as: \"name\", the full result is stored as workspace saved_<name>, " +
	"explorable with these same tools, and its notice is returned instead.\n" +
	"\n" +
	"Limits: 64 steps; 1000 conditions per filter, $and/$or/$not nested 32 deep; sample up to 10000; sort, group_by, unique and the result hold at most 1000000 items. " +
	"Paths always split at dots, so a later step cannot reach a dotted group_by column such as \"author.name\"; sort on the metrics instead.\n" +
	"\n" +
	"Example, the five most cited categories since 2023: " +
	"`[{\"filter\": {\"year\": {\"$gte\": 2023}}}, {\"group_by\": {\"field\": \"category\", \"metrics\": {\"n\": \"count\", \"cites\": \"sum:citations\"}}}, " +
	"{\"sort\": {\"field\": \"cites\", \"order\": \"desc\"}}, {\"limit\": 5}]`"

// stepsSchema is the JSON Schema of the steps argument: the canonical form
// of each step. Parse accepts a few more spellings, which it need not
// advertise.
const stepsSchema = `{
  "type": "array",
  "maxItems": 64,
  "items": {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": false,
    "properties": {
      "filter": {"type": "object", "description": "{\"field\": value} or {\"field\": {\"$op\": value}}; $and/$or take arrays, $not an object"},
      "search": {"anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "object", "required": ["query"], "additionalProperties": false,
         "properties": {"query": {"type": "string", "minLength": 1}, "fields": {"type": "array", "items": {"type": "string", "minLength": 1}}}}]},
      "sort": {"anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "object", "required": ["field"], "additionalProperties": false,
         "properties": {"field": {"type": "string", "minLength": 1}, "order": {"enum": ["asc", "desc"]}}},
        {"type": "array", "minItems": 1, "maxItems": 16, "items": {"anyOf": [
          {"type": "string", "minLength": 1},
          {"type": "object", "required": ["field"], "additionalProperties": false,
           "properties": {"field": {"type": "string", "minLength": 1}, "order": {"enum": ["asc", "desc"]}}}]}}]},
      "select": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
      "exclude": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
      "limit": {"type": "integer", "minimum": 0, "maximum": 1000000000},
      "skip": {"type": "integer", "minimum": 0, "maximum": 1000000000},
      "slice": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 0, "maximum": 1000000000}},
      "sample": {"anyOf": [
        {"type": "integer", "minimum": 0, "maximum": 10000},
        {"type": "object", "additionalProperties": false,
         "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10000}, "seed": {"type": "integer"}}}]},
      "unique": {"type": "string", "minLength": 1},
      "flatten": {"type": "string", "minLength": 1},
      "group_by": {"type": "object", "required": ["field"], "additionalProperties": false,
        "properties": {"field": {"type": "string", "minLength": 1},
          "metrics": {"type": "object", "additionalProperties": {"type": "string",
            "pattern": "^(count|(sum|mean|min|max|median|stddev|values):.+)$"}}}},
      "count": {"const": true}
    }
  }
}`

// StepsSchema returns the JSON Schema of the steps argument, a new copy on
// each call so that the caller may change it (for instance its Description).
func StepsSchema() *jsonschema.Schema {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(stepsSchema), &s); err != nil {
		// The schema is a constant; a test unmarshals it.
		panic(fmt.Sprintf("pipeline: steps schema: %v", err))
	}
	return &s
}
