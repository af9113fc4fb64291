package query

import (
	"math"
	"slices"
)

// Aggregate computes one group_by metric over the items of one group, fed
// one at a time. It is what group_by itself uses, and it is exported for a
// store that runs part of a pipeline natively (forming groups in SQL, say):
// such a store must give each metric bit for bit what the evaluator gives,
// so it hands the group's values, in item order, to the same code rather
// than computing sums and statistics its own way. The zero value is not
// usable; call [NewAggregate].
type Aggregate struct {
	m        Metric
	items    int     // values fed, missing ones included: the group's size
	n        int     // numbers seen
	sum      float64 // their sum
	min, max float64
	nums     []float64 // kept for median and stddev
	seen     map[any]struct{}
	values   []any // distinct values, for values
}

// NewAggregate returns an empty aggregate for metric m. It does not check
// m; the parser does, and a run checks hand-built steps.
func NewAggregate(m Metric) *Aggregate {
	return &Aggregate{m: m}
}

type group struct {
	key  any
	accs []Aggregate
}

// Add feeds the metric's value for one more item of the group: the value
// at the metric's path, nil when it is missing (a count takes nil too). It
// returns how many values the aggregate now holds more than before, which
// a caller adds up against [MaxHeldItems] as group_by does. Values that are
// not numbers (or NaN) count towards the group's size only, except for
// [MetricValues], which keeps each distinct non-null value.
func (a *Aggregate) Add(v any) int {
	a.items++
	switch a.m.Func {
	case MetricCount:
		return 0
	case MetricValues:
		if v == nil {
			return 0
		}
		k := hashKey(v)
		if _, dup := a.seen[k]; dup {
			return 0
		}
		if a.seen == nil {
			a.seen = make(map[any]struct{})
		}
		a.seen[k] = struct{}{}
		a.values = append(a.values, v)
		return 1
	}
	f, ok := number(v, true)
	if !ok || math.IsNaN(f) {
		return 0
	}
	if a.n == 0 || f < a.min {
		a.min = f
	}
	if a.n == 0 || f > a.max {
		a.max = f
	}
	a.n++
	a.sum += f
	if a.m.Func == MetricMedian || a.m.Func == MetricStddev {
		a.nums = append(a.nums, f)
		return 1
	}
	return 0
}

// Result is the metric's value for the values fed so far, as group_by
// reports it: a float64, nil where the metric is null (or a sum overflows),
// or for [MetricValues] a []any.
func (a *Aggregate) Result() any {
	switch a.m.Func {
	case MetricCount:
		return float64(a.items)
	case MetricSum:
		return finite(a.sum)
	case MetricMean:
		if a.n == 0 {
			return float64(0)
		}
		return finite(a.sum / float64(a.n))
	case MetricMin:
		if a.n == 0 {
			return nil
		}
		return a.min
	case MetricMax:
		if a.n == 0 {
			return nil
		}
		return a.max
	case MetricMedian:
		if a.n == 0 {
			return nil
		}
		s := slices.Clone(a.nums)
		slices.Sort(s)
		mid := len(s) / 2
		if len(s)%2 == 1 {
			return s[mid]
		}
		return finite((s[mid-1] + s[mid]) / 2)
	case MetricStddev:
		if a.n < 2 {
			return float64(0)
		}
		mean := a.sum / float64(a.n)
		var ss float64
		for _, x := range a.nums {
			ss += (x - mean) * (x - mean)
		}
		return finite(math.Sqrt(ss / float64(a.n-1)))
	case MetricValues:
		if a.values == nil {
			return []any{}
		}
		return a.values
	}
	return nil
}

func groupStage(i int, g GroupBy) stage {
	return func(in seq) seq {
		return func(yield func(any, error) bool) {
			groups := make(map[any]*group)
			var order []*group
			held := 0
			// Metrics often share a field (mean, max and median of score):
			// look each field up once per item.
			var paths []string
			slot := make([]int, len(g.Metrics))
			for j, m := range g.Metrics {
				slot[j] = -1
				if m.Func == MetricCount {
					continue
				}
				if k := slices.Index(paths, m.Path); k >= 0 {
					slot[j] = k
				} else {
					slot[j] = len(paths)
					paths = append(paths, m.Path)
				}
			}
			vals := make([]any, len(paths))
			for v, err := range in {
				if err != nil {
					yield(nil, err)
					return
				}
				key := get(v, g.Path)
				hk := hashKey(key)
				gr := groups[hk]
				if gr == nil {
					gr = &group{key: key, accs: make([]Aggregate, len(g.Metrics))}
					for j, m := range g.Metrics {
						gr.accs[j].m = m
					}
					groups[hk] = gr
					order = append(order, gr)
					held++
				}
				for k, p := range paths {
					vals[k] = get(v, p)
				}
				for j := range gr.accs {
					var x any // a count reads no field
					if slot[j] >= 0 {
						x = vals[slot[j]]
					}
					held += gr.accs[j].Add(x)
				}
				if held > MaxHeldItems {
					yield(nil, holdError(i, "group_by", "group_by"))
					return
				}
			}
			for _, gr := range order {
				row := make(map[string]any, len(g.Metrics)+1)
				row[g.Path] = gr.key
				for j, m := range g.Metrics {
					row[m.Name] = gr.accs[j].Result()
				}
				if !yield(row, nil) {
					return
				}
			}
		}
	}
}
