package mcpwrap

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listTimeout bounds one re-listing of the upstream's features.
const listTimeout = handshakeTimeout

// mirror registers everything the upstream offers on the downstream server.
func (p *Proxy) mirror(cs *mcp.ClientSession) {
	if p.server == nil {
		return
	}
	caps := &mcp.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	ctx, cancel := context.WithTimeout(p.link.life, listTimeout)
	defer cancel()
	if caps.Tools != nil {
		p.syncTools(ctx, cs)
	}
	if caps.Prompts != nil {
		p.syncPrompts(ctx, cs)
	}
	if caps.Resources != nil {
		p.syncResources(ctx, cs)
	}
}

// resyncLater re-lists one kind of feature in the background: notification
// handlers run on the connection's only reader, so listing there would
// block every other message. Changes that arrive during a re-listing cause
// one more, not one each.
func (p *Proxy) resyncLater(kind string) {
	p.mu.Lock()
	if r := p.resyncing[kind]; r != nil {
		r.again = true
		p.mu.Unlock()
		return
	}
	r := &resync{}
	p.resyncing[kind] = r
	p.mu.Unlock()
	go func() {
		for {
			if cs, _ := p.link.status(); cs != nil && p.server != nil {
				ctx, cancel := context.WithTimeout(p.link.life, listTimeout)
				switch kind {
				case "tools":
					p.syncTools(ctx, cs)
				case "prompts":
					p.syncPrompts(ctx, cs)
				case "resources":
					p.syncResources(ctx, cs)
				}
				cancel()
			}
			p.mu.Lock()
			if !r.again {
				delete(p.resyncing, kind)
				p.mu.Unlock()
				return
			}
			r.again = false
			p.mu.Unlock()
		}
	}()
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// checkTool says why the downstream server could not serve t, if it could
// not: the SDK panics on such tools, and upstream data is untrusted.
func checkTool(t *mcp.Tool) error {
	if t == nil {
		return fmt.Errorf("empty tool")
	}
	if !toolName.MatchString(t.Name) {
		return fmt.Errorf("invalid tool name %q", t.Name)
	}
	var schema map[string]any
	raw, err := json.Marshal(t.InputSchema)
	if err == nil {
		err = json.Unmarshal(raw, &schema)
	}
	if err != nil || schema == nil {
		return fmt.Errorf("tool %q: the input schema is not a JSON object", t.Name)
	}
	if schema["type"] != "object" {
		return fmt.Errorf("tool %q: the input schema's type is %v, not \"object\"", t.Name, schema["type"])
	}
	return nil
}

// safely runs an SDK registration and turns its panic into an error.
func safely(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

func (p *Proxy) syncTools(ctx context.Context, cs *mcp.ClientSession) {
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			p.log.Warn("list the upstream's tools", "err", err)
			return
		}
		if p.adapter.IsExplorationTool(t.Name) {
			p.log.Warn("upstream tool hidden by ctxkit's exploration tool of the same name", "tool", t.Name)
			continue
		}
		if err := checkTool(t); err != nil {
			p.log.Warn("upstream tool skipped", "err", err)
			continue
		}
		announced := p.adapter.Announce(t)
		if err := safely(func() { p.server.AddTool(announced, p.callTool) }); err != nil {
			p.log.Warn("upstream tool skipped", "tool", t.Name, "err", err)
			continue
		}
		seen[t.Name] = true
	}
	p.mu.Lock()
	var gone []string
	for name := range p.tools {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	p.tools = seen
	p.mu.Unlock()
	if len(gone) > 0 {
		p.server.RemoveTools(gone...)
	}
}

func (p *Proxy) syncPrompts(ctx context.Context, cs *mcp.ClientSession) {
	seen := map[string]bool{}
	for pr, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			p.log.Warn("list the upstream's prompts", "err", err)
			return
		}
		if pr == nil || pr.Name == "" {
			continue
		}
		if err := safely(func() { p.server.AddPrompt(pr, p.getPrompt) }); err != nil {
			p.log.Warn("upstream prompt skipped", "prompt", pr.Name, "err", err)
			continue
		}
		seen[pr.Name] = true
	}
	p.mu.Lock()
	gone := missing(p.prompts, seen)
	p.prompts = seen
	p.mu.Unlock()
	if len(gone) > 0 {
		p.server.RemovePrompts(gone...)
	}
}

func (p *Proxy) syncResources(ctx context.Context, cs *mcp.ClientSession) {
	seen := map[string]bool{}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			p.log.Warn("list the upstream's resources", "err", err)
			break
		}
		if r == nil || r.URI == "" {
			continue
		}
		if err := safely(func() { p.server.AddResource(r, p.readResource) }); err != nil {
			p.log.Warn("upstream resource skipped", "uri", r.URI, "err", err)
			continue
		}
		seen[r.URI] = true
	}
	seenTemplates := map[string]bool{}
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			p.log.Warn("list the upstream's resource templates", "err", err)
			break
		}
		if t == nil || t.URITemplate == "" {
			continue
		}
		if err := safely(func() { p.server.AddResourceTemplate(t, p.readResource) }); err != nil {
			p.log.Warn("upstream resource template skipped", "template", t.URITemplate, "err", err)
			continue
		}
		seenTemplates[t.URITemplate] = true
	}
	p.mu.Lock()
	gone, goneTemplates := missing(p.resources, seen), missing(p.templates, seenTemplates)
	p.resources, p.templates = seen, seenTemplates
	p.mu.Unlock()
	if len(gone) > 0 {
		p.server.RemoveResources(gone...)
	}
	if len(goneTemplates) > 0 {
		p.server.RemoveResourceTemplates(goneTemplates...)
	}
}

// missing returns the keys of before that are not in after.
func missing(before, after map[string]bool) []string {
	var out []string
	for k := range before {
		if !after[k] {
			out = append(out, k)
		}
	}
	return out
}
