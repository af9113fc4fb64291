package e2e

import (
	"context"
	"encoding/json"
	"iter"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// collect reads a paginated listing to the end.
func collect[T any](t *testing.T, what string, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("list %s: %v", what, err)
		}
		out = append(out, v)
	}
	return out
}

// isExplorationTool reports whether a tool is one the wrapper adds.
func isExplorationTool(name string) bool { return strings.HasPrefix(name, "result_") }

// tools lists a session's tools by name.
func tools(t *testing.T, ctx context.Context, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	m := make(map[string]*mcp.Tool)
	for _, tl := range collect(t, "tools", cs.Tools(ctx, nil)) {
		if _, dup := m[tl.Name]; dup {
			t.Errorf("tool %s is listed twice", tl.Name)
		}
		m[tl.Name] = tl
	}
	return m
}

// sameTools checks that the wrapper lists exactly the upstream's tools, each
// unchanged, plus the exploration tools, and returns the wrapped listing.
// Extra tools named in tolerated are not reported (a test checks them on
// their own).
func sameTools(t *testing.T, ctx context.Context, direct, wrapped *mcp.ClientSession, tolerated ...string) map[string]*mcp.Tool {
	t.Helper()
	want := tools(t, ctx, direct)
	got := tools(t, ctx, wrapped)
	for name, tl := range want {
		if isExplorationTool(name) {
			t.Fatalf("the upstream itself has a tool %s; the test cannot tell it from the wrapper's", name)
		}
		g, ok := got[name]
		if !ok {
			t.Errorf("tool %s of the upstream is missing through the wrapper", name)
			continue
		}
		sameTool(t, tl, g)
	}
	for _, name := range []string{"result_read_page", "result_search_in_text", "result_pipe"} {
		if _, ok := got[name]; !ok {
			t.Errorf("the wrapper does not add the exploration tool %s (tools: %v)", name, sortedKeys(got))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && !isExplorationTool(name) && !slices.Contains(tolerated, name) {
			t.Errorf("the wrapper lists a tool %s that the upstream does not have", name)
		}
	}
	return got
}

// sameTool checks that the wrapper announces the upstream's tool unchanged,
// except that an outputSchema may become an anyOf of the upstream's schema
// and the notice's (so that an offloaded result still validates).
func sameTool(t *testing.T, direct, wrapped *mcp.Tool) {
	t.Helper()
	d, w := decodeObject(t, direct), decodeObject(t, wrapped)
	ds, ws := d["outputSchema"], w["outputSchema"]
	delete(d, "outputSchema")
	delete(w, "outputSchema")
	if a, b := asJSON(t, d), asJSON(t, w); a != b {
		t.Errorf("tool %s differs through the wrapper:\n direct: %s\nwrapped: %s", direct.Name, a, b)
	}
	if !outputSchemaKept(ds, ws) {
		t.Errorf("tool %s: the wrapper's outputSchema does not keep the upstream's:\n direct: %s\nwrapped: %s",
			direct.Name, asJSON(t, ds), asJSON(t, ws))
	}
}

// outputSchemaKept reports whether the wrapped output schema is the
// upstream's or an anyOf with the upstream's as one branch.
func outputSchemaKept(direct, wrapped any) bool {
	if reflect.DeepEqual(direct, wrapped) {
		return true
	}
	d, ok := direct.(map[string]any)
	w, ok2 := wrapped.(map[string]any)
	if !ok || !ok2 {
		return false
	}
	d = maps.Clone(d)
	delete(d, "$schema") // the wrapper may hoist it to the top level
	alts, _ := w["anyOf"].([]any)
	for _, alt := range alts {
		if a, ok := alt.(map[string]any); ok {
			a = maps.Clone(a)
			delete(a, "$schema")
			if reflect.DeepEqual(a, d) {
				return true
			}
		}
	}
	return false
}

// decodeObject turns v into its generic JSON form.
func decodeObject(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(asJSON(t, v)), &m); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	return m
}

// sameListing checks that a wrapped listing holds the upstream's entries
// unchanged, in any order (the protocol gives none), besides the wrapper's
// own ctxkit:// resources.
func sameListing[T any](t *testing.T, what string, direct, wrapped []T, key func(T) string) {
	t.Helper()
	wrapped = slices.DeleteFunc(slices.Clone(wrapped), func(v T) bool { return strings.HasPrefix(key(v), "ctxkit://") })
	byKey := func(a, b T) int { return strings.Compare(key(a), key(b)) }
	direct = slices.SortedStableFunc(slices.Values(direct), byKey)
	wrapped = slices.SortedStableFunc(slices.Values(wrapped), byKey)
	if a, b := asJSON(t, direct), asJSON(t, wrapped); a != b {
		t.Errorf("%s differ through the wrapper:\n direct: %.2000s\nwrapped: %.2000s", what, a, b)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkOutputSchema checks a result against the output schema its tool
// announced in tools/list, as the spec asks of every result.
func checkOutputSchema(t *testing.T, tl *mcp.Tool, res *mcp.CallToolResult) {
	t.Helper()
	if tl.OutputSchema == nil {
		return
	}
	if res.StructuredContent == nil {
		t.Errorf("tool %s announces an outputSchema but its result has no structuredContent", tl.Name)
		return
	}
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(asJSON(t, tl.OutputSchema)), &s); err != nil {
		t.Fatalf("tool %s: decode outputSchema: %v", tl.Name, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("tool %s: resolve outputSchema: %v", tl.Name, err)
	}
	var v any
	if err := json.Unmarshal([]byte(asJSON(t, res.StructuredContent)), &v); err != nil {
		t.Fatalf("tool %s: decode structuredContent: %v", tl.Name, err)
	}
	if err := rs.Validate(v); err != nil {
		t.Errorf("tool %s: structuredContent does not validate against the announced outputSchema: %v\n%.1000s", tl.Name, err, asJSON(t, res.StructuredContent))
	}
}
