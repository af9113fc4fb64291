package guard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadBounds: a line, an event or a body past the guard's bounds is an
// error, not an allocation without end; within them, the bytes come back
// whole.
func TestReadBounds(t *testing.T) {
	long := strings.Repeat("x", maxUpstreamLine-1) + "\n"
	for _, tc := range []struct {
		name string
		in   string
		want []string // the lines read, then the error
		big  bool
	}{
		{"lines", "a\nb", []string{"a\n", "b"}, false},
		{"exactly the bound", long, []string{long}, false},
		{"over the bound", "y" + long, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.in))
			var got []string
			for {
				line, err := readLine(br)
				if isTooLarge(err) {
					if !tc.big {
						t.Fatalf("too large after %d lines", len(got))
					}
					return
				}
				if len(line) > 0 {
					got = append(got, string(line))
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if tc.big || len(got) != len(tc.want) {
				t.Fatalf("%d lines, want %d (too large: %v)", len(got), len(tc.want), tc.big)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("line %d: %d bytes, want %d", i, len(got[i]), len(tc.want[i]))
				}
			}
		})
	}
	if data, err := readLimited(bytes.NewReader(make([]byte, 10)), 10, "body"); err != nil || len(data) != 10 {
		t.Errorf("10 bytes, limit 10: %d, %v", len(data), err)
	}
	if _, err := readLimited(bytes.NewReader(make([]byte, 11)), 10, "body"); !isTooLarge(err) || err.Error() != "body over 10 bytes" {
		t.Errorf("11 bytes, limit 10: %v", err)
	}
}
