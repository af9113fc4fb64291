//lint:file-ignore SA1019 skipped features are reported to the client's log, a deprecated but still used feature

package mcpwrap

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"strings"

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
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return f()
}

// feature is one listed upstream feature: its key (name or URI) and how to
// register it downstream.
type feature struct {
	key string
	add func() error
}

// syncFeatures registers every listed feature of one kind and removes those
// the upstream no longer lists. A listing that fails part way changes
// nothing: a transient error must not take features away.
func (p *Proxy) syncFeatures(kind string, listed iter.Seq2[feature, error], have *map[string]bool, remove func(...string)) {
	var features []feature
	for f, err := range listed {
		if err != nil {
			p.log.Warn("list the upstream's "+kind, "err", err)
			return
		}
		features = append(features, f)
	}
	seen := map[string]bool{}
	for _, f := range features {
		if err := safely(f.add); err != nil {
			p.skip(kind, f.key, err)
			continue
		}
		seen[f.key] = true
	}
	p.mu.Lock()
	gone := missing(*have, seen)
	*have = seen
	p.mu.Unlock()
	if len(gone) > 0 {
		remove(gone...)
	}
}

// listing adapts an SDK listing iterator to features.
func listing[T any](items iter.Seq2[T, error], toFeature func(T) feature) iter.Seq2[feature, error] {
	return func(yield func(feature, error) bool) {
		for item, err := range items {
			var f feature
			if err == nil {
				f = toFeature(item)
			}
			if !yield(f, err) || err != nil {
				return
			}
		}
	}
}

// maxSkipNotes bounds how many skipped features the instructions name.
const maxSkipNotes = 10

// skip reports an upstream feature the wrapper does not serve: in its log,
// to the client's log, and in the instructions of later sessions.
func (p *Proxy) skip(kind, key string, err error) {
	p.log.Warn("upstream feature skipped", "kind", kind, "key", key, "err", err)
	note := fmt.Sprintf("%s %q (%v)", strings.TrimSuffix(kind, "s"), key, err)
	p.mu.Lock()
	if len(p.skipped) < maxSkipNotes {
		p.skipped = append(p.skipped, note)
	}
	p.mu.Unlock()
	if p.server == nil {
		return
	}
	for ss := range p.server.Sessions() {
		_ = ss.Log(p.link.life, &mcp.LoggingMessageParams{Level: "warning", Logger: "ctxkit", Data: "ctxkit does not serve the upstream's " + note})
	}
}

// skippedNote is the instructions' line about skipped features.
func (p *Proxy) skippedNote() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.skipped) == 0 {
		return ""
	}
	return "ctxkit does not serve these features of the upstream, which it could not accept: " + strings.Join(p.skipped, "; ") + "."
}

func (p *Proxy) syncTools(ctx context.Context, cs *mcp.ClientSession) {
	p.syncFeatures("tools", listing(cs.Tools(ctx, nil), func(t *mcp.Tool) feature {
		name := "?"
		if t != nil {
			name = t.Name
		}
		return feature{key: name, add: func() error {
			if err := checkTool(t); err != nil {
				return err
			}
			if p.adapter.IsExplorationTool(t.Name) {
				return fmt.Errorf("hidden by ctxkit's exploration tool of the same name")
			}
			p.server.AddTool(p.adapter.Announce(t), p.callTool)
			return nil
		}}
	}), &p.tools, p.server.RemoveTools)
}

func (p *Proxy) syncPrompts(ctx context.Context, cs *mcp.ClientSession) {
	p.syncFeatures("prompts", listing(cs.Prompts(ctx, nil), func(pr *mcp.Prompt) feature {
		if pr == nil || pr.Name == "" {
			return feature{key: "?", add: func() error { return fmt.Errorf("a prompt without a name") }}
		}
		return feature{key: pr.Name, add: func() error { p.server.AddPrompt(pr, p.getPrompt); return nil }}
	}), &p.prompts, p.server.RemovePrompts)
}

func (p *Proxy) syncResources(ctx context.Context, cs *mcp.ClientSession) {
	p.syncFeatures("resources", listing(cs.Resources(ctx, nil), func(r *mcp.Resource) feature {
		if r == nil || r.URI == "" {
			return feature{key: "?", add: func() error { return fmt.Errorf("a resource without a URI") }}
		}
		return feature{key: r.URI, add: func() error { p.server.AddResource(r, p.readResource); return nil }}
	}), &p.resources, p.server.RemoveResources)
	p.syncFeatures("resource templates", listing(cs.ResourceTemplates(ctx, nil), func(t *mcp.ResourceTemplate) feature {
		if t == nil || t.URITemplate == "" {
			return feature{key: "?", add: func() error { return fmt.Errorf("a template without a URI template") }}
		}
		return feature{key: t.URITemplate, add: func() error { p.server.AddResourceTemplate(t, p.readResource); return nil }}
	}), &p.templates, p.server.RemoveResourceTemplates)
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
