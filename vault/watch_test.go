package vault

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWatchKeepsTheIndexInStep(t *testing.T) {
	e := newEnv(t)
	dir := e.semantic(t, "notes", map[string]string{"first.md": "# First\n\nalpha\n"})
	ctx, cancel := context.WithCancel(t.Context())
	reports := make(chan *IndexReport, 16)
	done := make(chan error, 1)
	go func() {
		done <- e.svc.Watch(ctx, Owner(), "notes", WatchOptions{Debounce: 50 * time.Millisecond, OnIndex: func(r *IndexReport, err error) {
			if err != nil {
				t.Errorf("index run: %v", err)
				return
			}
			reports <- r
		}})
	}()
	next := func(what string) *IndexReport {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(30 * time.Second):
			t.Fatalf("no index run after %s", what)
			return nil
		}
	}
	if r := next("start"); r.Indexed != 1 {
		t.Fatalf("first run: %+v", r)
	}
	found := func(word, path string) bool {
		res, err := e.svc.Query(t.Context(), Owner(), "notes", QueryRequest{Query: word, NResults: 3})
		return err == nil && len(res.Results) == 1 && res.Results[0].Path == path
	}

	writeFile(t, dir, "sub/deeper/second.md", "# Second\n\nbravo\n")
	for !found("bravo", "sub/deeper/second.md") {
		next("a file in a new folder")
	}
	if err := os.Remove(filepath.Join(dir, "first.md")); err != nil {
		t.Fatal(err)
	}
	for found("alpha", "first.md") {
		next("a removal")
	}
	// Changes in the data folder (the index itself) trigger nothing.
	for len(reports) > 0 {
		<-reports
	}
	writeFile(t, dir, DataDirName+"/scratch.md", "# x\n\ncharlie\n")
	select {
	case r := <-reports:
		t.Errorf("a change in the data folder started a run: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watch: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not end with its context")
	}
}
