package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault"
)

// vaultFlags say who the vault commands act for: the owner (the user who
// runs ctxkit) by default, or an agent.
type vaultFlags struct {
	// agent is an agent the owner acts as (trusted: the owner runs the
	// process).
	agent string
	// tokenEnv names a variable holding an agent's token, verified
	// instead, which then decides the agent.
	tokenEnv string
}

func (f *vaultFlags) register(cmd *cobra.Command, persistent bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.StringVar(&f.agent, "agent", "", "act as this agent: its access applies and the audit logs name it (default: you, the owner)")
	fs.StringVar(&f.tokenEnv, "token-env", "", "an environment variable holding an agent's token, verified instead of trusting --agent")
}

// vaults is what a vault command works with.
type vaults struct {
	svc    *vault.Service
	b      store.Backend
	caller vault.Caller
	cwd    string
}

// Close releases the backend.
func (v *vaults) Close() error { return v.b.Close() }

// openVaults opens the backend and the vault service, and decides the
// caller. keep is for servers: the service keeps searchers in memory, and
// the backend indexes large workspaces in the background.
func (g *globals) openVaults(ctx context.Context, f *vaultFlags, keep bool) (*vaults, error) {
	p, err := getWorkPaths()
	if err != nil {
		return nil, err
	}
	return g.openVaultsAt(ctx, p, f, keep)
}

// openVaultsAt is openVaults with the paths given.
func (g *globals) openVaultsAt(ctx context.Context, p workPaths, f *vaultFlags, keep bool) (*vaults, error) {
	b, err := g.openBackendAt(ctx, p, keep)
	if err != nil {
		return nil, err
	}
	svc, err := vault.New(b, vault.Options{Home: p.home, Root: p.root, KeepSearchers: keep})
	if err != nil {
		b.Close()
		return nil, err
	}
	v := &vaults{svc: svc, b: b, caller: vault.Owner(), cwd: p.cwd}
	if f != nil {
		if v.caller, err = callerFor(ctx, svc, f); err != nil {
			b.Close()
			return nil, err
		}
	}
	return v, nil
}

// callerFor decides who a command acts for: an agent's token from
// --token-env (verified, and it decides), the agent --agent names, or the
// owner.
func callerFor(ctx context.Context, svc *vault.Service, f *vaultFlags) (vault.Caller, error) {
	if f.tokenEnv != "" {
		token := os.Getenv(f.tokenEnv)
		if token == "" {
			return vault.Caller{}, fmt.Errorf("$%s is empty: set it to the agent's token (ctxkit agent create NAME prints it)", f.tokenEnv)
		}
		c, err := svc.Authenticate(ctx, token)
		if errors.Is(err, vault.ErrUnauthenticated) {
			return vault.Caller{}, fmt.Errorf("the token in $%s is not valid: it belongs to no agent (revoked, or mistyped); create one with ctxkit agent create NAME: %w", f.tokenEnv, err)
		}
		if err != nil {
			return vault.Caller{}, err
		}
		if f.agent != "" && f.agent != c.Name() {
			return vault.Caller{}, fmt.Errorf("the token in $%s is %s's, not %s's: drop --agent, or give %s's token", f.tokenEnv, c, f.agent, f.agent)
		}
		return c, nil
	}
	return svc.ActAs(ctx, vault.Owner(), f.agent)
}
