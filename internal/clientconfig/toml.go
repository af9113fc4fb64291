package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlExpr is one top-level TOML expression with its byte range.
type tomlExpr struct {
	kind       unstable.Kind // Table, ArrayTable or KeyValue
	keys       []string      // full key: table keys, or the table's keys + the key-value's
	local      []string      // key-value: the key as written
	start, end int           // whole lines (end includes the newline)
	rawStart   int           // key-value: first byte of the key
	rawEnd     int           // key-value: byte after the value
}

// tomlDoc is a parsed TOML configuration file (Codex). go-toml checks the
// document and reports positions; the unstable parser gives the byte range
// of every table header and key-value, so edits splice whole lines and the
// rest of the file (comments, key order) keeps its bytes.
type tomlDoc struct {
	src   []byte
	data  map[string]any
	exprs []tomlExpr
}

func lineStart(src []byte, off int) int { return bytes.LastIndexByte(src[:off], '\n') + 1 }

func lineEnd(src []byte, off int) int {
	i := bytes.IndexByte(src[off:], '\n')
	if i < 0 {
		return len(src)
	}
	return off + i + 1
}

func keyParts(it unstable.Iterator) (keys []string, first, last unstable.Range) {
	n := 0
	for it.Next() {
		k := it.Node()
		if n == 0 {
			first = k.Raw
		}
		last = k.Raw
		keys = append(keys, string(k.Data))
		n++
	}
	return keys, first, last
}

func parseTOML(path string, src []byte) (*tomlDoc, error) {
	d := &tomlDoc{src: src, data: map[string]any{}}
	if err := toml.Unmarshal(src, &d.data); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%w: %s: line %d, column %d: %v", ErrParse, path, row, col, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrParse, path, err)
	}
	var p unstable.Parser
	p.Reset(src)
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys, first, last := keyParts(n.Key())
			table = keys
			end := int(last.Offset + last.Length)
			d.exprs = append(d.exprs, tomlExpr{kind: n.Kind, keys: keys,
				start: lineStart(src, int(first.Offset)), end: lineEnd(src, end)})
		case unstable.KeyValue:
			local, _, _ := keyParts(n.Key())
			rs, re := int(n.Raw.Offset), int(n.Raw.Offset+n.Raw.Length)
			start := rs
			if onOwnLine(src, rs) {
				start = lineStart(src, rs)
			}
			full := append(append([]string(nil), table...), local...)
			d.exprs = append(d.exprs, tomlExpr{kind: n.Kind, keys: full, local: local,
				start: start, end: lineEnd(src, re), rawStart: rs, rawEnd: re})
		}
	}
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrParse, path, err)
	}
	return d, nil
}

func hasPrefix(keys, prefix []string) bool {
	if len(keys) < len(prefix) {
		return false
	}
	for i := range prefix {
		if keys[i] != prefix[i] {
			return false
		}
	}
	return true
}

// tomlEntry is one [mcp_servers.NAME] block.
type tomlEntry struct {
	name        string
	start, end  int
	exprs       []tomlExpr // the block's expressions
	server      Server
	literal     []KV // http_headers: literal values, not references (server.Headers holds the references)
	values      map[string]any
	wrapped     bool
	unsupported string
}

