package offload

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/ingest"
	"github.com/ctxkit/ctxkit/store"
)

// Defaults of an Engine; each has an Option to change it.
const (
	DefaultTTL            = time.Hour
	DefaultMaxResultChars = 60_000
	DefaultMaxItems       = 2_000_000
	DefaultMaxBytes       = 512 << 20
)

// Engine stores results as workspaces and serves the tools that explore them.
// It is safe for concurrent use; register producers, consumers and tools
// before the first Dispatch.
type Engine struct {
	store          store.Store
	ttl            time.Duration
	maxResultChars int
	maxItems       int
	maxBytes       int64
	now            func() time.Time
	log            *slog.Logger

	mu    sync.RWMutex
	tools map[string]*tool
	order []string // registration order, for Tools
}

// Option configures an Engine.
type Option func(*Engine)

// WithTTL sets the default lifetime of stored workspaces; 0 keeps them until
// they are dropped.
func WithTTL(d time.Duration) Option { return func(e *Engine) { e.ttl = d } }

// WithMaxResultChars caps every tool result the model receives (built-in and
// custom tools alike); a larger result becomes an error with a preview.
func WithMaxResultChars(n int) Option { return func(e *Engine) { e.maxResultChars = n } }

// WithLimits bounds one workspace: at most maxItems list items and maxBytes
// bytes of original payload.
func WithLimits(maxItems int, maxBytes int64) Option {
	return func(e *Engine) { e.maxItems, e.maxBytes = maxItems, maxBytes }
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithLogger sets where the engine logs; by default it logs nothing.
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// New returns an engine over s with the built-in exploration tools registered.
func New(s store.Store, opts ...Option) *Engine {
	e := &Engine{
		store:          s,
		ttl:            DefaultTTL,
		maxResultChars: DefaultMaxResultChars,
		maxItems:       DefaultMaxItems,
		maxBytes:       DefaultMaxBytes,
		now:            time.Now,
		log:            slog.New(slog.DiscardHandler),
		tools:          map[string]*tool{},
	}
	for _, o := range opts {
		o(e)
	}
	e.registerBuiltins()
	return e
}

// Store returns the store the engine keeps workspaces in.
func (e *Engine) Store() store.Store { return e.store }

type sessionKey struct{}

// session is what a context says about its session.
type session struct {
	id string
	// private hides the workspaces stored outside any session as well.
	private bool
}

// WithSession returns a context in which new workspaces belong to session and
// other sessions' workspaces behave exactly like missing ones. Sessions
// isolate conversations; they do not authenticate anyone.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, session{id: id})
}

// WithPrivateSession is WithSession for sessions of different users, such as
// the clients of a hosted wrapper: the workspaces stored outside any session
// (by local tools sharing the store) are hidden too, so the session sees
// only its own.
func WithPrivateSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, session{id: id, private: id != ""})
}

// SessionFrom returns the session carried by ctx, or "" outside any session.
func SessionFrom(ctx context.Context) string {
	s, _ := ctx.Value(sessionKey{}).(session)
	return s.id
}

func sessionOf(ctx context.Context) session {
	s, _ := ctx.Value(sessionKey{}).(session)
	return s
}

// visible reports whether the session in ctx may see ws: its own workspaces
// and, unless the session is private, shared ones.
func visible(ctx context.Context, ws *store.Workspace) bool {
	s := sessionOf(ctx)
	return ws.Session == s.id || (ws.Session == "" && !s.private)
}

// PutOptions describes a result being stored.
type PutOptions struct {
	// Type is the logical data type; it prefixes generated ids. Defaults to
	// Producer, then "result".
	Type string
	// Producer names what made the result (usually a tool) and Args its
	// arguments, so that an expiry can say what to re-run.
	Producer string
	Args     json.RawMessage
	// ID, when set, is a deterministic id: storing again replaces the same
	// workspace, but never one of another producer or type. Within a session
	// a session-derived suffix is added.
	ID string
	// TTL overrides the engine's default lifetime; negative means never expire.
	TTL time.Duration
	// Meta is free metadata kept with the workspace.
	Meta map[string]any
	// Owned hands the data over to the engine: the caller will neither read
	// nor change it again, so a large text is kept without being copied.
	Owned bool
}

