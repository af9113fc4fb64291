package pipeline

// Output shapes a pipeline's value for the model. A list becomes
// {"items": its first inlineMax items, "count": its length, "has_more":
// whether items were left out}, so the model always learns the true size; a
// dict is returned as it is; anything else becomes {"result": value}.
func Output(value any, inlineMax int) any {
	switch v := value.(type) {
	case []any:
		n := min(max(inlineMax, 0), len(v))
		return map[string]any{"items": v[:n:n], "count": len(v), "has_more": len(v) > n}
	case map[string]any:
		return v
	}
	return map[string]any{"result": value}
}
