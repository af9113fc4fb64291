package vault

import (
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/vault/episodic"
)

// TestPool runs the semantic and episodic calls through a registry with a
// pool: files stay open across calls and survive a reindex and a purge.
func TestPool(t *testing.T) {
	root := t.TempDir()
	pool := NewPool()
	defer pool.Close()
	r, err := Open(Options{DataDir: filepath.Join(root, "data"), Cwd: root, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	v, err := r.Init(ctx, InitOptions{Name: "kb"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, v, "a.md", "# A\n\nalpha beta\n")
	for range 2 {
		if _, err := v.Index(ctx, IndexOptions{}); err != nil {
			t.Fatal(err)
		}
		res, err := v.Query(ctx, "alpha", 3, nil)
		if err != nil || len(res.Results) != 1 {
			t.Fatalf("query: %+v %v", res, err)
		}
	}
	if len(pool.indexes) != 1 || len(pool.searchers) != 1 {
		t.Errorf("pooled indexes %d, searchers %d", len(pool.indexes), len(pool.searchers))
	}
	// A write moves the index generation: the pooled Searcher reloads
	// and finds the new document at once.
	first := pool.searchers[v.Dir].s
	if err := v.Write(ctx, WriteOptions{Agent: Owner, Path: "b.md", Content: []byte("# B\n\nalpha gamma\n")}); err != nil {
		t.Fatal(err)
	}
	if res, err := v.Query(ctx, "gamma", 3, nil); err != nil || len(res.Results) != 1 || res.Results[0].Path != "b.md" {
		t.Fatalf("query after a write: %+v %v", res, err)
	}
	if pool.searchers[v.Dir].s == first {
		t.Error("the Searcher was not reloaded after the write")
	}
	second := pool.searchers[v.Dir].s
	if _, err := v.Query(ctx, "alpha", 3, nil); err != nil || pool.searchers[v.Dir].s != second {
		t.Errorf("an unchanged index reloaded the Searcher: %v", err)
	}
	if _, err := v.Index(ctx, IndexOptions{Reindex: true}); err != nil {
		t.Fatalf("reindex with the index held open: %v", err)
	}
	if res, err := v.Query(ctx, "alpha", 3, nil); err != nil || len(res.Results) != 2 {
		t.Fatalf("query after reindex: %+v %v", res, err)
	}
	ev, err := r.Init(ctx, InitOptions{Name: "mem", Type: Episodic})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e, err := ev.OpenEpisodes(ctx, Owner, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Write(ctx, episodic.Write{Content: "it rains"}); err != nil {
			t.Fatal(err)
		}
		e.Close()
	}
	e, _ := ev.OpenEpisodes(ctx, Owner, nil)
	if st, err := e.Stats(ctx, nil); err != nil || st.Total != 2 {
		t.Errorf("two writes through the pool: %+v %v", st, err)
	}
	if len(pool.episodes) != 1 {
		t.Errorf("pooled stores: %d", len(pool.episodes))
	}
	if _, err := r.Remove(ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	if len(pool.episodes) != 0 {
		t.Error("a purged vault's store stays in the pool")
	}
}