// Put stores a result (JSON or text, as raw bytes) as a workspace and returns
// the notice the model sees instead of the result.
func (e *Engine) Put(ctx context.Context, data []byte, opts PutOptions) (*Notice, error) {
	ws, err := e.put(ctx, data, opts)
	if err != nil {
		return nil, err
	}
	return e.notice(ctx, ws)
}

// PutValue is Put for a Go value, which is stored as its JSON encoding.
func (e *Engine) PutValue(ctx context.Context, v any, opts PutOptions) (*Notice, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return e.Put(ctx, data, opts)
}

func (e *Engine) put(ctx context.Context, data []byte, opts PutOptions) (*store.Workspace, error) {
	if int64(len(data)) > e.maxBytes {
		return nil, tooLarge(fmt.Sprintf("the result has %d bytes; the limit is %d", len(data), e.maxBytes))
	}
	parsed, err := ingest.ParseOptions{MaxItems: e.maxItems, MaxBytes: e.maxBytes, Owned: opts.Owned}.Parse(data)
	if errors.Is(err, ingest.ErrTooLarge) {
		return nil, tooLarge(err.Error())
	}
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	typ := opts.Type
	if typ == "" {
		typ = opts.Producer
	}
	typ = sanitizeID(typ)
	if typ == "" {
		typ = "result"
	}
	session := SessionFrom(ctx)
	id := opts.ID
	if id == "" {
		id = typ + "_" + randomHex(6)
	} else {
		id = sanitizeID(id)
		if session != "" {
			id += "_" + sessionSuffix(session)
		}
	}
	ttl := opts.TTL
	if ttl == 0 {
		ttl = e.ttl
	}
	now := e.now().UTC()
	ws := &store.Workspace{
		ID:         id,
		Type:       typ,
		Shape:      parsed.Shape,
		Format:     parsed.Format,
		Items:      parsed.Items,
		Chars:      parsed.Chars,
		Tokens:     parsed.Tokens,
		Schema:     parsed.Schema,
		Producer:   opts.Producer,
		Args:       opts.Args,
		Meta:       opts.Meta,
		Session:    session,
		CreatedAt:  now,
		AccessedAt: now,
	}
	if ttl > 0 {
		ws.TTL = ttl
		ws.ExpiresAt = now.Add(ttl)
	}
	if err := e.store.Put(ctx, ws, parsed.Content); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, &ToolError{
				Code:            CodeConflict,
				Message:         fmt.Sprintf("workspace %q already holds a result of another producer or type", id),
				SuggestedAction: "store the result under another key, or drop the existing workspace first",
				err:             err,
			}
		}
		return nil, fmt.Errorf("store workspace %q: %w", id, err)
	}
	e.log.Debug("stored workspace", "id", id, "shape", ws.Shape, "chars", ws.Chars)
	return ws, nil
}

func tooLarge(msg string) *ToolError {
	return &ToolError{
		Code:            CodeTooLarge,
		Message:         msg,
		SuggestedAction: "request less data (a narrower query, fewer fields or a smaller page) and try again",
		err:             ErrTooLarge,
	}
}

