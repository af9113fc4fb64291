package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServe runs `ctxkit serve` on a loopback port: the health check, the
// REST API and the MCP endpoint answer behind one authentication, and a
// cancelled context shuts the server down cleanly.
func TestServe(t *testing.T) {
	r, token := mcpRegistry(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, &globals{store: "memory:"}, &ServeOptions{Addr: "127.0.0.1:0", Grace: 5 * time.Second},
			IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, func(addr string) { addrc <- addr })
	}()
	var base string
	select {
	case addr := <-addrc:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	owner, err := r.OwnerToken(ctx, false)
	if err != nil {
		t.Fatalf("the first serve creates the owner token: %v", err)
	}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path, token string
		status      int
		has, hasNot string
	}{
		{"/healthz", "", 200, `"ok"`, ""},
		{"/v1/openapi.json", "", 200, `"3.1.0"`, ""},
		{"/v1/vaults", "", 401, "unauthorized", ""},
		{"/v1/vaults", token, 200, `"notes"`, "secret"},
		{"/v1/vaults", owner, 200, `"secret"`, ""},
		{"/mcp", "", 401, "unauthorized", ""},
	} {
		status, body := get(tc.path, tc.token)
		if status != tc.status || !strings.Contains(body, tc.has) || (tc.hasNot != "" && strings.Contains(body, tc.hasNot)) {
			t.Errorf("GET %s: %d %s", tc.path, status, body)
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_vaults"})
	if err != nil || res.IsError || strings.Contains(res.Content[0].(*mcp.TextContent).Text, "secret") {
		t.Errorf("list_vaults over /mcp: %v %+v", err, res)
	}
	cs.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func TestServeRefusesPlainHTTPOnTheNetwork(t *testing.T) {
	vaultEnv(t)
	for _, tc := range []struct {
		opts ServeOptions
		want string
	}{
		{ServeOptions{Addr: "0.0.0.0:0"}, "give --tls-cert and --tls-key, or --insecure"},
		{ServeOptions{Addr: "192.0.2.1:8000"}, "give --tls-cert and --tls-key, or --insecure"},
		{ServeOptions{Addr: "127.0.0.1:0", TLSCert: "c.pem"}, "--tls-cert and --tls-key go together"},
	} {
		err := runServe(t.Context(), &globals{store: "memory:"}, &tc.opts, IO{Err: io.Discard}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc.opts, err)
		}
	}
}
