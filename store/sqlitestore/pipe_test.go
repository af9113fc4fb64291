package sqlitestore

// Tests of the SQL pushdown itself: how many steps run in SQL, when values
// SQLite cannot hold exactly send a run to Go, projected runs, reading rows
// in batches. That Pipe gives what query.Pipeline.Run gives is the
// conformance suite's (storetest), run on this store in both modes by
// TestConformance and TestConformancePushdown.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ctxkit/ctxkit/store"
	qry "github.com/ctxkit/ctxkit/store/query"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// openPipeStore opens a store in a fresh temporary directory.
func openPipeStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "ctxkit.db"), Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// putList stores items as the list workspace id.
func putList(tb testing.TB, s *Store, id string, items []json.RawMessage) {
	tb.Helper()
	ws := &store.Workspace{ID: id, Type: "test", Shape: store.ShapeList, Format: "json", Producer: "pipe_test"}
	if err := s.Put(context.Background(), ws, &store.Content{Items: items}); err != nil {
		tb.Fatalf("Put %s: %v", id, err)
	}
}

// sameMode checks that Pipe in the given mode gives exactly what Run
// gives, errors included, and returns how many steps ran in SQL.
func sameMode(t *testing.T, s *Store, id string, p *qry.Pipeline, mode pipeMode) int {
	t.Helper()
	ctx := t.Context()
	want, werr := storetest.RunGo(ctx, s, id, p)
	got, pushed, gerr := s.pipeWith(ctx, id, p, mode)
	if (werr != nil) != (gerr != nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%+v on %s (mode %d): Pipe error %v, Run error %v", p.Steps, id, mode, gerr, werr)
	}
	if g, w := storetest.Canon(got), storetest.Canon(want); g != w {
		t.Fatalf("%+v on %s (mode %d, %d steps in SQL):\nPipe %s\nRun  %s", p.Steps, id, mode, pushed, g, w)
	}
	return pushed
}

// samePipe is sameMode in both modes; it returns the steps that ran in SQL
// when pushing down.
func samePipe(t *testing.T, s *Store, id string, p *qry.Pipeline) int {
	t.Helper()
	sameMode(t, s, id, p, pipeAuto)
	return sameMode(t, s, id, p, pipeSQL)
}

// TestConformancePushdown runs the conformance suite, pipeline tests
// included, with every pipeline pushed down to SQL as far as it goes,
// even those Pipe runs over projected items.
func TestConformancePushdown(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, Options{pipeMode: pipeSQL}) })
}

// TestPipePushdown checks how much of each pipeline runs in SQL, so that a
// regression to streaming everything through Go fails.
func TestPipePushdown(t *testing.T) {
	s := openPipeStore(t)
	putList(t, s, "plain", storetest.PipeItems()["plain"])
	cases := []struct {
		p      *qry.Pipeline
		pushed int
	}{
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpGt, Value: 1.0}},
		}}, 1},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.And{Conds: []qry.Cond{qry.FieldCond{Path: "kind", Op: qry.OpIn, Value: []any{"a", "b"}}, qry.FieldCond{Path: "n", Op: qry.OpGte, Value: 0.0}}}},
			qry.Sort{Keys: []qry.SortKey{{Path: "n", Desc: true}}},
			qry.Limit{N: 3},
		}}, 3},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "s", Op: qry.OpStartsWith, Value: "b"}},
			qry.Count{},
		}}, 2},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpExists, Value: true}},
			qry.GroupBy{Path: "author.name", Metrics: []qry.Metric{{Name: "avg", Func: qry.MetricMean, Path: "n"}, {Name: "n", Func: qry.MetricCount}}},
			qry.Sort{Keys: []qry.SortKey{{Path: "n", Desc: true}}},
			qry.Limit{N: 2},
		}}, 2},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "s"}, {Path: "n", Desc: true}}},
			qry.Skip{N: 1},
			qry.Limit{N: 4},
		}}, 3},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Slice{Start: 1, End: 6},
			qry.Filter{Cond: qry.FieldCond{Path: "tags", Op: qry.OpContains, Value: "x"}},
			qry.Count{},
		}}, 3},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.GroupBy{Path: "kind", Metrics: []qry.Metric{{Name: "hi", Func: qry.MetricMax, Path: "n"}, {Name: "lo", Func: qry.MetricMin, Path: "n"}, {Name: "md", Func: qry.MetricMedian, Path: "n"}, {Name: "sd", Func: qry.MetricStddev, Path: "n"}, {Name: "t", Func: qry.MetricSum, Path: "n"}}},
		}}, 1},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "s", Op: qry.OpRegex, Value: "a"}},
			qry.Count{},
		}}, 0},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpGt, Value: 0.0}},
			qry.Filter{Cond: qry.FieldCond{Path: "s", Op: qry.OpRegex, Value: "a"}},
			qry.Count{},
		}}, 1},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.GroupBy{Path: "kind", Metrics: []qry.Metric{{Name: "who", Func: qry.MetricValues, Path: "id"}}},
		}}, 0},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "n"}}},
			qry.GroupBy{Path: "kind", Metrics: []qry.Metric{{Name: "count", Func: qry.MetricCount}}},
		}}, 1},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpEq, Value: 1.0}},
			qry.Select{Paths: []string{"id"}},
			qry.Count{},
		}}, 1},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Search{Query: "beta"},
			qry.Count{},
		}}, 0},
		{&qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "f", Desc: true}}},
			qry.Filter{Cond: qry.FieldCond{Path: "f", Op: qry.OpLt, Value: 1.0}},
		}}, 2},
	}
	for _, c := range cases {
		if got := samePipe(t, s, "plain", c.p); got != c.pushed {
			t.Errorf("%+v: %d steps ran in SQL, want %d", c.p.Steps, got, c.pushed)
		}
	}
}