// servers returns the entries in file order.
func (d *tomlDoc) servers(root string) ([]tomlEntry, error) {
	tbl, ok := d.data[root]
	if !ok {
		return nil, nil
	}
	all, ok := tbl.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a table", ErrShape, root)
	}
	var names []string
	seen := map[string]bool{}
	for _, x := range d.exprs {
		if len(x.keys) >= 2 && x.keys[0] == root && !seen[x.keys[1]] {
			seen[x.keys[1]] = true
			names = append(names, x.keys[1])
		}
	}
	var out []tomlEntry
	for _, name := range names {
		e := tomlEntry{name: name, server: Server{Name: name}}
		vals, ok := all[name].(map[string]any)
		if !ok {
			e.unsupported = "not a table"
			out = append(out, e)
			continue
		}
		e.values = vals
		prefix := []string{root, name}
		first, last := -1, -1
		for i, x := range d.exprs {
			if hasPrefix(x.keys, prefix) {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		contiguous := true
		for i := first; i <= last; i++ {
			if !hasPrefix(d.exprs[i].keys, prefix) || d.exprs[i].kind == unstable.ArrayTable {
				contiguous = false
			}
		}
		head := d.exprs[first]
		if head.kind != unstable.Table || len(head.keys) != 2 || !contiguous {
			e.unsupported = "not written as one [" + root + "." + name + "] table block; edit it by hand"
			out = append(out, e)
			continue
		}
		e.start, e.end = head.start, d.exprs[last].end
		e.exprs = d.exprs[first : last+1]
		readCodex(&e)
		out = append(out, e)
	}
	return out, nil
}

func str(v any) string { s, _ := v.(string); return s }

func strList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func sortedKVs(v any) []KV {
	m, _ := v.(map[string]any)
	var out []KV
	for k, x := range m {
		out = append(out, KV{k, fmt.Sprint(x)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// readCodex fills the neutral server of a Codex entry. Codex's remote
// credentials become ctxkit-syntax headers: bearer_token_env_var = "X" is
// "Authorization: Bearer ${X}", env_http_headers {H = "X"} is "H: ${X}";
// http_headers hold literal values (e.literal), which Codex never expands.
func readCodex(e *tomlEntry) {
	v := e.values
	s := &e.server
	s.Env = sortedKVs(v["env"])
	switch {
	case v["command"] != nil && str(v["command"]) == "", v["command"] == nil && v["url"] != nil && str(v["url"]) == "":
		e.unsupported = "empty command or url"
	case v["command"] != nil:
		s.Command = str(v["command"])
		s.Args = strList(v["args"])
		e.wrapped = IsWrapped(s.Command, s.Args)
	case v["url"] != nil:
		s.URL = str(v["url"])
		s.Transport = "http"
		if t := str(v["bearer_token_env_var"]); t != "" {
			s.Headers = append(s.Headers, KV{"Authorization", "Bearer ${" + t + "}"})
		}
		e.literal = sortedKVs(v["http_headers"])
		for _, kv := range sortedKVs(v["env_http_headers"]) {
			s.Headers = append(s.Headers, KV{kv.Key, "${" + kv.Value + "}"})
		}
		if v["bearer_token"] != nil {
			e.unsupported = "bearer_token holds a literal secret; move it to bearer_token_env_var first"
		}
	default:
		e.unsupported = "neither command nor url"
	}
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return tomlQuote(k)
}

func tomlQuote(s string) string { return strings.ReplaceAll(jsonQuote(s), "\x7f", `\u007f`) }

// quotedKeys renders each key of a dotted key.
func quotedKeys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = tomlKey(k)
	}
	return out
}

// tomlInline renders an inline table of strings.
func tomlInline(kvs []KV) string {
	q := make([]string, len(kvs))
	for i, kv := range kvs {
		q[i] = tomlKey(kv.Key) + " = " + tomlQuote(kv.Value)
	}
	return "{ " + strings.Join(q, ", ") + " }"
}

func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// codexDropped are the remote-only settings removed from a wrapped entry
// (wrap carries the URL and headers, and does OAuth itself).
var codexDropped = map[string]bool{"url": true, "bearer_token_env_var": true, "http_headers": true, "env_http_headers": true, "oauth": true}

// wrapTOML returns the text that replaces the entry's block.
func wrapTOML(d *tomlDoc, e tomlEntry, exe string) string {
	block := d.src[e.start:e.end]
	var edits []edit
	rel := func(x int) int { return x - e.start }
	main := e.exprs[0].keys
	inMain := func(x tomlExpr) bool {
		return x.kind == unstable.KeyValue && len(x.keys) == len(main)+len(x.local) && hasPrefix(x.keys, main)
	}
	s := e.server
	after := func(x tomlExpr, text string) edit {
		pos := rel(x.end)
		if pos == len(block) && !bytes.HasSuffix(block, []byte("\n")) {
			return edit{pos, pos, "\n" + strings.TrimSuffix(text, "\n")}
		}
		return edit{pos, pos, text}
	}
	insertAfter := func(x tomlExpr, text string) { edits = append(edits, after(x, text)) }
	if !s.Remote() {
		wargs := StdioWrapArgs(s.Name, s.Command, s.Args)
		var cmd *tomlExpr
		hasArgs := false
		for i, x := range e.exprs {
			if !inMain(x) || len(x.local) != 1 {
				continue
			}
			switch x.local[0] {
			case "command":
				cmd = &e.exprs[i]
				edits = append(edits, edit{rel(x.rawStart), rel(x.rawEnd), "command = " + tomlQuote(exe)})
			case "args":
				hasArgs = true
				edits = append(edits, edit{rel(x.rawStart), rel(x.rawEnd), "args = " + tomlStrings(wargs)})
			}
		}
		if !hasArgs && cmd != nil {
			insertAfter(*cmd, "args = "+tomlStrings(wargs)+"\n")
		}
		return string(apply(block, edits))
	}
	taken := map[string]bool{}
	for _, kv := range s.Env {
		taken[kv.Key] = true
	}
	plan := planCodexHeaders(s.Headers, e.literal, taken)
	wargs := RemoteWrapArgs(s.Name, s.Transport, s.URL, plan.flags)
	forward := append(strList(e.values["env_vars"]), plan.forward...)
	forward = uniq(forward)
	hasEnvVars := e.values["env_vars"] != nil
	dropTable := false
	envTable, envLast := false, -1 // inside [NAME.env]; the last expression that holds env
	envInline := false
	for i, x := range e.exprs {
		if x.kind == unstable.Table {
			envTable = len(x.keys) == len(main)+1 && x.keys[len(main)] == "env"
			if envTable {
				envLast = i
			}
		} else if envTable || (inMain(x) && x.local[0] == "env") {
			envLast = i
			envInline = envInline || (!envTable && len(x.local) == 1)
		}
	}
	// envEdit adds the generated variables; appended after every other
	// edit, so an edit removing the line after its position goes first.
	var envEdit []edit
	header := strings.Join(quotedKeys(main), ".")
	lastMain := -1
	for i, x := range e.exprs {
		if inMain(x) {
			lastMain = i
		}
	}
	switch {
	case len(plan.env) == 0:
	case envInline:
		// env = {...}: rewritten whole, the generated variables added.
		for _, x := range e.exprs {
			if inMain(x) && len(x.local) == 1 && x.local[0] == "env" {
				envEdit = append(envEdit, edit{rel(x.rawStart), rel(x.rawEnd), "env = " + tomlInline(append(s.Env, plan.env...))})
			}
		}
	case envLast >= 0:
		// a [NAME.env] table, or dotted env.X keys: more of the same.
		prefix := ""
		if e.exprs[envLast].kind == unstable.KeyValue && len(e.exprs[envLast].local) > 1 {
			prefix = "env."
		}
		var b strings.Builder
		for _, kv := range plan.env {
			b.WriteString(prefix + tomlKey(kv.Key) + " = " + tomlQuote(kv.Value) + "\n")
		}
		envEdit = append(envEdit, after(e.exprs[envLast], b.String()))
	default:
		var b strings.Builder
		b.WriteString("\n[" + header + ".env]\n")
		for _, kv := range plan.env {
			b.WriteString(tomlKey(kv.Key) + " = " + tomlQuote(kv.Value) + "\n")
		}
		// a new [NAME.env] table after the main table's last key.
		envEdit = append(envEdit, after(e.exprs[lastMain], b.String()))
	}
	for _, x := range e.exprs {
		if x.kind == unstable.Table {
			dropTable = len(x.keys) > len(main) && codexDropped[x.keys[len(main)]]
			if dropTable {
				edits = append(edits, edit{rel(x.start), rel(x.end), ""})
			}
			continue
		}
		if dropTable {
			edits = append(edits, edit{rel(x.start), rel(x.end), ""})
			continue
		}
		if !inMain(x) {
			continue
		}
		switch {
		case x.local[0] == "url" && len(x.local) == 1:
			text := "command = " + tomlQuote(exe) + "\nargs = " + tomlStrings(wargs)
			if !hasEnvVars && len(forward) > 0 {
				text += "\nenv_vars = " + tomlStrings(forward)
			}
			edits = append(edits, edit{rel(x.rawStart), rel(x.rawEnd), text})
		case x.local[0] == "env_vars" && len(x.local) == 1:
			edits = append(edits, edit{rel(x.rawStart), rel(x.rawEnd), "env_vars = " + tomlStrings(forward)})
		case codexDropped[x.local[0]]:
			edits = append(edits, edit{rel(x.start), rel(x.end), ""})
		}
	}
	return trimTail(string(apply(block, append(edits, envEdit...))))
}

// trimTail drops blank and comment lines left at the end of a block by
// removed sub-tables: the block must end with its last expression's line,
// where the next parse will end it, or uninstall could not find it exactly.
func trimTail(block string) string {
	for {
		body := strings.TrimSuffix(block, "\n")
		i := strings.LastIndexByte(body, '\n')
		last := strings.TrimSpace(body[i+1:])
		if i < 0 || (last != "" && !strings.HasPrefix(last, "#")) {
			return block
		}
		block = body[:i+1]
	}
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// newTOMLEntry renders a new, already wrapped [mcp_servers.NAME] block.
func newTOMLEntry(root string, s Server, exe string) string {
	var b strings.Builder
	header := root + "." + tomlKey(s.Name)
	b.WriteString("[" + header + "]\n")
	var wargs, forward []string
	env := append([]KV(nil), s.Env...)
	if s.Remote() {
		taken := map[string]bool{}
		for _, kv := range s.Env {
			taken[kv.Key] = true
		}
		plan := planCodexHeaders(s.Headers, nil, taken)
		wargs = RemoteWrapArgs(s.Name, s.Transport, s.URL, plan.flags)
		forward = plan.forward
		env = append(env, plan.env...)
	} else {
		wargs = StdioWrapArgs(s.Name, s.Command, s.Args)
	}
	b.WriteString("command = " + tomlQuote(exe) + "\n")
	b.WriteString("args = " + tomlStrings(wargs) + "\n")
	if len(forward) > 0 {
		b.WriteString("env_vars = " + tomlStrings(forward) + "\n")
	}
	if len(env) > 0 {
		b.WriteString("\n[" + header + ".env]\n")
		for _, kv := range env {
			b.WriteString(tomlKey(kv.Key) + " = " + tomlQuote(kv.Value) + "\n")
		}
	}
	return b.String()
}

// appendEdit returns the edit that appends a block at the end of src,
// separated by a blank line.
func appendEdit(src []byte, block string) edit {
	n := len(src)
	prefix := ""
	switch {
	case n == 0:
	case !bytes.HasSuffix(src, []byte("\n")):
		prefix = "\n\n"
	case !bytes.HasSuffix(src, []byte("\n\n")):
		prefix = "\n"
	}
	return edit{n, n, prefix + block}
}

// tomlEqual reports whether two TOML texts hold the same tables.
func tomlEqual(a, b string) bool {
	var x, y map[string]any
	if toml.Unmarshal([]byte(a), &x) != nil || toml.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
