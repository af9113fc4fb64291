package storetest

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// RunRegistry runs the registry suite, each subtest against a new, empty
// registry returned by open; open registers whatever cleanup the registry
// needs. The suite puts every vault's folder in a temporary directory of
// its own (created, as the vault layer creates it before recording the
// vault), so a registry that keeps files inside vault folders can.
//
// Times are compared at microsecond precision, as in [Run].
func RunRegistry(t *testing.T, open func(t *testing.T) store.Registry) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Registry)
	}{
		{"CreateVault", testCreateVault},
		{"VaultIDsNeverReused", testVaultIDsNeverReused},
		{"CreateCheck", testCreateCheck},
		{"CreateCheckAtomic", testCreateCheckAtomic},
		{"UpdateVault", testUpdateVault},
		{"UpdateVaultConcurrent", testUpdateVaultConcurrent},
		{"DeleteVault", testDeleteVault},
		{"VaultIsolation", testVaultIsolation},
		{"Agents", testAgents},
		{"AgentsConcurrent", testAgentsConcurrent},
		{"RevokedAgents", testRevokedAgents},
		{"Pins", testPins},
		{"DocMeta", testDocMeta},
		{"DocMetaConcurrent", testDocMetaConcurrent},
		{"Audit", testAudit},
		{"DeletedVaultData", testDeletedVaultData},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// vaultIn returns the record of a new vault named name in scope, whose
// folder, created, is in base.
func vaultIn(t *testing.T, base, name, scope string) store.VaultRecord {
	t.Helper()
	dir := filepath.Join(base, scope+"-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return store.VaultRecord{Name: name, Type: "semantic", Scope: scope, Dir: dir, EmbeddingModel: "none"}
}

func mustCreateVault(t *testing.T, r store.Registry, v store.VaultRecord) store.VaultRecord {
	t.Helper()
	got, err := r.CreateVault(t.Context(), v, nil)
	if err != nil {
		t.Fatalf("CreateVault(%s %q): %v", v.Scope, v.Name, err)
	}
	return got
}

func mustVault(t *testing.T, r store.Registry, id string) store.VaultRecord {
	t.Helper()
	v, err := r.Vault(t.Context(), id)
	if err != nil {
		t.Fatalf("Vault(%s): %v", id, err)
	}
	return v
}

// sameVault compares records, a nil map of grants equal to an empty one.
func sameVault(a, b store.VaultRecord) bool {
	norm := func(v store.VaultRecord) store.VaultRecord {
		if len(v.Grants) == 0 {
			v.Grants = nil
		}
		return v
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func checkVault(t *testing.T, what string, got, want store.VaultRecord) {
	t.Helper()
	if !sameVault(got, want) {
		t.Errorf("%s = %+v\nwant %+v", what, got, want)
	}
}

func vaultNames(vs []store.VaultRecord) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Scope + ":" + v.Name
	}
	return out
}

func mustVaults(t *testing.T, r store.Registry) []store.VaultRecord {
	t.Helper()
	vs, err := r.Vaults(t.Context())
	if err != nil {
		t.Fatalf("Vaults: %v", err)
	}
	return vs
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: %v, want an error wrapping store.ErrNotFound", what, err)
	}
}

func testCreateVault(t *testing.T, r store.Registry) {
	ctx := t.Context()
	base := t.TempDir()
	in := vaultIn(t, base, "Notes", store.ScopeLocal)
	in.Restricted = true
	in.Grants = map[string]store.Grant{"bot": {}, "reader": {ReadOnly: true}}
	in.EmbeddingModel = "ollama:nomic-embed-text"
	notes := mustCreateVault(t, r, in)
	if notes.ID == "" {
		t.Fatal("CreateVault assigned no id")
	}
	want := in
	want.ID = notes.ID
	checkVault(t, "CreateVault", notes, want)
	checkVault(t, "Vault", mustVault(t, r, notes.ID), want)

	// The same name in the same scope exists, whatever its case; in the
	// other scope it is another vault.
	for _, name := range []string{"Notes", "notes", "NOTES"} {
		v := vaultIn(t, base, name+"-again", store.ScopeLocal)
		v.Name = name
		if _, err := r.CreateVault(ctx, v, nil); !errors.Is(err, store.ErrExists) {
			t.Errorf("CreateVault(local %q) beside local \"Notes\": %v, want ErrExists", name, err)
		}
	}
	global := mustCreateVault(t, r, vaultIn(t, base, "notes", store.ScopeGlobal))
	skills := mustCreateVault(t, r, store.VaultRecord{Name: "a-skills", Type: "skill", Scope: store.ScopeGlobal, Dir: vaultIn(t, base, "a-skills", store.ScopeGlobal).Dir})
	zeta := mustCreateVault(t, r, vaultIn(t, base, "zeta", store.ScopeLocal))
	alpha := mustCreateVault(t, r, vaultIn(t, base, "Alpha", store.ScopeLocal))

	ids := map[string]bool{}
	for _, v := range []store.VaultRecord{notes, global, skills, zeta, alpha} {
		if ids[v.ID] {
			t.Errorf("id %s given twice", v.ID)
		}
		ids[v.ID] = true
		checkVault(t, "Vault("+v.Name+")", mustVault(t, r, v.ID), v)
	}
	// Local vaults first, each scope by name.
	all := mustVaults(t, r)
	want2 := []string{"local:Alpha", "local:Notes", "local:zeta", "global:a-skills", "global:notes"}
	if got := vaultNames(all); !slices.Equal(got, want2) {
		t.Errorf("Vaults = %v, want %v", got, want2)
	}
	for _, v := range all {
		if !ids[v.ID] {
			t.Errorf("Vaults holds %s %q with an id CreateVault did not return: %s", v.Scope, v.Name, v.ID)
		}
	}
	_, err := r.Vault(ctx, "no-such-vault")
	wantNotFound(t, "Vault of an unknown id", err)
}

func testVaultIDsNeverReused(t *testing.T, r store.Registry) {
	ctx := t.Context()
	in := vaultIn(t, t.TempDir(), "notes", store.ScopeLocal)
	seen := map[string]bool{}
	var last store.VaultRecord
	for i := range 4 {
		v := mustCreateVault(t, r, in)
		if seen[v.ID] {
			t.Fatalf("round %d: id %s given again to a vault of the same name and folder", i, v.ID)
		}
		seen[v.ID] = true
		if _, err := r.DeleteVault(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		last = v
	}
	now := mustCreateVault(t, r, in)
	_, err := r.Vault(ctx, last.ID)
	wantNotFound(t, "Vault of a deleted vault's id, after one of its name was created again", err)
	_, err = r.UpdateVault(ctx, last.ID, func(v *store.VaultRecord) error { v.Restricted = true; return nil })
	wantNotFound(t, "UpdateVault of a deleted vault's id", err)
	_, err = r.DeleteVault(ctx, last.ID)
	wantNotFound(t, "DeleteVault of a deleted vault's id", err)
	if v := mustVault(t, r, now.ID); v.Restricted {
		t.Error("an update of the deleted vault's id changed the new vault of its name")
	}
}

func testCreateCheck(t *testing.T, r store.Registry) {
	ctx := t.Context()
	base := t.TempDir()
	a := mustCreateVault(t, r, vaultIn(t, base, "a", store.ScopeLocal))
	b := mustCreateVault(t, r, vaultIn(t, base, "b", store.ScopeGlobal))
	before := mustVaults(t, r)

	refused := errors.New("refused by the check")
	var saw []store.VaultRecord
	_, err := r.CreateVault(ctx, vaultIn(t, base, "c", store.ScopeLocal), func(existing []store.VaultRecord) error {
		saw = slices.Clone(existing)
		return fmt.Errorf("wrapped: %w", refused)
	})
	if !errors.Is(err, refused) {
		t.Fatalf("CreateVault whose check fails: %v, want the check's error", err)
	}
	slices.SortFunc(saw, func(x, y store.VaultRecord) int { return strings.Compare(x.Name, y.Name) })
	if len(saw) != 2 || !sameVault(saw[0], a) || !sameVault(saw[1], b) {
		t.Errorf("the check saw %+v, want every vault recorded: %+v and %+v", saw, a, b)
	}
	if after := mustVaults(t, r); !slices.EqualFunc(after, before, sameVault) {
		t.Errorf("a create refused by its check changed the vaults: %v, was %v", vaultNames(after), vaultNames(before))
	}
	// The name is still free, in both scopes.
	for _, scope := range []string{store.ScopeLocal, store.ScopeGlobal} {
		calls := 0
		c, err := r.CreateVault(ctx, vaultIn(t, base, "c", scope), func(existing []store.VaultRecord) error {
			calls++
			return nil
		})
		if err != nil || calls != 1 {
			t.Fatalf("CreateVault(%s c) whose check passes: %v after %d calls of the check", scope, err, calls)
		}
		checkVault(t, "Vault(c)", mustVault(t, r, c.ID), c)
	}
}

// testCreateCheckAtomic creates vaults of different names and scopes at
// the same time, all in one folder, each with a check refusing a folder
// that is taken: exactly one is created, since each check runs with every
// vault recorded at the moment its record is written.
func testCreateCheckAtomic(t *testing.T, r store.Registry) {
	dir := vaultIn(t, t.TempDir(), "shared", store.ScopeLocal).Dir
	taken := errors.New("folder taken")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			scope := []string{store.ScopeLocal, store.ScopeGlobal}[i%2]
			v := store.VaultRecord{Name: fmt.Sprintf("v%d", i), Type: "semantic", Scope: scope, Dir: dir}
			_, errs[i] = r.CreateVault(t.Context(), v, func(existing []store.VaultRecord) error {
				for _, o := range existing {
					if o.Dir == dir {
						return taken
					}
				}
				return nil
			})
		})
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, taken):
			t.Errorf("create %d: %v", i, err)
		}
	}
	if got := mustVaults(t, r); created != 1 || len(got) != 1 {
		t.Errorf("%d creates succeeded, %d vaults recorded (%v); want one of each", created, len(got), vaultNames(got))
	}
}

