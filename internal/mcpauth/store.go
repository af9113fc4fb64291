package mcpauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// record is the content of one token file: everything a later process needs
// to use and refresh the tokens of one upstream without discovering or
// registering again. It holds secrets, so it lives in a 0600 file.
type record struct {
	// ServerURL is the MCP endpoint the record is for; it guards against a
	// file that belongs to another URL.
	ServerURL string `json:"server_url"`
	// Issuer is the authorization server that issued the token.
	Issuer string `json:"issuer,omitempty"`
	// Client is the client registered (RFC 7591) at Issuer.
	Client *clientRecord `json:"client,omitempty"`
	// AuthURL, TokenURL and AuthStyle are the endpoints the token came from;
	// TokenURL is where it is refreshed.
	AuthURL   string           `json:"authorization_endpoint,omitempty"`
	TokenURL  string           `json:"token_endpoint,omitempty"`
	AuthStyle oauth2.AuthStyle `json:"auth_style,omitempty"`
	// Scopes were requested with the token.
	Scopes []string `json:"scopes,omitempty"`
	// Token is the current access and refresh token, nil when there is none.
	Token *oauth2.Token `json:"token,omitempty"`
}

// clientRecord is one dynamically registered client.
type clientRecord struct {
	ClientID        string    `json:"client_id"`
	ClientSecret    string    `json:"client_secret,omitempty"`
	SecretExpiresAt time.Time `json:"client_secret_expires_at,omitzero"`
	RedirectURI     string    `json:"redirect_uri"`
	Issuer          string    `json:"issuer"`
}

// usable reports whether the client can still be used with the
// authorization server issuer at time now.
func (c *clientRecord) usable(issuer string, now time.Time) bool {
	if c == nil || c.ClientID == "" || c.RedirectURI == "" || !sameIssuer(c.Issuer, issuer) {
		return false
	}
	return c.SecretExpiresAt.IsZero() || c.SecretExpiresAt.After(now)
}

// refreshable reports whether the record holds what a refresh needs.
func (r *record) refreshable() bool {
	return r.Token != nil && r.Token.RefreshToken != "" && r.Client != nil && r.TokenURL != ""
}

// oauthConfig rebuilds the oauth2 configuration the token was obtained with.
func (r *record) oauthConfig() *oauth2.Config {
	c := &oauth2.Config{
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: r.AuthStyle},
		Scopes:   r.Scopes,
	}
	if r.Client != nil {
		c.ClientID = r.Client.ClientID
		c.ClientSecret = r.Client.ClientSecret
		c.RedirectURL = r.Client.RedirectURI
	}
	return c
}

// fileStore keeps the record of one server URL in TokenDir/<hash>.json.
// Reads and read-modify-write cycles are serialised within the process;
// writes replace the file atomically, so another process reads either the old
// or the new record, never a torn one.
type fileStore struct {
	dir       string
	path      string
	serverURL string

	mu sync.Mutex
}

// newFileStore returns the store for serverURL under dir, creating dir with
// mode 0700 (and narrowing a looser existing mode).
func newFileStore(dir, serverURL string) (*fileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create token directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("stat token directory %s: %w", dir, err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("restrict token directory %s to 0700: %w", dir, err)
		}
	}
	return &fileStore{dir: dir, path: filepath.Join(dir, TokenFileName(serverURL)), serverURL: serverURL}, nil
}

// TokenFileName is the name of the file, inside Config.TokenDir, that holds
// the registration and tokens for serverURL: a hash of the URL, so the name
// reveals nothing and needs no escaping.
func TokenFileName(serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// load returns the stored record; a missing file is an empty record.
func (s *fileStore) load() (record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadLocked()
}

func (s *fileStore) loadLocked() (record, error) {
	empty := record{ServerURL: s.serverURL}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, fmt.Errorf("read token file %s: %w", s.path, err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return empty, fmt.Errorf("decode token file %s: %w", s.path, err)
	}
	if r.ServerURL != s.serverURL {
		return empty, fmt.Errorf("token file %s belongs to another server", s.path)
	}
	return r, nil
}

// update applies fn to the stored record and writes the result. A file that
// cannot be read or decoded is replaced: it held nothing usable.
func (s *fileStore) update(fn func(*record)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, _ := s.loadLocked()
	fn(&r)
	data, err := json.MarshalIndent(&r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode token file: %w", err)
	}
	return writeFileAtomic(s.dir, s.path, append(data, '\n'))
}

// writeFileAtomic writes data to a new 0600 file in dir and renames it over
// path.
func writeFileAtomic(dir, path string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, ".token-*.tmp")
	if err != nil {
		return fmt.Errorf("create token file in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("chmod token file %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write token file %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync token file %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close token file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace token file %s: %w", path, err)
	}
	return nil
}
