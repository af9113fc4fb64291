package pipeline

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store/query"
	"github.com/ctxkit/ctxkit/store/query/querytest"
)

// descriptionExamples returns the JSON examples of the description: the
// spans in backquotes.
func descriptionExamples() []string {
	return regexp.MustCompile("`([^`]*)`").FindAllString(Description, -1)
}

func TestDescriptionExamplesParse(t *testing.T) {
	schema, err := StepsSchema().Resolve(nil)
	if err != nil {
		t.Fatalf("resolve steps schema: %v", err)
	}
	named := map[string]bool{}
	spans := descriptionExamples()
	if len(spans) < len(stepNames) {
		t.Fatalf("description has %d examples, want at least one per step (%d)", len(spans), len(stepNames))
	}
	for _, span := range spans {
		ex := strings.Trim(span, "`")
		steps := ex
		if strings.HasPrefix(ex, "{") {
			steps = "[" + ex + "]"
		} else if !strings.HasPrefix(ex, "[") {
			t.Errorf("backquoted %q is not a step or a pipeline", ex)
			continue
		}
		p, err := Parse(json.RawMessage(steps))
		if err != nil {
			t.Errorf("example %s: %v", ex, err)
			continue
		}
		for _, s := range p.Steps {
			named[s.Name()] = true
		}
		var instance any
		if err := json.Unmarshal([]byte(steps), &instance); err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(instance); err != nil {
			t.Errorf("example %s does not fit the steps schema: %v", ex, err)
		}
		// It must run, too.
		if _, err := p.Run(t.Context(), querytest.Source(testData(t))); err != nil {
			t.Errorf("example %s: run: %v", ex, err)
		}
	}
	for _, name := range stepNames {
		if !named[name] {
			t.Errorf("the description has no example of %s", name)
		}
	}
	for _, op := range query.Ops() {
		if !strings.Contains(Description, string(op)) {
			t.Errorf("the description does not mention %s", op)
		}
	}
	for _, f := range query.MetricFuncs() {
		if !strings.Contains(Description, `"`+string(f)) {
			t.Errorf("the description does not mention metric %s", f)
		}
	}
	for _, must := range []string{"$and", "$or", "$not", "RE2", "save_as", "has_more", "backreferences", "1000 characters", "10000 characters"} {
		if !strings.Contains(Description, must) {
			t.Errorf("the description does not mention %s", must)
		}
	}
}

func TestStepsSchema(t *testing.T) {
	a, b := StepsSchema(), StepsSchema()
	if a == b {
		t.Error("StepsSchema returned the same schema twice; callers change it")
	}
	a.Description = "changed"
	if b.Description == "changed" {
		t.Error("schemas share state")
	}
	rs, err := a.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stepNames {
		if _, ok := a.Items.Properties[name]; !ok {
			t.Errorf("schema lacks step %s", name)
		}
		var step any
		if err := json.Unmarshal([]byte("["+examples[name]+"]"), &step); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(step); err != nil {
			t.Errorf("example %s does not fit the schema: %v", examples[name], err)
		}
	}
	// The schema must reject what Parse rejects in the common cases.
	for _, bad := range []string{`[{"limit": -1}]`, `[{"sort": {"score": -1}}]`, `[{"count": false}]`, `[{"filter": {}, "limit": 1}]`,
		`[{"group_by": {"field": "a", "metrics": {"x": "avg:b"}}}]`, `[{"where": {}}]`, `[{"sample": 10001}]`} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if rs.Validate(v) == nil {
			t.Errorf("schema accepts %s", bad)
		}
		if _, err := Parse(json.RawMessage(bad)); err == nil {
			t.Errorf("Parse accepts %s", bad)
		}
	}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 4000 {
		t.Errorf("schema is %d bytes; keep it compact", len(raw))
	}
}
