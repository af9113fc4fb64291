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
	if dir := os.Getenv("CTXKIT_CRASH_VAULT"); dir != "" {
		v := &Vault{Name: "crash", Type: Semantic, Dir: dir}
		_, err := v.Index(context.Background(), IndexOptions{Progress: func(done, total int, path string) {
			fmt.Printf("done %d\n", done)
		}})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	files := map[string]string{}
	for i := range crashFiles {
		files[fmt.Sprintf("f%04d.md", i)] = crashFile(i)
	}
	v := semanticVault(t, files)
	cmd := exec.Command(os.Args[0], "-test.run=^TestIndexKilledMidway$")
	cmd.Env = append(os.Environ(), "CTXKIT_CRASH_VAULT="+v.Dir)
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

	partial := checkIndexConsistent(t, v)
	if partial == 0 || partial == crashFiles {
		t.Logf("the kill left %d of %d files indexed", partial, crashFiles)
	}
	rep, err := v.Index(t.Context(), IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed+rep.Unchanged != crashFiles || rep.Unchanged != partial {
		t.Errorf("the next run: %+v after %d were indexed", rep, partial)
	}
	if n := checkIndexConsistent(t, v); n != crashFiles {
		t.Errorf("after the next run %d of %d files are indexed", n, crashFiles)
	}
}

// checkIndexConsistent checks that each file is either wholly indexed or
// absent, and returns how many are indexed.
func checkIndexConsistent(t *testing.T, v *Vault) int {
	t.Helper()
	idx, err := v.openIndex(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
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
		if !ok {
			want = 0
		}
		if len(hits) != want || (ok && want == 0) {
			t.Errorf("%s: %d chunks found, the index records %d (indexed: %v)", path, len(hits), want, ok)
		}
	}
	return len(indexed)
}

// TestConcurrentIndexWriteQuery runs indexing, agent writes and queries on
// one vault at once; every write ends up indexed and no query fails.
func TestConcurrentIndexWriteQuery(t *testing.T) {
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("f%04d.md", i)] = crashFile(i)
	}
	v := semanticVault(t, files)
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	wg.Go(func() {
		for range 3 {
			if _, err := v.Index(ctx, IndexOptions{}); err != nil {
				errs <- fmt.Errorf("index: %w", err)
			}
		}
	})
	wg.Go(func() {
		for i := range 20 {
			err := v.Write(ctx, WriteOptions{Agent: Owner, Path: fmt.Sprintf("agent/w%02d.md", i), Content: []byte(fmt.Sprintf("# Written\n\nwritten%02d by an agent\n", i))})
			if err != nil {
				errs <- fmt.Errorf("write: %w", err)
			}
		}
	})
	wg.Go(func() {
		for i := range 40 {
			if _, err := v.Query(ctx, fmt.Sprintf("uniq%04d filler", i%60), 3, nil); err != nil {
				errs <- fmt.Errorf("query: %w", err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 20 {
		res, err := v.Query(ctx, fmt.Sprintf("written%02d", i), 1, nil)
		if err != nil || len(res.Results) != 1 || res.Results[0].Path != fmt.Sprintf("agent/w%02d.md", i) {
			t.Errorf("write %d not found: %+v %v", i, res, err)
		}
	}
}
