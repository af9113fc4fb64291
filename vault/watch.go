package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long Watch waits after the last change before it
// indexes: an editor's save or a copied folder is many events.
const DefaultDebounce = 500 * time.Millisecond

// WatchOptions tune Watch.
type WatchOptions struct {
	// Debounce is the quiet time before indexing; 0 is DefaultDebounce.
	Debounce time.Duration
	// Force is passed to each run.
	Force bool
	// OnIndex, when set, gets each run's report or error.
	OnIndex func(*IndexReport, error)
}

// Watch keeps the vault's index in step with its folder until ctx ends
// (a hosted vault, which has no folder, is refused):
// one index run at the start, then one after each burst of changes
// (fsnotify, debounced). Runs are incremental, so a burst costs only the
// files it touched.
func (s *Service) Watch(ctx context.Context, c Caller, name string, opts WatchOptions) error {
	v, err := s.open(ctx, c, name, Write, "index", "", Semantic)
	if err != nil {
		return err
	}
	if v.Hosted() {
		return &Error{Kind: ErrInvalid, Field: "vault",
			Msg: fmt.Sprintf("vault %q has no folder to watch: the store hosts its documents, and every write through ctxkit indexes them at once", v.Name),
			Fix: "write documents with ctxkit vault write, or upload a local folder with ctxkit vault index " + v.Name + " --from DIR (again after changes)"}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch vault %q: %w", v.Name, err)
	}
	defer w.Close()
	if err := watchTree(w, v.Dir); err != nil {
		return err
	}
	debounce := opts.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	run := func() {
		rep, err := s.Index(ctx, c, name, IndexRequest{Force: opts.Force}, nil)
		if opts.OnIndex != nil && ctx.Err() == nil {
			opts.OnIndex(rep, err)
		}
	}
	run()
	timer := time.NewTimer(debounce)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ignored(v.Dir, ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					_ = watchTree(w, ev.Name) // files created in it meanwhile are found by the next run
				}
			}
			timer.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if opts.OnIndex != nil {
				opts.OnIndex(nil, fmt.Errorf("watch vault %q: %w", v.Name, err))
			}
		case <-timer.C:
			run()
		}
	}
}

// watchTree watches dir and its folders, except hidden ones (ctxkit's data
// folder among them).
func watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != dir && ignored(dir, path) {
			return filepath.SkipDir
		}
		if err := w.Add(path); err != nil {
			return fmt.Errorf("watch %s: %w", path, err)
		}
		return nil
	})
}

// ignored reports whether path, below root, is hidden or inside a hidden
// folder (documents never are).
func ignored(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return true
	}
	for part := range strings.SplitSeq(filepath.ToSlash(rel), "/") {
		if strings.HasPrefix(part, ".") && part != "." {
			return true
		}
	}
	return false
}
