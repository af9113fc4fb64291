package clientconfig

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tailscale/hujson"
)

// KV is one ordered name and value (an environment variable, a header).
type KV struct {
	Key, Value string
}

// Server is an MCP server entry in a client-neutral form: a stdio command or
// a remote URL.
type Server struct {
	Name      string
	Command   string // stdio: the program
	Args      []string
	Env       []KV
	URL       string // remote: the endpoint
	Transport string // remote: "http", "sse" or "auto"
	Headers   []KV
}

// Remote reports whether the server is reached by URL.
func (s Server) Remote() bool { return s.URL != "" }

// IsWrapped reports whether a command line already runs through
// `ctxkit wrap`: the command's base name is ctxkit (or ctxkit.exe) and the
// first argument is "wrap".
func IsWrapped(command string, args []string) bool {
	base := command
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(strings.ToLower(base), ".exe")
	return base == "ctxkit" && len(args) > 0 && args[0] == "wrap"
}

// StdioWrapArgs returns the arguments of ctxkit that run a stdio server:
// wrap --name NAME -- COMMAND ARGS...
func StdioWrapArgs(name, command string, args []string) []string {
	return append([]string{"wrap", "--name", name, "--", command}, args...)
}

// RemoteWrapArgs returns the arguments of ctxkit that proxy a remote server:
// wrap --name NAME --transport T URL followed by headerFlags, wrap's header
// flags as planned for the client (-H 'Name:value', --header-env Name=VAR).
func RemoteWrapArgs(name, transport, url string, headerFlags []string) []string {
	if transport == "" {
		transport = "auto"
	}
	return append([]string{"wrap", "--name", name, "--transport", transport, url}, headerFlags...)
}

// refPattern is a reference to an environment variable in ctxkit's syntax,
// ${VAR}, as wrap expands it in -H values (internal/mcpwrap's envRef: the
// same pattern, so what ctxkit writes is what wrap reads).
var refPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// wholeRef is a value that is one reference and nothing else.
var wholeRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// refs returns the variables a ctxkit-syntax value (${VAR}) references.
func refs(v string) []string {
	var out []string
	for _, m := range refPattern.FindAllStringSubmatch(v, -1) {
		out = append(out, m[1])
	}
	return out
}

// headerEnvName is the variable that carries a header's value into wrap.
func headerEnvName(header string, taken map[string]bool) string {
	var b strings.Builder
	b.WriteString("CTXKIT_HEADER_")
	for _, r := range strings.ToUpper(header) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s_%d", b.String(), i)
	}
	taken[name] = true
	return name
}

// headerPlan says how a server's headers reach wrap. No resolved secret
// is ever an argument (other local users can read a process's arguments):
// a value goes into a generated variable of the entry's env, which the
// client fills in, and wrap reads it with --header-env Name=VAR; only a
// value in ctxkit's own ${VAR} syntax that the client cannot hold in env is
// an argument, -H 'Name:value', and then the argument holds the literal
// ${VAR}, which wrap expands from its environment at run time.
type headerPlan struct {
	flags   []string // wrap's header flags: "-H", "Name:value" or "--header-env", "Name=VAR"
	env     []KV     // generated variables for the entry's env
	forward []string // variables the client must pass through (Codex env_vars)
}

// viaEnv keeps value in a generated env variable read with --header-env.
func (p *headerPlan) viaEnv(key, value string, taken map[string]bool) {
	name := headerEnvName(key, taken)
	p.env = append(p.env, KV{name, value})
	p.flags = append(p.flags, "--header-env", key+"="+name)
}

// viaRef passes a value in ctxkit's ${VAR} syntax: one whole reference is
// --header-env Name=VAR, anything else -H 'Name:value' with the references
// unexpanded (wrap expands them). forward lists the variables for clients
// that pass only the variables they are told to (Codex).
func (p *headerPlan) viaRef(key, value string, forward bool) {
	if m := wholeRef.FindStringSubmatch(value); m != nil {
		p.flags = append(p.flags, "--header-env", key+"="+m[1])
	} else {
		p.flags = append(p.flags, "-H", key+":"+value)
	}
	if forward {
		p.forward = append(p.forward, refs(value)...)
	}
}

