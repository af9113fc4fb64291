package offload

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ctxkit/ctxkit/store"
)

// tool is one callable tool: built-in, producer, consumer or custom.
type tool struct {
	name        string
	description string
	schema      *jsonschema.Schema // validates arguments
	shown       *jsonschema.Schema // what Tools exports, when it differs from schema
	schemaJSON  json.RawMessage
	resolved    *jsonschema.Resolved
	// shapes lists the workspace shapes the tool accepts; nil means the tool
	// takes no workspace.
	shapes []store.Shape
	// types, when set, restricts the workspace types a consumer accepts.
	types []string
	// run does the work once arguments are valid and the workspace (if any)
	// is open and fits.
	run func(ctx context.Context, c *call) (any, error)
}

// call is one invocation of a tool.
type call struct {
	args json.RawMessage  // validated, defaults applied
	ws   *store.Workspace // nil for tools that take no workspace
}

// Tool describes a tool for a model: its name, what it does, and the JSON
// Schema of its arguments.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// OpenAITool is a tool in the OpenAI function-calling format
// ({"type": "function", "function": {...}}), for the Chat Completions API.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the function part of an OpenAITool.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// AnthropicTool is a tool in the Anthropic Messages API format.
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Tools returns every tool, built-in first, in registration order.
func (e *Engine) Tools() []Tool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]Tool, 0, len(e.order))
	for _, name := range e.order {
		t := e.tools[name]
		out = append(out, Tool{Name: t.name, Description: t.description, InputSchema: t.schemaJSON})
	}
	return out
}

// OpenAITools returns Tools in the OpenAI function format.
func (e *Engine) OpenAITools() []OpenAITool {
	var out []OpenAITool
	for _, t := range e.Tools() {
		out = append(out, OpenAITool{Type: "function", Function: OpenAIFunction{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return out
}

// AnthropicTools returns Tools in the Anthropic tool format.
func (e *Engine) AnthropicTools() []AnthropicTool {
	var out []AnthropicTool
	for _, t := range e.Tools() {
		out = append(out, AnthropicTool(t))
	}
	return out
}

func (e *Engine) toolNames() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return slices.Clone(e.order)
}

// register adds t, panicking on a programmer error (a duplicate name or an
// unusable schema), as net/http and the MCP SDK do at registration time.
func (e *Engine) register(t *tool) {
	if t.schema == nil {
		t.schema = &jsonschema.Schema{Type: "object"}
	}
	if t.shown == nil {
		t.shown = t.schema
	}
	if t.shapes != nil {
		withWorkspaceID(t.schema)
		withWorkspaceID(t.shown)
	}
	resolved, err := t.schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("offload: tool %q: invalid input schema: %v", t.name, err))
	}
	t.resolved = resolved
	if t.schemaJSON, err = json.Marshal(t.shown); err != nil {
		panic(fmt.Sprintf("offload: tool %q: encode input schema: %v", t.name, err))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.tools[t.name]; dup {
		panic(fmt.Sprintf("offload: tool %q registered twice", t.name))
	}
	e.tools[t.name] = t
	e.order = append(e.order, t.name)
}

// schemaFor builds the input schema of a Go argument type. Property
// descriptions come from `jsonschema:"..."` struct tags.
func schemaFor[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("offload: argument type %v: %v", reflect.TypeFor[In](), err))
	}
	if s.Type != "object" {
		panic(fmt.Sprintf("offload: argument type %v must be a struct", reflect.TypeFor[In]()))
	}
	for _, p := range s.Properties {
		// Go slices and maps may be nil, so the library types them as
		// ["null", "array"]; a model should simply send an array or leave
		// the argument out.
		if len(p.Types) == 2 && slices.Contains(p.Types, "null") {
			p.Type = p.Types[0]
			if p.Type == "null" {
				p.Type = p.Types[1]
			}
			p.Types = nil
		}
	}
	return s
}

// withWorkspaceID makes workspace_id the first, required property.
func withWorkspaceID(s *jsonschema.Schema) {
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	if _, ok := s.Properties["workspace_id"]; !ok {
		s.Properties["workspace_id"] = &jsonschema.Schema{Type: "string", Description: "Id of the stored result (stored_result in its notice)."}
	}
	s.PropertyOrder = append([]string{"workspace_id"}, slices.DeleteFunc(slices.Clone(s.PropertyOrder), func(p string) bool { return p == "workspace_id" })...)
	if !slices.Contains(s.Required, "workspace_id") {
		s.Required = append([]string{"workspace_id"}, s.Required...)
	}
}
