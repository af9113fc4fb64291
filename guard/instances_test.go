package guard_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/pgstore"
)

// TestEvictedSpansAcrossInstances runs two guards on one PostgreSQL store,
// each with a backend of its own as two processes would have: a span the
// first evicts is read back through the second, by the id its report gave.
func TestEvictedSpansAcrossInstances(t *testing.T) {
	url := pgtest.URL(t)
	up := serve(t, llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: recallWindow}))
	var gws []string
	for range 2 {
		rest, _ := strings.CutPrefix(url, "postgres:")
		b, err := pgstore.OpenBackend(t.Context(), rest, store.Options{Home: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		g, err := guard.New(guard.Options{Ollama: up, Engine: offload.New(b.Workspaces()), KV: b.KV()})
		if err != nil {
			t.Fatal(err)
		}
		gws = append(gws, serve(t, g))
	}
	path, req := recallRequest("ollama", false, false, recallHistory("ollama", 12, 250, 0))
	r, _ := postReply(t, gws[0]+path, "ollama", false, req)
	if r.rep == nil || len(r.rep.Evicted) == 0 || r.rep.Evicted[0].StoreID == "" {
		t.Fatalf("no stored eviction reported: %+v", r.rep)
	}
	resp, err := http.Get(gws[1] + "/ctxkit/evicted/" + r.rep.Evicted[0].StoreID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), recallSecret) {
		t.Errorf("the span evicted by one guard, read through the other: %d %.300s", resp.StatusCode, body)
	}
}
