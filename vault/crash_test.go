package vault

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// crashFiles is how many files the killed indexer is given; each has a
// word of its own ("uniqNNNN") in its title, so in every chunk's heading.
const crashFiles = 300

func crashFile(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# File uniq%04d\n\n", i)
	for p := range 3 {
		fmt.Fprintf(&b, "## Part %d\n\n%s\n\n", p, strings.Repeat("filler words for a chunk of text ", 60))
	}
	return b.String()
}

// TestIndexKilledMidway kills an indexing process with SIGKILL after some
// files are done; the index it leaves is consistent (every indexed file has
// all of its chunks and no other file has any), and the next run
// completes it.
func TestIndexKilledMidway(t *testing.T) {
	if home := os.Getenv("CTXKIT_CRASH_HOME"); home != "" {
		e := &env{home: home, root: os.Getenv("CTXKIT_CRASH_ROOT")}
		e.url = home + "/ctxkit.db"
		e.opts = Options{Home: e.home, Root: e.root}
		svc, _ := e.open(t)
		_, err := svc.Index(context.Background(), Owner(), "crash", IndexRequest{}, func(done, total int, path string) {
			fmt.Printf("done %d\n", done)
		})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	e := newEnv(t)
	files := map[string]string{}
	for i := range crashFiles {
		files[fmt.Sprintf("f%04d.md", i)] = crashFile(i)
	}
	e.semantic(t, "crash", files)
	cmd := exec.Command(os.Args[0], "-test.run=^TestIndexKilledMidway$")
	cmd.Env = append(os.Environ(), "CTXKIT_CRASH_HOME="+e.home, "CTXKIT_CRASH_ROOT="+e.root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	seen := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "done ") {
			if seen++; seen == crashFiles/3 {
				cmd.Process.Kill()
				break
			}
		}
	}
	cmd.Wait()
	if seen < crashFiles/3 {
		t.Fatalf("the child finished or died early after %d files", seen)
	}
	partial := checkIndexConsistent(t, e)
	rep, err := e.svc.Index(t.Context(), Owner(), "crash", IndexRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed+rep.Unchanged != crashFiles || rep.Unchanged != partial {
		t.Errorf("the next run: %+v after %d were indexed", rep, partial)
	}
	if n := checkIndexConsistent(t, e); n != crashFiles {
		t.Errorf("after the next run %d of %d files are indexed", n, crashFiles)
	}
}

// checkIndexConsistent checks that each file of vault crash is either
// wholly indexed or absent, and returns how many are indexed.
func checkIndexConsistent(t *testing.T, e *env) int {
	t.Helper()
	v, err := e.svc.lookup(t.Context(), Owner(), "crash")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := e.b.Index(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := idx.Docs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	indexed := map[string]int{}
	for _, d := range docs {
		indexed[d.Path] = d.Chunks
	}
	for i := range crashFiles {
		path := fmt.Sprintf("f%04d.md", i)
		hits, err := idx.Lexical(t.Context(), fmt.Sprintf("uniq%04d", i), 100)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := indexed[path]
		if len(hits) != want || (ok && want == 0) {
			t.Errorf("%s: %d chunks found, the index records %d (indexed: %v)", path, len(hits), want, ok)
		}
	}
	return len(indexed)
}

// TestConcurrentIndexWriteQuery runs indexing, agent writes and queries on
// one vault at once; every write ends up indexed and no query fails.
func TestConcurrentIndexWriteQuery(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("f%04d.md", i)] = crashFile(i)
	}
	e.semantic(t, "notes", files)
	ctx := t.Context()
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 3 {
			if _, err := e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil); err != nil {
				t.Errorf("index: %v", err)
			}
		}
	})
	wg.Go(func() {
		for i := range 20 {
			_, err := e.svc.WriteDoc(ctx, Owner(), "notes", fmt.Sprintf("agent/w%02d.md", i), WriteDocRequest{Content: fmt.Sprintf("# Written\n\nwritten%02d by an agent\n", i)})
			if err != nil {
				t.Errorf("write: %v", err)
			}
		}
	})
	wg.Go(func() {
		for i := range 40 {
			if _, err := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: fmt.Sprintf("uniq%04d filler", i%60), NResults: 3}); err != nil {
				t.Errorf("query: %v", err)
			}
		}
	})
	wg.Wait()
	for i := range 20 {
		res, err := e.svc.Query(ctx, Owner(), "notes", QueryRequest{Query: fmt.Sprintf("written%02d", i), NResults: 1})
		if err != nil || len(res.Results) != 1 || res.Results[0].Path != fmt.Sprintf("agent/w%02d.md", i) {
			t.Errorf("write %d not found: %+v %v", i, res, err)
		}
	}
}