// TestPipeFallback checks that values SQLite cannot hold exactly send the
// pipeline to Go rather than give a different answer, and only when they
// matter.
func TestPipeFallback(t *testing.T) {
	s := openPipeStore(t)
	for name, items := range storetest.PipeItems() {
		putList(t, s, name, items)
	}
	cases := []struct {
		list   string
		p      *qry.Pipeline
		pushed int
	}{
		{"bigint", &qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "n"}}},
		}}, 0},
		{"bigint", &qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpGt, Value: 1.8446744073709552e+19}},
		}}, 0},
		{"bigint", &qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpGt, Value: 3.0}},
		}}, 1},
		{"bigint", &qry.Pipeline{Steps: []qry.Step{
			qry.GroupBy{Path: "g", Metrics: []qry.Metric{{Name: "hi", Func: qry.MetricMax, Path: "n"}}},
		}}, 0},
		{"bigint", &qry.Pipeline{Steps: []qry.Step{
			qry.GroupBy{Path: "g", Metrics: []qry.Metric{{Name: "t", Func: qry.MetricSum, Path: "n"}}},
		}}, 1},
		{"long", &qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpEq, Value: 1.905409544972363e+10}},
		}}, 0},
		{"long", &qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpLt, Value: 1.0}},
		}}, 1},
		{"long", &qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "n"}}},
		}}, 0},
		{"inf", &qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "n"}}},
		}}, 0},
		{"inf", &qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "n", Op: qry.OpGt, Value: 1e+308}},
		}}, 1},
		{"text", &qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "s"}}},
		}}, 0},
		{"text", &qry.Pipeline{Steps: []qry.Step{
			qry.GroupBy{Path: "s", Metrics: []qry.Metric{{Name: "count", Func: qry.MetricCount}}},
		}}, 0},
		{"text", &qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "s", Op: qry.OpStartsWith, Value: "a"}},
		}}, 1},
		{"nul", &qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "s"}}},
		}}, 0},
		{"negzero", &qry.Pipeline{Steps: []qry.Step{
			qry.GroupBy{Path: "g", Metrics: []qry.Metric{{Name: "lo", Func: qry.MetricMin, Path: "v"}}},
		}}, 0},
		{"negzero", &qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "n"}}},
		}}, 1},
		{"composite", &qry.Pipeline{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "v"}}},
		}}, 0},
		{"composite", &qry.Pipeline{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "v", Op: qry.OpExists, Value: true}},
			qry.Count{},
		}}, 2},
	}
	for _, c := range cases {
		if pushed := samePipe(t, s, c.list, c.p); pushed != c.pushed {
			t.Errorf("%s, %+v: %d steps ran in SQL, want %d", c.list, c.p.Steps, pushed, c.pushed)
		}
	}
}

