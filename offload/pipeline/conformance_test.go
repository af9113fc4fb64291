package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
)

// conformancePath is the shared vector file: its first line holds the items,
// each further line a pipeline and the value it must produce.
const conformancePath = "../../../shared/conformance/pipeline.jsonl"

func TestConformance(t *testing.T) {
	f, err := os.Open(conformancePath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("conformance vectors not found at %s; they live outside the repository", conformancePath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	if !sc.Scan() {
		t.Fatalf("read %s: no items line (%v)", conformancePath, sc.Err())
	}
	var head struct {
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
		t.Fatalf("decode items line: %v", err)
	}
	decoded, err := Decode(head.Items)
	if err != nil {
		t.Fatal(err)
	}
	all, ok := decoded.([]any)
	if !ok || len(all) == 0 {
		t.Fatalf("items line holds %T, want a non-empty array", decoded)
	}
	cases := 0
	for line := 2; sc.Scan(); line++ {
		var c struct {
			Steps    json.RawMessage `json:"steps"`
			Expected json.RawMessage `json:"expected"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		cases++
		t.Run(fmt.Sprintf("line%03d", line), func(t *testing.T) {
			p, err := Parse(c.Steps)
			if err != nil {
				t.Fatalf("Parse(%s): %v", c.Steps, err)
			}
			got, err := p.Run(context.Background(), items(all))
			if err != nil {
				t.Fatalf("Run(%s): %v", c.Steps, err)
			}
			want := mustDecode(t, string(c.Expected))
			if d := diff(roundTrip(t, got), want, "result"); d != "" {
				t.Errorf("steps %s\n%s", c.Steps, d)
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases == 0 {
		t.Fatal("no conformance cases")
	}
}
