// Package querytest helps test what evaluates queries (package query's Go
// evaluator, a store's pushdown, the result_pipe language on top of them)
// against the shared conformance vectors, result_pipe pipelines with the
// values they must produce: it reads them and judges results with one
// tolerance ([Diff]), so that the tests cannot drift apart in what they
// count as conforming.
//
// It imports nothing from package query, so that the evaluator's own
// in-package tests can use it.
package querytest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Sample is a JSON array of items for tests of pipelines, covering the
// awkward cases: null and missing fields, a string where numbers are
// usual, empty and non-array "arrays", nested objects and an integer
// beyond float64 precision. Each item has a numeric "id" (see IDs).
const Sample = `[
 {"id": 1, "title": "Deep Learning", "year": 2023, "score": 9.5, "tags": ["ml", "gpu"], "author": {"name": "Ada", "h": 10}, "note": null},
 {"id": 2, "title": "Fast Graphs", "year": 2021, "score": 7, "tags": [], "author": {"name": "Ken", "h": 3}},
 {"id": 3, "title": "deep nets", "year": 2024, "score": null, "tags": ["ml"], "author": {"name": "Ada", "h": 12}, "draft": true},
 {"id": 4, "title": "Queues", "year": "2022", "tags": "none", "author": {"name": "Grace"}},
 {"id": 5, "title": "Big id", "year": 2020, "score": 3, "big": 12345678901234567890, "tags": ["gpu", "db", "ml"], "author": {"name": "Ken", "h": 7}}
]`

// Source yields vs as the items of a pipeline run.
func Source(vs []any) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for _, v := range vs {
			if !yield(v, nil) {
				return
			}
		}
	}
}

// IDs returns the numeric "id" of each item of a list result, failing the
// test for anything else.
func IDs(tb testing.TB, v any) []int {
	tb.Helper()
	list, ok := v.([]any)
	if !ok {
		tb.Fatalf("result is %T, want a list", v)
	}
	out := make([]int, 0, len(list))
	for _, x := range list {
		m, _ := x.(map[string]any)
		f, ok := m["id"].(float64)
		if !ok {
			tb.Fatalf("item %s has no numeric id", short(x))
		}
		out = append(out, int(f))
	}
	return out
}

// conformanceFile is where the vectors live, relative to the directory
// that holds the module's go.mod: outside the repository, beside it.
const conformanceFile = "../shared/conformance/pipeline.jsonl"

// Case is one conformance vector: a pipeline and the value it must produce
// from the file's items.
type Case struct {
	Line     int             // line of the file, for naming subtests
	Steps    json.RawMessage // the pipeline, a JSON array of steps
	Expected json.RawMessage // the result, as JSON
}

// LoadConformance reads the shared conformance file with [ReadConformance].
// It skips the test when the file is absent (it lives outside the
// repository) and fails it on any other error.
func LoadConformance(tb testing.TB) (items []json.RawMessage, cases []Case) {
	tb.Helper()
	items, cases, err := ReadConformance()
	if errors.Is(err, fs.ErrNotExist) {
		tb.Skipf("pipeline conformance vectors not found: %v; they live outside the repository", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return items, cases
}

// ReadConformance reads the shared conformance file: its first line holds
// the items, each further line a pipeline and its expected value. The
// error wraps [fs.ErrNotExist] when the file is absent, for a test that
// runs without the vectors rather than skipping; a file with no items or no
// cases is an error too.
func ReadConformance() (items []json.RawMessage, cases []Case, err error) {
	path, err := conformancePath()
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read the conformance vectors: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	if !sc.Scan() {
		return nil, nil, fmt.Errorf("read %s: no items line (%v)", path, sc.Err())
	}
	var head struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
		return nil, nil, fmt.Errorf("decode the items line of %s: %w", path, err)
	}
	if len(head.Items) == 0 {
		return nil, nil, fmt.Errorf("the items line of %s holds no items", path)
	}
	for line := 2; sc.Scan(); line++ {
		var c struct {
			Steps    json.RawMessage `json:"steps"`
			Expected json.RawMessage `json:"expected"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		cases = append(cases, Case{Line: line, Steps: c.Steps, Expected: c.Expected})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(cases) == 0 {
		return nil, nil, fmt.Errorf("%s holds no conformance cases", path)
	}
	return head.Items, cases, nil
}

// conformancePath finds the conformance file from the module root, the
// nearest directory above the working directory (a test's package
// directory) that holds go.mod, so that a test anywhere in the module finds
// it.
func conformancePath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the conformance vectors: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, filepath.FromSlash(conformanceFile)), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the conformance vectors: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Diff describes the first place where got differs from want, "" when they
// match. Both are decoded JSON (map[string]any, []any, string, bool, nil,
// float64, json.Number). A float64 in want matches a float64 within a
// relative tolerance of 1e-9, because the vectors come from an engine that
// sums in another order; other numbers must be equal in value, and
// everything else equal exactly.
func Diff(got, want any) string {
	return diff(got, want, "result")
}

func diff(got, want any, at string) string {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		if !ok {
			return fmt.Sprintf("%s: got %s, want %v", at, short(got), w)
		}
		if g == w || math.Abs(g-w) <= 1e-9*math.Max(math.Abs(g), math.Abs(w)) {
			return ""
		}
		return fmt.Sprintf("%s: got %v, want %v", at, g, w)
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an array of %d", at, short(got), len(w))
		}
		for i := range min(len(g), len(w)) {
			if d := diff(g[i], w[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: got %d elements, want %d", at, len(g), len(w))
		}
		return ""
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an object", at, short(got))
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if _, ok := g[k]; !ok {
				return fmt.Sprintf("%s: key %q missing", at, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(g)) {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s: unexpected key %q", at, k)
			}
			if d := diff(g[k], w[k], at+"."+k); d != "" {
				return d
			}
		}
		return ""
	}
	if !sameScalar(got, want) {
		return fmt.Sprintf("%s: got %s, want %s", at, short(got), short(want))
	}
	return ""
}

// sameScalar reports whether two JSON scalars are equal, numbers by exact
// value whatever their Go type.
func sameScalar(a, b any) bool {
	x, xok := exact(a)
	y, yok := exact(b)
	if xok || yok {
		return xok && yok && x.Cmp(y) == 0
	}
	switch b.(type) {
	case nil, string, bool:
		return a == b // comparable: b's type is, and a of another type is unequal
	}
	return false
}

// exact is a number's exact value; false for what is not a finite number.
func exact(v any) (*big.Rat, bool) {
	switch t := v.(type) {
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(t), true
	case json.Number:
		return new(big.Rat).SetString(string(t))
	}
	return nil, false
}

// short is v as JSON, cut to keep messages readable.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	const max = 120
	if len(b) <= max {
		return string(b)
	}
	return strings.ToValidUTF8(string(b[:max]), "") + "…"
}
