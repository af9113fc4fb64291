package offload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ctxkit/ctxkit/offload/pipeline"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/query"
)

// Caps of the built-in tools: each says when it hit one.
const (
	defaultPageSize      = 20
	maxPageSize          = 100
	defaultMaxResults    = 10
	maxMaxResults        = 100
	defaultMaxValues     = 20
	maxMaxValues         = 200
	maxKeys              = 200
	maxValueChars        = 20_000
	defaultCharsPerPage  = 6_000
	maxCharsPerPage      = 20_000
	defaultContextChars  = 300
	maxContextChars      = 2_000
	defaultTextResults   = 5
	maxTextResults       = 50
	pipeInlineItems      = 50
	maxListedWorkspaces  = 100
	saveAsPrefix         = "saved_"
	savedWorkspaceType   = "saved"
	pipeToolName         = "result_pipe"
	maxSearchQueryLength = 1_000
)

type paginateArgs struct {
	Page int `json:"page,omitempty" jsonschema:"Page number, starting at 1."`
	Size int `json:"size,omitempty" jsonschema:"Items per page, at most 100."`
}

type getItemArgs struct {
	Index int `json:"index" jsonschema:"Position of the item, starting at 0."`
}

type searchArgs struct {
	Query      string   `json:"query" jsonschema:"Words to look for; each matches on its own and items matching more of them rank first."`
	Fields     []string `json:"fields,omitempty" jsonschema:"Only search these fields (dot paths such as author.name)."`
	MaxResults int      `json:"max_results,omitempty" jsonschema:"At most this many items, up to 100."`
}

type fieldValuesArgs struct {
	Field     string `json:"field" jsonschema:"Field to summarise (dot path such as author.name)."`
	MaxValues int    `json:"max_values,omitempty" jsonschema:"At most this many distinct values, most frequent first, up to 200."`
}

type pipeArgs struct {
	Steps  json.RawMessage `json:"steps" jsonschema:"The pipeline: a list of steps run in order."`
	SaveAs string          `json:"save_as,omitempty" jsonschema:"Store the full result as workspace saved_<name> and return its notice."`
}

type getValueArgs struct {
	Key string `json:"key" jsonschema:"Key to read; dot paths such as config.servers.0.name reach nested values."`
}

type readPageArgs struct {
	Page         int `json:"page,omitempty" jsonschema:"Page number, starting at 1."`
	CharsPerPage int `json:"chars_per_page,omitempty" jsonschema:"Page length in characters, up to 20000."`
}

type searchTextArgs struct {
	Query        string `json:"query" jsonschema:"Words to look for; passages with more of them rank first."`
	MaxResults   int    `json:"max_results,omitempty" jsonschema:"At most this many passages, up to 50."`
	ContextChars int    `json:"context_chars,omitempty" jsonschema:"Characters of context on each side of a hit, up to 2000."`
}

// noArgs is the argument type of tools that take nothing but workspace_id
// (which every workspace tool gets) or nothing at all.
type noArgs struct{}

// builtin registers one exploration tool with typed arguments.
func builtin[In any](e *Engine, name, desc string, shapes []store.Shape, bounds map[string][3]int, run func(ctx context.Context, ws *store.Workspace, in In) (any, error)) {
	s := schemaFor[In]()
	for prop, b := range bounds { // default, minimum, maximum
		p := s.Properties[prop]
		p.Default = json.RawMessage(fmt.Sprint(b[0]))
		lo, hi := float64(b[1]), float64(b[2])
		p.Minimum, p.Maximum = &lo, &hi
	}
	e.register(&tool{
		name:        name,
		description: desc,
		schema:      s,
		shapes:      shapes,
		run: func(ctx context.Context, c *call) (any, error) {
			var in In
			if err := json.Unmarshal(c.args, &in); err != nil {
				return nil, fmt.Errorf("decode %s arguments: %w", name, err)
			}
			return run(ctx, c.ws, in)
		},
	})
}

var (
	listShape = []store.Shape{store.ShapeList}
	dictShape = []store.Shape{store.ShapeDict}
	textShape = []store.Shape{store.ShapeText}
)

