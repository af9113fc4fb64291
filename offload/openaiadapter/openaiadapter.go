// Package openaiadapter connects an [offload.Engine] to the official OpenAI Go
// SDK (github.com/openai/openai-go/v3).
//
// The offload package imports no model SDK, so that a program pays only for
// the SDK it uses; this package maps the engine's tools and results onto the
// SDK's request and response types. In a Chat Completions loop:
//
//	params.Tools = openaiadapter.Tools(e)
//	completion, err := client.Chat.Completions.New(ctx, params)
//	msg := completion.Choices[0].Message
//	params.Messages = append(params.Messages, msg.ToParam())
//	params.Messages = append(params.Messages, openaiadapter.HandleToolCalls(ctx, e, msg)...)
//
// [ResponseTools] and [HandleResponseOutput] do the same for the Responses
// API, and [HandleToolCallsJSON] works on a plain JSON message (or a map) for
// programs that talk to an OpenAI-compatible server without the SDK types.
//
// Every tool call gets exactly one answer, in the order of the calls, as the
// API requires: a call with missing or garbage arguments, or naming a tool
// that does not exist, is answered with the engine's error object (which
// says what to do instead), never with a panic or a dropped message. Those
// rules, and the bound of [offload.MaxCallsPerMessage] calls run per
// message, are [offload.Engine.DispatchCalls]'s; this package only converts
// the SDK's calls to [offload.Call] and the results back.
package openaiadapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/ctxkit/ctxkit/offload"
)

// Tools returns the engine's tools as Chat Completions function tools, for
// ChatCompletionNewParams.Tools. Strict mode is left off: the tools have
// optional arguments, which strict mode does not allow.
func Tools(e *offload.Engine) []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, t := range e.Tools() {
		out = append(out, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  schemaMap(t.InputSchema),
		}))
	}
	return out
}

// schemaMap decodes a tool's input schema into the map the SDK wants. The
// engine encodes every schema with encoding/json, so decoding cannot fail; if
// it ever did, the tool would be offered without parameters and its calls
// would come back with the expected parameters in the error.
func schemaMap(schema json.RawMessage) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil
	}
	return m
}

// HandleToolCalls runs the tool calls of an assistant message and returns one
// tool message per call, in order, ready to append to the conversation after
// msg.ToParam(). A message without tool calls gives nil.
//
// Both kinds of tool call are handled: a function call's arguments and a
// custom tool call's input go to the engine as they are. Garbage or missing
// arguments and unknown tools are answered with an error object.
func HandleToolCalls(ctx context.Context, e *offload.Engine, msg openai.ChatCompletionMessage) []openai.ChatCompletionMessageParamUnion {
	if len(msg.ToolCalls) == 0 {
		return nil
	}
	calls := make([]offload.Call, len(msg.ToolCalls))
	for i, tc := range msg.ToolCalls {
		// The union's own fields are read rather than AsFunction, which
		// decodes the raw JSON and so sees nothing in a message built in Go.
		if tc.Type == "custom" {
			calls[i] = offload.Call{ID: tc.ID, Name: tc.Custom.Name, Arguments: tc.Custom.Input}
		} else {
			calls[i] = offload.Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
	results := e.DispatchCalls(ctx, calls)
	out := make([]openai.ChatCompletionMessageParamUnion, len(results))
	for i, r := range results {
		out[i] = openai.ToolMessage(string(r.Output), calls[i].ID)
	}
	return out
}

// ResponseTools returns the engine's tools as Responses API function tools,
// for responses.ResponseNewParams.Tools. Strict mode is off, as in Tools.
func ResponseTools(e *offload.Engine) []responses.ToolUnionParam {
	var out []responses.ToolUnionParam
	for _, t := range e.Tools() {
		tool := responses.ToolParamOfFunction(t.Name, schemaMap(t.InputSchema), false)
		tool.OfFunction.Description = openai.String(t.Description)
		out = append(out, tool)
	}
	return out
}

// HandleResponseOutput runs the function calls among a response's output
// items (resp.Output) and returns one function_call_output input item per
// call, in order, to send in the next request's input. Items of other types
// are skipped.
func HandleResponseOutput(ctx context.Context, e *offload.Engine, items []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	var calls []offload.Call
	for _, it := range items {
		if it.Type == "function_call" {
			calls = append(calls, offload.Call{ID: it.CallID, Name: it.Name, Arguments: it.Arguments.OfString})
		}
	}
	if len(calls) == 0 {
		return nil
	}
	results := e.DispatchCalls(ctx, calls)
	out := make([]responses.ResponseInputItemUnionParam, len(results))
	for i, r := range results {
		item := responses.ResponseInputItemParamOfFunctionCallOutput(string(r.Output))
		item.OfFunctionCallOutput.CallID = openai.String(calls[i].ID)
		out[i] = item
	}
	return out
}

// ToolMessage is a Chat Completions tool message as plain JSON:
// {"role": "tool", "tool_call_id": ..., "content": ...}.
type ToolMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// wireCall is one tool call of an assistant message in JSON. Arguments stay
// raw: OpenAI sends a JSON string, and some compatible servers send the
// object itself.
type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	Custom struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

// wireCallShape is how a tool call must look, told to the model when one
// cannot be read.
const wireCallShape = `{"id": ..., "type": "function", "function": {"name": ..., "arguments": "{...}"}}`

// HandleToolCallsJSON is HandleToolCalls for an assistant message given as
// JSON ([]byte, json.RawMessage or string) or as a value that encodes to it,
// such as a map[string]any decoded from a response. It returns one tool
// message per call, in order. It fails only when msg is not a JSON object
// with a tool_calls list; every problem with a single call is answered in
// that call's tool message.
func HandleToolCallsJSON(ctx context.Context, e *offload.Engine, msg any) ([]ToolMessage, error) {
	// Calls are decoded one by one so that one malformed call is answered
	// with an error instead of failing the whole message.
	var m struct {
		ToolCalls []json.RawMessage `json:"tool_calls"`
	}
	if err := offload.DecodeMessage(msg, &m); err != nil {
		return nil, fmt.Errorf("decode assistant message: %w", err)
	}
	calls := make([]offload.Call, len(m.ToolCalls))
	for i, rc := range m.ToolCalls {
		var tc wireCall
		if err := json.Unmarshal(rc, &tc); err != nil {
			var id struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(rc, &id) // best effort: answer under the call's id if it has one
			calls[i] = offload.Call{ID: id.ID, Err: fmt.Errorf("want %s: %w", wireCallShape, err)}
			continue
		}
		if tc.Type == "custom" {
			calls[i] = offload.Call{ID: tc.ID, Name: tc.Custom.Name, Arguments: tc.Custom.Input}
		} else {
			calls[i] = offload.Call{ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)}
		}
	}
	results := e.DispatchCalls(ctx, calls)
	out := make([]ToolMessage, len(results))
	for i, r := range results {
		out[i] = ToolMessage{Role: "tool", ToolCallID: calls[i].ID, Content: string(r.Output)}
	}
	return out, nil
}
