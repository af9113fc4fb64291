package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxkit/ctxkit/internal/extract"
)

// VaultFor returns the vault called name for agent, with op checked and a
// refusal logged under action: what the HTTP API and the MCP server call
// before anything else. A restricted vault the agent is not attached to
// is ErrNotFound, exactly like a missing one.
func (r *Registry) VaultFor(ctx context.Context, agent, name string, op Op, action string) (*Vault, error) {
	v, err := r.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := v.Authorize(ctx, agent, op, action, ""); err != nil {
		return nil, err
	}
	return v, nil
}

// DocText is a document's text as extracted for indexing.
type DocText struct {
	Path string `json:"path"`
	// Title is the document's title where the format has one.
	Title string `json:"title,omitempty"`
	// Text is the extracted text: headings and paragraphs separated by
	// blank lines (Markdown headings keep their #), pages by a form feed.
	Text  string `json:"text"`
	Bytes int64  `json:"bytes"`
}

// ReadDoc returns the text of one document of a semantic vault, as agent
// (whose read access is checked).
func (v *Vault) ReadDoc(ctx context.Context, agent, path string) (*DocText, error) {
	if err := v.Authorize(ctx, agent, Read, "read", path); err != nil {
		return nil, err
	}
	if err := v.Require(Semantic); err != nil {
		return nil, err
	}
	abs, err := v.Resolve(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
		return nil, fmt.Errorf("%s in vault %q: %w", path, v.Name, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	if !extract.Supported(abs) {
		return nil, fmt.Errorf("%w: %q is not a document type the vault indexes", ErrInvalid, path)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := extract.Extract(ctx, abs, f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var b strings.Builder
	page := 0
	for _, bl := range doc.Blocks {
		if b.Len() > 0 {
			if bl.Page != page {
				b.WriteString("\n\f\n")
			} else {
				b.WriteString("\n\n")
			}
		}
		page = bl.Page
		if bl.Kind == extract.Heading {
			b.WriteString(strings.Repeat("#", max(bl.Level, 1)) + " ")
		}
		b.WriteString(bl.Text)
	}
	rel, _ := filepath.Rel(v.Dir, abs)
	return &DocText{Path: filepath.ToSlash(rel), Title: doc.Title, Text: b.String(), Bytes: fi.Size()}, nil
}
