package query

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// seq is a stream of items; an error ends it.
type seq = iter.Seq2[any, error]

// stage transforms a stream; it pulls from its input only as far as its
// output is read.
type stage func(in seq) seq

// Run evaluates the pipeline over the items src yields and returns the
// final value: a list ([]any), or {"count": n} (map[string]any) when the
// last step is count. Items are decoded JSON as [Decode] returns them; a
// json.RawMessage or []byte item is decoded first. A *StepError reports a
// step that cannot run; other errors come from src or ctx.
func (p *Pipeline) Run(ctx context.Context, src iter.Seq2[any, error]) (any, error) {
	return p.RunFrom(ctx, 0, src)
}

// RunFrom evaluates the steps from index start on, over items that the steps
// before it already produced: a store runs a prefix of the pipeline natively
// and hands the rest here. Errors name steps by their index in the whole
// pipeline.
func (p *Pipeline) RunFrom(ctx context.Context, start int, src iter.Seq2[any, error]) (any, error) {
	if start < 0 || start > len(p.Steps) {
		return nil, fmt.Errorf("run pipeline from step %d: it has %d steps", start, len(p.Steps))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run pipeline: %w", err)
	}
	s := input(ctx, src)
	env := newRunEnv()
	counting := false
	for i := start; i < len(p.Steps); i++ {
		step := deref(p.Steps[i])
		if _, ok := step.(Count); ok {
			if i != len(p.Steps)-1 {
				return nil, &StepError{Index: i, Step: "count",
					Problem: "count must be the last step, since it replaces the items by {\"count\": n}"}
			}
			counting = true
			break
		}
		// A sort followed by limit or slice keeps only the top items.
		if sk, ok := step.(Sort); ok && i+1 < len(p.Steps) {
			next := deref(p.Steps[i+1])
			if skip, take, ok := window(next); ok {
				if err := checkSort(sk); err != nil {
					return nil, stepError(i, step, err)
				}
				if _, err := compileStep(i+1, next, env); err != nil {
					return nil, err
				}
				s = topStage(i, sk.Keys, skip, take)(s)
				i++
				continue
			}
		}
		st, err := compileStep(i, step, env)
		if err != nil {
			return nil, err
		}
		s = st(s)
	}
	if counting {
		n := 0
		for _, err := range s {
			if err != nil {
				return nil, err
			}
			n++
		}
		return map[string]any{"count": float64(n)}, nil
	}
	out := []any{}
	for v, err := range s {
		if err != nil {
			return nil, err
		}
		if len(out) == MaxHeldItems {
			last, name := len(p.Steps)-1, ""
			if last >= 0 && p.Steps[last] != nil {
				name = p.Steps[last].Name()
			}
			return nil, holdError(last, name, "the result")
		}
		out = append(out, v)
	}
	return out, nil
}

// input adapts the source: it decodes raw items, numbers them in errors and
// stops when ctx is done.
func input(ctx context.Context, src seq) seq {
	return func(yield func(any, error) bool) {
		if src == nil {
			return
		}
		i := 0
		for v, err := range src {
			if err != nil {
				yield(nil, fmt.Errorf("read item %d: %w", i, err))
				return
			}
			// Checked per item: one item can be costly (a $regex over
			// 10,000 characters), and Err is cheap next to a step.
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("run pipeline: %w", err))
				return
			}
			switch t := v.(type) {
			case json.RawMessage:
				v, err = Decode(t)
			case []byte:
				v, err = Decode(t)
			}
			if err != nil {
				yield(nil, fmt.Errorf("decode item %d: %w", i, err))
				return
			}
			i++
			if !yield(v, nil) {
				return
			}
		}
	}
}

// deref turns a pointer to a step into the step, so that hand-built
// pipelines may use either.
func deref(s Step) Step {
	switch t := s.(type) {
	case *Filter:
		if t != nil {
			return *t
		}
	case *Search:
		if t != nil {
			return *t
		}
	case *Sort:
		if t != nil {
			return *t
		}
	case *Select:
		if t != nil {
			return *t
		}
	case *Exclude:
		if t != nil {
			return *t
		}
	case *Limit:
		if t != nil {
			return *t
		}
	case *Skip:
		if t != nil {
			return *t
		}
	case *Slice:
		if t != nil {
			return *t
		}
	case *Sample:
		if t != nil {
			return *t
		}
	case *Unique:
		if t != nil {
			return *t
		}
	case *Flatten:
		if t != nil {
			return *t
		}
	case *GroupBy:
		if t != nil {
			return *t
		}
	case *Count:
		if t != nil {
			return *t
		}
	}
	return s
}

