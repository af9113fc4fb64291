// Package offload keeps large tool results out of a model's context window.
//
// A result over the caller's threshold is stored as a workspace in a
// [store.Store]; the model receives a short [Notice] (id, shape, size,
// fields, preview and the exact calls that fit) and explores the result
// with a small, generic set of tools that every workspace shares:
//
//   - lists: result_paginate, result_get_item, result_search,
//     result_field_values, result_pipe
//   - dicts: result_get_keys, result_get_value
//   - text: result_read_page, result_search_in_text, result_get_length
//   - any: result_list
//
// An [Engine] owns the tools. [Engine.Dispatch] routes a model's tool call
// (arguments as a JSON object or a JSON string) and always returns something
// to give back to the model: the tool's JSON, or a [ToolError] with a
// suggested action. [Engine.Tools], [Engine.OpenAITools] and
// [Engine.AnthropicTools] export the schemas; [Engine.SystemPrompt]
// describes them. [AddProducer], [AddConsumer] and [AddTool] add typed Go
// functions as tools whose schemas are generated from their argument types.
//
// Sessions ([WithSession]) isolate conversations that share a store: a
// session sees its own workspaces and shared ones (stored outside any
// session), and others' behave exactly like missing ones. Sessions are not
// authentication: anyone who can name a session can act in it.
//
// The package imports no model SDK; adapters for the OpenAI and Anthropic
// Go SDKs live in their own packages.
package offload