func (e *Engine) registerBuiltins() {
	builtin(e, "result_paginate", "Read a stored list page by page. Returns items with their indexes, total_items, total_pages and has_more.",
		listShape, map[string][3]int{"page": {1, 1, 1 << 30}, "size": {defaultPageSize, 1, maxPageSize}}, e.paginate)
	builtin(e, "result_get_item", "Read one item of a stored list by its index (0-based).",
		listShape, nil, e.getItem)
	builtin(e, "result_search", "Full-text search over a stored list's items. Terms match on their own; items matching more terms rank first. Returns the best items with their indexes, total matches and has_more.",
		listShape, map[string][3]int{"max_results": {defaultMaxResults, 1, maxMaxResults}}, e.search)
	builtin(e, "result_field_values", "Distinct values of one field across a stored list, most frequent first, with counts (array values are counted element by element).",
		listShape, map[string][3]int{"max_values": {defaultMaxValues, 1, maxMaxValues}}, e.fieldValues)
	e.registerPipe()
	builtin(e, "result_get_keys", "List the top-level keys of a stored object, with each value's type and size.",
		dictShape, nil, e.getKeys)
	builtin(e, "result_get_value", "Read one value of a stored object by key or dot path (a.b.0.c). Long values are cut; read deeper paths to see more.",
		dictShape, nil, e.getValue)
	builtin(e, "result_read_page", "Read a stored text page by page (page 1 first). Pages end at paragraph or line breaks where possible.",
		textShape, map[string][3]int{"page": {1, 1, 1 << 30}, "chars_per_page": {defaultCharsPerPage, 200, maxCharsPerPage}}, e.readPage)
	builtin(e, "result_search_in_text", "Search a stored text. Returns passages with context and the page each is on (for result_read_page), best first.",
		textShape, map[string][3]int{"max_results": {defaultTextResults, 1, maxTextResults}, "context_chars": {defaultContextChars, 0, maxContextChars}}, e.searchText)
	builtin(e, "result_get_length", "Size of a stored text: characters, approximate tokens and pages.",
		textShape, nil, e.getLength)
	e.register(&tool{
		name:        "result_list",
		description: "List the stored results you can explore, one line each: id, type, shape, size and expiry.",
		schema:      schemaFor[noArgs](),
		run:         func(ctx context.Context, _ *call) (any, error) { return e.listTool(ctx) },
	})
}

func (e *Engine) registerPipe() {
	// The model sees the full grammar of steps; validation only checks that
	// steps is a list, so that the pipeline parser can report a bad step
	// with its index and a corrected example.
	s := schemaFor[pipeArgs]()
	s.Properties["steps"] = &jsonschema.Schema{Type: "array", Description: s.Properties["steps"].Description}
	shown := schemaFor[pipeArgs]()
	steps := pipeline.StepsSchema()
	steps.Description = s.Properties["steps"].Description
	shown.Properties["steps"] = steps
	e.register(&tool{
		name:        pipeToolName,
		description: pipeline.Description,
		schema:      s,
		shown:       shown,
		shapes:      listShape,
		run: func(ctx context.Context, c *call) (any, error) {
			var in pipeArgs
			if err := json.Unmarshal(c.args, &in); err != nil {
				return nil, fmt.Errorf("decode result_pipe arguments: %w", err)
			}
			return e.pipe(ctx, c.ws, in)
		},
	})
}

type itemEntry struct {
	Index int             `json:"index"`
	Item  json.RawMessage `json:"item"`
}

func (e *Engine) paginate(ctx context.Context, ws *store.Workspace, in paginateArgs) (any, error) {
	pages := max((ws.Items+in.Size-1)/in.Size, 1)
	offset := (in.Page - 1) * in.Size
	items, err := e.store.Items(ctx, ws.ID, offset, in.Size)
	if err != nil {
		return nil, fmt.Errorf("read page %d of %q: %w", in.Page, ws.ID, err)
	}
	entries := make([]itemEntry, len(items))
	for i, it := range items {
		entries[i] = itemEntry{Index: offset + i, Item: it}
	}
	out := map[string]any{
		"workspace_id": ws.ID, "page": in.Page, "size": in.Size,
		"total_items": ws.Items, "total_pages": pages,
		"items": entries, "has_more": offset+len(items) < ws.Items,
	}
	if in.Page > pages {
		out["note"] = fmt.Sprintf("page %d is past the last page (%d)", in.Page, pages)
	}
	return out, nil
}