func testUpdateVault(t *testing.T, r store.Registry) {
	ctx := t.Context()
	base := t.TempDir()
	v := mustCreateVault(t, r, vaultIn(t, base, "team", store.ScopeLocal))
	other := mustCreateVault(t, r, vaultIn(t, base, "other", store.ScopeLocal))

	got, err := r.UpdateVault(ctx, v.ID, func(rec *store.VaultRecord) error {
		if !sameVault(*rec, v) {
			t.Errorf("UpdateVault's fn got %+v, want %+v", *rec, v)
		}
		rec.Restricted = true
		rec.Grants["writer"] = store.Grant{}
		rec.Grants["reader"] = store.Grant{ReadOnly: true}
		rec.EmbeddingModel = "builtin:x"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := v
	want.Restricted, want.EmbeddingModel = true, "builtin:x"
	want.Grants = map[string]store.Grant{"writer": {}, "reader": {ReadOnly: true}}
	checkVault(t, "UpdateVault", got, want)
	checkVault(t, "Vault after UpdateVault", mustVault(t, r, v.ID), want)
	checkVault(t, "the other vault after UpdateVault", mustVault(t, r, other.ID), other)

	// fn's error is returned and nothing changes.
	refused := errors.New("refused by fn")
	_, err = r.UpdateVault(ctx, v.ID, func(rec *store.VaultRecord) error {
		rec.Restricted = false
		delete(rec.Grants, "writer")
		return refused
	})
	if !errors.Is(err, refused) {
		t.Errorf("UpdateVault whose fn fails: %v, want fn's error", err)
	}
	checkVault(t, "Vault after a failed UpdateVault", mustVault(t, r, v.ID), want)

	// Grants can all go.
	got, err = r.UpdateVault(ctx, v.ID, func(rec *store.VaultRecord) error {
		rec.Restricted = false
		rec.Grants = nil
		return nil
	})
	want.Restricted, want.Grants = false, nil
	if err != nil {
		t.Fatal(err)
	}
	checkVault(t, "UpdateVault dropping every grant", got, want)
	checkVault(t, "Vault after dropping every grant", mustVault(t, r, v.ID), want)

	_, err = r.UpdateVault(ctx, "no-such-vault", func(*store.VaultRecord) error {
		t.Error("UpdateVault ran fn for an unknown id")
		return nil
	})
	wantNotFound(t, "UpdateVault of an unknown id", err)
}

// testUpdateVaultConcurrent attaches agents to one vault from many
// goroutines at once: every attach lands.
func testUpdateVaultConcurrent(t *testing.T, r store.Registry) {
	v := mustCreateVault(t, r, vaultIn(t, t.TempDir(), "team", store.ScopeGlobal))
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := r.UpdateVault(t.Context(), v.ID, func(rec *store.VaultRecord) error {
				rec.Restricted = true
				if rec.Grants == nil {
					rec.Grants = map[string]store.Grant{}
				}
				rec.Grants[fmt.Sprintf("agent%d", i)] = store.Grant{ReadOnly: i%2 == 0}
				return nil
			})
			if err != nil {
				t.Errorf("attach %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got := mustVault(t, r, v.ID)
	if len(got.Grants) != n || !got.Restricted {
		t.Fatalf("after %d concurrent attaches: restricted=%v, grants %v", n, got.Restricted, slices.Sorted(maps.Keys(got.Grants)))
	}
	for i := range n {
		if g, ok := got.Grants[fmt.Sprintf("agent%d", i)]; !ok || g.ReadOnly != (i%2 == 0) {
			t.Errorf("agent%d: grant %+v (present %v)", i, g, ok)
		}
	}
}

func testDeleteVault(t *testing.T, r store.Registry) {
	ctx := t.Context()
	base := t.TempDir()
	in := vaultIn(t, base, "team", store.ScopeLocal)
	in.Restricted, in.Grants = true, map[string]store.Grant{"bot": {ReadOnly: true}}
	v := mustCreateVault(t, r, in)
	keep := mustCreateVault(t, r, vaultIn(t, base, "team", store.ScopeGlobal))
	last, err := r.DeleteVault(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkVault(t, "DeleteVault's last record", last, v)
	_, err = r.Vault(ctx, v.ID)
	wantNotFound(t, "Vault after DeleteVault", err)
	_, err = r.DeleteVault(ctx, v.ID)
	wantNotFound(t, "DeleteVault twice", err)
	if got := vaultNames(mustVaults(t, r)); !slices.Equal(got, []string{"global:team"}) {
		t.Errorf("Vaults after DeleteVault = %v, want only the global vault of the name", got)
	}
	checkVault(t, "the other scope's vault of the name", mustVault(t, r, keep.ID), keep)
	// The name is free again.
	again := mustCreateVault(t, r, vaultIn(t, base, "team", store.ScopeLocal))
	if again.ID == v.ID {
		t.Errorf("the deleted vault's id %s was given again", v.ID)
	}
}

// testVaultIsolation checks that the registry neither keeps the caller's
// maps nor hands out its own.
func testVaultIsolation(t *testing.T, r store.Registry) {
	ctx := t.Context()
	in := vaultIn(t, t.TempDir(), "team", store.ScopeLocal)
	in.Restricted, in.Grants = true, map[string]store.Grant{"bot": {}}
	v := mustCreateVault(t, r, in)
	in.Grants["intruder"] = store.Grant{}
	v.Grants["intruder2"] = store.Grant{}
	got := mustVault(t, r, v.ID)
	if len(got.Grants) != 1 {
		t.Fatalf("grants after changing CreateVault's argument and result: %v", got.Grants)
	}
	got.Grants["intruder3"] = store.Grant{}
	var kept map[string]store.Grant
	up, err := r.UpdateVault(ctx, v.ID, func(rec *store.VaultRecord) error {
		kept = rec.Grants
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kept["intruder4"] = store.Grant{}
	up.Grants["intruder5"] = store.Grant{}
	all := mustVaults(t, r)
	all[0].Grants["intruder6"] = store.Grant{}
	if got := mustVault(t, r, v.ID); len(got.Grants) != 1 {
		t.Errorf("grants after changing what the registry handed out: %v", slices.Sorted(maps.Keys(got.Grants)))
	}
}

func testAgents(t *testing.T, r store.Registry) {
	ctx := t.Context()
	bot := store.AgentRecord{Name: "bot", TokenHash: "hash-bot", Created: t0}
	other := store.AgentRecord{Name: "another", TokenHash: "hash-another", Created: t0.Add(time.Minute)}
	for _, a := range []store.AgentRecord{bot, other} {
		if err := r.CreateAgent(ctx, a); err != nil {
			t.Fatalf("CreateAgent(%s): %v", a.Name, err)
		}
	}
	if err := r.CreateAgent(ctx, store.AgentRecord{Name: "bot", TokenHash: "hash-new", Created: t0}); !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateAgent of an existing name: %v, want ErrExists", err)
	}
	checkAgents(t, r, other, bot)

	got, err := r.AgentByToken(ctx, "hash-bot")
	if err != nil || !sameAgent(got, bot) {
		t.Errorf("AgentByToken = %+v, %v; want %+v", got, err, bot)
	}
	for _, h := range []string{"hash-new", "hash-bo", "hash-bott", "", "HASH-BOT"} {
		_, err := r.AgentByToken(ctx, h)
		wantNotFound(t, fmt.Sprintf("AgentByToken(%q)", h), err)
	}

	used := t0.Add(time.Hour)
	if err := r.TouchAgent(ctx, "bot", used); err != nil {
		t.Fatal(err)
	}
	bot.LastUsed = used
	if got, err := r.AgentByToken(ctx, "hash-bot"); err != nil || !sameAgent(got, bot) {
		t.Errorf("AgentByToken after TouchAgent = %+v, %v; want %+v", got, err, bot)
	}
	checkAgents(t, r, other, bot)
	wantNotFound(t, "TouchAgent of an unknown agent", r.TouchAgent(ctx, "nobody", used))

	if err := r.RevokeAgent(ctx, "bot", used); err != nil {
		t.Fatal(err)
	}
	_, err = r.AgentByToken(ctx, "hash-bot")
	wantNotFound(t, "AgentByToken of a revoked agent", err)
	checkAgents(t, r, other)
	wantNotFound(t, "RevokeAgent twice", r.RevokeAgent(ctx, "bot", used))
	wantNotFound(t, "RevokeAgent of an unknown agent", r.RevokeAgent(ctx, "nobody", used))
	wantNotFound(t, "TouchAgent of a revoked agent", r.TouchAgent(ctx, "bot", used))
	// A revoked name is never given out again, whatever the token.
	if err := r.CreateAgent(ctx, store.AgentRecord{Name: "bot", TokenHash: "hash-fresh", Created: used}); !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateAgent of a revoked name: %v, want ErrExists", err)
	}
	checkAgents(t, r, other)
}

// testRevokedAgents: RevokedAgents gives every revoked name with the time
// given to RevokeAgent, and none of the live agents.
func testRevokedAgents(t *testing.T, r store.Registry) {
	ctx := t.Context()
	revoked := func() map[string]time.Time {
		t.Helper()
		got, err := r.RevokedAgents(ctx)
		if err != nil {
			t.Fatalf("RevokedAgents: %v", err)
		}
		return got
	}
	if got := revoked(); len(got) != 0 {
		t.Errorf("RevokedAgents of a new registry = %v, want none", got)
	}
	for i, name := range []string{"alpha", "beta", "gamma"} {
		if err := r.CreateAgent(ctx, store.AgentRecord{Name: name, TokenHash: "hash-" + name, Created: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]time.Time{"alpha": t0.Add(time.Hour), "gamma": t0.Add(2*time.Hour + 7*time.Microsecond)}
	for name, at := range want {
		if err := r.RevokeAgent(ctx, name, at); err != nil {
			t.Fatal(err)
		}
	}
	got := revoked()
	if !maps.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("RevokedAgents = %v, want %v", got, want)
	}
	got["beta"] = t0 // the registry's own map is not handed out
	if got := revoked(); !maps.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("RevokedAgents after changing what it handed out = %v, want %v", got, want)
	}
	checkAgents(t, r, store.AgentRecord{Name: "beta", TokenHash: "hash-beta", Created: t0.Add(time.Minute)})
}

func sameAgent(a, b store.AgentRecord) bool {
	return a.Name == b.Name && a.TokenHash == b.TokenHash && a.Created.Equal(b.Created) && a.LastUsed.Equal(b.LastUsed)
}

// checkAgents checks Agents against want, in order.
func checkAgents(t *testing.T, r store.Registry, want ...store.AgentRecord) {
	t.Helper()
	got, err := r.Agents(t.Context())
	if err != nil {
		t.Fatalf("Agents: %v", err)
	}
	if !slices.EqualFunc(got, want, sameAgent) {
		t.Errorf("Agents = %+v\nwant %+v", got, want)
	}
}

func testAgentsConcurrent(t *testing.T, r store.Registry) {
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a := store.AgentRecord{Name: fmt.Sprintf("a%02d", i), TokenHash: fmt.Sprintf("hash%d", i), Created: t0}
			if err := r.CreateAgent(t.Context(), a); err != nil {
				t.Errorf("CreateAgent(%s): %v", a.Name, err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("a%02d", i)
			if err := r.TouchAgent(t.Context(), name, t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Errorf("TouchAgent(%s): %v", name, err)
			}
		})
	}
	wg.Wait()
	var want []store.AgentRecord
	for i := range n {
		want = append(want, store.AgentRecord{Name: fmt.Sprintf("a%02d", i), TokenHash: fmt.Sprintf("hash%d", i),
			Created: t0, LastUsed: t0.Add(time.Duration(i) * time.Second)})
	}
	checkAgents(t, r, want...)
}

func testPins(t *testing.T, r store.Registry) {
	ctx := t.Context()
	base := t.TempDir()
	a := mustCreateVault(t, r, vaultIn(t, base, "a", store.ScopeLocal))
	b := mustCreateVault(t, r, vaultIn(t, base, "b", store.ScopeGlobal))
	checkPin := func(what, id string, want *store.Pin) {
		t.Helper()
		p, ok, err := r.Pin(ctx, id)
		switch {
		case err != nil:
			t.Errorf("%s: Pin: %v", what, err)
		case want == nil && ok:
			t.Errorf("%s: Pin = %+v, want none", what, p)
		case want != nil && (!ok || p != *want):
			t.Errorf("%s: Pin = %+v (set %v), want %+v", what, p, ok, *want)
		}
	}
	checkPin("a new vault", a.ID, nil)
	set := func(id string, p *store.Pin) {
		t.Helper()
		if err := r.SetPin(ctx, id, p); err != nil {
			t.Fatalf("SetPin(%s, %+v): %v", id, p, err)
		}
	}
	set(a.ID, &store.Pin{Model: "ollama:nomic-embed-text", Dim: 768})
	checkPin("after SetPin", a.ID, &store.Pin{Model: "ollama:nomic-embed-text", Dim: 768})
	checkPin("the other vault", b.ID, nil)
	set(b.ID, &store.Pin{Model: "builtin:m", Dim: 384})
	set(a.ID, &store.Pin{Model: "openai:text-embedding-3-small", Dim: 1536})
	checkPin("after a second SetPin", a.ID, &store.Pin{Model: "openai:text-embedding-3-small", Dim: 1536})
	set(a.ID, nil)
	checkPin("after SetPin(nil)", a.ID, nil)
	set(a.ID, nil)
	checkPin("after SetPin(nil) twice", a.ID, nil)
	checkPin("the other vault at the end", b.ID, &store.Pin{Model: "builtin:m", Dim: 384})

	_, _, err := r.Pin(ctx, "no-such-vault")
	wantNotFound(t, "Pin of an unknown vault", err)
	wantNotFound(t, "SetPin of an unknown vault", r.SetPin(ctx, "no-such-vault", &store.Pin{Model: "m", Dim: 1}))
}

func checkDocMeta(t *testing.T, r store.Registry, id string, want map[string]map[string]string) {
	t.Helper()
	got, err := r.DocMeta(t.Context(), id)
	if err != nil {
		t.Fatalf("DocMeta: %v", err)
	}
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Errorf("DocMeta = %v, want %v", got, want)
	}
}

func testDocMeta(t *testing.T, r store.Registry) {
	ctx := t.Context()
	base := t.TempDir()
	a := mustCreateVault(t, r, vaultIn(t, base, "a", store.ScopeLocal))
	b := mustCreateVault(t, r, vaultIn(t, base, "b", store.ScopeLocal))
	checkDocMeta(t, r, a.ID, nil)
	set := func(id string, m map[string]map[string]string) {
		t.Helper()
		if err := r.SetDocMeta(ctx, id, m); err != nil {
			t.Fatalf("SetDocMeta(%v): %v", m, err)
		}
	}
	in := map[string]map[string]string{
		"notes/plan.md":     {"author": "ann", "status": "draft"},
		"notes/ünï cøde.md": {"tags": "a,b", "": "empty key"},
		"top.md":            {},
	}
	set(a.ID, in)
	want := map[string]map[string]string{
		"notes/plan.md":     {"author": "ann", "status": "draft"},
		"notes/ünï cøde.md": {"tags": "a,b", "": "empty key"},
		"top.md":            {},
	}
	in["notes/plan.md"]["author"] = "changed after SetDocMeta"
	checkDocMeta(t, r, a.ID, want)
	checkDocMeta(t, r, b.ID, nil)

	// A path's map is replaced whole; other paths stay; nil removes.
	set(a.ID, map[string]map[string]string{"notes/plan.md": {"status": "final"}, "top.md": nil, "new.md": {"k": "v"}})
	want = map[string]map[string]string{
		"notes/plan.md":     {"status": "final"},
		"notes/ünï cøde.md": {"tags": "a,b", "": "empty key"},
		"new.md":            {"k": "v"},
	}
	checkDocMeta(t, r, a.ID, want)
	set(a.ID, map[string]map[string]string{"never-set.md": nil})
	checkDocMeta(t, r, a.ID, want)

	got, _ := r.DocMeta(ctx, a.ID)
	got["new.md"]["k"] = "changed after DocMeta"
	got["added.md"] = map[string]string{}
	checkDocMeta(t, r, a.ID, want)

	_, err := r.DocMeta(ctx, "no-such-vault")
	wantNotFound(t, "DocMeta of an unknown vault", err)
	wantNotFound(t, "SetDocMeta of an unknown vault", r.SetDocMeta(ctx, "no-such-vault", map[string]map[string]string{"a": {}}))
}

// testDocMetaConcurrent sets the metadata of different documents of one
// vault from many goroutines at once: none is lost.
func testDocMetaConcurrent(t *testing.T, r store.Registry) {
	v := mustCreateVault(t, r, vaultIn(t, t.TempDir(), "a", store.ScopeLocal))
	const n = 8
	want := map[string]map[string]string{}
	var wg sync.WaitGroup
	for i := range n {
		path := fmt.Sprintf("doc%d.md", i)
		want[path] = map[string]string{"writer": fmt.Sprint(i)}
		wg.Go(func() {
			if err := r.SetDocMeta(t.Context(), v.ID, map[string]map[string]string{path: {"writer": fmt.Sprint(i)}}); err != nil {
				t.Errorf("SetDocMeta(%s): %v", path, err)
			}
		})
	}
	wg.Wait()
	checkDocMeta(t, r, v.ID, want)
}

func sameEvents(a, b []store.AuditEvent) bool {
	return slices.EqualFunc(a, b, func(x, y store.AuditEvent) bool {
		x.Time, y.Time = x.Time.UTC(), y.Time.UTC()
		return reflect.DeepEqual(x, y)
	})
}

func testAudit(t *testing.T, r store.Registry) {
	ctx := t.Context()
	base := t.TempDir()
	v := mustCreateVault(t, r, vaultIn(t, base, "a", store.ScopeLocal))
	other := mustCreateVault(t, r, vaultIn(t, base, "b", store.ScopeLocal))
	if evs, err := r.Audit(ctx, v.ID, 0); err != nil || len(evs) != 0 {
		t.Errorf("Audit of a new vault = %+v, %v; want none", evs, err)
	}
	east := time.FixedZone("UTC+3", 3*3600)
	evs := []store.AuditEvent{
		{Time: t0, Agent: "owner", Action: "create", Outcome: "ok", Detail: "type=semantic"},
		{Time: t0.Add(time.Second).In(east), Agent: "bot", Action: "write-doc", Path: "notes/a.md", Outcome: "ok"},
		{Time: t0.Add(2 * time.Second), Agent: "mallory", Action: "query", Outcome: "refused", Reason: "not attached", Repeated: 41},
		{Time: t0.Add(2 * time.Second), Agent: "reader", Action: "write-doc", Path: "ünï/\"quoted\"\n.md", Outcome: "refused", Reason: "read-only grant"},
		{Time: t0.Add(-time.Hour), Agent: "owner", Action: "attach", Outcome: "ok", Detail: "agent=bot read_only=false"},
	}
	for _, e := range evs {
		if err := r.AppendAudit(ctx, v.ID, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.AppendAudit(ctx, other.ID, store.AuditEvent{Time: t0, Agent: "owner", Action: "create", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n    int
		want []store.AuditEvent
	}{{0, evs}, {-1, evs}, {5, evs}, {50, evs}, {2, evs[3:]}, {1, evs[4:]}} {
		got, err := r.Audit(ctx, v.ID, tc.n)
		if err != nil || !sameEvents(got, tc.want) {
			t.Errorf("Audit(%d) = %+v, %v\nwant (appended order, oldest first) %+v", tc.n, got, err, tc.want)
		}
	}
	if got, err := r.Audit(ctx, other.ID, 0); err != nil || len(got) != 1 {
		t.Errorf("the other vault's audit = %+v, %v; want its one event", got, err)
	}
	_, err := r.Audit(ctx, "no-such-vault", 0)
	wantNotFound(t, "Audit of an unknown vault", err)
	wantNotFound(t, "AppendAudit to an unknown vault", r.AppendAudit(ctx, "no-such-vault", evs[0]))
}

// testDeletedVaultData checks that the per-vault calls on a deleted vault
// fail with ErrNotFound and create nothing: no folder, no file, no record.
func testDeletedVaultData(t *testing.T, r store.Registry) {
	ctx := t.Context()
	v := mustCreateVault(t, r, vaultIn(t, t.TempDir(), "gone", store.ScopeLocal))
	if err := r.SetPin(ctx, v.ID, &store.Pin{Model: "m", Dim: 2}); err != nil {
		t.Fatal(err)
	}
	if err := r.SetDocMeta(ctx, v.ID, map[string]map[string]string{"a.md": {"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: t0, Agent: "owner", Action: "create", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DeleteVault(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	// What a backend that keeps files in the folder left there is for its
	// DropVault to delete; the calls below must not add to it.
	before := folderTree(t, v.Dir)
	_, _, err := r.Pin(ctx, v.ID)
	wantNotFound(t, "Pin of a deleted vault", err)
	wantNotFound(t, "SetPin of a deleted vault", r.SetPin(ctx, v.ID, &store.Pin{Model: "m", Dim: 2}))
	wantNotFound(t, "SetPin(nil) of a deleted vault", r.SetPin(ctx, v.ID, nil))
	_, err = r.DocMeta(ctx, v.ID)
	wantNotFound(t, "DocMeta of a deleted vault", err)
	wantNotFound(t, "SetDocMeta of a deleted vault", r.SetDocMeta(ctx, v.ID, map[string]map[string]string{"b.md": {"k": "v"}}))
	wantNotFound(t, "AppendAudit to a deleted vault", r.AppendAudit(ctx, v.ID, store.AuditEvent{Time: t0, Agent: "owner", Action: "x", Outcome: "ok"}))
	_, err = r.Audit(ctx, v.ID, 0)
	wantNotFound(t, "Audit of a deleted vault", err)
	if after := folderTree(t, v.Dir); !maps.Equal(after, before) {
		t.Errorf("calls on a deleted vault changed its folder:\n%v\nwas\n%v", after, before)
	}
	if all := mustVaults(t, r); len(all) != 0 {
		t.Errorf("calls on a deleted vault recorded vaults: %v", vaultNames(all))
	}
}

// folderTree describes every file and folder under dir (its path, kind,
// mode and size), to tell whether something was written there.
func folderTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fmt.Sprintf("%v %d %s", fi.Mode(), fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
