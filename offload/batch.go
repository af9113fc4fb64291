package offload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxCallsPerMessage bounds the tool calls DispatchCalls runs for one model
// message. Calls past it are answered with a CodeTooManyCalls error without
// running, so that a runaway or hostile response cannot make the engine do
// unbounded work.
const MaxCallsPerMessage = 64

// ErrTooManyCalls is the cause of the answers to calls past
// MaxCallsPerMessage, for errors.Is on Result.Err.
var ErrTooManyCalls = errors.New("too many tool calls in one message")

// Call is one tool call from a model, whatever API it came from. The SDK
// adapters read the calls of a model message into Calls, run them with
// [Engine.DispatchCalls] and wrap the results in their API's reply types,
// so that the rules every API shares (one answer per call, in order, at most
// MaxCallsPerMessage run) live in one place.
type Call struct {
	// ID is the id the answer must carry (tool_call_id, call_id,
	// tool_use_id). DispatchCalls does not read it; it travels with the
	// call so that an adapter can pair results[i] with calls[i].ID.
	ID string
	// Name is the tool's name.
	Name string
	// Arguments are the call's arguments as the model wrote them, in any
	// form Dispatch accepts; they may be missing, double-encoded or garbage.
	Arguments any
	// Err, when not nil, says why the call could not be read from the
	// model's message. Such a call is answered with a CodeBadCall error
	// without running, since answering it is better than dropping it: the
	// APIs reject a reply that leaves a call unanswered. Its text is shown
	// to the model.
	Err error
}

// DispatchCalls runs calls in order and returns one result per call:
// results[i] answers calls[i]. It runs at most MaxCallsPerMessage calls; the
// rest, and the calls with Err set, are answered with a ToolError object
// instead, so every call gets exactly one answer, as the model APIs require,
// and DispatchCalls never panics on bad input. Result.Err of those answers
// is the *ToolError, which wraps ErrTooManyCalls or Call.Err.
func (e *Engine) DispatchCalls(ctx context.Context, calls []Call) []*Result {
	out := make([]*Result, len(calls))
	for i, c := range calls {
		switch {
		case i >= MaxCallsPerMessage:
			out[i] = errorResult(&ToolError{
				Code:            CodeTooManyCalls,
				Message:         fmt.Sprintf("the message has %d tool calls; only the first %d were run", len(calls), MaxCallsPerMessage),
				SuggestedAction: "make fewer tool calls at once; repeat this one in a later turn if you still need it",
				err:             ErrTooManyCalls,
			})
		case c.Err != nil:
			out[i] = errorResult(&ToolError{
				Code:            CodeBadCall,
				Message:         fmt.Sprintf("tool call %d could not be read: %v", i, c.Err),
				SuggestedAction: "call the tool again with a well-formed tool call: the tool's name and a JSON object of arguments",
				err:             c.Err,
			})
		default:
			// The arguments go to the engine as the model wrote them: it
			// accepts an object, a double-encoded object or nothing, and
			// answers anything else with invalid_arguments.
			out[i] = e.Dispatch(ctx, c.Name, c.Arguments)
		}
	}
	return out
}

// DecodeMessage decodes a model message into v, for adapters that accept a
// message without their SDK's types. msg is JSON ([]byte, json.RawMessage
// or string) or a value that encodes to it, such as a map[string]any decoded
// from a response.
func DecodeMessage(msg, v any) error {
	switch m := msg.(type) {
	case []byte:
		return json.Unmarshal(m, v)
	case json.RawMessage:
		return json.Unmarshal(m, v)
	case string:
		return json.Unmarshal([]byte(m), v)
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return json.Unmarshal(b, v)
}