func (e *Engine) getItem(ctx context.Context, ws *store.Workspace, in getItemArgs) (any, error) {
	if in.Index < 0 || in.Index >= ws.Items {
		return nil, &ToolError{
			Code:            CodeOutOfRange,
			Message:         fmt.Sprintf("index %d is outside %q, which has %s (0 to %d)", in.Index, ws.ID, plural(int64(ws.Items), "item"), ws.Items-1),
			SuggestedAction: fmt.Sprintf("use an index from 0 to %d", ws.Items-1),
			err:             store.ErrOutOfRange,
		}
	}
	items, err := e.store.Items(ctx, ws.ID, in.Index, 1)
	if err != nil || len(items) == 0 {
		return nil, fmt.Errorf("read item %d of %q: %w", in.Index, ws.ID, err)
	}
	return map[string]any{"workspace_id": ws.ID, "index": in.Index, "total_items": ws.Items, "item": items[0]}, nil
}

type searchHit struct {
	Index int             `json:"index"`
	Score float64         `json:"score"`
	Terms int             `json:"matched_terms"`
	Item  json.RawMessage `json:"item"`
}

func (e *Engine) search(ctx context.Context, ws *store.Workspace, in searchArgs) (any, error) {
	if strings.TrimSpace(in.Query) == "" || len(in.Query) > maxSearchQueryLength {
		return nil, &ToolError{
			Code:            CodeBadArguments,
			Message:         fmt.Sprintf("query must hold 1 to %d characters of words to look for", maxSearchQueryLength),
			SuggestedAction: `call result_search with a short query such as "timeout error"`,
		}
	}
	hits, total, err := e.store.SearchItems(ctx, ws.ID, store.Query{Text: in.Query, Fields: in.Fields, Limit: in.MaxResults})
	if errors.Is(err, store.ErrInvalidQuery) {
		return nil, badQuery("result_search", err)
	}
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", ws.ID, err)
	}
	out := make([]searchHit, len(hits))
	for i, h := range hits {
		out[i] = searchHit{Index: h.Index, Score: round3(h.Score), Terms: h.Terms, Item: h.Item}
	}
	res := map[string]any{"workspace_id": ws.ID, "query": in.Query, "total": total, "hits": out, "has_more": total > len(out)}
	if total == 0 {
		res["suggestion"] = "no item matched; try fewer or shorter words, other fields, or result_field_values to see what values exist"
	}
	return res, nil
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

type valueCount struct {
	Value any `json:"value"`
	Count int `json:"count"`
}

func (e *Engine) fieldValues(ctx context.Context, ws *store.Workspace, in fieldValuesArgs) (any, error) {
	counts := map[string]*valueCount{}
	present, missing := 0, 0
	for item, err := range e.decodedItems(ctx, ws.ID) {
		if err != nil {
			return nil, err
		}
		v, ok := store.Lookup(item, in.Field)
		if !ok {
			missing++
			continue
		}
		present++
		values := []any{v}
		if arr, isArr := v.([]any); isArr {
			values = arr
		}
		for _, x := range values {
			key, _ := json.Marshal(x)
			if c := counts[string(key)]; c != nil {
				c.Count++
			} else {
				counts[string(key)] = &valueCount{Value: x, Count: 1}
			}
		}
	}
	all := make([]*valueCount, 0, len(counts))
	keys := make(map[*valueCount]string, len(counts))
	for k, c := range counts {
		all = append(all, c)
		keys[c] = k
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Count != all[j].Count {
			return all[i].Count > all[j].Count
		}
		return keys[all[i]] < keys[all[j]]
	})
	shown := all[:min(len(all), in.MaxValues)]
	for _, c := range shown {
		if s, ok := c.Value.(string); ok {
			c.Value = cutString(s, 200)
		}
	}
	res := map[string]any{
		"workspace_id": ws.ID, "field": in.Field, "distinct": len(all), "values": shown,
		"items_with_field": present, "items_without_field": missing, "has_more": len(all) > len(shown),
	}
	if present == 0 {
		res["suggestion"] = "no item has this field; see fields in the notice or call result_paginate to look at items"
	}
	return res, nil
}

