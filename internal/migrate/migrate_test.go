package migrate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeDB is an engine over a state in memory. Its lock is a mutex; a
// transaction works on a copy of the state that Locked installs on commit.
type fakeDB struct {
	lock  sync.Mutex
	mu    sync.Mutex // guards state
	state State
	// ran lists the steps run, committed or not.
	ran []int
	// locked counts the calls of Locked.
	locked int
	// racer, when set, runs between State and the lock: another process
	// migrating in between.
	racer func()
}

type fakeTx struct{ st State }

func (f *fakeDB) State(context.Context) (State, error) {
	f.mu.Lock()
	st := f.state
	f.mu.Unlock()
	if f.racer != nil {
		f.racer()
	}
	return st, nil
}

func (f *fakeDB) Locked(_ context.Context, fn func(tx *fakeTx) error) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.mu.Lock()
	f.locked++
	tx := &fakeTx{st: f.state}
	f.mu.Unlock()
	if err := fn(tx); err != nil {
		return err
	}
	f.mu.Lock()
	f.state = tx.st
	f.mu.Unlock()
	return nil
}

func (f *fakeDB) StateTx(_ context.Context, tx *fakeTx) (State, error) { return tx.st, nil }

func (f *fakeDB) Record(_ context.Context, tx *fakeTx, v int) error {
	tx.st.Version, tx.st.Owner, tx.st.Empty = v, Ours, false
	return nil
}

// schema returns a schema of n steps that record themselves in f.ran.
func (f *fakeDB) schema(n, unmarked int) Schema[*fakeTx] {
	s := Schema[*fakeTx]{Name: "test store", Unmarked: unmarked}
	for i := range n {
		s.Steps = append(s.Steps, func(context.Context, *fakeTx) error {
			f.mu.Lock()
			f.ran = append(f.ran, i+1)
			f.mu.Unlock()
			return nil
		})
	}
	return s
}

func TestRun(t *testing.T) {
	fresh := State{Empty: true}
	for _, tc := range []struct {
		name     string
		state    State
		steps    int
		unmarked int
		ran      []int // steps run
		locked   bool  // whether the lock was taken
		err      error
		want     State // the state after, when err is nil
	}{
		{name: "new database", state: fresh, steps: 3, ran: []int{1, 2, 3}, locked: true, want: State{Version: 3, Owner: Ours}},
		{name: "current: no lock", state: State{Version: 3, Owner: Ours}, steps: 3, want: State{Version: 3, Owner: Ours}},
		{name: "behind", state: State{Version: 1, Owner: Ours}, steps: 3, ran: []int{2, 3}, locked: true, want: State{Version: 3, Owner: Ours}},
		{name: "newer", state: State{Version: 4, Owner: Ours}, steps: 3, err: ErrNewer},
		{name: "foreign mark", state: State{Version: 3, Owner: Foreign}, steps: 3, err: ErrForeign},
		{name: "unmarked with objects", state: State{Owner: Unmarked}, steps: 3, err: ErrForeign},
		{name: "unmarked with a version", state: State{Version: 1, Owner: Unmarked}, steps: 3, err: ErrForeign},
		{name: "unmarked, written before the mark: marked", state: State{Version: 2, Owner: Unmarked}, steps: 2, unmarked: 2, locked: true, want: State{Version: 2, Owner: Ours}},
		{name: "unmarked, older than the mark: migrated and marked", state: State{Version: 1, Owner: Unmarked}, steps: 3, unmarked: 2, ran: []int{2, 3}, locked: true, want: State{Version: 3, Owner: Ours}},
		{name: "unmarked past the mark's introduction", state: State{Version: 3, Owner: Unmarked}, steps: 3, unmarked: 2, err: ErrForeign},
		{name: "no steps, new database: marked", state: fresh, locked: true, want: State{Owner: Ours}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeDB{state: tc.state}
			err := Run(t.Context(), f, f.schema(tc.steps, tc.unmarked))
			if !errors.Is(err, tc.err) {
				t.Fatalf("Run: %v, want %v", err, tc.err)
			}
			if !slices.Equal(f.ran, tc.ran) {
				t.Errorf("steps run: %v, want %v", f.ran, tc.ran)
			}
			if (f.locked > 0) != tc.locked {
				t.Errorf("lock taken %d times, want it taken: %v", f.locked, tc.locked)
			}
			if err == nil && f.state != tc.want {
				t.Errorf("state after: %+v, want %+v", f.state, tc.want)
			}
			if err != nil && f.state != tc.state {
				t.Errorf("a refused database changed: %+v, was %+v", f.state, tc.state)
			}
		})
	}
}