// compileStep prepares step i to run. Parsed steps always compile; checks
// here catch hand-built ones.
func compileStep(i int, step Step, env *runEnv) (stage, error) {
	st, err := compileStage(i, step, env)
	if err != nil {
		return nil, stepError(i, step, err)
	}
	return st, nil
}

// window reports the items a limit or slice step keeps: it skips skip
// items and then keeps take.
func window(step Step) (skip, take int, ok bool) {
	switch s := step.(type) {
	case Limit:
		return 0, s.N, s.N >= 0
	case Slice:
		return s.Start, s.End - s.Start, s.Start >= 0 && s.End >= s.Start
	}
	return 0, 0, false
}

func compileStage(i int, step Step, env *runEnv) (stage, error) {
	switch s := step.(type) {
	case Filter:
		m, err := compileCond(s.Cond, 1, env)
		if err != nil {
			return nil, err
		}
		return filterStage(i, s, m, env), nil
	case Search:
		m, err := compileSearch(s)
		if err != nil {
			return nil, err
		}
		return filterStage(i, s, m, env), nil
	case Sort:
		if err := checkSort(s); err != nil {
			return nil, err
		}
		return sortStage(i, s.Keys), nil
	case Select:
		if err := checkPaths(s.Paths); err != nil {
			return nil, err
		}
		return mapStage(func(v any) any { return project(v, s.Paths) }), nil
	case Exclude:
		if err := checkPaths(s.Paths); err != nil {
			return nil, err
		}
		return mapStage(func(v any) any {
			for _, p := range s.Paths {
				v, _ = without(v, p)
			}
			return v
		}), nil
	case Limit:
		if s.N < 0 {
			return nil, problemf("limit takes a whole number from 0 to %d, not %d", MaxCount, s.N)
		}
		return sliceStage(0, s.N), nil
	case Skip:
		if s.N < 0 {
			return nil, problemf("skip takes a whole number from 0 to %d, not %d", MaxCount, s.N)
		}
		return sliceStage(s.N, -1), nil
	case Slice:
		if s.Start < 0 || s.End < s.Start {
			return nil, problemf("slice takes [start, end] with 0 <= start <= end, not [%d, %d]", s.Start, s.End)
		}
		return sliceStage(s.Start, s.End-s.Start), nil
	case Sample:
		if s.N < 0 || s.N > MaxSample {
			return nil, problemf("sample takes from 0 to %d items, not %d", MaxSample, s.N)
		}
		return sampleStage(s), nil
	case Unique:
		if err := CheckPath(s.Path); err != nil {
			return nil, err
		}
		return uniqueStage(i, s.Path), nil
	case Flatten:
		if err := CheckPath(s.Path); err != nil {
			return nil, err
		}
		return flattenStage(s.Path), nil
	case GroupBy:
		if err := checkGroupBy(s); err != nil {
			return nil, err
		}
		return groupStage(i, s), nil
	case nil:
		return nil, problemf("the step is missing")
	}
	return nil, problemf("unknown step type %T", step)
}

// each runs f on every item of in; f returns false to stop.
func each(in seq, f func(v any, yield func(any, error) bool) bool) seq {
	return func(yield func(any, error) bool) {
		for v, err := range in {
			if err != nil {
				yield(nil, err)
				return
			}
			if !f(v, yield) {
				return
			}
		}
	}
}

// filterStage keeps the items m matches; it stops with env's error when a
// matcher sets one.
func filterStage(i int, step Step, m matcher, env *runEnv) stage {
	return func(in seq) seq {
		return each(in, func(v any, yield func(any, error) bool) bool {
			ok := m(v)
			if env.err != nil {
				return yield(nil, stepError(i, step, env.err))
			}
			return !ok || yield(v, nil)
		})
	}
}

func mapStage(f func(any) any) stage {
	return func(in seq) seq {
		return each(in, func(v any, yield func(any, error) bool) bool {
			return yield(f(v), nil)
		})
	}
}

