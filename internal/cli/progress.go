package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Progress lines are drawn on standard error only when it is a terminal:
// piped or redirected, a command prints its result and nothing else.

// progressTerminal returns streams' standard error when it is a terminal,
// else nil.
func progressTerminal(streams IO) *os.File {
	if f, ok := streams.Err.(*os.File); ok && isTerminal(f) {
		return f
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// countProgress draws "[done/total] item" on one line, redrawn.
func countProgress(w io.Writer) func(done, total int, item string) {
	return func(done, total int, item string) {
		fmt.Fprintf(w, "\r\033[K[%d/%d] %s", done, total, item)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

// progressBar draws one line per file on a terminal, redrawn when the
// percentage changes.
func progressBar(f io.Writer) func(file string, done, total int64) {
	last := map[string]int64{}
	return func(file string, done, total int64) {
		if total <= 0 {
			fmt.Fprintf(f, "\r\033[K%s %s", file, byteSize(done))
			return
		}
		pct := done * 100 / total
		if p, ok := last[file]; ok && p == pct {
			return
		}
		last[file] = pct
		const width = 30
		bar := strings.Repeat("=", int(pct*width/100)) + strings.Repeat(" ", width-int(pct*width/100))
		fmt.Fprintf(f, "\r\033[K%-22s [%s] %3d%% %s/%s", file, bar, pct, byteSize(done), byteSize(total))
		if done == total {
			fmt.Fprintln(f)
		}
	}
}

// byteSize formats a byte count.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