// decodedItems yields a list's items as decoded JSON, the form the pipeline
// and field statistics work on.
func (e *Engine) decodedItems(ctx context.Context, id string) iter.Seq2[any, error] {
	return e.projectedItems(ctx, id, nil)
}

// projectedItems is decodedItems decoding only the top-level keys given
// (all of them when keys is nil): a pipeline whose result depends on a few
// fields (query.Pipeline.Projection) need not decode whole items.
func (e *Engine) projectedItems(ctx context.Context, id string, keys []string) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for raw, err := range e.store.ScanItems(ctx, id) {
			if err != nil {
				yield(nil, fmt.Errorf("scan %q: %w", id, err))
				return
			}
			var v any
			if keys == nil {
				v, err = query.Decode(raw)
			} else {
				v, err = query.DecodeKeys(raw, keys)
			}
			if !yield(v, err) {
				return
			}
		}
	}
}

// runPipe runs p over the list workspace id: in the store when it runs
// pipelines itself (store.Piper), else in Go over the items decoded only
// in the fields p reads. A step that cannot run is a *pipeline.StepError.
func (e *Engine) runPipe(ctx context.Context, id string, p *query.Pipeline) (any, error) {
	var (
		value any
		err   error
	)
	if ps, ok := e.store.(store.Piper); ok {
		value, err = ps.Pipe(ctx, id, p)
	} else {
		keys, projected := p.Projection()
		switch {
		case !projected:
			keys = nil // decode whole items
		case keys == nil:
			keys = []string{} // a bare count reads no field
		}
		value, err = p.Run(ctx, e.projectedItems(ctx, id, keys))
	}
	return value, pipeline.Explain(err)
}

func (e *Engine) pipe(ctx context.Context, ws *store.Workspace, in pipeArgs) (any, error) {
	p, err := pipeline.Parse(in.Steps)
	if err != nil {
		return nil, stepError(err)
	}
	value, err := e.runPipe(ctx, ws.ID, p)
	if err != nil {
		return nil, stepError(err)
	}
	if in.SaveAs == "" {
		return pipeline.Output(value, pipeInlineItems), nil
	}
	name := sanitizeID(in.SaveAs)
	if name == "" {
		return nil, &ToolError{Code: CodeBadArguments, Message: "save_as must contain letters or digits", SuggestedAction: `use a short name such as "top_authors"`}
	}
	args, _ := json.Marshal(map[string]any{"workspace_id": ws.ID, "steps": in.Steps})
	n, err := e.PutValue(ctx, value, PutOptions{
		ID:       saveAsPrefix + strings.TrimPrefix(name, saveAsPrefix),
		Type:     savedWorkspaceType,
		Producer: pipeToolName,
		Args:     args,
		TTL:      ws.TTL,
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// stepError turns a pipeline error into one the model can fix.
func stepError(err error) error {
	var se *pipeline.StepError
	if !errors.As(err, &se) {
		return err
	}
	idx := se.Index
	return &ToolError{
		Code:            CodeBadStep,
		Message:         se.Error(),
		SuggestedAction: fmt.Sprintf("fix step %d (0-based) as in example and call result_pipe again", se.Index),
		Step:            &idx,
		Example:         json.RawMessage(se.Example),
		err:             err,
	}
}

type keyInfo struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Chars int    `json:"chars"`
}

func (e *Engine) dictValue(ctx context.Context, ws *store.Workspace) (map[string]any, error) {
	raw, err := e.store.Value(ctx, ws.ID)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", ws.ID, err)
	}
	v, err := query.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("decode %q: %w", ws.ID, err)
	}
	m, _ := v.(map[string]any)
	return m, nil
}

