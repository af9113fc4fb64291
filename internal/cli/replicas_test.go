package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
)

// TestWrapHTTPReplicas runs two `ctxkit wrap --http` replicas on one
// PostgreSQL store: the large results each stores are listed by `ctxkit
// offload ls --all` on that store and shown in their session, and stay
// private to it: the other replica's client cannot read them.
func TestWrapHTTPReplicas(t *testing.T) {
	url := pgtest.URL(t)
	t.Setenv("CTXKIT_HOME", t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sessions []*mcp.ClientSession
	var ids []string
	for range 2 {
		addr, _ := startWrapHTTPOn(ctx, t, url, WrapOptions{AuthToken: "tok", Threshold: 500})
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: "http://" + addr, HTTPClient: &http.Client{Transport: bearer{token: "tok"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_rows", Arguments: map[string]any{"n": 300}})
		if err != nil || res.IsError {
			t.Fatalf("list_rows: %v %+v", err, res)
		}
		var n struct {
			StoredResult string `json:"stored_result"`
		}
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &n); err != nil || n.StoredResult == "" {
			t.Fatalf("no stored result in %.200s", res.Content[0].(*mcp.TextContent).Text)
		}
		sessions, ids = append(sessions, cs), append(ids, n.StoredResult)
	}
	if ids[0] == ids[1] {
		t.Fatalf("both replicas stored %s", ids[0])
	}
	t.Setenv(StoreEnvVar, url)
	var rows []struct {
		ID      string `json:"ID"`
		Session string `json:"Session"`
	}
	ls := mustRun(t, "offload", "ls", "--all", "--json")
	if err := json.Unmarshal([]byte(ls), &rows); err != nil {
		t.Fatalf("offload ls --json: %v\n%s", err, ls)
	}
	session := map[string]string{}
	for _, r := range rows {
		session[r.ID] = r.Session
	}
	for _, id := range ids {
		if s, ok := session[id]; !ok || s == "" {
			t.Errorf("offload ls --all on the shared store: %s missing, or in no session:\n%s", id, ls)
		}
	}
	if show := mustRun(t, "offload", "show", "--session", session[ids[0]], ids[0]); !strings.Contains(show, ids[0]) {
		t.Errorf("offload show %s: %s", ids[0], show)
	}
	res, err := sessions[1].CallTool(t.Context(), &mcp.CallToolParams{Name: "result_paginate", Arguments: map[string]any{"workspace_id": ids[0]}})
	if err != nil || !res.IsError {
		t.Errorf("another replica's session read a private result: %v %+v", err, res)
	}
}
