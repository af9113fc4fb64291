package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/sqlitedb/sqlitedbtest"
	"github.com/ctxkit/ctxkit/store"
)

// helperEnv tells a re-executed test binary to act as one worker process of
// TestMultiProcess: its value is "<database path>,<worker number>".
const helperEnv = "CTXKIT_SQLITESTORE_HELPER"

const (
	procWorkers    = 4
	procWorkspaces = 50
	procAppends    = 5 // items each worker appends to the shared list per workspace it puts
)

func procID(worker, i int) string { return fmt.Sprintf("proc_w%d_%03d", worker, i) }

func procItems(worker, i int) []json.RawMessage {
	items := make([]json.RawMessage, 3+i%5)
	for j := range items {
		items[j] = json.RawMessage(fmt.Sprintf(`{"worker":%d,"ws":%d,"item":%d,"text":"marker%dx%d"}`, worker, i, j, worker, i))
	}
	return items
}

// TestMultiProcess runs procWorkers processes against one database file at
// once, starting from a file that does not exist, so that they also race to
// create the schema. Each puts its workspaces, appends to a shared list and
// reads the others' workspaces; afterwards every write must be there and no
// process may have seen an error.
func TestMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "sub", "ctxkit.db")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	outputs := make([]bytes.Buffer, procWorkers)
	errs := make([]error, procWorkers)
	for w := range procWorkers {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", helperEnv, path, w))
		cmd.Stdout = &outputs[w]
		cmd.Stderr = &outputs[w]
		wg.Go(func() { errs[w] = cmd.Run() })
	}
	wg.Wait()
	for w := range procWorkers {
		out := outputs[w].String()
		if errs[w] != nil || !strings.Contains(out, "--- PASS: TestHelperProcess") {
			t.Errorf("worker %d: %v\n%s", w, errs[w], out)
		}
		if strings.Contains(out, "locked") || strings.Contains(out, "SQLITE_BUSY") {
			t.Errorf("worker %d saw a lock error:\n%s", w, out)
		}
	}

	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for w := range procWorkers {
		for i := range procWorkspaces {
			id := procID(w, i)
			got, err := s.Items(t.Context(), id, 0, 100)
			if err != nil {
				t.Errorf("Items(%s): %v", id, err)
				continue
			}
			checkJSONItems(t, id, got, procItems(w, i))
		}
	}
	shared, err := s.Stat(t.Context(), "proc_shared")
	if err != nil {
		t.Fatal(err)
	}
	if want := procWorkers * procWorkspaces * procAppends; shared.Items != want {
		t.Errorf("shared list has %d items, want %d", shared.Items, want)
	}
	// Each worker's appends are all there and in its order.
	next := make([]int, procWorkers)
	for item, err := range s.ScanItems(t.Context(), "proc_shared") {
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Worker, Seq int }
		if err := json.Unmarshal(item, &v); err != nil {
			t.Fatal(err)
		}
		if v.Seq != next[v.Worker] {
			t.Errorf("worker %d: append %d where %d was due", v.Worker, v.Seq, next[v.Worker])
		}
		next[v.Worker] = v.Seq + 1
	}
	hits, total, err := s.SearchItems(t.Context(), "proc_shared", store.Query{Text: "appended"})
	if err != nil || total != procWorkers*procWorkspaces*procAppends || len(hits) != 10 {
		t.Errorf("SearchItems(shared) = %d hits, total %d, %v", len(hits), total, err)
	}
}

// TestHelperProcess is one worker of TestMultiProcess; it does nothing
// unless started by it.
func TestHelperProcess(t *testing.T) {
	arg := os.Getenv(helperEnv)
	if arg == "" {
		t.Skip("run by TestMultiProcess")
	}
	path, num, _ := strings.Cut(arg, ",")
	w, err := strconv.Atoi(num)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	// Worker 0 creates the shared list; the others wait for it, since a
	// second Put would replace it and lose the appends made so far.
	sw := &store.Workspace{ID: "proc_shared", Type: "shared", Shape: store.ShapeList, Producer: "test"}
	if w == 0 {
		if err := s.Put(ctx, sw, &store.Content{}); err != nil {
			t.Fatalf("Put(shared): %v", err)
		}
	}
	for {
		_, err := s.Stat(ctx, sw.ID)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Stat(shared): %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := rand.New(rand.NewPCG(uint64(w), 99))
	seq := 0
	for i := range procWorkspaces {
		id := procID(w, i)
		ws := &store.Workspace{ID: id, Type: "proc", Shape: store.ShapeList, Producer: "test",
			Session: fmt.Sprintf("worker-%d", w), CreatedAt: time.Now()}
		if err := s.Put(ctx, ws, &store.Content{Items: procItems(w, i)}); err != nil {
			t.Fatalf("Put(%s): %v", id, err)
		}
		var appended []json.RawMessage
		for range procAppends {
			appended = append(appended, json.RawMessage(fmt.Sprintf(`{"worker":%d,"seq":%d,"note":"appended"}`, w, seq)))
			seq++
		}
		if err := s.AppendItems(ctx, "proc_shared", appended); err != nil {
			t.Fatalf("AppendItems(shared): %v", err)
		}
		// Read what another worker wrote so far.
		other := (w + 1 + r.IntN(procWorkers-1)) % procWorkers
		oid := procID(other, r.IntN(i+1))
		got, err := s.Items(ctx, oid, 0, 100)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Not written yet.
		case err != nil:
			t.Fatalf("Items(%s): %v", oid, err)
		default:
			var n int
			fmt.Sscanf(oid, "proc_w%d_%d", &other, &n)
			checkJSONItems(t, oid, got, procItems(other, n))
		}
		if _, _, err := s.SearchItems(ctx, oid, store.Query{Text: fmt.Sprintf("marker%dx%d", other, 0)}); err != nil &&
			!errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SearchItems(%s): %v", oid, err)
		}
		if _, err := s.List(ctx, store.ListOptions{Sessions: []string{fmt.Sprintf("worker-%d", other)}}); err != nil {
			t.Fatalf("List: %v", err)
		}
	}
}

