package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/vault"
)

// mcpRegistry sets up agent a, a public vault and a restricted one a is
// not attached to; it returns the registry and a's token.
func mcpRegistry(t *testing.T) (*vault.Registry, string) {
	t.Helper()
	vaultEnv(t)
	r, _, err := openRegistry()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	token, err := r.CreateAgent(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Init(ctx, vault.InitOptions{Name: "notes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Init(ctx, vault.InitOptions{Name: "secret", Restricted: true}); err != nil {
		t.Fatal(err)
	}
	return r, token
}

func TestMCPAgent(t *testing.T) {
	r, token := mcpRegistry(t)
	owner, err := r.OwnerToken(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOKEN_A", token)
	t.Setenv("TOKEN_OWNER", owner)
	t.Setenv("TOKEN_BAD", "ctxk_nope")
	t.Setenv("TOKEN_EMPTY", "")
	for _, tc := range []struct {
		name string
		opts MCPOptions
		want string // the agent, or the start of the error
		err  bool
	}{
		{"owner by default", MCPOptions{}, vault.Owner, false},
		{"trusted agent", MCPOptions{Agent: "a"}, "a", false},
		{"unknown agent", MCPOptions{Agent: "ghost"}, "no agent named ghost: create it with ctxkit agent create ghost", true},
		{"invalid name", MCPOptions{Agent: "a b"}, "--agent", true},
		{"token", MCPOptions{TokenEnv: "TOKEN_A"}, "a", false},
		{"token and its agent", MCPOptions{TokenEnv: "TOKEN_A", Agent: "a"}, "a", false},
		{"owner's token", MCPOptions{TokenEnv: "TOKEN_OWNER"}, vault.Owner, false},
		{"token of another agent", MCPOptions{TokenEnv: "TOKEN_A", Agent: "b"}, "the token in $TOKEN_A is a's, not b's", true},
		{"bad token", MCPOptions{TokenEnv: "TOKEN_BAD"}, "the token in $TOKEN_BAD is not valid", true},
		{"empty variable", MCPOptions{TokenEnv: "TOKEN_EMPTY"}, "$TOKEN_EMPTY is empty", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mcpAgent(t.Context(), r, &tc.opts)
			switch {
			case tc.err && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("mcpAgent(%+v) = %q, %v; want an error starting %q", tc.opts, got, err, tc.want)
			case !tc.err && (err != nil || got != tc.want):
				t.Errorf("mcpAgent(%+v) = %q, %v; want %q", tc.opts, got, err, tc.want)
			}
		})
	}
}

// TestMCPCommand runs `ctxkit mcp --agent a` over pipes and talks to it
// with the Go SDK client; closing the client ends the command cleanly.
func TestMCPCommand(t *testing.T) {
	mcpRegistry(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		done <- Main(ctx, []string{"mcp", "--agent", "a", "--store", "memory:"}, IO{In: inR, Out: outW, Err: &stderr})
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
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_docs", Arguments: map[string]any{"vault": "secret"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `no vault named "secret"`) {
		t.Errorf("list_docs on a restricted vault: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code := <-done; code != 0 {
		t.Errorf("ctxkit mcp exited %d: %s", code, stderr.String())
	}
}

func TestMCPCommandRefusesUnknownAgent(t *testing.T) {
	mcpRegistry(t)
	var stderr bytes.Buffer
	code := Main(t.Context(), []string{"mcp", "--agent", "ghost", "--store", "memory:"}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
	if code == 0 || !strings.Contains(stderr.String(), "ctxkit agent create ghost") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