func (e *Engine) getKeys(ctx context.Context, ws *store.Workspace, _ noArgs) (any, error) {
	m, err := e.dictValue(ctx, ws)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	shown := keys[:min(len(keys), maxKeys)]
	infos := make([]keyInfo, len(shown))
	for i, k := range shown {
		b, _ := json.Marshal(m[k])
		infos[i] = keyInfo{Key: k, Type: jsonType(m[k]), Chars: utf8.RuneCount(b)}
	}
	return map[string]any{"workspace_id": ws.ID, "total": len(keys), "keys": infos, "truncated": len(keys) > len(shown)}, nil
}

func jsonType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return fmt.Sprintf("array[%d]", len(t))
	case map[string]any:
		return fmt.Sprintf("object{%d}", len(t))
	default:
		return "number"
	}
}

func (e *Engine) getValue(ctx context.Context, ws *store.Workspace, in getValueArgs) (any, error) {
	m, err := e.dictValue(ctx, ws)
	if err != nil {
		return nil, err
	}
	v, ok := store.Lookup(m, in.Key)
	if !ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, &ToolError{
			Code:            CodeBadArguments,
			Message:         fmt.Sprintf("%q has no key %q", ws.ID, in.Key),
			SuggestedAction: fmt.Sprintf("call result_get_keys(%q) and use one of its keys; top-level keys start with: %s", ws.ID, strings.Join(keys[:min(len(keys), 10)], ", ")),
		}
	}
	b, _ := json.Marshal(v)
	n := utf8.RuneCount(b)
	if n <= maxValueChars {
		return map[string]any{"workspace_id": ws.ID, "key": in.Key, "type": jsonType(v), "value": json.RawMessage(b)}, nil
	}
	res := map[string]any{
		"workspace_id": ws.ID, "key": in.Key, "type": jsonType(v), "chars": n, "truncated": true,
		"preview": cutString(string(b), 2000),
	}
	switch t := v.(type) {
	case map[string]any:
		res["suggestion"] = fmt.Sprintf("the value is long (%s); read deeper with a path such as %q", plural(int64(len(t)), "key"), in.Key+"."+firstKey(t))
	case []any:
		res["suggestion"] = fmt.Sprintf("the value is long (%s); read deeper with a path such as %q", plural(int64(len(t)), "element"), in.Key+".0")
	default:
		res["suggestion"] = "the value is one long scalar; the preview shows its start"
	}
	return res, nil
}

