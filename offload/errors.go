package offload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/store"
)

// Codes of the errors a model can fix, in ToolError.Code.
const (
	CodeUnknownTool    = "unknown_tool"
	CodeBadArguments   = "invalid_arguments"
	CodeNotFound       = "workspace_not_found"
	CodeExpired        = "workspace_expired"
	CodeWrongShape     = "wrong_shape"
	CodeWrongType      = "wrong_type"
	CodeTooLarge       = "payload_too_large"
	CodeConflict       = "id_conflict"
	CodeResultTooLarge = "result_too_large"
	CodeOutOfRange     = "out_of_range"
	CodeBadStep        = "invalid_pipeline_step"
	CodeToolFailed     = "tool_failed"
	// CodeTooManyCalls answers a tool call past MaxCallsPerMessage.
	CodeTooManyCalls = "too_many_tool_calls"
	// CodeBadCall answers a tool call that could not be read from the
	// model's message (Call.Err).
	CodeBadCall = "invalid_tool_call"
)

// ToolError is an error the model can act on. It is returned to the model as
// a JSON object with at least "error" and "suggested_action", plus the fields
// that fit its case: the available tools, the expected parameters, the
// visible workspaces, the producer to re-run, the shapes involved, or a preview
// of an over-long result. It also implements error for Go callers.
type ToolError struct {
	Message         string `json:"error"`
	Code            string `json:"code"`
	SuggestedAction string `json:"suggested_action"`

	AvailableTools      []string        `json:"available_tools,omitempty"`
	ExpectedParameters  json.RawMessage `json:"expected_parameters,omitempty"`
	AvailableWorkspaces []string        `json:"available_workspaces,omitempty"`
	Rerun               *Rerun          `json:"rerun,omitempty"`
	ExpectedShape       []store.Shape   `json:"expected_shape,omitempty"`
	ActualShape         store.Shape     `json:"actual_shape,omitempty"`
	FittingTools        []string        `json:"tools_for_this_shape,omitempty"`
	Step                *int            `json:"step,omitempty"`
	Example             json.RawMessage `json:"example,omitempty"`
	Truncated           bool            `json:"truncated,omitempty"`
	Chars               int             `json:"chars,omitempty"`
	Preview             string          `json:"preview,omitempty"`

	err error // the cause, for errors.Is; never shown to the model
}

// Rerun names the producer call whose result expired.
type Rerun struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

func (e *ToolError) Error() string { return e.Message }

// Unwrap returns the underlying cause, such as store.ErrNotFound.
func (e *ToolError) Unwrap() error { return e.err }

// JSON renders the error as the model sees it.
func (e *ToolError) JSON() json.RawMessage {
	b, err := marshal(e)
	if err != nil { // only plain fields: cannot happen
		return json.RawMessage(`{"error":"internal error","suggested_action":"retry"}`)
	}
	return b
}

// ErrExpired is the cause of a ToolError for a workspace past its TTL.
var ErrExpired = errors.New("workspace expired")

// ErrTooLarge is the cause of a ToolError for a payload over the engine's limits.
var ErrTooLarge = errors.New("payload too large")

func badArgs(tool *tool, format string, a ...any) *ToolError {
	return &ToolError{
		Code:               CodeBadArguments,
		Message:            fmt.Sprintf("%s: %s", tool.name, fmt.Sprintf(format, a...)),
		SuggestedAction:    fmt.Sprintf("call %s again with arguments that match expected_parameters", tool.name),
		ExpectedParameters: tool.schemaJSON,
	}
}

// badQuery is a search query the store refused (too many terms).
func badQuery(tool string, err error) *ToolError {
	return &ToolError{Code: CodeBadArguments, Message: fmt.Sprintf("%s: %v", tool, err), err: err,
		SuggestedAction: fmt.Sprintf("call %s again with a few words to look for", tool)}
}

// marshal encodes v as compact JSON without HTML escaping: what the model
// reads should say array<string>, not array\u003cstring\u003e.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
