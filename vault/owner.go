package vault

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// OwnerTokenPrefix starts the owner's token, told apart from agents'.
const OwnerTokenPrefix = "ctxk_owner_"

// OwnerTokenPath is where the owner's token is kept.
func (r *Registry) OwnerTokenPath() string { return filepath.Join(r.dataDir, "owner-token") }

// OwnerToken returns the owner's token for the HTTP API and the MCP server
// (administrative routes), creating it, readable by the user only, when
// create is set and there is none yet. Without one and without create it
// returns ErrUnauthenticated.
func (r *Registry) OwnerToken(ctx context.Context, create bool) (string, error) {
	b, err := os.ReadFile(r.OwnerTokenPath())
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		if !strings.HasPrefix(tok, OwnerTokenPrefix) {
			return "", fmt.Errorf("%w: %s does not hold an owner token; delete it to make a new one", ErrParse, r.OwnerTokenPath())
		}
		return tok, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read the owner token: %w", err)
	case !create:
		return "", fmt.Errorf("%w: no owner token yet (ctxkit serve creates one)", ErrUnauthenticated)
	}
	secret, err := randomSecret()
	if err != nil {
		return "", err
	}
	tok := OwnerTokenPrefix + secret
	// Another process may create one at the same moment: the token is
	// written whole to a temporary file, then linked into place, which
	// fails if a token is there already; the loser reads the winner's.
	if err := os.MkdirAll(r.dataDir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(r.dataDir, ".owner-token-*")
	if err != nil {
		return "", fmt.Errorf("write the owner token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(tok + "\n")
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return "", fmt.Errorf("write the owner token: %w", err)
	}
	if err := os.Link(tmp.Name(), r.OwnerTokenPath()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return r.OwnerToken(ctx, false)
		}
		return "", fmt.Errorf("write the owner token: %w", err)
	}
	return tok, nil
}

// Caller returns who a bearer token belongs to: Owner for the owner's
// token, an agent's name for an agent's, or ErrUnauthenticated.
func (r *Registry) Caller(ctx context.Context, token string) (string, error) {
	if strings.HasPrefix(token, OwnerTokenPrefix) {
		own, err := r.OwnerToken(ctx, false)
		if err != nil || subtle.ConstantTimeCompare([]byte(own), []byte(token)) != 1 {
			return "", ErrUnauthenticated
		}
		return Owner, nil
	}
	return r.Authenticate(ctx, token)
}
