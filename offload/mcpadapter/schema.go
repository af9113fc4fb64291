package mcpadapter

import (
	"encoding/json"
	"fmt"
	"strings"
)

// noticeSchema describes the notice that replaces an offloaded result's
// structured content.
var noticeSchema = map[string]any{
	"type":        "object",
	"title":       "ctxkit stored-result notice",
	"description": "The result was too large for the context and was stored; explore it with the result_* tools.",
	"required":    []any{"stored_result", "shape", "how_to_explore"},
	"properties": map[string]any{
		"stored_result":  map[string]any{"type": "string"},
		"tool":           map[string]any{"type": "string"},
		"shape":          map[string]any{"type": "string", "enum": []any{"list", "dict", "text"}},
		"chars":          map[string]any{"type": "integer"},
		"approx_tokens":  map[string]any{"type": "integer"},
		"items":          map[string]any{"type": "integer"},
		"fields":         map[string]any{"type": "object"},
		"more_fields":    map[string]any{"type": "integer"},
		"preview":        map[string]any{},
		"how_to_explore": map[string]any{"type": "string"},
		"expires_at":     map[string]any{"type": "string"},
	},
}

// rootKeywords stay at the root of a widened schema: references such as
// "#/$defs/x" resolve against the root, and the dialect and base URI belong
// there too.
var rootKeywords = []string{"$schema", "$id", "$defs", "definitions"}

// WidenOutputSchema returns the output schema to announce for a tool whose
// results may be offloaded: an object that is either what the original
// schema describes or a notice. The original is not modified. A schema that
// is not a JSON object is returned unchanged with an error.
func WidenOutputSchema(schema any) (json.RawMessage, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("encode output schema: %w", err)
	}
	var orig map[string]any
	if err := json.Unmarshal(raw, &orig); err != nil || orig == nil {
		return raw, fmt.Errorf("output schema is not a JSON object")
	}
	widened := map[string]any{"type": "object"}
	for _, k := range rootKeywords {
		if v, ok := orig[k]; ok {
			widened[k] = v
			delete(orig, k)
		}
	}
	rebaseRefs(orig)
	widened["anyOf"] = []any{orig, noticeSchema}
	return json.Marshal(widened)
}

// rebaseRefs points the references of a schema moved to /anyOf/0 at their
// new place, except those into the definitions, which stay at the root.
func rebaseRefs(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			ref, ok := child.(string)
			if k != "$ref" || !ok {
				rebaseRefs(child)
				continue
			}
			switch {
			case ref == "#":
				v[k] = "#/anyOf/0"
			case strings.HasPrefix(ref, "#/") && !strings.HasPrefix(ref, "#/$defs/") && !strings.HasPrefix(ref, "#/definitions/"):
				v[k] = "#/anyOf/0" + ref[1:]
			}
		}
	case []any:
		for _, child := range v {
			rebaseRefs(child)
		}
	}
}