// planHeaders plans the headers hs of a JSON client's server. fromCLI says
// the values use ctxkit's ${VAR} syntax (ctxkit add) rather than the
// client's own (ctxkit install); taken holds env names already used.
//
// Every value goes into env verbatim (install: the client's references
// stay the client's, and it resolves them in env as it did in headers) or
// translated into the client's syntax (add). Clients that interpolate
// nothing (Claude Desktop, Zed, Cline) cannot resolve a reference in env,
// so an add header with ${VAR} stays ctxkit's, for wrap to expand.
func (c *Client) planHeaders(hs []KV, fromCLI bool, taken map[string]bool) headerPlan {
	var p headerPlan
	for _, h := range hs {
		v := h.Value
		switch {
		case !fromCLI:
			p.viaEnv(h.Key, v, taken)
		case c.d.ref != nil:
			v = refPattern.ReplaceAllStringFunc(v, func(m string) string {
				return c.d.ref(refPattern.FindStringSubmatch(m)[1])
			})
			p.viaEnv(h.Key, v, taken)
		case len(refs(v)) > 0:
			p.viaRef(h.Key, v, false)
		default:
			p.viaEnv(h.Key, v, taken)
		}
	}
	return p
}

// planCodexHeaders plans a Codex server's headers. Codex expands nothing,
// neither in args nor in env: refHeaders, in ctxkit's ${VAR} syntax (from
// bearer_token_env_var, env_http_headers, or ctxkit add), go through
// viaRef with their variables forwarded (env_vars); literal values
// (http_headers, or add headers without a reference) go into the entry's
// env table and --header-env.
func planCodexHeaders(refHeaders, literal []KV, taken map[string]bool) headerPlan {
	var p headerPlan
	for _, h := range refHeaders {
		if len(refs(h.Value)) > 0 {
			p.viaRef(h.Key, h.Value, true)
		} else {
			p.viaEnv(h.Key, h.Value, taken)
		}
	}
	for _, h := range literal {
		p.viaEnv(h.Key, h.Value, taken)
	}
	p.forward = uniq(p.forward)
	return p
}

// jsonEntry is one server entry of a JSON configuration file.
type jsonEntry struct {
	name        string
	val         *hujson.Value
	server      Server
	wrapped     bool
	unsupported string // why ctxkit cannot wrap it, if it cannot
}

type jsonMember struct {
	name string
	val  *hujson.Value
}

func objectMembers(v *hujson.Value) []jsonMember {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil
	}
	out := make([]jsonMember, 0, len(obj.Members))
	for i := range obj.Members {
		m := &obj.Members[i]
		out = append(out, jsonMember{m.Name.Value.(hujson.Literal).String(), &m.Value})
	}
	return out
}

// stringKVs decodes an object of strings in order.
func stringKVs(v *hujson.Value) ([]KV, error) {
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, fmt.Errorf("not an object")
	}
	var out []KV
	for _, m := range objectMembers(v) {
		var s string
		if err := decode(m.val, &s); err != nil {
			return nil, fmt.Errorf("%q is not a string", m.name)
		}
		out = append(out, KV{m.name, s})
	}
	return out, nil
}

