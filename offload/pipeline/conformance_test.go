package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/store/query/querytest"
)

// TestConformance runs every shared conformance vector through Run.
func TestConformance(t *testing.T) {
	raw, cases := querytest.LoadConformance(t)
	all := make([]any, len(raw))
	for i, r := range raw {
		all[i] = mustDecode(t, string(r))
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("line%03d", c.Line), func(t *testing.T) {
			p, err := Parse(c.Steps)
			if err != nil {
				t.Fatalf("Parse(%s): %v", c.Steps, err)
			}
			got, err := p.Run(context.Background(), querytest.Source(all))
			if err != nil {
				t.Fatalf("Run(%s): %v", c.Steps, err)
			}
			want := mustDecode(t, string(c.Expected))
			if d := querytest.Diff(roundTrip(t, got), want); d != "" {
				t.Errorf("steps %s\n%s", c.Steps, d)
			}
		})
	}
}
