package store

import (
	"context"

	"github.com/ctxkit/ctxkit/store/query"
)

// Piper is the optional capability of a [Store] that runs query pipelines
// over its list workspaces itself, so that a filter or an aggregate need
// not bring every item out of the store: sqlitestore runs a prefix of the
// steps in SQL. The engine asks for it with a type assertion; on a store
// without it, it runs the pipeline in Go, with [query.Pipeline.Run] over
// [Store.ScanItems] (decoding only the fields the pipeline reads, see
// [query.Pipeline.Projection]).
//
// Pipe returns what p.Run returns over the workspace's items in order,
// errors included: a *query.StepError for a step that cannot run, before
// any item is read when the step is invalid. Numbers, strings and
// aggregates must match to the bit (package query's [query.ArrayIndex]
// and [query.Aggregate] exist for that); storetest holds a Piper to it.
// The one latitude is an object that repeats a key, which RFC 8259 leaves
// undefined: a backend may read any of its values (SQLite reads the first,
// Go the last).
type Piper interface {
	Pipe(ctx context.Context, id string, p *query.Pipeline) (any, error)
}
