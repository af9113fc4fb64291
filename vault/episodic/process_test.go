package episodic_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/episodic/sqliteepisodic"
)

const (
	writerProcesses = 4
	sharedEpisodes  = 5
)

// writesPerWriter is 200, or 50 under the race detector (the SQLite
// driver is many times slower then, and the children are built with it
// too).
func writesPerWriter() int {
	if raceEnabled {
		return 50
	}
	return 200
}

var childResult = regexp.MustCompile(`(?m)^episodic-child (\d+) supersedes=(\d+) conflicts=(\d+)$`)

// TestConcurrentWriterProcesses runs this test binary as four processes
// writing to one SQLite file at once: each writes 200 statements (50 under
// the race detector) and, as
// it goes, tries to supersede the shared statements and the newest
// statement of each of their chains. Nothing is lost, no statement is
// superseded twice, and the losers of each race get a conflict that names
// the successor.
func TestConcurrentWriterProcesses(t *testing.T) {
	if child := os.Getenv("CTXKIT_EPISODIC_CHILD"); child != "" {
		writerChild(t, child, os.Getenv("CTXKIT_EPISODIC_DB"), strings.Split(os.Getenv("CTXKIT_EPISODIC_SHARED"), ","))
		return
	}
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "episodes.db")
	store, err := sqliteepisodic.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := episodic.New(store, episodic.Options{})
	var shared []string
	for i := range sharedEpisodes {
		res, err := m.Write(ctx, episodic.Write{Content: fmt.Sprintf("shared statement %d", i), Entities: []string{"shared"}})
		if err != nil {
			t.Fatal(err)
		}
		shared = append(shared, res.Episode.ID)
	}

	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := range writerProcesses {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentWriterProcesses$", "-test.v")
		cmd.Env = append(os.Environ(), "CTXKIT_EPISODIC_CHILD="+strconv.Itoa(i), "CTXKIT_EPISODIC_DB="+path, "CTXKIT_EPISODIC_SHARED="+strings.Join(shared, ","))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	supersedes, conflicts := 0, 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v\n%s", i, err, outs[i])
		}
		r := childResult.FindStringSubmatch(outs[i].String())
		if r == nil {
			t.Fatalf("writer %d reported nothing:\n%s", i, outs[i])
		}
		n, _ := strconv.Atoi(r[2])
		c, _ := strconv.Atoi(r[3])
		supersedes, conflicts = supersedes+n, conflicts+c
	}
	t.Logf("%d supersessions, %d conflicts", supersedes, conflicts)

	// Every write is there.
	for i := range writerProcesses {
		var got []string
		err := store.Scan(ctx, episodic.Filter{Source: fmt.Sprintf("writer-%d", i)}, episodic.ByValidFrom, func(e *episodic.Episode) bool {
			got = append(got, e.Content)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		var want []string
		for j := range writesPerWriter() {
			want = append(want, fmt.Sprintf("writer %d statement %03d", i, j))
		}
		if !slices.Equal(got, want) {
			t.Errorf("writer %d: %d statements found, want %d", i, len(got), len(want))
		}
	}
	// Each successful supersession is one statement; no statement has two
	// successors or two closing versions.
	recs := map[string]*episodic.Record{}
	if err := store.Export(ctx, func(r *episodic.Record) error {
		recs[r.Statement.ID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := sharedEpisodes + writerProcesses*writesPerWriter() + supersedes; len(recs) != want {
		t.Errorf("%d statements, want %d", len(recs), want)
	}
	successors := map[string][]string{}
	for id, r := range recs {
		if p := r.Statement.Supersedes; p != "" {
			successors[p] = append(successors[p], id)
		}
		superseded, current := 0, 0
		for _, v := range r.Versions {
			if v.State == episodic.Superseded {
				superseded++
			}
			if v.ClosedAt == nil {
				current++
			}
		}
		if superseded > 1 || current != 1 {
			t.Errorf("%s: %d superseded versions, %d current ones", id, superseded, current)
		}
	}
	for p, s := range successors {
		if len(s) != 1 {
			t.Errorf("%s superseded %d times: %v", p, len(s), s)
		}
	}
	// Each shared statement heads one chain, of which only the newest
	// statement is open; together the chains hold every supersession.
	inChains := 0
	for _, id := range shared {
		chain, err := m.History(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		inChains += len(chain) - 1
		for i, r := range chain {
			e, err := m.Get(ctx, r.Statement.ID)
			if err != nil {
				t.Fatal(err)
			}
			if last := i == len(chain)-1; e.IsOpen() != last {
				t.Errorf("chain of %s: statement %d of %d (%s) is %s", id, i+1, len(chain), e.ID, e.State)
			}
		}
		if len(chain) < 2 {
			t.Errorf("shared statement %s was never superseded", id)
		}
	}
	if inChains != supersedes {
		t.Errorf("the chains hold %d supersessions, the writers made %d", inChains, supersedes)
	}
}

// writerChild is one writer process.
func writerChild(t *testing.T, child, path string, shared []string) {
	ctx := t.Context()
	store, err := sqliteepisodic.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := episodic.New(store, episodic.Options{})
	supersedes, conflicts := 0, 0
	supersede := func(id string) {
		_, err := m.Supersede(ctx, id, episodic.Successor{Content: fmt.Sprintf("writer %s replaces %s", child, id)})
		switch {
		case err == nil:
			supersedes++
		case errors.Is(err, episodic.ErrConflict) && strings.Contains(err.Error(), "superseded by"):
			conflicts++
		default:
			t.Fatalf("supersede %s: %v", id, err)
		}
	}
	period := writesPerWriter() / 6
	for j := range writesPerWriter() {
		if _, err := m.Write(ctx, episodic.Write{Content: fmt.Sprintf("writer %s statement %03d", child, j), Source: "writer-" + child}); err != nil {
			t.Fatalf("write %d: %v", j, err)
		}
		if j%period != 0 {
			continue
		}
		switch (j / period) % 2 {
		case 0:
			// The shared statements themselves: one writer wins each.
			for _, id := range shared {
				supersede(id)
			}
		case 1:
			// The newest statement of each chain.
			for _, id := range shared {
				chain, err := m.History(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				supersede(chain[len(chain)-1].Statement.ID)
			}
		}
	}
	fmt.Printf("episodic-child %s supersedes=%d conflicts=%d\n", child, supersedes, conflicts)
}