// sliceStage drops skip items and then passes take items (all when take is
// negative), reading no further than it needs.
func sliceStage(skip, take int) stage {
	return func(in seq) seq {
		return func(yield func(any, error) bool) {
			if take == 0 {
				return
			}
			seen, passed := 0, 0
			for v, err := range in {
				if err != nil {
					yield(nil, err)
					return
				}
				seen++
				if seen <= skip {
					continue
				}
				if !yield(v, nil) {
					return
				}
				passed++
				if passed == take {
					return
				}
			}
		}
	}
}

// project keeps the fields at paths. A dotted path keeps the nested value
// in its place, so ["id", "author.name"] gives {"id": 1, "author": {"name":
// "Ada"}}, which later steps still reach as "author.name".
func project(v any, paths []string) any {
	if _, ok := v.(map[string]any); !ok {
		return v
	}
	out := make(map[string]any, len(paths))
	for _, p := range paths {
		x, ok := lookup(v, p)
		if !ok {
			continue
		}
		m := out
		for {
			head, rest, more := strings.Cut(p, ".")
			if !more {
				m[head] = x
				break
			}
			next, ok := m[head].(map[string]any)
			if !ok {
				next = make(map[string]any)
				m[head] = next
			}
			m, p = next, rest
		}
	}
	return out
}

// without returns v without the field at path, copying what it changes and
// sharing the rest; it reports whether anything was removed.
func without(v any, path string) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, false
	}
	head, rest, more := strings.Cut(path, ".")
	child, ok := m[head]
	if !ok {
		return v, false
	}
	if !more {
		c := maps.Clone(m)
		delete(c, head)
		return c, true
	}
	nc, changed := without(child, rest)
	if !changed {
		return v, false
	}
	c := maps.Clone(m)
	c[head] = nc
	return c, true
}

// replaceAt returns v with the value at path, which exists, replaced by x,
// copying only what it changes.
func replaceAt(v any, path string, x any) any {
	head, rest, more := strings.Cut(path, ".")
	switch t := v.(type) {
	case map[string]any:
		c := maps.Clone(t)
		if more {
			c[head] = replaceAt(t[head], rest, x)
		} else {
			c[head] = x
		}
		return c
	case []any:
		i, ok := ArrayIndex(head)
		if !ok || i >= len(t) {
			return v
		}
		c := slices.Clone(t)
		if more {
			c[i] = replaceAt(t[i], rest, x)
		} else {
			c[i] = x
		}
		return c
	}
	return v
}

func flattenStage(path string) stage {
	return func(in seq) seq {
		return each(in, func(v any, yield func(any, error) bool) bool {
			x, ok := lookup(v, path)
			arr, isArr := x.([]any)
			if !ok || !isArr {
				return yield(v, nil)
			}
			for _, e := range arr {
				if !yield(replaceAt(v, path, e), nil) {
					return false
				}
			}
			return true
		})
	}
}

func uniqueStage(i int, path string) stage {
	return func(in seq) seq {
		seen := make(map[any]struct{})
		return each(in, func(v any, yield func(any, error) bool) bool {
			k := hashKey(get(v, path))
			if _, dup := seen[k]; dup {
				return true
			}
			if len(seen) == MaxHeldItems {
				return yield(nil, holdError(i, "unique", "unique"))
			}
			seen[k] = struct{}{}
			return yield(v, nil)
		})
	}
}

func sampleStage(s Sample) stage {
	return func(in seq) seq {
		return func(yield func(any, error) bool) {
			if s.N == 0 {
				return
			}
			seed := s.Seed
			if !s.Seeded {
				seed = rand.Uint64()
			}
			rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
			type picked struct {
				idx  int
				item any
			}
			res := make([]picked, 0, min(s.N, 1024))
			n := 0
			for v, err := range in {
				if err != nil {
					yield(nil, err)
					return
				}
				// Reservoir sampling: after n items, each is kept with
				// probability N/n.
				if len(res) < s.N {
					res = append(res, picked{n, v})
				} else if j := rng.IntN(n + 1); j < s.N {
					res[j] = picked{n, v}
				}
				n++
			}
			slices.SortFunc(res, func(a, b picked) int { return cmp.Compare(a.idx, b.idx) })
			for _, r := range res {
				if !yield(r.item, nil) {
					return
				}
			}
		}
	}
}
