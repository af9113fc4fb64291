package clientconfig

import (
	"fmt"
	"strings"
)

// Diff returns a unified diff of a and b, with three lines of context, or
// "" when they are equal. Lines are compared whole; the common head and
// tail are skipped before a longest-common-subsequence pass over the rest,
// which for a configuration edit is a few entries.
func Diff(name string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	x, y := splitLines(string(a)), splitLines(string(b))
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	ops := lcsOps(x[pre:len(x)-suf], y[pre:len(y)-suf])
	// Full op list: equal head, middle ops, equal tail.
	var all []diffOp
	for _, l := range x[:pre] {
		all = append(all, diffOp{' ', l})
	}
	all = append(all, ops...)
	for _, l := range x[len(x)-suf:] {
		all = append(all, diffOp{' ', l})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	const ctx = 3
	ai, bi := 0, 0 // line numbers before all[i]
	for i := 0; i < len(all); {
		if all[i].kind == ' ' {
			ai++
			bi++
			i++
			continue
		}
		// A hunk: from ctx lines before i to ctx lines after the last change
		// that is within 2*ctx of the next.
		start := max(i-ctx, 0)
		for k := start; k < i; k++ {
			ai--
			bi--
		}
		end := i
		for j := i; j < len(all); j++ {
			if all[j].kind != ' ' {
				end = j
			} else if j-end > 2*ctx {
				break
			}
		}
		stop := min(end+ctx+1, len(all))
		na, nb := 0, 0
		for _, o := range all[start:stop] {
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ai+1, na, bi+1, nb)
		for _, o := range all[start:stop] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		ai += na
		bi += nb
		i = stop
	}
	return out.String()
}

func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
}

func lcsOps(x, y []string) []diffOp {
	n, m := len(x), len(y)
	if n*m > 1<<20 { // too big to align: all of x removed, all of y added
		var ops []diffOp
		for _, l := range x {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range y {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	t := make([][]int, n+1)
	for i := range t {
		t[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i]})
			i++
			j++
		case t[i+1][j] >= t[i][j+1]:
			ops = append(ops, diffOp{'-', x[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', y[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', x[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', y[j]})
	}
	return ops
}