func checkJSONItems(t *testing.T, id string, got, want []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d items, want %d", id, len(got), len(want))
		return
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s: item %d = %s, want %s", id, i, got[i], want[i])
		}
	}
}

// TestOpenCreatesPrivateFiles checks the modes of a new database and of
// its directory.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", "ctxkit")
	path := filepath.Join(dir, "ctxkit.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("WAL file mode %v is readable by others", fi.Mode())
	}
}

// TestOpenRefusesNewerSchema checks that a database written by a newer
// ctxkit is refused, not silently used.
func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(t.Context(), fmt.Sprintf(`PRAGMA user_version = %d`, len(schema.Steps)+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(t.Context(), path, Options{})
	if !errors.Is(err, migrate.ErrNewer) {
		t.Fatalf("Open of a newer schema: %v, want migrate.ErrNewer", err)
	}
}

// TestOpenRefusesForeignDatabase checks that a SQLite file of another
// application is left alone.
func TestOpenRefusesForeignDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "scratch.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(t.Context(), `ATTACH DATABASE ? AS other`, path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(t.Context(), `CREATE TABLE other.notes (body TEXT)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(t.Context(), path, Options{}); !errors.Is(err, migrate.ErrForeign) {
		t.Fatalf("Open of a foreign database: %v", err)
	}
}

// TestOpenTwiceConcurrently opens one fresh file from many goroutines with
// separate stores, as separate processes would.
func TestOpenTwiceConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	sqlitedbtest.OpenConcurrently(t, 8, func() (io.Closer, error) { return Open(t.Context(), path, Options{}) })
}

// TestOpenWhileWriteLocked: opening a current database takes no write
// lock, so it succeeds while another connection holds one (it failed with
// "database is locked" when each migration ran in an immediate transaction
// whether or not it was needed).
func TestOpenWhileWriteLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	sqlitedbtest.HoldWriteLock(t, path)
	// A short busy_timeout: a write lock needed fails quickly.
	s, err = Open(t.Context(), path, Options{BusyTimeout: time.Millisecond, NoBackgroundIndex: true})
	if err != nil {
		t.Fatalf("Open while another connection holds the write lock: %v", err)
	}
	defer s.Close()
	if _, err := s.List(t.Context(), store.ListOptions{}); err != nil {
		t.Errorf("List: %v", err)
	}
}

// TestOpenOldFile opens a file the code before internal/sqlitedb wrote
// (testdata/store-be54a98.db.gz, made by
// internal/sqlitedb/testdata/mkfixtures/be54a98.go.txt at that commit, at
// schema version 1): its data is all there, searchable, and the store
// writes to it, the key-value table included.
func TestOpenOldFile(t *testing.T) {
	path := sqlitedbtest.Fixture(t, "testdata/store-be54a98.db.gz", "ctxkit.db")
	ctx := t.Context()
	s, err := Open(ctx, path, Options{NoBackgroundIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	items, err := s.Items(ctx, "old_list", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	checkJSONItems(t, "old_list", items, []json.RawMessage{json.RawMessage(`{"name":"alpha","n":1}`), json.RawMessage(`{"name":"beta","n":2}`)})
	hits, _, err := s.SearchItems(ctx, "old_list", store.Query{Text: "beta"})
	if err != nil || len(hits) != 1 || hits[0].Index != 1 {
		t.Errorf("search of the old list: %+v, %v", hits, err)
	}
	text, err := s.TextSlice(ctx, "old_text", 0, 100)
	if err != nil || text != "an old text kept across versions" {
		t.Errorf("old text: %q, %v", text, err)
	}
	if found, err := s.SearchText(ctx, "old_text", store.TextQuery{Text: "versions"}); err != nil || len(found) != 1 {
		t.Errorf("search of the old text: %+v, %v", found, err)
	}
	ws := &store.Workspace{ID: "new_list", Type: "t", Shape: store.ShapeList, Format: "json", Producer: "p"}
	if err := s.Put(ctx, ws, &store.Content{Items: []json.RawMessage{json.RawMessage(`{"name":"gamma"}`)}}); err != nil {
		t.Errorf("Put into the old file: %v", err)
	}
	// The key-value table came with the second step.
	now := time.Now()
	if err := s.KV().Put(ctx, "k", []byte("v"), now, 0); err != nil {
		t.Fatalf("KV Put into the old file: %v", err)
	}
	if v, err := s.KV().Get(ctx, "k", now); err != nil || string(v) != "v" {
		t.Errorf("KV Get: %q, %v", v, err)
	}
}

// TestOpenSettings checks the settings a new database gets through the DSN:
// WAL, 16 KiB pages, and no checkpoint by the committing connection.
func TestOpenSettings(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "ctxkit.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{s.r, "journal_mode", "wal"},
		{s.r, "page_size", "16384"},
		{s.r, "query_only", "1"},
		{s.r, "foreign_keys", "1"},
		{s.w, "wal_autocheckpoint", "0"},
		{s.w, "synchronous", "1"}, // NORMAL
		{s.w, "busy_timeout", "10000"},
	} {
		var got string
		if err := tc.db.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
		}
	}
}