// Workspace returns the metadata of a workspace visible in ctx's session. A
// missing, foreign-session or expired workspace gives a *ToolError.
func (e *Engine) Workspace(ctx context.Context, id string) (*store.Workspace, error) {
	ws, err := e.store.Stat(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(ctx, ws)) {
		return nil, e.notFound(ctx, id)
	}
	if err != nil {
		return nil, fmt.Errorf("open workspace %q: %w", id, err)
	}
	now := e.now()
	if ws.Expired(now) {
		if err := e.store.Delete(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			e.log.Warn("drop expired workspace", "id", id, "err", err)
		}
		te := &ToolError{
			Code:            CodeExpired,
			Message:         fmt.Sprintf("workspace %q expired at %s", id, ws.ExpiresAt.UTC().Format(time.RFC3339)),
			SuggestedAction: "re-run the tool that produced it to get a fresh workspace",
			err:             ErrExpired,
		}
		if ws.Producer != "" {
			te.Rerun = &Rerun{Tool: ws.Producer, Arguments: ws.Args}
			te.SuggestedAction = fmt.Sprintf("call %s again with the same arguments to get a fresh workspace", ws.Producer)
		}
		return nil, te
	}
	// An access time a minute old is fresh enough, and skipping the write
	// keeps reads from contending for the store's single writer.
	if now.Sub(ws.AccessedAt) > time.Minute {
		if err := e.store.Touch(ctx, id, now.UTC()); err != nil && !errors.Is(err, store.ErrNotFound) {
			e.log.Warn("touch workspace", "id", id, "err", err)
		}
	}
	return ws, nil
}

// Raw returns a workspace visible in ctx's session and its original bytes,
// with the checks of Workspace (missing, foreign-session and expired
// workspaces are *ToolErrors).
func (e *Engine) Raw(ctx context.Context, id string) (*store.Workspace, []byte, error) {
	ws, err := e.Workspace(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	raw, err := e.store.Raw(ctx, ws.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("read stored result %s: %w", ws.ID, err)
	}
	return ws, raw, nil
}

func (e *Engine) notFound(ctx context.Context, id string) *ToolError {
	te := &ToolError{
		Code:            CodeNotFound,
		Message:         fmt.Sprintf("no workspace %q", id),
		SuggestedAction: "use one of available_workspaces, or call result_list to see them",
		err:             store.ErrNotFound,
	}
	if list, err := e.List(ctx); err == nil {
		for i, ws := range list {
			if i == 20 {
				break
			}
			te.AvailableWorkspaces = append(te.AvailableWorkspaces, ws.ID)
		}
		if len(list) == 0 {
			te.SuggestedAction = "there are no stored results; call the producing tool first"
		}
	}
	return te
}

// List returns the unexpired workspaces visible in ctx's session, newest first.
func (e *Engine) List(ctx context.Context) ([]*store.Workspace, error) {
	var opts store.ListOptions
	if s := sessionOf(ctx); !s.private {
		opts.Sessions = []string{""}
	}
	if s := SessionFrom(ctx); s != "" {
		opts.Sessions = append(opts.Sessions, s)
	}
	all, err := e.store.List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	now := e.now()
	out := all[:0]
	for _, ws := range all {
		if !ws.Expired(now) {
			out = append(out, ws)
		}
	}
	return out, nil
}

// Drop deletes a workspace visible in ctx's session.
func (e *Engine) Drop(ctx context.Context, id string) error {
	if _, err := e.Workspace(ctx, id); err != nil {
		return err
	}
	if err := e.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("drop workspace %q: %w", id, err)
	}
	return nil
}

// Sweep deletes every expired workspace, in all sessions, and returns their ids.
func (e *Engine) Sweep(ctx context.Context) ([]string, error) {
	ids, err := e.store.DeleteExpired(ctx, e.now())
	if err != nil {
		return nil, fmt.Errorf("sweep expired workspaces: %w", err)
	}
	sort.Strings(ids)
	return ids, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

func sessionSuffix(session string) string {
	sum := sha256.Sum256([]byte(session))
	return hex.EncodeToString(sum[:4])
}

var unsafeIDChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// sanitizeID keeps ids safe to print, to use in URIs and file names: letters,
// digits, '_', '.' and '-', at most 128 characters.
func sanitizeID(s string) string {
	s = strings.Trim(unsafeIDChars.ReplaceAllString(s, "_"), "_.")
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}
