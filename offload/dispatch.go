package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ctxkit/ctxkit/store"
)

// Result is the outcome of one tool call, ready to send back to the model.
type Result struct {
	// Output is the JSON the model sees: the tool's result or, when IsError,
	// a ToolError object.
	Output json.RawMessage
	// IsError reports that Output is an error.
	IsError bool
	// Err is the Go error behind an error result, for logs and errors.Is; it
	// is nil on success.
	Err error
}

// Dispatch runs the tool called name with args and returns what to give back
// to the model. args may be a JSON object (json.RawMessage, []byte, or a
// map), a JSON string holding an object (as some models send), or nil. The
// session is taken from ctx (see WithSession). Every error the model can fix
// comes back as a ToolError object with IsError set; Dispatch never panics on
// bad input.
func (e *Engine) Dispatch(ctx context.Context, name string, args any) *Result {
	out, err := e.dispatch(ctx, name, args)
	if err != nil {
		return errorResult(err)
	}
	b, err := marshal(out)
	if err != nil {
		return errorResult(fmt.Errorf("encode %s result: %w", name, err))
	}
	if n := utf8.RuneCount(b); n > e.maxResultChars {
		return errorResult(&ToolError{
			Code:            CodeResultTooLarge,
			Message:         fmt.Sprintf("the result of %s has %d chars, over the limit of %d", name, n, e.maxResultChars),
			SuggestedAction: "ask for less: a smaller page or size, fewer results, select fewer fields, or save_as and explore the saved result",
			Truncated:       true,
			Chars:           n,
			Preview:         cutString(string(b), 500),
		})
	}
	return &Result{Output: b}
}

func errorResult(err error) *Result {
	var te *ToolError
	if !errors.As(err, &te) {
		te = &ToolError{
			Code:            CodeToolFailed,
			Message:         err.Error(),
			SuggestedAction: "retry once; if it fails again, continue without this tool",
			err:             err,
		}
	}
	return &Result{Output: te.JSON(), IsError: true, Err: err}
}

func (e *Engine) dispatch(ctx context.Context, name string, args any) (any, error) {
	e.mu.RLock()
	t := e.tools[name]
	e.mu.RUnlock()
	if t == nil {
		return nil, &ToolError{
			Code:            CodeUnknownTool,
			Message:         fmt.Sprintf("no tool named %q", name),
			SuggestedAction: "call one of available_tools",
			AvailableTools:  e.toolNames(),
		}
	}
	raw, err := normalizeArgs(args)
	if err != nil {
		return nil, badArgs(t, "%v", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, badArgs(t, "arguments must be a JSON object: %v", err)
	}
	unquoteJSONArgs(t.schema, obj)
	capped := capArgs(t.schema, obj)
	if err := t.resolved.ApplyDefaults(&obj); err != nil {
		return nil, badArgs(t, "%s", validationMessage(err))
	}
	if err := t.resolved.Validate(obj); err != nil {
		return nil, badArgs(t, "%s", validationMessage(err))
	}
	if raw, err = json.Marshal(obj); err != nil {
		return nil, badArgs(t, "%v", err)
	}
	c := &call{args: raw}
	if t.shapes != nil {
		id, _ := obj["workspace_id"].(string)
		if c.ws, err = e.Workspace(ctx, id); err != nil {
			return nil, err
		}
		if err := checkFit(t, c.ws); err != nil {
			return nil, err
		}
	}
	out, err := t.run(ctx, c)
	if m, ok := out.(map[string]any); ok && len(capped) > 0 {
		m["capped"] = capped
	}
	return out, err
}

// capArgs lowers numeric arguments above their maximum to it, so that asking
// for 500 items gets the 100 the tool allows instead of an error and a wasted
// turn; the result says what was capped.
func capArgs(schema *jsonschema.Schema, obj map[string]any) []string {
	var notes []string
	for name, prop := range schema.Properties {
		n, ok := obj[name].(float64)
		if !ok || prop.Maximum == nil || n <= *prop.Maximum {
			continue
		}
		obj[name] = *prop.Maximum
		notes = append(notes, fmt.Sprintf("%s lowered from %g to its maximum %g", name, n, *prop.Maximum))
	}
	slices.Sort(notes)
	return notes
}

var (
	validationPrefix = regexp.MustCompile(`validating (root|/properties/([^:]+)): `)
	ratNumber        = regexp.MustCompile(`\b(-?\d+)(/1|\.0+)\b`)
)

// validationMessage rewrites a JSON Schema validation error for a model:
// "validating root: validating /properties/size: minimum: 0/1 is less than
// 1.000000" becomes "size: minimum: 0 is less than 1".
func validationMessage(err error) string {
	msg := validationPrefix.ReplaceAllStringFunc(err.Error(), func(m string) string {
		if sub := validationPrefix.FindStringSubmatch(m); sub[2] != "" {
			return sub[2] + ": "
		}
		return ""
	})
	return ratNumber.ReplaceAllString(msg, "$1")
}

// checkFit refuses a workspace whose shape or type the tool does not accept.
func checkFit(t *tool, ws *store.Workspace) error {
	if !slices.Contains(t.shapes, ws.Shape) {
		return &ToolError{
			Code:            CodeWrongShape,
			Message:         fmt.Sprintf("%s works on %s results; %q is %s", t.name, joinShapes(t.shapes), ws.ID, ws.Shape),
			SuggestedAction: fmt.Sprintf("use %s on this workspace", strings.Join(shapeTools[ws.Shape], " or ")),
			ExpectedShape:   t.shapes,
			ActualShape:     ws.Shape,
			FittingTools:    shapeTools[ws.Shape],
			err:             store.ErrWrongShape,
		}
	}
	if len(t.types) > 0 && !slices.Contains(t.types, ws.Type) {
		return &ToolError{
			Code:            CodeWrongType,
			Message:         fmt.Sprintf("%s works on results of type %s; %q is of type %q", t.name, strings.Join(t.types, ", "), ws.ID, ws.Type),
			SuggestedAction: fmt.Sprintf("call %s with a workspace of type %s", t.name, strings.Join(t.types, " or ")),
		}
	}
	return nil
}

func joinShapes(shapes []store.Shape) string {
	s := make([]string, len(shapes))
	for i, sh := range shapes {
		s[i] = string(sh)
	}
	return strings.Join(s, " or ")
}

// normalizeArgs turns the forms models and SDKs send into one JSON object.
func normalizeArgs(args any) (json.RawMessage, error) {
	var raw []byte
	switch a := args.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	case string:
		raw = []byte(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`{}`), nil
	}
	// A JSON string that holds an object: models double-encode arguments.
	if raw[0] == '"' {
		var inner string
		if err := json.Unmarshal(raw, &inner); err != nil {
			return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
		}
		raw = bytes.TrimSpace([]byte(inner))
	}
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New(`arguments must be a JSON object such as {"workspace_id": "..."}`)
	}
	return raw, nil
}

// unquoteJSONArgs decodes arguments sent as a JSON string where the schema
// wants an array or an object ("steps": "[{...}]"), a common slip of models
// that costs nothing to forgive. Strings that do not decode are left for
// validation to report.
func unquoteJSONArgs(schema *jsonschema.Schema, obj map[string]any) {
	for name, prop := range schema.Properties {
		s, ok := obj[name].(string)
		if !ok || (prop.Type != "array" && prop.Type != "object") {
			continue
		}
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			obj[name] = v
		}
	}
}