// readJSONEntry decodes an entry in the client's dialect.
func (c *Client) readJSONEntry(name string, v *hujson.Value) jsonEntry {
	e := jsonEntry{name: name, val: v, server: Server{Name: name}}
	fail := func(why string) jsonEntry { e.unsupported = why; return e }
	if _, ok := v.Value.(*hujson.Object); !ok {
		return fail("the entry is not an object")
	}
	ms := map[string]*hujson.Value{}
	for _, m := range objectMembers(v) {
		ms[m.name] = m.val
	}
	if env := ms[c.d.envKey]; env != nil && c.d.envKey != "" {
		kvs, err := stringKVs(env)
		if err != nil {
			return fail(c.d.envKey + ": " + err.Error())
		}
		e.server.Env = kvs
	}
	if cmd := ms["command"]; cmd != nil {
		switch cmd.Value.Kind() {
		case '"':
			e.server.Command = cmd.Value.(hujson.Literal).String()
			if a := ms["args"]; a != nil {
				if err := decode(a, &e.server.Args); err != nil {
					return fail("args is not a list of strings")
				}
			}
		case '[':
			var all []string
			if err := decode(cmd, &all); err != nil || len(all) == 0 {
				return fail("command is not a non-empty list of strings")
			}
			e.server.Command, e.server.Args = all[0], all[1:]
		case '{': // Zed's older shape: "command": {path, args, env}
			var legacy struct {
				Path string
				Args []string
			}
			if err := decode(cmd, &legacy); err != nil || legacy.Path == "" {
				return fail("command object without a path")
			}
			e.server.Command, e.server.Args = legacy.Path, legacy.Args
			for _, m := range objectMembers(cmd) {
				if m.name == "env" {
					kvs, err := stringKVs(m.val)
					if err != nil {
						return fail("command.env: " + err.Error())
					}
					e.server.Env = kvs
				}
			}
		default:
			return fail("command is not a string")
		}
		if e.server.Command == "" {
			return fail("empty command")
		}
		e.wrapped = IsWrapped(e.server.Command, e.server.Args)
		return e
	}
	for _, k := range c.d.urlKeys {
		u := ms[k]
		if u == nil {
			continue
		}
		if u.Value.Kind() != '"' {
			return fail(k + " is not a string")
		}
		e.server.URL = u.Value.(hujson.Literal).String()
		if e.server.URL == "" {
			return fail(k + " is empty")
		}
		e.server.Transport = c.d.urlTransport[k]
		for _, tk := range []string{"type", "transportType"} { // transportType: older Cline
			if t := ms[tk]; t != nil && t.Value.Kind() == '"' {
				switch strings.ToLower(t.Value.(hujson.Literal).String()) {
				case "http", "streamable-http", "streamablehttp", "streamable_http":
					e.server.Transport = "http"
				case "sse":
					e.server.Transport = "sse"
				}
			}
		}
		if h := ms["headers"]; h != nil {
			kvs, err := stringKVs(h)
			if err != nil {
				return fail("headers: " + err.Error())
			}
			e.server.Headers = kvs
		}
		return e
	}
	return fail("neither a command nor a URL ctxkit knows for " + c.Title)
}

// layout returns the entry's indentation and whether it spans lines.
func (d *jsonDoc) layout(v *hujson.Value) (indent, unit string, multiline bool) {
	indent = lineIndent(d.src, v.StartOffset)
	multiline = strings.Contains(d.raw(v), "\n")
	unit = d.indentUnit()
	if ms := objectMembers(v); len(ms) > 0 && multiline {
		name := v.Value.(*hujson.Object).Members[0].Name.StartOffset
		if onOwnLine(d.src, name) {
			if in := lineIndent(d.src, name); strings.HasPrefix(in, indent) && len(in) > len(indent) {
				unit = in[len(indent):]
			}
		}
	}
	return indent, unit, multiline
}