// TestRunRechecksInsideTheLock: the state read before the lock is stale
// (another process migrated in between); the steps must not run again.
func TestRunRechecksInsideTheLock(t *testing.T) {
	f := &fakeDB{state: State{Empty: true}}
	f.racer = func() {
		f.mu.Lock()
		f.state = State{Version: 2, Owner: Ours}
		f.mu.Unlock()
	}
	if err := Run(t.Context(), f, f.schema(2, 0)); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 0 {
		t.Errorf("steps %v ran again over a database migrated meanwhile", f.ran)
	}
	// And a newer version found inside the lock is refused.
	f = &fakeDB{state: State{Empty: true}}
	f.racer = func() {
		f.mu.Lock()
		f.state = State{Version: 5, Owner: Ours}
		f.mu.Unlock()
	}
	if err := Run(t.Context(), f, f.schema(2, 0)); !errors.Is(err, ErrNewer) {
		t.Errorf("a newer version found under the lock: %v", err)
	}
}

// TestRunRecognize: an unmarked database from before the marks is migrated
// only when the schema recognises it.
func TestRunRecognize(t *testing.T) {
	for _, known := range []bool{true, false} {
		f := &fakeDB{state: State{Version: 1, Owner: Unmarked}}
		s := f.schema(2, 1)
		s.Recognize = func(context.Context, *fakeTx) (bool, error) { return known, nil }
		err := Run(t.Context(), f, s)
		switch {
		case known && (err != nil || f.state != State{Version: 2, Owner: Ours}):
			t.Errorf("recognised: %v, state %+v", err, f.state)
		case !known && (!errors.Is(err, ErrForeign) || len(f.ran) != 0 || f.state != State{Version: 1, Owner: Unmarked}):
			t.Errorf("not recognised: %v, steps %v, state %+v", err, f.ran, f.state)
		}
	}
	// A new database is not asked about.
	f := &fakeDB{state: State{Empty: true}}
	s := f.schema(2, 1)
	s.Recognize = func(context.Context, *fakeTx) (bool, error) { return false, nil }
	if err := Run(t.Context(), f, s); err != nil {
		t.Errorf("new database: %v", err)
	}
}

// TestRunConcurrently runs the steps of one new database from many
// goroutines at once: each must succeed and each step run once.
func TestRunConcurrently(t *testing.T) {
	f := &fakeDB{state: State{Empty: true}}
	s := f.schema(3, 0)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if err := Run(t.Context(), f, s); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	wg.Wait()
	if !slices.Equal(f.ran, []int{1, 2, 3}) {
		t.Errorf("steps run: %v, want each once", f.ran)
	}
}

// TestRunStepFails: a failing step rolls the whole migration back and names
// the version it was to reach.
func TestRunStepFails(t *testing.T) {
	f := &fakeDB{state: State{Version: 1, Owner: Ours}}
	s := f.schema(3, 0)
	boom := errors.New("boom")
	s.Steps[2] = func(context.Context, *fakeTx) error { return boom }
	err := Run(t.Context(), f, s)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("Run: %v, want boom at version 3", err)
	}
	if f.state != (State{Version: 1, Owner: Ours}) {
		t.Errorf("state after a failed step: %+v", f.state)
	}
}

// TestErrorsNameTheVersions checks the messages a user reads.
func TestErrorsNameTheVersions(t *testing.T) {
	f := &fakeDB{state: State{Version: 7, Owner: Ours}}
	err := Run(t.Context(), f, f.schema(3, 0))
	for _, want := range []string{"test store", "version 7", "up to 3", "upgrade ctxkit"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("newer schema: %v, want it to say %q", err, want)
		}
	}
	f = &fakeDB{state: State{Owner: Foreign, Mark: "mark 0x1"}}
	err = Run(t.Context(), f, f.schema(3, 0))
	for _, want := range []string{"not a test store", "mark 0x1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("foreign database: %v, want it to say %q", err, want)
		}
	}
}