func firstKey(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

func (e *Engine) readPage(ctx context.Context, ws *store.Workspace, in readPageArgs) (any, error) {
	cpp := int64(in.CharsPerPage)
	pages := textPages(ws.Chars, cpp)
	if int64(in.Page) > pages {
		return nil, &ToolError{
			Code:            CodeOutOfRange,
			Message:         fmt.Sprintf("%q has %s of %s; there is no page %d", ws.ID, plural(pages, "page"), plural(cpp, "char"), in.Page),
			SuggestedAction: fmt.Sprintf("read a page from 1 to %d", pages),
			err:             store.ErrOutOfRange,
		}
	}
	start, err := e.pageStart(ctx, ws, int64(in.Page-1), cpp)
	if err != nil {
		return nil, err
	}
	end, err := e.pageStart(ctx, ws, int64(in.Page), cpp)
	if err != nil {
		return nil, err
	}
	text, err := e.store.TextSlice(ctx, ws.ID, start, end-start)
	if err != nil {
		return nil, fmt.Errorf("read page %d of %q: %w", in.Page, ws.ID, err)
	}
	return map[string]any{
		"workspace_id": ws.ID, "page": in.Page, "total_pages": pages, "chars_per_page": cpp,
		"start": start, "end": end, "text": text, "has_more": int64(in.Page) < pages,
	}, nil
}

type passage struct {
	Page   int64  `json:"page"`
	Offset int64  `json:"offset"`
	Terms  int    `json:"matched_terms"`
	Text   string `json:"text"`
}

func (e *Engine) searchText(ctx context.Context, ws *store.Workspace, in searchTextArgs) (any, error) {
	if strings.TrimSpace(in.Query) == "" || len(in.Query) > maxSearchQueryLength {
		return nil, &ToolError{
			Code:            CodeBadArguments,
			Message:         fmt.Sprintf("query must hold 1 to %d characters of words to look for", maxSearchQueryLength),
			SuggestedAction: `call result_search_in_text with a short query such as "installation steps"`,
		}
	}
	// One more than asked tells whether there is more.
	hits, err := e.store.SearchText(ctx, ws.ID, store.TextQuery{Text: in.Query, Limit: in.MaxResults + 1})
	if errors.Is(err, store.ErrInvalidQuery) {
		return nil, badQuery("result_search_in_text", err)
	}
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", ws.ID, err)
	}
	hasMore := len(hits) > in.MaxResults
	hits = hits[:min(len(hits), in.MaxResults)]
	out := make([]passage, 0, len(hits))
	cpp := int64(defaultCharsPerPage)
	for _, h := range hits {
		from := max(h.Offset-int64(in.ContextChars), 0)
		text, err := e.store.TextSlice(ctx, ws.ID, from, int64(h.Length)+2*int64(in.ContextChars))
		if err != nil {
			return nil, fmt.Errorf("read passage of %q: %w", ws.ID, err)
		}
		if from > 0 {
			text = "…" + text
		}
		if from+int64(len([]rune(text))) < ws.Chars {
			text += "…"
		}
		page, err := e.pageOf(ctx, ws, h.Offset, cpp)
		if err != nil {
			return nil, err
		}
		out = append(out, passage{Page: page, Offset: h.Offset, Terms: h.Terms, Text: text})
	}
	res := map[string]any{
		"workspace_id": ws.ID, "query": in.Query, "passages": out, "has_more": hasMore,
		"chars_per_page": cpp, "total_pages": textPages(ws.Chars, cpp),
	}
	if len(out) == 0 {
		res["suggestion"] = "nothing matched; try fewer or other words, or read the text with result_read_page"
	}
	return res, nil
}

func (e *Engine) getLength(_ context.Context, ws *store.Workspace, _ noArgs) (any, error) {
	return map[string]any{
		"workspace_id": ws.ID, "chars": ws.Chars, "approx_tokens": ws.Tokens,
		"pages": textPages(ws.Chars, defaultCharsPerPage), "chars_per_page": defaultCharsPerPage,
	}, nil
}

func (e *Engine) listTool(ctx context.Context) (any, error) {
	list, err := e.List(ctx)
	if err != nil {
		return nil, err
	}
	now := e.now()
	lines := make([]string, 0, min(len(list), maxListedWorkspaces))
	for _, ws := range list[:min(len(list), maxListedWorkspaces)] {
		lines = append(lines, DescribeLine(ws, now))
	}
	return map[string]any{"total": len(list), "workspaces": lines, "truncated": len(list) > len(lines)}, nil
}

// DescribeLine summarises a workspace in one line for result_list and `ctxkit offload ls`.
func DescribeLine(ws *store.Workspace, now time.Time) string {
	var size string
	switch ws.Shape {
	case store.ShapeList:
		size = plural(int64(ws.Items), "item")
	case store.ShapeDict:
		size = plural(int64(ws.Items), "key")
	default:
		size = plural(ws.Chars, "char")
	}
	// Minutes are rounded; under a minute the seconds are said as they are.
	roughly := func(d time.Duration) string {
		if d >= time.Minute {
			d = d.Round(time.Minute)
		}
		return humanDuration(d)
	}
	expiry := "no expiry"
	switch {
	case ws.ExpiresAt.IsZero():
	case ws.Expired(now):
		expiry = "expired " + roughly(now.Sub(ws.ExpiresAt)) + " ago (" + ws.ExpiresAt.UTC().Format(time.RFC3339) + ")"
	default:
		expiry = "expires in " + roughly(ws.ExpiresAt.Sub(now))
	}
	from := ""
	if ws.Producer != "" {
		from = " from " + ws.Producer
	}
	return fmt.Sprintf("%s · %s · %s · %s%s · %s", ws.ID, ws.Type, ws.Shape, size, from, expiry)
}