// dupItems repeat keys, where Go reads the last value and SQLite the
// first, and mix in items that are not objects or hold escaped keys.
var dupItems = []json.RawMessage{
	json.RawMessage(`{"dup": 1, "x": "a", "dup": 2}`),
	json.RawMessage(`{"dup": {"k": 1}, "dup": {"k": 3, "j": 1}, "x": [1, {"y": 2}]}`),
	json.RawMessage(`{"d\u0075p": "escaped", "x": "\u00e9\n"}`),
	json.RawMessage(`{"dup": null, "x": 1e400, "dup": 2, "big": 12345678901234567890}`),
	json.RawMessage(`{"x": 1, "x": {"a": [1, "b"]}, "n": 3, "kind": "a"}`),
	json.RawMessage(`["dup", 1]`),
	json.RawMessage(`"dup"`),
	json.RawMessage(`12`),
	json.RawMessage(`null`),
	json.RawMessage(`{}`),
}

// TestPipeProjectedDups runs pipelines that Pipe runs over projected items
// on objects that repeat keys: projected decoding gives Go's answer (the
// last value), which the SQL would not.
func TestPipeProjectedDups(t *testing.T) {
	s := openPipeStore(t)
	putList(t, s, "dups", dupItems)
	for _, p := range []*qry.Pipeline{
		{Steps: []qry.Step{
			qry.Search{Query: "a", Fields: []string{"s", "author"}},
			qry.GroupBy{Path: "kind", Metrics: []qry.Metric{{Name: "n", Func: qry.MetricCount}, {Name: "who", Func: qry.MetricValues, Path: "author"}}},
		}},
		{Steps: []qry.Step{
			qry.Select{Paths: []string{"id", "author.name", "n"}},
			qry.Exclude{Paths: []string{"id"}},
			qry.GroupBy{Path: "author.name", Metrics: []qry.Metric{{Name: "ids", Func: qry.MetricValues, Path: "id"}, {Name: "t", Func: qry.MetricSum, Path: "n"}}},
		}},
		{Steps: []qry.Step{
			qry.Flatten{Path: "tags"},
			qry.Unique{Path: "tags"},
			qry.GroupBy{Path: "tags", Metrics: []qry.Metric{{Name: "n", Func: qry.MetricCount}, {Name: "vs", Func: qry.MetricValues, Path: "v"}}},
		}},
		{Steps: []qry.Step{
			qry.Sample{N: 5, Seed: 3, Seeded: true},
			qry.Filter{Cond: qry.Not{Cond: qry.FieldCond{Path: "n", Op: qry.OpRegex, Value: "^1"}}},
			qry.Count{},
		}},
		{Steps: []qry.Step{
			qry.Sort{Keys: []qry.SortKey{{Path: "n", Desc: true}}},
			qry.Limit{N: 4},
			qry.GroupBy{Path: "kind", Metrics: []qry.Metric{{Name: "lo", Func: qry.MetricMin, Path: "big"}, {Name: "m", Func: qry.MetricMedian, Path: "n"}}},
			qry.Sort{Keys: []qry.SortKey{{Path: "m"}}},
		}},
		{Steps: []qry.Step{
			qry.Filter{Cond: qry.Or{Conds: []qry.Cond{qry.FieldCond{Path: "dup", Op: qry.OpExists, Value: true}, qry.FieldCond{Path: "o.0", Op: qry.OpEq, Value: 0.0}}}},
			qry.GroupBy{Path: "dup", Metrics: []qry.Metric{{Name: "n", Func: qry.MetricCount}, {Name: "x", Func: qry.MetricValues, Path: "x"}}},
		}},
		{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "dup.k", Op: qry.OpGte, Value: 1.0}},
			qry.Count{},
		}},
		{Steps: []qry.Step{
			qry.Filter{Cond: qry.FieldCond{Path: "x", Op: qry.OpExists, Value: true}},
			qry.Count{},
		}},
	} {
		if keys, ok := p.Projection(); !ok || len(keys) == 0 {
			t.Fatalf("%+v does not project", p.Steps)
		}
		if pushed := sameMode(t, s, "dups", p, pipeAuto); pushed != 0 {
			t.Errorf("%+v ran %d steps in SQL, want none", p.Steps, pushed)
		}
	}
}

