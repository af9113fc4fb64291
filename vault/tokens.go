package vault

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Token prefixes: every agent token starts with TokenPrefix and the
// owner's with OwnerTokenPrefix, so that a leaked one is recognisable
// (secret scanners) and a token is never mistaken for a name.
const (
	TokenPrefix      = "ctxk_"
	OwnerTokenPrefix = "ctxk_owner_"
)

// newToken returns prefix and 256 random bits, URL-safe base64; an agent's
// token never looks like the owner's.
func newToken(prefix string) (string, error) {
	b := make([]byte, 32)
	for {
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("generate a token: %w", err)
		}
		tok := prefix + base64.RawURLEncoding.EncodeToString(b)
		if prefix == OwnerTokenPrefix || !strings.HasPrefix(tok, OwnerTokenPrefix) {
			return tok, nil
		}
	}
}

// hashToken is what the registry keeps of a token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// OwnerTokenPath is where the owner's token is kept: a file in the data
// directory, readable by the user only.
func (s *Service) OwnerTokenPath() string { return filepath.Join(s.home, "owner-token") }

// OwnerToken returns the owner's token for the HTTP API and the MCP server,
// creating it when create is set and there is none yet. Without one and
// without create it returns ErrUnauthenticated.
func (s *Service) OwnerToken(ctx context.Context, create bool) (string, error) {
	b, err := os.ReadFile(s.OwnerTokenPath())
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		if !strings.HasPrefix(tok, OwnerTokenPrefix) {
			return "", fmt.Errorf("%s does not hold an owner token; delete it to make a new one", s.OwnerTokenPath())
		}
		return tok, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read the owner token: %w", err)
	case !create:
		return "", &Error{Kind: ErrUnauthenticated, Msg: "no owner token yet", Fix: "ctxkit serve creates one"}
	}
	tok, err := newToken(OwnerTokenPrefix)
	if err != nil {
		return "", err
	}
	// Another process may create one at the same moment: the token is
	// written whole to a temporary file, then linked into place, which
	// fails if a token is there already; the loser reads the winner's.
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(s.home, ".owner-token-*")
	if err != nil {
		return "", fmt.Errorf("write the owner token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(tok + "\n")
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return "", fmt.Errorf("write the owner token: %w", err)
	}
	if err := os.Link(tmp.Name(), s.OwnerTokenPath()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return s.OwnerToken(ctx, false)
		}
		return "", fmt.Errorf("write the owner token: %w", err)
	}
	return tok, nil
}

// isOwnerToken compares token with the owner's in constant time.
func (s *Service) isOwnerToken(ctx context.Context, token string) bool {
	own, err := s.OwnerToken(ctx, false)
	return err == nil && subtle.ConstantTimeCompare([]byte(own), []byte(token)) == 1
}
