package offload

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/offload/pipeline"
	"github.com/ctxkit/ctxkit/store"
)

// Producer is a tool whose result is stored as a workspace: the model gets
// the notice, never the full result. In is the argument struct (its JSON
// Schema is generated from the type, with `jsonschema:"..."` tags as
// property descriptions); Out is anything that encodes as JSON, or a string
// or []byte holding JSON or text.
type Producer[In, Out any] struct {
	Name        string
	Description string
	// Type is the logical type of the stored result; defaults to Name.
	Type string
	// Key, when set, is a template over the arguments, such as
	// "papers_{query}_{page}", that makes the workspace id deterministic:
	// calling again with the same arguments replaces the same workspace.
	Key string
	// Transform reshapes the result before it is stored.
	Transform func(Out) (any, error)
	// Meta is kept with every stored result.
	Meta map[string]any
	// TTL overrides the engine's default lifetime.
	TTL time.Duration
	// Func computes the result.
	Func func(ctx context.Context, in In) (Out, error)
}

// AddProducer registers p as a tool of e. It panics on a programmer error: a
// duplicate name, an argument type without a JSON Schema, or a Key that names
// an unknown argument.
func AddProducer[In, Out any](e *Engine, p Producer[In, Out]) {
	s := schemaFor[In]()
	keyFields := keyPlaceholders(p.Key)
	for _, f := range keyFields {
		if _, ok := s.Properties[f]; !ok {
			panic(fmt.Sprintf("offload: producer %q: key template %q names unknown argument %q", p.Name, p.Key, f))
		}
	}
	typ := p.Type
	if typ == "" {
		typ = p.Name
	}
	e.register(&tool{
		name:        p.Name,
		description: p.Description + " The result is stored; you get a notice with its id and the tools to explore it.",
		schema:      s,
		run: func(ctx context.Context, c *call) (any, error) {
			var in In
			if err := json.Unmarshal(c.args, &in); err != nil {
				return nil, fmt.Errorf("decode %s arguments: %w", p.Name, err)
			}
			out, err := p.Func(ctx, in)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			var v any = out
			if p.Transform != nil {
				if v, err = p.Transform(out); err != nil {
					return nil, fmt.Errorf("%s: transform: %w", p.Name, err)
				}
			}
			data, err := encodeResult(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			return e.Put(ctx, data, PutOptions{
				Type: typ, Producer: p.Name, Args: c.args, TTL: p.TTL, Meta: p.Meta,
				ID: renderKey(p.Key, c.args),
			})
		},
	})
}

// encodeResult keeps strings and bytes as they are (they may be JSON, CSV or
// text) and encodes anything else as JSON.
func encodeResult(v any) ([]byte, error) {
	switch t := v.(type) {
	case string:
		return []byte(t), nil
	case []byte:
		return t, nil
	case json.RawMessage:
		return t, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return b, nil
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

func keyPlaceholders(tmpl string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(tmpl, -1) {
		out = append(out, m[1])
	}
	return out
}

// renderKey fills a key template with argument values; "" when there is no template.
func renderKey(tmpl string, args json.RawMessage) string {
	if tmpl == "" {
		return ""
	}
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	return placeholder.ReplaceAllStringFunc(tmpl, func(ph string) string {
		v, ok := m[ph[1:len(ph)-1]]
		if !ok || v == nil {
			return ""
		}
		if s, isStr := v.(string); isStr {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
}

// View gives a consumer or custom tool read access to the workspace it was
// called on, after the engine has checked that the workspace exists, is
// visible in the session, has not expired and has a shape the tool accepts.
type View struct {
	e  *Engine
	ws *store.Workspace
}

// Workspace returns the metadata of the workspace.
func (v *View) Workspace() store.Workspace { return *v.ws }

// Items returns up to limit raw items from offset.
func (v *View) Items(ctx context.Context, offset, limit int) ([]json.RawMessage, error) {
	return v.e.store.Items(ctx, v.ws.ID, offset, limit)
}

// All yields every item, decoded, without holding the list in memory.
func (v *View) All(ctx context.Context) iter.Seq2[any, error] {
	return v.e.decodedItems(ctx, v.ws.ID)
}

// Value returns a dict workspace's object.
func (v *View) Value(ctx context.Context) (json.RawMessage, error) {
	return v.e.store.Value(ctx, v.ws.ID)
}

// Text returns up to n characters of a text workspace from offset.
func (v *View) Text(ctx context.Context, offset, n int64) (string, error) {
	return v.e.store.TextSlice(ctx, v.ws.ID, offset, n)
}

// Pipe runs pipeline steps (the result_pipe grammar) over a list
// workspace, as result_pipe does: in the store when it runs pipelines
// itself. A bad step is a *pipeline.StepError.
func (v *View) Pipe(ctx context.Context, steps json.RawMessage) (any, error) {
	p, err := pipeline.Parse(steps)
	if err != nil {
		return nil, err
	}
	return v.e.runPipe(ctx, v.ws.ID, p)
}

// Consumer is a tool that reads one workspace and stores what it computes as
// a new workspace, returning that workspace's notice.
type Consumer[In any] struct {
	Name        string
	Description string
	// Shapes the consumer accepts; defaults to lists.
	Shapes []store.Shape
	// Types, when set, restricts the workspace types it accepts.
	Types []string
	// Produces is the type of the workspaces it stores; defaults to Name.
	Produces string
	// TTL overrides the engine's default lifetime.
	TTL time.Duration
	// Func computes the new result.
	Func func(ctx context.Context, v *View, in In) (any, error)
}

// AddConsumer registers c as a tool of e. Its arguments are workspace_id
// followed by In's fields.
func AddConsumer[In any](e *Engine, c Consumer[In]) {
	produces := c.Produces
	if produces == "" {
		produces = c.Name
	}
	e.register(&tool{
		name:        c.Name,
		description: c.Description,
		schema:      schemaFor[In](),
		shapes:      orDefault(c.Shapes, listShape),
		types:       c.Types,
		run: func(ctx context.Context, call *call) (any, error) {
			in, err := decodeArgs[In](c.Name, call.args)
			if err != nil {
				return nil, err
			}
			out, err := c.Func(ctx, &View{e: e, ws: call.ws}, in)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			data, err := encodeResult(out)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			return e.Put(ctx, data, PutOptions{Type: produces, Producer: c.Name, Args: call.args, TTL: c.TTL})
		},
	})
}

// CustomTool is a tool of your own over a workspace; its result goes to the
// model directly, capped like every tool's.
type CustomTool[In any] struct {
	Name        string
	Description string
	// Shapes the tool accepts; defaults to all three.
	Shapes []store.Shape
	// Types, when set, restricts the workspace types it accepts.
	Types []string
	Func  func(ctx context.Context, v *View, in In) (any, error)
}

// AddTool registers t as a tool of e. Its arguments are workspace_id followed
// by In's fields.
func AddTool[In any](e *Engine, t CustomTool[In]) {
	e.register(&tool{
		name:        t.Name,
		description: t.Description,
		schema:      schemaFor[In](),
		shapes:      orDefault(t.Shapes, []store.Shape{store.ShapeList, store.ShapeDict, store.ShapeText}),
		types:       t.Types,
		run: func(ctx context.Context, call *call) (any, error) {
			in, err := decodeArgs[In](t.Name, call.args)
			if err != nil {
				return nil, err
			}
			return t.Func(ctx, &View{e: e, ws: call.ws}, in)
		},
	})
}

func decodeArgs[In any](name string, args json.RawMessage) (In, error) {
	var in In
	if err := json.Unmarshal(args, &in); err != nil {
		return in, fmt.Errorf("decode %s arguments: %w", name, err)
	}
	return in, nil
}

func orDefault(shapes, def []store.Shape) []store.Shape {
	if len(shapes) == 0 {
		return def
	}
	return shapes
}

// SystemPrompt describes the stored-result tools briefly, after preamble,
// for the system prompt of an agent that uses them.
func (e *Engine) SystemPrompt(preamble string) string {
	var b strings.Builder
	if preamble != "" {
		b.WriteString(strings.TrimSpace(preamble))
		b.WriteString("\n\n")
	}
	b.WriteString("Large tool results are stored instead of shown. You then get a notice with stored_result (the workspace id), its shape, size, fields and a preview. Explore it with the result_* tools, passing that id as workspace_id:\n")
	b.WriteString("- lists: result_search (words), result_pipe (filter, sort, group, count), result_paginate, result_get_item, result_field_values\n")
	b.WriteString("- objects: result_get_keys, result_get_value (dot paths)\n")
	b.WriteString("- text: result_search_in_text (passages with their page), result_read_page, result_get_length\n")
	b.WriteString("- result_list shows what is stored. Stored results expire; an expired one tells you which tool to call again.\n")
	var own []string
	e.mu.RLock()
	for _, name := range e.order {
		if !strings.HasPrefix(name, "result_") {
			own = append(own, name)
		}
	}
	e.mu.RUnlock()
	if len(own) > 0 {
		slices.Sort(own)
		b.WriteString("Other tools: " + strings.Join(own, ", ") + ".\n")
	}
	return b.String()
}
