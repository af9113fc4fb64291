package vault

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
)

// TokenPrefix starts every agent token, so that a leaked one is
// recognisable (secret scanners) and a token is never mistaken for a name.
const TokenPrefix = "ctxk_"

// lastUsedEvery bounds how often Authenticate rewrites agents.json to
// record the last use.
const lastUsedEvery = time.Minute

// Agent is an identity that may be attached to vaults. Its token is never
// stored, only its hash.
type Agent struct {
	Name     string
	Created  time.Time
	LastUsed time.Time // zero until first authenticated
}

type agentEntry struct {
	Hash     string    `json:"sha256"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero"`
}

type agentsFile struct {
	Agents map[string]*agentEntry `json:"agents"`
	// Revoked remembers revoked names, which are never given out again:
	// vault configs, in any project, may still grant them access.
	Revoked map[string]time.Time `json:"revoked,omitempty"`
}

func (r *Registry) agentsPath() string { return filepath.Join(r.dataDir, "agents.json") }

func validAgentName(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if name == Owner {
		return fmt.Errorf("%w: %q is reserved for the vaults' owner", ErrInvalid, name)
	}
	return nil
}

// randomSecret returns 256 random bits, URL-safe base64.
func randomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func readAgents(path string) (*agentsFile, error) {
	f := &agentsFile{Agents: map[string]*agentEntry{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, parseError(path, data, err)
	}
	if f.Agents == nil {
		f.Agents = map[string]*agentEntry{}
	}
	return f, nil
}

// editAgents runs fn on agents.json under its lock and writes it (0600)
// when fn returns nil and changed is set.
func (r *Registry) editAgents(ctx context.Context, fn func(*agentsFile) (changed bool, err error)) error {
	path := r.agentsPath()
	unlock, err := atomicfile.Lock(ctx, path+".lock", 0o700, lockWait)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := readAgents(path)
	if err != nil {
		return err
	}
	changed, err := fn(f)
	if err != nil || !changed {
		return err
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600, 0o700, nil)
}

// CreateAgent creates an agent and returns its token, which is shown this
// once: only its SHA-256 hash is stored (in $CTXKIT_HOME/agents.json,
// 0600). The token carries 256 random bits.
func (r *Registry) CreateAgent(ctx context.Context, name string) (string, error) {
	if err := validAgentName(name); err != nil {
		return "", err
	}
	secret, err := randomSecret()
	if err != nil {
		return "", err
	}
	token := TokenPrefix + secret
	err = r.editAgents(ctx, func(f *agentsFile) (bool, error) {
		if _, ok := f.Agents[name]; ok {
			return false, fmt.Errorf("%w: agent %q", ErrExists, name)
		}
		if when, ok := f.Revoked[name]; ok {
			return false, fmt.Errorf("%w: agent %q was revoked on %s and its name is not given out again, since vaults may still grant it access; choose another name", ErrExists, name, when.Format(time.DateOnly))
		}
		f.Agents[name] = &agentEntry{Hash: hashToken(token), Created: time.Now().UTC().Truncate(time.Second)}
		return true, nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// Agents lists the agents by name.
func (r *Registry) Agents(ctx context.Context) ([]Agent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := readAgents(r.agentsPath())
	if err != nil {
		return nil, err
	}
	out := make([]Agent, 0, len(f.Agents))
	for _, name := range slices.Sorted(maps.Keys(f.Agents)) {
		e := f.Agents[name]
		out = append(out, Agent{Name: name, Created: e.Created, LastUsed: e.LastUsed})
	}
	return out, nil
}

// RevokeAgent deletes the agent: its token stops working at once. Its
// grants stay in the vaults' configs (they may be committed) and would apply
// to a new agent of the same name; detach it to remove them.
func (r *Registry) RevokeAgent(ctx context.Context, name string) error {
	return r.editAgents(ctx, func(f *agentsFile) (bool, error) {
		if _, ok := f.Agents[name]; !ok {
			return false, fmt.Errorf("%w: %q", ErrNoAgent, name)
		}
		delete(f.Agents, name)
		if f.Revoked == nil {
			f.Revoked = map[string]time.Time{}
		}
		f.Revoked[name] = time.Now().UTC().Truncate(time.Second)
		return true, nil
	})
}

// Authenticate returns the agent whose token this is, or
// ErrUnauthenticated. The hash is compared in constant time against every
// agent's. The last use is recorded (at most once a minute per agent).
func (r *Registry) Authenticate(ctx context.Context, token string) (string, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return "", ErrUnauthenticated
	}
	f, err := readAgents(r.agentsPath())
	if err != nil {
		return "", err
	}
	want := []byte(hashToken(token))
	name := ""
	for n, e := range f.Agents {
		if subtle.ConstantTimeCompare(want, []byte(e.Hash)) == 1 {
			name = n
		}
	}
	if name == "" || name == Owner {
		return "", ErrUnauthenticated
	}
	now := time.Now().UTC()
	if now.Sub(f.Agents[name].LastUsed) >= lastUsedEvery {
		err := r.editAgents(ctx, func(f *agentsFile) (bool, error) {
			e, ok := f.Agents[name]
			if !ok || e.Hash != string(want) {
				return false, ErrUnauthenticated // revoked meanwhile
			}
			e.LastUsed = now.Truncate(time.Second)
			return true, nil
		})
		if err != nil {
			return "", err
		}
	}
	return name, nil
}