// wrapJSON returns the text that replaces the entry so that it runs
// through `ctxkit wrap`. Members ctxkit does not change keep their bytes.
func (c *Client) wrapJSON(d *jsonDoc, e jsonEntry, exe string) string {
	indent, unit, multi := d.layout(e.val)
	members := objectMembers(e.val)
	var out []rawMember
	s := e.server
	if !s.Remote() {
		hasArgs, cmdString := false, false
		for _, m := range members {
			if m.name == "args" {
				hasArgs = true
			}
			if m.name == "command" && m.val.Value.Kind() == '"' {
				cmdString = true
			}
		}
		wargs := StdioWrapArgs(s.Name, s.Command, s.Args)
		for _, m := range members {
			switch {
			case m.name == "command" && m.val.Value.Kind() == '[':
				out = append(out, rawMember{name: "command", raw: jsonStrings(append([]string{exe}, wargs...))})
			case m.name == "command" && m.val.Value.Kind() == '{':
				legacy := []rawMember{{name: "path", raw: jsonQuote(exe)}, {name: "args", raw: jsonStrings(wargs)}}
				for _, lm := range objectMembers(m.val) {
					if lm.name != "path" && lm.name != "args" {
						legacy = append(legacy, rawMember{name: lm.name, raw: d.raw(lm.val)})
					}
				}
				out = append(out, rawMember{name: "command", raw: renderObject(legacy, false, "", "")})
			case m.name == "command":
				out = append(out, rawMember{name: "command", raw: jsonQuote(exe)})
				if !hasArgs {
					out = append(out, rawMember{name: "args", raw: jsonStrings(wargs)})
				}
			case m.name == "args" && cmdString:
				out = append(out, rawMember{name: "args", raw: jsonStrings(wargs)})
			default:
				out = append(out, rawMember{name: m.name, raw: d.raw(m.val)})
			}
		}
		return renderObject(out, multi, indent, unit)
	}

	taken := map[string]bool{}
	for _, kv := range s.Env {
		taken[kv.Key] = true
	}
	plan := c.planHeaders(s.Headers, false, taken)
	wargs := RemoteWrapArgs(s.Name, s.Transport, s.URL, plan.flags)
	isURLKey := map[string]bool{}
	for _, k := range c.d.urlKeys {
		isURLKey[k] = true
	}
	envDone := false
	placed := false
	if c.d.sourceCustom && !hasMember(members, "source") {
		// Zed tells a command server by "source": "custom".
		out = append(out, rawMember{name: "source", raw: jsonQuote("custom")})
	}
	for _, m := range members {
		switch {
		case isURLKey[m.name] && !placed:
			placed = true
			if c.d.commandArray {
				out = append(out, rawMember{name: "command", raw: jsonStrings(append([]string{exe}, wargs...))})
			} else {
				out = append(out, rawMember{name: "command", raw: jsonQuote(exe)}, rawMember{name: "args", raw: jsonStrings(wargs)})
			}
			if len(plan.env) > 0 && !hasMember(members, c.d.envKey) {
				out = append(out, rawMember{name: c.d.envKey, raw: envObject(nil, plan.env)})
				envDone = true
			}
		case isURLKey[m.name], m.name == "headers":
			// dropped: now in the wrap arguments
		case m.name == "type":
			if c.d.stdioType != "" {
				out = append(out, rawMember{name: "type", raw: jsonQuote(c.d.stdioType)})
			}
		case m.name == "transportType":
			out = append(out, rawMember{name: m.name, raw: jsonQuote("stdio")})
		case m.name == c.d.envKey && !envDone && len(plan.env) > 0:
			var kept []rawMember
			for _, em := range objectMembers(m.val) {
				kept = append(kept, rawMember{name: em.name, raw: d.raw(em.val)})
			}
			out = append(out, rawMember{name: m.name, raw: envObject(kept, plan.env)})
			envDone = true
		default:
			out = append(out, rawMember{name: m.name, raw: d.raw(m.val)})
		}
	}
	return renderObject(out, multi, indent, unit)
}

func hasMember(ms []jsonMember, name string) bool {
	for _, m := range ms {
		if m.name == name {
			return true
		}
	}
	return false
}

// envObject renders kept members followed by generated variables, on one line.
func envObject(kept []rawMember, gen []KV) string {
	for _, kv := range gen {
		kept = append(kept, rawMember{name: kv.Key, raw: jsonQuote(kv.Value)})
	}
	return renderObject(kept, false, "", "")
}

// newJSONEntry returns the members of a new, already wrapped entry for s.
func (c *Client) newJSONEntry(s Server, exe string) []rawMember {
	var out []rawMember
	if c.d.sourceCustom {
		out = append(out, rawMember{name: "source", raw: jsonQuote("custom")})
	}
	if c.d.writeType {
		out = append(out, rawMember{name: "type", raw: jsonQuote(c.d.stdioType)})
	}
	env := append([]KV(nil), s.Env...)
	var wargs []string
	if s.Remote() {
		taken := map[string]bool{}
		for _, kv := range env {
			taken[kv.Key] = true
		}
		plan := c.planHeaders(s.Headers, true, taken)
		env = append(env, plan.env...)
		wargs = RemoteWrapArgs(s.Name, s.Transport, s.URL, plan.flags)
	} else {
		wargs = StdioWrapArgs(s.Name, s.Command, s.Args)
	}
	if c.d.commandArray {
		out = append(out, rawMember{name: "command", raw: jsonStrings(append([]string{exe}, wargs...))})
	} else {
		out = append(out, rawMember{name: "command", raw: jsonQuote(exe)}, rawMember{name: "args", raw: jsonStrings(wargs)})
	}
	if len(env) > 0 {
		out = append(out, rawMember{name: c.d.envKey, raw: envObject(nil, env)})
	}
	return out
}

// jsonEqual reports whether two JSONC texts hold the same value.
func jsonEqual(a, b string) bool {
	va, err1 := hujson.Parse([]byte(a))
	vb, err2 := hujson.Parse([]byte(b))
	if err1 != nil || err2 != nil {
		return false
	}
	va.Minimize()
	vb.Minimize()
	var x, y any
	if json.Unmarshal(va.Pack(), &x) != nil || json.Unmarshal(vb.Pack(), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