// TestProjectedRowsStop reads a list of several batches through
// projectedRows, in order, and stops early and on a cancelled context
// without leaving its goroutines blocked (the race detector and the test's
// end would show them).
func TestProjectedRowsStop(t *testing.T) {
	s := openPipeStore(t)
	items := make([]json.RawMessage, 3*projectBatch+7)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i": %d, "skip": "x", "i": %d}`, -i, i))
	}
	putList(t, s, "many", items)
	// read reads the projected rows of "many" until stop items (-1: all),
	// calling after, when set, after each item.
	read := func(ctx context.Context, stop int, after func(n int)) (n int, err error) {
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		tr := &txn{ctx: ctx, tx: tx, stmts: s.rst}
		ref, err := lookup(tr, "many", store.ShapeList)
		if err != nil {
			return 0, err
		}
		for v, err := range projectedRows(tr, ref, []string{"i"}) {
			if err != nil {
				return n, err
			}
			if want := map[string]any{"i": float64(n)}; storetest.Canon(v) != storetest.Canon(want) {
				return n, fmt.Errorf("item %d is %s, want %s", n, storetest.Canon(v), storetest.Canon(want))
			}
			if n++; after != nil {
				after(n)
			}
			if n == stop {
				return n, nil
			}
		}
		return n, nil
	}
	if n, err := read(t.Context(), -1, nil); err != nil || n != len(items) {
		t.Errorf("read %d items (%v), want %d", n, err, len(items))
	}
	if n, err := read(t.Context(), projectBatch+1, nil); err != nil || n != projectBatch+1 {
		t.Errorf("stopping after %d items read %d (%v)", projectBatch+1, n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	n, err := read(ctx, -1, func(n int) {
		if n == 10 {
			cancel()
		}
	})
	cancel()
	if !errors.Is(err, context.Canceled) || n >= len(items) {
		t.Errorf("cancelled after 10 items: read %d, error %v; want context.Canceled", n, err)
	}
}

// TestProjectedRowsBatches reads lists through projectedRows whose batches
// end exactly at the list's end, whose ids have gaps (deleted items) and
// whose items hold new lines, separators and multibyte text: every item
// comes back whole, in order.
func TestProjectedRowsBatches(t *testing.T) {
	ctx := t.Context()
	s := openPipeStore(t)
	item := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf("{\n \"i\": %d,\n \"s\": \"é,\\n\u2028%d\", \"t\": [\n1, \"x\"]\n}", i, i))
	}
	makeItems := func(n int) []json.RawMessage {
		items := make([]json.RawMessage, n)
		for i := range items {
			items[i] = item(i)
		}
		return items
	}
	putList(t, s, "exact", makeItems(2*projectBatch))
	putList(t, s, "gaps", makeItems(3*projectBatch+5))
	// Delete a run longer than a batch and scattered items, leaving gaps.
	var del []int
	for i := projectBatch - 3; i < 2*projectBatch+10; i++ {
		del = append(del, i)
	}
	del = append(del, 0, 2*projectBatch+40, 3*projectBatch+4)
	if err := s.DeleteItems(ctx, "gaps", del); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendItems(ctx, "gaps", makeItems(3)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"exact", "gaps"} {
		var want []any
		for raw, err := range s.ScanItems(ctx, id) {
			if err != nil {
				t.Fatal(err)
			}
			v, err := qry.DecodeKeys(raw, []string{"i", "s", "t"})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		tr := &txn{ctx: ctx, tx: tx, stmts: s.rst}
		ref, err := lookup(tr, id, store.ShapeList)
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		for v, err := range projectedRows(tr, ref, []string{"i", "s", "t"}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		tx.Rollback()
		if storetest.Canon(got) != storetest.Canon(want) {
			t.Errorf("%s: projectedRows read %d items, ScanItems %d; they differ:\n%s\n%s", id, len(got), len(want), storetest.Canon(got), storetest.Canon(want))
		}
	}
}

// TestProjectedRowsTooBig reads a list whose batches exceed the longest
// string SQLite makes: readBatches takes fewer rows at a time, down to
// one item, and still reads every item in order.
func TestProjectedRowsTooBig(t *testing.T) {
	ctx := t.Context()
	s := openPipeStore(t)
	items := make([]json.RawMessage, 40)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"i": %d, "pad": %q}`, i, strings.Repeat("x", 3000+i)))
	}
	putList(t, s, "big", items)
	conn, err := s.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// SQLITE_LIMIT_LENGTH: strings of at most 10,000 bytes, about 3 items.
	old, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, old)
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tr := &txn{ctx: ctx, tx: tx, stmts: s.rst}
	ref, err := lookup(tr, "big", store.ShapeList)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for v, err := range projectedRows(tr, ref, []string{"i"}) {
		if err != nil {
			t.Fatalf("item %d: %v", n, err)
		}
		if want := map[string]any{"i": float64(n)}; storetest.Canon(v) != storetest.Canon(want) {
			t.Fatalf("item %d is %s, want %s", n, storetest.Canon(v), storetest.Canon(want))
		}
		n++
	}
	if n != len(items) {
		t.Errorf("read %d items, want %d", n, len(items))
	}
}
