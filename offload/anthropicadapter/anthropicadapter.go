// Package anthropicadapter connects an [offload.Engine] to the official
// Anthropic Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// The offload package imports no model SDK, so that a program pays only for
// the SDK it uses; this package maps the engine's tools and results onto the
// SDK's request and response types. In a Messages loop:
//
//	params.Tools = anthropicadapter.Tools(e)
//	msg, err := client.Messages.New(ctx, params)
//	params.Messages = append(params.Messages, msg.ToParam())
//	if msg.StopReason == anthropic.StopReasonToolUse {
//		params.Messages = append(params.Messages, anthropicadapter.HandleToolUse(ctx, e, msg))
//	}
//
// [HandleToolUseJSON] works on a plain JSON message (or a map) for programs
// that call the API without the SDK types.
//
// Every tool_use block gets exactly one tool_result block, in order, as the
// API requires: a call with missing or garbage input, or naming a tool that
// does not exist, is answered with the engine's error object and is_error
// set, never with a panic or a dropped block. Those rules, and the bound of
// [offload.MaxCallsPerMessage] calls run per message, are
// [offload.Engine.DispatchCalls]'s; this package only converts the SDK's
// blocks to [offload.Call] and the results back.
package anthropicadapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/ctxkit/ctxkit/offload"
)

// Tools returns the engine's tools as Messages API custom tools, for
// MessageNewParams.Tools.
func Tools(e *offload.Engine) []anthropic.ToolUnionParam {
	var out []anthropic.ToolUnionParam
	for _, t := range e.Tools() {
		tool := anthropic.ToolUnionParamOfTool(inputSchema(t.InputSchema), t.Name)
		tool.OfTool.Description = anthropic.String(t.Description)
		out = append(out, tool)
	}
	return out
}

// inputSchema splits a JSON Schema into the SDK's named fields and the rest
// (additionalProperties, $defs, ...), which it sends alongside them. The
// engine encodes every schema with encoding/json, so decoding cannot fail; if
// it ever did, the tool would be offered without parameters and its calls
// would come back with the expected parameters in the error.
func inputSchema(schema json.RawMessage) anthropic.ToolInputSchemaParam {
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return anthropic.ToolInputSchemaParam{}
	}
	var p anthropic.ToolInputSchemaParam
	p.Properties = m["properties"]
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				p.Required = append(p.Required, s)
			}
		}
	}
	delete(m, "type")
	delete(m, "properties")
	delete(m, "required")
	if len(m) > 0 {
		p.ExtraFields = m
	}
	return p
}

// HandleToolUse runs the tool_use blocks of msg and returns the user message
// that answers them: one tool_result block per tool_use, in order, with
// is_error set from the result. Other blocks (text, thinking, server tools)
// are skipped. When msg is nil or has no tool_use block, the message has no
// content, and should not be sent.
func HandleToolUse(ctx context.Context, e *offload.Engine, msg *anthropic.Message) anthropic.MessageParam {
	var uses []anthropic.ContentBlockUnion
	if msg != nil {
		for _, b := range msg.Content {
			// The union's own fields are read rather than AsToolUse, which
			// decodes the raw JSON and so sees nothing in a message built in Go.
			if b.Type == "tool_use" {
				uses = append(uses, b)
			}
		}
	}
	calls := make([]offload.Call, len(uses))
	for i, b := range uses {
		calls[i] = offload.Call{ID: b.ID, Name: b.Name, Arguments: b.Input}
	}
	blocks := make([]anthropic.ContentBlockParamUnion, len(uses))
	for i, r := range e.DispatchCalls(ctx, calls) {
		blocks[i] = anthropic.NewToolResultBlock(uses[i].ID, string(r.Output), r.IsError)
		if uses[i].ToolsetName != "" {
			blocks[i].OfToolResult.ToolsetName = anthropic.String(uses[i].ToolsetName)
		}
	}
	return anthropic.NewUserMessage(blocks...)
}

// ToolResultMessage is the user message that answers tool_use blocks, as
// plain JSON: {"role": "user", "content": [tool_result, ...]}.
type ToolResultMessage struct {
	Role    string       `json:"role"`
	Content []ToolResult `json:"content"`
}

// ToolResult is one tool_result block as plain JSON.
type ToolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
	// ToolsetName is the tool_use block's toolset_name, when it has one.
	ToolsetName string `json:"toolset_name,omitempty"`
}

// wireBlock is one content block of a message in JSON.
type wireBlock struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Input       json.RawMessage `json:"input"`
	ToolsetName string          `json:"toolset_name"`
}

// wireToolUseShape is how a tool_use block must look, told to the model
// when one cannot be read.
const wireToolUseShape = `{"type": "tool_use", "id": ..., "name": ..., "input": {...}}`

// HandleToolUseJSON is HandleToolUse for a message given as JSON ([]byte,
// json.RawMessage or string) or as a value that encodes to it, such as a
// map[string]any decoded from a response. It fails only when msg is not a
// JSON object with a content list; every problem with a single block is
// answered in that block's tool_result.
func HandleToolUseJSON(ctx context.Context, e *offload.Engine, msg any) (ToolResultMessage, error) {
	// Blocks are decoded one by one so that one malformed block is
	// answered with an error instead of failing the whole message.
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := offload.DecodeMessage(msg, &m); err != nil {
		return ToolResultMessage{}, fmt.Errorf("decode message: %w", err)
	}
	var calls []offload.Call
	var toolsets []string // toolsets[i] is the toolset_name of calls[i]
	for _, rb := range m.Content {
		var b wireBlock
		if err := json.Unmarshal(rb, &b); err != nil {
			// A block that still says it is a tool_use must be answered,
			// under its id if that much can be read.
			var head struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(rb, &head) == nil && head.Type == "tool_use" {
				var id struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(rb, &id) // best effort: an unreadable id stays empty
				calls = append(calls, offload.Call{ID: id.ID, Err: fmt.Errorf("want %s: %w", wireToolUseShape, err)})
				toolsets = append(toolsets, "")
			}
			continue
		}
		if b.Type == "tool_use" {
			calls = append(calls, offload.Call{ID: b.ID, Name: b.Name, Arguments: b.Input})
			toolsets = append(toolsets, b.ToolsetName)
		}
	}
	out := ToolResultMessage{Role: "user", Content: make([]ToolResult, len(calls))}
	for i, r := range e.DispatchCalls(ctx, calls) {
		out.Content[i] = ToolResult{
			Type: "tool_result", ToolUseID: calls[i].ID, Content: string(r.Output), IsError: r.IsError, ToolsetName: toolsets[i],
		}
	}
	return out, nil
}
