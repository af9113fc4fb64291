package fileregistry_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/fileregistry"
)

// The environment of the child processes of TestConcurrentProcesses.
const (
	childEnv = "CTXKIT_FILEREGISTRY_CHILD" // the child's name
	homeEnv  = "CTXKIT_FILEREGISTRY_HOME"
	rootEnv  = "CTXKIT_FILEREGISTRY_ROOT"
	sharedID = "vshared"
	perChild = 5 // vaults of each scope a child creates
)

// TestConcurrentProcesses runs this test binary twice at once, each
// process editing the same files: vaults of both scopes, an agent, a
// grant, document metadata and an audit line each. Nothing is lost, and
// both see the same id for a vault recorded without one.
func TestConcurrentProcesses(t *testing.T) {
	if name := os.Getenv(childEnv); name != "" {
		child(t, name)
		return
	}
	p := newProject(t)
	ctx := t.Context()
	writeFile(t, p.r.ConfigPath(store.ScopeLocal), fmt.Sprintf(`{"vaults": {
		"legacy": {"path": "legacy"},
		"shared": {"id": %q, "path": "shared"}}}`, sharedID))
	if err := os.MkdirAll(filepath.Join(p.root, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	legacy := mustVaults(t, p.r)[0]

	var cmds []*exec.Cmd
	var outs []*strings.Builder
	children := []string{"a", "b"}
	for _, name := range children {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestConcurrentProcesses$")
		cmd.Env = append(os.Environ(), childEnv+"="+name, homeEnv+"="+p.home, rootEnv+"="+p.root)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %s: %v\n%s", children[i], err, outs[i])
		}
		sc := bufio.NewScanner(strings.NewReader(outs[i].String()))
		seen := ""
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "legacy-id="); ok {
				seen = id
			}
		}
		if seen != legacy.ID {
			t.Errorf("child %s saw the legacy vault's id %q, this process %q", children[i], seen, legacy.ID)
		}
	}

	if got := mustVaults(t, p.r); len(got) != 2+2*2*perChild {
		t.Errorf("%d vaults, want %d: %v", len(got), 2+2*2*perChild, vaultNames(got))
	}
	agents, err := p.r.Agents(ctx)
	if err != nil || len(agents) != len(children) {
		t.Errorf("agents %+v, %v; want one per child", agents, err)
	}
	shared, err := p.r.Vault(ctx, sharedID)
	if err != nil || len(shared.Grants) != len(children) {
		t.Errorf("shared vault %+v, %v; want a grant per child", shared, err)
	}
	if m, err := p.r.DocMeta(ctx, sharedID); err != nil || len(m) != len(children) {
		t.Errorf("document metadata %v, %v; want one document per child", m, err)
	}
	if evs, err := p.r.Audit(ctx, sharedID, 0); err != nil || len(evs) != len(children) {
		t.Errorf("audit %+v, %v; want a line per child", evs, err)
	}
}

// child is one of TestConcurrentProcesses's processes.
func child(t *testing.T, name string) {
	ctx := t.Context()
	r := fileregistry.New(os.Getenv(homeEnv), os.Getenv(rootEnv))
	for i := range perChild {
		for _, scope := range []string{store.ScopeLocal, store.ScopeGlobal} {
			v := store.VaultRecord{Name: fmt.Sprintf("%s-%s-%d", name, scope, i), Type: "semantic", Scope: scope,
				Dir: filepath.Join(os.Getenv(rootEnv), name, scope, fmt.Sprint(i))}
			if _, err := r.CreateVault(ctx, v, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.CreateAgent(ctx, store.AgentRecord{Name: name, TokenHash: "hash-" + name, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateVault(ctx, sharedID, func(v *store.VaultRecord) error {
		v.Restricted = true
		if v.Grants == nil {
			v.Grants = map[string]store.Grant{}
		}
		v.Grants[name] = store.Grant{}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.SetDocMeta(ctx, sharedID, map[string]map[string]string{name + ".md": {"by": name}}); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendAudit(ctx, sharedID, store.AuditEvent{Time: time.Now(), Agent: name, Action: "write-doc", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range mustVaults(t, r) {
		if v.Name == "legacy" {
			fmt.Printf("legacy-id=%s\n", v.ID)
		}
	}
}
