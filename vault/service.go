package vault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/editdist"
	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/embed"
)

// Options configure a Service.
type Options struct {
	// Home is ctxkit's data directory ($CTXKIT_HOME): builtin models, the
	// owner's token, and the default folder of global vaults. It is
	// protected: no path inside it is ever a document of a vault.
	Home string
	// Root is the project root: the default folder of local vaults is
	// Root/.ctxkit/vaults/NAME. "" when there is no project.
	Root string
	// KeepSearchers keeps each semantic vault's Searcher (lexicon and
	// vectors in memory) between queries, reloaded when its index
	// changes: for servers. A one-shot process asks the index instead.
	KeepSearchers bool
	// Embedders makes the embedder of a spec; nil is embed.New with the
	// builtin models under Home.
	Embedders func(spec string) (embed.Embedder, error)
	// Logger receives what the service reports on its own (an audit line
	// that could not be written); nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Service is the vaults' one API. It is safe for concurrent use; several
// processes may share its backend.
type Service struct {
	b         store.Backend
	reg       store.Registry
	home      string
	root      string
	protected string // realPath of home
	log       *slog.Logger
	now       func() time.Time

	newEmbedder func(spec string) (embed.Embedder, error)
	embedMu     sync.Mutex
	embedders   map[string]embedderResult

	keepSearchers bool
	searchMu      sync.Mutex
	searchers     map[string]*pooledSearcher // by vault id

	refusals refusalLog
}

type embedderResult struct {
	e   embed.Embedder
	err error
}

// New returns the service over backend b.
func New(b store.Backend, o Options) (*Service, error) {
	if o.Home == "" {
		return nil, errors.New("vault: Options.Home is required")
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", o.Home, err)
	}
	root := o.Root
	if root != "" {
		if root, err = filepath.Abs(root); err != nil {
			return nil, fmt.Errorf("project root %s: %w", o.Root, err)
		}
	}
	s := &Service{b: b, reg: b.Registry(), home: home, root: root, log: o.Logger, now: o.Now,
		embedders: map[string]embedderResult{}, keepSearchers: o.KeepSearchers, searchers: map[string]*pooledSearcher{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.protected = realPath(home)
	s.newEmbedder = o.Embedders
	if s.newEmbedder == nil {
		s.newEmbedder = func(spec string) (embed.Embedder, error) {
			return embed.New(spec, embed.Options{ModelsDir: s.ModelsDir()})
		}
	}
	return s, nil
}

// ModelsDir is where builtin embedding models are installed:
// $CTXKIT_HOME/models.
func (s *Service) ModelsDir() string { return filepath.Join(s.home, "models") }

// Hosted reports whether new vaults keep their documents in the backend
// rather than in a folder (see [store.Backend.Hosted]): such vaults are
// global and have no path.
func (s *Service) Hosted() bool { return s.b.Hosted() }

// files returns v's document files: its folder's, or the backend's.
func (s *Service) files(ctx context.Context, v *Vault) (store.Files, error) {
	f, err := s.b.Files(ctx, v.rec)
	if err != nil {
		return nil, fmt.Errorf("the files of vault %q: %w", v.Name, err)
	}
	return f, nil
}

// vaults returns every recorded vault, with shadowed global vaults marked.
func (s *Service) vaults(ctx context.Context) ([]*Vault, error) {
	recs, err := s.reg.Vaults(ctx)
	if err != nil {
		return nil, err
	}
	local := map[string]bool{}
	out := make([]*Vault, 0, len(recs))
	for _, r := range recs {
		v := fromRecord(r)
		if v.Scope == Local {
			local[v.Name] = true
		}
		out = append(out, v)
	}
	for _, v := range out {
		v.Shadowed = v.Scope == Global && local[v.Name]
	}
	return out, nil
}

// lookup returns the vault called name (local before global), without
// checking access; c is who asks, for the suggestions of a name not found.
func (s *Service) lookup(ctx context.Context, c Caller, name string) (*Vault, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	all, err := s.vaults(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range all {
		if v.Name != name || v.Shadowed {
			continue
		}
		if v.Scope == Local && v.Dir != "" && !s.inProject(v.Dir) {
			// A project's config is checked in with the project: it must
			// not lead ctxkit to folders outside it. (A hosted vault has
			// no folder: a local one was copied from a project's store by
			// `ctxkit store copy` and keeps its scope for the way back.)
			return nil, &Error{Kind: ErrInvalid, Field: "vault",
				Msg: fmt.Sprintf("vault %q is recorded in the project's .ctxkit/config.json with a folder outside the project, which ctxkit does not follow", name),
				Fix: "remove it from the project's config, and create it as a global vault if it is yours"}
		}
		return v, nil
	}
	return nil, noVault(c, name, all)
}

// inProject reports whether dir, as recorded (a link inside the project
// is the owner's to make), lies in the project root or is it.
func (s *Service) inProject(dir string) bool {
	return s.root != "" && within(s.root, filepath.Clean(dir))
}

// noVault is the answer for a vault that does not exist, or that c may not
// see: the same either way. Its Fix suggests the names nearest name among
// the vaults in all that c may see, never one it may not.
func noVault(c Caller, name string, all []*Vault) *Error {
	fix := "list the vaults to see the ones you can use"
	var visible []string
	for _, v := range all {
		if !v.Shadowed && v.Name != name && v.allowed(c, Read) == nil {
			visible = append(visible, v.Name)
		}
	}
	// Half the name may be wrong, up to two characters: beyond
	// that a suggestion is a guess.
	if near := editdist.Nearest(name, visible, min(2, len(name)/2)); len(near) > 0 {
		fix = fmt.Sprintf("did you mean %s? Or %s", quotedOr(near[:min(len(near), 3)]), fix)
	}
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("no vault named %q", name), Field: "vault", Fix: fix}
}

// open returns the vault called name for c with op checked (a refusal is
// audited under action, with at, the document, skill or episode the
// operation names) and its type among types (none: any type). A
// restricted vault c is not attached to is ErrNotFound, exactly like a
// missing one, with ErrRestricted beside it.
func (s *Service) open(ctx context.Context, c Caller, name string, op Op, action, at string, types ...Type) (*Vault, error) {
	v, err := s.lookup(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, c, v, op, action, at); err != nil {
		return nil, err
	}
	if len(types) > 0 {
		if err := v.require(types...); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// authorize checks c's access to v for op; a refusal is logged in v's
// audit log (coalesced) and answered as the ACL says. A restricted vault
// c cannot see answers exactly as a missing one.
func (s *Service) authorize(ctx context.Context, c Caller, v *Vault, op Op, action, path string) error {
	err := v.allowed(c, op)
	if err == nil {
		return nil
	}
	reason := "not attached"
	switch {
	case c.name == "":
		reason = "no agent identity"
	case errors.Is(err, ErrForbidden):
		reason = "read-only grant"
	}
	s.refuse(ctx, v, c, action, path, reason)
	if errors.Is(err, ErrNotFound) {
		// The same answer as for a missing vault, suggestions included.
		all, lerr := s.vaults(ctx)
		if lerr != nil {
			s.log.Warn("vault: list the vaults to suggest names", "err", lerr)
		}
		e := noVault(c, v.Name, all)
		if errors.Is(err, ErrRestricted) {
			e.Kind = errNotAttached
		}
		return e
	}
	return err
}

// ownerOnly refuses an administrative operation to an agent: ErrNotFound
// for a vault it cannot see (so the operation leaks nothing), ErrForbidden
// otherwise. v may be nil for operations on no vault.
func (s *Service) ownerOnly(ctx context.Context, c Caller, v *Vault, action string) error {
	if c.IsOwner() {
		return nil
	}
	if v != nil {
		if err := s.authorize(ctx, c, v, Read, action, ""); err != nil {
			return err
		}
		s.refuse(ctx, v, c, action, "", "owner only")
	}
	return &Error{Kind: ErrForbidden, Msg: action + " is for the vaults' owner only",
		Fix: "ask the owner, or use the owner's token"}
}

// audit logs a change made by c on v. The change is made: a log line that
// cannot be written must not undo it, so the failure is reported to the
// service's logger.
func (s *Service) audit(ctx context.Context, v *Vault, c Caller, action, path, detail string) {
	s.appendAudit(ctx, v, store.AuditEvent{Time: s.now().UTC(), Agent: c.String(), Action: action, Path: path, Outcome: "ok", Detail: c.withAssertion(detail)})
}

// appendAudit writes e to v's audit log, or reports to the logger that it
// could not.
func (s *Service) appendAudit(ctx context.Context, v *Vault, e store.AuditEvent) {
	if err := s.reg.AppendAudit(context.WithoutCancel(ctx), v.ID, e); err != nil {
		s.log.Warn("vault: audit log", "vault", v.Name, "action", e.Action, "err", err)
	}
}

// quotedOr lists names, quoted, as alternatives: "a", "b" or "c".
func quotedOr(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return english.Or(q)
}
