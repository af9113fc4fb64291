package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/vault"
)

// agentVaults sets up, through the CLI, agent a, a public vault "notes"
// and a restricted vault "secret" a is not attached to; it returns a's
// token.
func agentVaults(t *testing.T) string {
	t.Helper()
	vaultEnv(t)
	token := strings.TrimSpace(mustRun(t, "agent", "create", "a"))
	mustRun(t, "vault", "init", "notes")
	mustRun(t, "vault", "init", "secret", "--restricted")
	return token
}

// openTestVaults opens the vault service over the default store, as the
// owner, as a command would.
func openTestVaults(t *testing.T) *vaults {
	t.Helper()
	v, err := (&globals{}).openVaults(t.Context(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func TestCallerFor(t *testing.T) {
	token := agentVaults(t)
	v := openTestVaults(t)
	owner, err := v.svc.OwnerToken(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOKEN_A", token)
	t.Setenv("TOKEN_OWNER", owner)
	t.Setenv("TOKEN_BAD", "ctxk_nope")
	t.Setenv("TOKEN_EMPTY", "")
	for _, tc := range []struct {
		name string
		f    vaultFlags
		want string // the caller, or the start of the error
		err  bool
	}{
		{"owner by default", vaultFlags{}, vault.OwnerName, false},
		{"trusted agent", vaultFlags{agent: "a"}, "a", false},
		{"unknown agent", vaultFlags{agent: "ghost"}, "no agent named ghost; create it with ctxkit agent create ghost", true},
		{"invalid name", vaultFlags{agent: "a b"}, `name "a b" may hold only`, true},
		{"token", vaultFlags{tokenEnv: "TOKEN_A"}, "a", false},
		{"token and its agent", vaultFlags{tokenEnv: "TOKEN_A", agent: "a"}, "a", false},
		{"owner's token", vaultFlags{tokenEnv: "TOKEN_OWNER"}, vault.OwnerName, false},
		{"token of another agent", vaultFlags{tokenEnv: "TOKEN_A", agent: "b"}, "the token in $TOKEN_A is a's, not b's", true},
		{"bad token", vaultFlags{tokenEnv: "TOKEN_BAD"}, "the token in $TOKEN_BAD is not valid", true},
		{"empty variable", vaultFlags{tokenEnv: "TOKEN_EMPTY"}, "$TOKEN_EMPTY is empty", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := callerFor(t.Context(), v.svc, &tc.f)
			switch {
			case tc.err && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("callerFor(%+v) = %q, %v; want an error starting %q", tc.f, got, err, tc.want)
			case !tc.err && (err != nil || got.Name() != tc.want):
				t.Errorf("callerFor(%+v) = %q, %v; want %q", tc.f, got, err, tc.want)
			}
		})
	}
}

// TestMCPCommand runs `ctxkit mcp --agent a` over pipes and talks to it
// with the Go SDK client; closing the client ends the command cleanly.
func TestMCPCommand(t *testing.T) {
	agentVaults(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		done <- Main(ctx, []string{"mcp", "--agent", "a"}, IO{In: inR, Out: outW, Err: &stderr})
		_ = outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_vaults"})
	if err != nil || res.IsError {
		t.Fatalf("list_vaults: %v %+v", err, res)
	}
	got := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(got, `"notes"`) || strings.Contains(got, "secret") {
		t.Errorf("list_vaults for a: %s", got)
	}
	// A restricted vault a is not attached to does not exist for it.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_docs", Arguments: map[string]any{"vault": "secret"}})
	if err != nil || !res.IsError {
		t.Fatalf("list_docs on a restricted vault: %v %+v", err, res)
	}
	var toolErr struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &toolErr); err != nil ||
		toolErr.Error.Code != string(vault.ClassNotFound) || toolErr.Error.Message != `no vault named "secret"` {
		t.Errorf("list_docs on a restricted vault: %v %+v", err, toolErr)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code := <-done; code != 0 {
		t.Errorf("ctxkit mcp exited %d: %s", code, stderr.String())
	}
}

func TestMCPCommandRefusesUnknownAgent(t *testing.T) {
	agentVaults(t)
	var stderr bytes.Buffer
	code := Main(t.Context(), []string{"mcp", "--agent", "ghost"}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
	if code == 0 || !strings.Contains(stderr.String(), "ctxkit agent create ghost") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
