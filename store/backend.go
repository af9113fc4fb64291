package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	neturl "net/url"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/index"
)

// Backend is one storage engine holding everything ctxkit keeps: the
// offload workspaces, a small key-value store, the vault registry, and per
// vault its document index and its episodes. A backend is opened by URL
// ([Open]); every part of ctxkit takes the stores it needs from it, so that
// adding an engine means adding one backend, and the same conformance suites
// (package storetest) hold every backend to the same contract.
//
// A Backend and the stores it hands out are safe for concurrent use. The
// stores belong to the backend: Close them through [Backend.Close] only
// (their own Close methods release nothing).
type Backend interface {
	// Workspaces returns the offload workspaces.
	Workspaces() Store
	// KV returns the key-value store.
	KV() KV
	// Registry returns the vault registry: vaults, agents, grants,
	// embedder pins, document metadata and audit logs.
	Registry() Registry
	// Index returns the document index of the vault with id vaultID, as
	// the registry records it (ErrNotFound when it records no such vault).
	Index(ctx context.Context, vaultID string) (index.Index, error)
	// Episodes returns the episode store of the vault with id vaultID
	// (ErrNotFound when the registry records no such vault).
	Episodes(ctx context.Context, vaultID string) (episodic.Store, error)
	// DropVault deletes what the backend holds for a vault (its index,
	// episodes, metadata, pin and audit log, and the files of a hosted
	// vault), given its last record;
	// handles of it handed out before fail from then on. It is called
	// when a vault is deleted for good (purged), after the registry
	// forgot it.
	DropVault(ctx context.Context, v VaultRecord) error
	// Hosted reports whether new vaults keep their documents in the backend (rows of its database) rather than in a folder on this machine: a store several machines share has no folder they all see.
	Hosted() bool
	// Files returns the document files of a vault, given its record: its folder when it has one (Dir set), else what the backend hosts.
	Files(ctx context.Context, v VaultRecord) (Files, error)
	// Close releases everything the backend holds.
	Close() error
}

// Options are what every backend may need besides its URL.
type Options struct {
	// Home is ctxkit's data directory ($CTXKIT_HOME): the default place of
	// a backend's files and of global vaults.
	Home string
	// Root is the project root whose .ctxkit/config.json records local
	// vaults (backends that keep the registry in files read it there).
	Root string
	// Background lets the backend run work after a call returns (building
	// a search index); short-lived processes (a CLI command) leave it off
	// so that Close does not wait for work they would abandon anyway.
	Background bool
}

// Opener opens a backend from the part of its URL after the scheme and
// the colon ("memory:" gives "", "sqlite:/var/x.db" gives "/var/x.db",
// "postgres://h/db" gives "//h/db").
type Opener func(ctx context.Context, rest string, opts Options) (Backend, error)

// ErrUnknownScheme is returned by [Schemes.Open] for a URL whose scheme no
// backend has.
var ErrUnknownScheme = errors.New("unknown store scheme")

// Schemes maps URL schemes to the backends that open them, as restic's
// location registry does: the program that wires ctxkit together (the CLI)
// lists the backends it was built with, and nothing registers itself behind
// its back.
type Schemes map[string]Opener

// Open opens the backend a URL names: "SCHEME:REST" for a scheme of s, or
// a bare file path (no scheme, or a one-letter Windows drive), which is
// "sqlite:PATH".
func (s Schemes) Open(ctx context.Context, url string, opts Options) (Backend, error) {
	if err := s.Check(url); err != nil {
		return nil, err
	}
	scheme, rest := SplitURL(url)
	b, err := s[scheme](ctx, rest, opts)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", Redact(url), err)
	}
	return b, nil
}

// Check refuses a URL of a scheme s does not know (ErrUnknownScheme),
// without opening anything.
func (s Schemes) Check(url string) error {
	if scheme, _ := SplitURL(url); s[scheme] == nil {
		return fmt.Errorf("%w %q in %q (known: %s)", ErrUnknownScheme, scheme, Redact(url), strings.Join(slices.Sorted(maps.Keys(s)), ", "))
	}
	return nil
}

// SplitURL splits a store URL into its scheme and the rest. A string
// without a scheme, or with a one-letter one (a Windows drive letter), is
// a SQLite file path.
func SplitURL(url string) (scheme, rest string) {
	i := strings.IndexByte(url, ':')
	if i < 2 || strings.ContainsAny(url[:i], `/\.`) {
		return "sqlite", url
	}
	return strings.ToLower(url[:i]), url[i+1:]
}

// Redact returns url with its password masked, for messages and logs:
// the password of its user info ("postgres://u:secret@h/db" becomes
// "postgres://u:***@h/db") and a password query parameter. A URL with a
// scheme that does not parse is masked whole after the scheme, since it
// might hold a password in a form not understood here.
func Redact(raw string) string {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	u, err := neturl.Parse(raw)
	if err != nil {
		return scheme + "://***"
	}
	if _, has := u.User.Password(); has {
		u.User = neturl.UserPassword(u.User.Username(), "***")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "***")
		u.RawQuery = q.Encode()
	}
	return strings.Replace(u.String(), "%2A%2A%2A", "***", -1)
}
