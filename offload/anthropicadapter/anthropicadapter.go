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
// set, never with a panic or a dropped block.
package anthropicadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/ctxkit/ctxkit/offload"
)

// MaxCallsPerMessage bounds the tool_use blocks run for one message. Blocks
// past it are answered with an error without running, so that a runaway or
// hostile response cannot make the engine do unbounded work.
const MaxCallsPerMessage = 64

// Codes of the errors this package answers with itself, in ToolError.Code.
const (
	// CodeTooManyCalls answers a tool_use block past MaxCallsPerMessage.
	CodeTooManyCalls = "too_many_tool_calls"
	// CodeBadCall answers a block that is not a tool_use object at all, as
	// HandleToolUseJSON may meet.
	CodeBadCall = "invalid_tool_call"
)

// Call is one tool_use block.
type Call struct {
	// ID is the tool_use id that the tool_result must carry.
	ID string
	// Name is the tool's name.
	Name string
	// Input is the tool's input as the model wrote it; normally a JSON
	// object, but it may be missing, double-encoded or garbage.
	Input json.RawMessage
	// ToolsetName is copied to the result when the block has one.
	ToolsetName string

	bad error // why the block could not be read; answered without running
}

// Answer is the engine's answer to one Call.
type Answer struct {
	Call   Call
	Result *offload.Result
}

// Run dispatches calls in order and returns one answer per call, running at
// most MaxCallsPerMessage of them. HandleToolUse is a thin wrapper around it;
// it is exported for loops that want to log or inspect results (Result.Err)
// before wrapping them in SDK blocks.
func Run(ctx context.Context, e *offload.Engine, calls []Call) []Answer {
	out := make([]Answer, len(calls))
	for i, c := range calls {
		out[i].Call = c
		switch {
		case i >= MaxCallsPerMessage:
			out[i].Result = toolError(&offload.ToolError{
				Code:            CodeTooManyCalls,
				Message:         fmt.Sprintf("the message has %d tool_use blocks; only the first %d were run", len(calls), MaxCallsPerMessage),
				SuggestedAction: "make fewer tool calls at once; repeat this one in a later turn if you still need it",
			}, errTooManyCalls)
		case c.bad != nil:
			out[i].Result = toolError(&offload.ToolError{
				Code:            CodeBadCall,
				Message:         fmt.Sprintf("content block %d is not a tool_use object: %v", i, c.bad),
				SuggestedAction: `call the tool again with a tool_use block {"type": "tool_use", "id": ..., "name": ..., "input": {...}}`,
			}, fmt.Errorf("read content block %d: %w", i, c.bad))
		default:
			out[i].Result = e.Dispatch(ctx, c.Name, c.Input)
		}
	}
	return out
}

// errTooManyCalls is the cause of the answers past MaxCallsPerMessage.
var errTooManyCalls = errors.New("too many tool calls in one message")

func toolError(te *offload.ToolError, cause error) *offload.Result {
	return &offload.Result{Output: te.JSON(), IsError: true, Err: cause}
}

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
	var calls []Call
	if msg != nil {
		for _, b := range msg.Content {
			// The union's own fields are read rather than AsToolUse, which
			// decodes the raw JSON and so sees nothing in a message built in Go.
			if b.Type == "tool_use" {
				calls = append(calls, Call{ID: b.ID, Name: b.Name, Input: b.Input, ToolsetName: b.ToolsetName})
			}
		}
	}
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(calls))
	for _, a := range Run(ctx, e, calls) {
		block := anthropic.NewToolResultBlock(a.Call.ID, string(a.Result.Output), a.Result.IsError)
		if a.Call.ToolsetName != "" {
			block.OfToolResult.ToolsetName = anthropic.String(a.Call.ToolsetName)
		}
		blocks = append(blocks, block)
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
}

// wireBlock is one content block of a message in JSON.
type wireBlock struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Input       json.RawMessage `json:"input"`
	ToolsetName string          `json:"toolset_name"`
}

// HandleToolUseJSON is HandleToolUse for a message given as JSON ([]byte,
// json.RawMessage or string) or as a value that encodes to it, such as a
// map[string]any decoded from a response. It fails only when msg is not a
// JSON object with a content list; every problem with a single block is
// answered in that block's tool_result.
func HandleToolUseJSON(ctx context.Context, e *offload.Engine, msg any) (ToolResultMessage, error) {
	raw, err := toJSON(msg)
	if err != nil {
		return ToolResultMessage{}, err
	}
	// Blocks are decoded one by one so that one malformed block is
	// answered with an error instead of failing the whole message.
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return ToolResultMessage{}, fmt.Errorf("decode message: %w", err)
	}
	var calls []Call
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
				calls = append(calls, Call{ID: id.ID, bad: err})
			}
			continue
		}
		if b.Type == "tool_use" {
			calls = append(calls, Call{ID: b.ID, Name: b.Name, Input: b.Input, ToolsetName: b.ToolsetName})
		}
	}
	out := ToolResultMessage{Role: "user", Content: make([]ToolResult, 0, len(calls))}
	for _, a := range Run(ctx, e, calls) {
		out.Content = append(out.Content, ToolResult{
			Type: "tool_result", ToolUseID: a.Call.ID, Content: string(a.Result.Output), IsError: a.Result.IsError,
		})
	}
	return out, nil
}

func toJSON(v any) ([]byte, error) {
	switch t := v.(type) {
	case []byte:
		return t, nil
	case json.RawMessage:
		return t, nil
	case string:
		return []byte(t), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	return b, nil
}
