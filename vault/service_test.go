package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault/episodic"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"notes", true}, {"a.b-c_D9", true}, {strings.Repeat("x", 64), true},
		{"", false}, {".", false}, {"..", false}, {strings.Repeat("x", 65), false},
		{"a/b", false}, {`a\b`, false}, {"a b", false}, {"é", false}, {"a\x00", false},
	} {
		if err := ValidName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		} else if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidName(%q): %v is not ErrInvalid", tc.name, err)
		}
	}
}

func TestValidEmbeddingModel(t *testing.T) {
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{"none", true}, {"builtin", true}, {"builtin:minilm", true}, {"ollama:nomic-embed-text", true},
		{"openai:text-embedding-3-small", true}, {"ollama:library/x:latest", true}, {"all-MiniLM-L6-v2", true},
		{"", false}, {"none:x", false}, {"ollama", false}, {"ollama:", false}, {"openai:a b", false},
		{"cohere:x", false}, {"builtin:", false}, {"all-mpnet-base-v2", false}, {"minilm", false},
	} {
		if err := ValidEmbeddingModel(tc.spec); (err == nil) != tc.ok {
			t.Errorf("ValidEmbeddingModel(%q) = %v, want ok=%v", tc.spec, err, tc.ok)
		}
	}
}

func TestCreateListShadow(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	l := e.vault(t, CreateVaultRequest{Name: "notes"})
	if l.Type != Semantic || l.Scope != Local || l.EmbeddingModel != "none" || l.Path != filepath.Join(e.root, ".ctxkit", "vaults", "notes") {
		t.Fatalf("local vault: %+v", l)
	}
	g := e.vault(t, CreateVaultRequest{Name: "notes", Scope: Global, Type: Skill})
	if g.Path != filepath.Join(e.home, "vaults", "notes") || g.EmbeddingModel != "" {
		t.Fatalf("global vault: %+v", g)
	}
	if fi, err := os.Stat(g.Path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("global folder mode: %v %v", fi, err)
	}
	for _, tc := range []struct {
		req  CreateVaultRequest
		want error
	}{
		{CreateVaultRequest{Name: "notes"}, ErrExists},
		{CreateVaultRequest{Name: "NOTES"}, ErrExists},
		{CreateVaultRequest{Name: "other", Path: ".ctxkit/vaults/notes"}, ErrExists},
		{CreateVaultRequest{Name: "inner", Path: ".ctxkit/vaults/notes/inner"}, ErrInvalid},
		{CreateVaultRequest{Name: "outer", Path: ".ctxkit"}, ErrInvalid},
		{CreateVaultRequest{Name: "inglobal", Path: filepath.Join(e.home, "vaults", "notes", "x")}, ErrInvalid},
		{CreateVaultRequest{Name: "skills", Type: Skill, EmbeddingModel: hashSpec}, ErrInvalid},
		{CreateVaultRequest{Name: "bad name"}, ErrInvalid},
		{CreateVaultRequest{Name: "graph", Type: "graph"}, ErrInvalid},
		{CreateVaultRequest{Name: "x", Scope: "team"}, ErrInvalid},
	} {
		_, err := e.svc.CreateVault(ctx, Owner(), tc.req)
		wantErr(t, fmt.Sprintf("create %+v", tc.req), err, tc.want)
	}
	all, err := e.svc.ListVaults(ctx, Owner())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Scope != Local || all[1].Scope != Global || all[0].Shadowed || !all[1].Shadowed {
		t.Fatalf("list: %+v", all)
	}
	if v, err := e.svc.DescribeVault(ctx, Owner(), "notes"); err != nil || v.Scope != Local {
		t.Fatalf("describe prefers local: %+v %v", v, err)
	}
	_, err = e.svc.DescribeVault(ctx, Owner(), "missing")
	wantErr(t, "describe missing", err, ErrNotFound)
	// An agent sees no folder, no other agent, no shadowed vault.
	a := e.agent(t, "a")
	vs, err := e.svc.ListVaults(ctx, a)
	if err != nil || len(vs) != 1 || vs[0].Path != "" || vs[0].Agents != nil || vs[0].Access != "read-write" {
		t.Fatalf("agent's list: %+v %v", vs, err)
	}
}

// TestRefuseVaultFolders: a vault folder that would expose more than a
// vault (the file system's root, the user's home, ctxkit's data directory
// or a folder holding it) is refused.
func TestRefuseVaultFolders(t *testing.T) {
	e := newEnv(t)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home folder:", err)
	}
	for _, p := range []string{"/", home, e.home, filepath.Dir(e.home), filepath.Join(e.home, "sub")} {
		_, err := e.svc.CreateVault(t.Context(), Owner(), CreateVaultRequest{Name: "x", Path: p})
		wantErr(t, "folder "+p, err, ErrInvalid)
	}
}

// TestAccessControl is the ACL's matrix on one vault, through the service:
// public vaults are open to every agent; once restricted, attached agents
// see it (read-only ones cannot write) and the others get ErrNotFound,
// exactly as for a missing vault; admin operations are the owner's.
func TestAccessControl(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	dir := e.semantic(t, "team", map[string]string{"a.md": "# A\n\nalpha\n"})
	writer, reader, stranger := e.agent(t, "writer"), e.agent(t, "reader"), e.agent(t, "stranger")
	type check struct {
		c       Caller
		read    error
		write   error
		comment string
	}
	run := func(checks []check) {
		t.Helper()
		for _, c := range checks {
			_, err := e.svc.Docs(ctx, c.c, "team")
			wantErr(t, c.comment+" reads", err, c.read)
			_, err = e.svc.WriteDoc(ctx, c.c, "team", fmt.Sprintf("w/%s-%d.md", c.c, time.Now().UnixNano()),
				WriteDocRequest{Content: "x", Overwrite: true})
			wantErr(t, c.comment+" writes", err, c.write)
		}
	}
	run([]check{{writer, nil, nil, "public: writer"}, {stranger, nil, nil, "public: stranger"}, {Owner(), nil, nil, "owner"},
		{Caller{}, ErrNotFound, ErrNotFound, "anonymous"}})
	e.attach(t, "team", "writer", false)
	e.attach(t, "team", "reader", true)
	run([]check{{writer, nil, nil, "writer"}, {reader, nil, ErrForbidden, "reader"}, {stranger, ErrNotFound, ErrNotFound, "stranger"},
		{Owner(), nil, nil, "owner"}})
	for _, c := range []Caller{writer, reader, stranger} {
		_, err := e.svc.Attach(ctx, c, "team", "stranger", false)
		want := ErrForbidden
		if c == stranger {
			want = ErrNotFound
		}
		wantErr(t, c.String()+" attaches", err, want)
	}
	_, err := e.svc.Attach(ctx, Owner(), "team", OwnerName, false)
	wantErr(t, "attach the owner", err, ErrInvalid)
	_, err = e.svc.Detach(ctx, Owner(), "team", "stranger")
	wantErr(t, "detach an unattached agent", err, ErrNotFound)
	if _, err := e.svc.Detach(ctx, Owner(), "team", "writer"); err != nil {
		t.Fatal(err)
	}
	run([]check{{writer, ErrNotFound, ErrNotFound, "detached writer"}})
	info, err := e.svc.Publish(ctx, Owner(), "team")
	if err != nil || info.Restricted || len(info.Agents) != 0 {
		t.Fatalf("publish: %+v %v", info, err)
	}
	run([]check{{stranger, nil, nil, "published: stranger"}})
	// An agent that does not exist, or was revoked, is refused, and the
	// vault stays public: a typo would have closed it to every agent.
	if err := e.svc.RevokeAgent(ctx, Owner(), "reader"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"strangr", "reader"} {
		_, err = e.svc.Attach(ctx, Owner(), "team", name, false)
		wantErr(t, "attach agent "+name, err, ErrNotFound)
	}
	run([]check{{stranger, nil, nil, "after refused attaches: stranger"}})
	_, err = e.svc.Attach(ctx, Owner(), "nope", "a", false)
	wantErr(t, "attach to a missing vault", err, ErrNotFound)
	if _, err := os.Stat(filepath.Join(dir, "a.md")); err != nil {
		t.Fatal(err)
	}
}

// TestAuditLog: writes and refusals are logged with the caller, the
// operation and the reason; times are UTC.
func TestAuditLog(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "team", Restricted: true})
	reader, mallory := e.agent(t, "reader"), e.agent(t, "mallory")
	e.attach(t, "team", "reader", true)
	if _, err := e.svc.Query(ctx, reader, "team", QueryRequest{Query: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.WriteDoc(ctx, reader, "team", "notes/a.md", WriteDocRequest{Content: "x"})
	wantErr(t, "read-only write", err, ErrForbidden)
	_, err = e.svc.Query(ctx, mallory, "team", QueryRequest{Query: "x"})
	wantErr(t, "stranger query", err, ErrNotFound)
	if _, err := e.svc.WriteDoc(ctx, Owner(), "team", "x.md", WriteDocRequest{Content: "x"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range e.audit(t, "team") {
		got = append(got, strings.Join([]string{ev.Agent, ev.Action, ev.Path, ev.Outcome, ev.Reason}, "|"))
		if ev.Time.IsZero() || ev.Time.Location() != time.UTC {
			t.Errorf("time %v not UTC", ev.Time)
		}
	}
	want := []string{"owner|create||ok|", "owner|attach||ok|", "reader|write-doc|notes/a.md|refused|read-only grant",
		"mallory|query||refused|not attached", "owner|write-doc|x.md|ok|"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if last, _ := e.svc.Audit(ctx, Owner(), "team", 2); len(last) != 2 || last[1].Path != "x.md" {
		t.Fatalf("last 2: %+v", last)
	}
	_, err = e.svc.Audit(ctx, reader, "team", 0)
	wantErr(t, "an agent reads the audit log", err, ErrForbidden)
	_, err = e.svc.Audit(ctx, mallory, "team", 0)
	wantErr(t, "a stranger reads the audit log", err, ErrNotFound)
}

// TestRefusalsAreCoalesced is the regression test of "refused requests
// grow the audit log without bound": a thousand refused queries of one
// agent add one line a minute, which then counts the others.
func TestRefusalsAreCoalesced(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	e.opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e.svc, e.b = e.open(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "secret", Restricted: true})
	outsider := e.agent(t, "outsider")
	refused := func() int {
		n := 0
		for _, ev := range e.audit(t, "secret") {
			if ev.Outcome == "refused" {
				n++
			}
		}
		return n
	}
	for range 1000 {
		_, err := e.svc.Query(ctx, outsider, "secret", QueryRequest{Query: "x"})
		wantErr(t, "refused query", err, ErrNotFound)
	}
	if n := refused(); n != 1 {
		t.Fatalf("%d refusals logged for 1000 in a minute, want 1", n)
	}
	mu.Lock()
	now = now.Add(refusalWindow)
	mu.Unlock()
	e.svc.Query(ctx, outsider, "secret", QueryRequest{Query: "x"})
	evs := e.audit(t, "secret")
	if last := evs[len(evs)-1]; refused() != 2 || last.Repeated != 999 {
		t.Fatalf("after the window: %d refusals, last %+v; want 2, repeated 999", refused(), last)
	}
}

func TestAgentsAndTokens(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	tok, err := e.svc.CreateAgent(ctx, Owner(), "bot")
	if err != nil || !strings.HasPrefix(tok, TokenPrefix) || len(tok) < 40 {
		t.Fatalf("token %q %v", tok, err)
	}
	_, err = e.svc.CreateAgent(ctx, Owner(), "bot")
	wantErr(t, "duplicate", err, ErrExists)
	for _, bad := range []string{OwnerName, "a/b", ""} {
		_, err := e.svc.CreateAgent(ctx, Owner(), bad)
		wantErr(t, "agent "+bad, err, ErrInvalid)
	}
	bot := e.agent(t, "bot2")
	_, err = e.svc.CreateAgent(ctx, bot, "bot3")
	wantErr(t, "an agent creates an agent", err, ErrForbidden)
	own, err := e.svc.OwnerToken(ctx, true)
	if err != nil || !strings.HasPrefix(own, OwnerTokenPrefix) {
		t.Fatalf("owner token %q %v", own, err)
	}
	if fi, err := os.Stat(e.svc.OwnerTokenPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("owner token mode: %v %v", fi, err)
	}
	for _, tc := range []struct{ token, want string }{
		{tok, "bot"}, {own, OwnerName}, {tok + "x", ""}, {"", ""}, {strings.TrimPrefix(tok, TokenPrefix), ""},
		{TokenPrefix, ""}, {own + "x", ""}, {OwnerTokenPrefix, ""}, {"owner", ""},
	} {
		c, err := e.svc.Authenticate(ctx, tc.token)
		if c.Name() != tc.want || (tc.want == "") != errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) = %q, %v; want %q", tc.token, c, err, tc.want)
		}
	}
	list, err := e.svc.Agents(ctx, Owner())
	if err != nil || len(list) != 2 || list[0].Name != "bot" || list[0].Created.IsZero() || list[0].LastUsed == nil {
		t.Fatalf("agents: %+v %v", list, err)
	}
	if err := e.svc.RevokeAgent(ctx, Owner(), "bot"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Authenticate(ctx, tok)
	wantErr(t, "revoked token", err, ErrUnauthenticated)
	wantErr(t, "revoke twice", e.svc.RevokeAgent(ctx, Owner(), "bot"), ErrNotFound)
	// A revoked name is not given out again: grants to it may remain in
	// vault records, which a newcomer of that name must not inherit.
	_, err = e.svc.CreateAgent(ctx, Owner(), "bot")
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("recreate a revoked agent: %v", err)
	}
	// The owner may act as an existing agent, never as a missing one.
	if c, err := e.svc.ActAs(ctx, Owner(), "bot2"); err != nil || c.Name() != "bot2" {
		t.Fatalf("act as bot2: %v %v", c, err)
	}
	_, err = e.svc.ActAs(ctx, Owner(), "bot")
	wantErr(t, "act as a revoked agent", err, ErrUnauthenticated)
	_, err = e.svc.ActAs(ctx, bot, "bot2")
	wantErr(t, "an agent acts as another", err, ErrForbidden)
}

// TestRevokedAgentRefusedByOtherInstances: an agent revoked through one
// service is refused at once by another sharing the backend.
func TestRevokedAgentRefusedByOtherInstances(t *testing.T) {
	e := newEnv(t)
	other, _ := e.open(t)
	tok, err := e.svc.CreateAgent(t.Context(), Owner(), "bot")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Authenticate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RevokeAgent(t.Context(), Owner(), "bot"); err != nil {
		t.Fatal(err)
	}
	_, err = other.Authenticate(t.Context(), tok)
	wantErr(t, "revoked through the other instance", err, ErrUnauthenticated)
}

func TestConcurrentCreates(t *testing.T) {
	e := newEnv(t)
	const n = 12
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := e.svc.CreateVault(t.Context(), Owner(), CreateVaultRequest{Name: fmt.Sprintf("l%d", i)}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if _, err := e.svc.CreateVault(t.Context(), Owner(), CreateVaultRequest{Name: fmt.Sprintf("g%d", i), Scope: Global}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if all, err := e.svc.ListVaults(t.Context(), Owner()); err != nil || len(all) != 2*n {
		t.Fatalf("after concurrent creates: %d vaults, %v", len(all), err)
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Class
	}{
		{invalid("n", "bad"), ClassInvalid},
		{fmt.Errorf("wrapped: %w", ErrOutside), ClassInvalid},
		{ErrUnauthenticated, ClassUnauthenticated},
		{&Error{Kind: ErrForbidden, Msg: "no"}, ClassForbidden},
		{fmt.Errorf("x: %w", ErrNotFound), ClassNotFound},
		{ErrExists, ClassExists},
		{fmt.Errorf("x: %w", episodic.ErrConflict), ClassConflict},
		{errors.New("disk on fire"), ClassInternal},
	} {
		d := Describe(tc.err)
		if d.Class != tc.want {
			t.Errorf("Describe(%v) = %s, want %s", tc.err, d.Class, tc.want)
		}
		if d.Class == ClassInternal && strings.Contains(d.Message, "disk") {
			t.Errorf("an internal error's details reach the caller: %q", d.Message)
		}
	}
	d := Describe(invalid("n_results", "out of range"))
	if d.Field != "n_results" || d.Message != "out of range" {
		t.Errorf("field and message: %+v", d)
	}
}

// TestRefusedCreateLeavesNoFolder: a create refused by the registry (a
// configuration file that does not parse, a name taken) makes no folder.
func TestRefusedCreateLeavesNoFolder(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "taken"})
	_, err := e.svc.CreateVault(ctx, Owner(), CreateVaultRequest{Name: "TAKEN"})
	wantErr(t, "a name taken", err, ErrExists)
	cfg := filepath.Join(e.root, ".ctxkit", "config.json")
	if err := os.WriteFile(cfg, []byte("{\n \"vaults\": {,}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.CreateVault(ctx, Owner(), CreateVaultRequest{Name: "later"})
	if err == nil || !strings.Contains(err.Error(), cfg+":2:") {
		t.Errorf("a corrupt config: %v, want its file and line", err)
	}
	for _, name := range []string{"TAKEN", "later"} {
		if _, err := os.Stat(filepath.Join(e.root, ".ctxkit", "vaults", name)); !os.IsNotExist(err) {
			t.Errorf("a refused create of %s left its folder: %v", name, err)
		}
	}
}

// TestProjectConfigStaysInTheProject: a project's .ctxkit/config.json is
// checked in with the project, so a local vault it records must lie in the
// project: one whose folder is elsewhere is not followed, and none is
// created there.
func TestProjectConfigStaysInTheProject(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	_, err := e.svc.CreateVault(ctx, Owner(), CreateVaultRequest{Name: "out", Scope: Local, Path: t.TempDir()})
	wantErr(t, "a local vault outside the project", err, ErrInvalid)

	e.semantic(t, "notes", map[string]string{"a.md": "# A\n\nalpha\n"})
	elsewhere := t.TempDir()
	writeFile(t, elsewhere, "secret.md", "# Secret\n\nkeys\n")
	cfg := filepath.Join(e.root, ".ctxkit", "config.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["vaults"]["notes"]["path"] = elsewhere // as a hostile checkout would have it
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Index(ctx, Owner(), "notes", IndexRequest{}, nil)
	wantErr(t, "indexing a vault recorded outside the project", err, ErrInvalid)
	_, err = e.svc.ReadDoc(ctx, Owner(), "notes", "secret.md")
	wantErr(t, "reading from it", err, ErrInvalid)
}

// TestAssertedCallers: a caller named by an unchecked assertion (CtxVault's
// header) reads and writes public vaults, anonymous or named; a restricted
// vault only when the name is attached (ErrRestricted beside ErrNotFound
// otherwise), its grant applying; it is never the owner, creates vaults in
// the default place only, and the audit log says the identity was
// asserted.
func TestAssertedCallers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.semantic(t, "team", map[string]string{"a.md": "# A\n\nalpha\n"})
	e.semantic(t, "open", map[string]string{"b.md": "# B\n\nbeta\n"})
	e.agent(t, "writer")
	e.agent(t, "reader")
	e.attach(t, "team", "writer", false)
	e.attach(t, "team", "reader", true)
	const via = "the X-CtxVault-Agent header"
	asserted := func(name string) Caller {
		t.Helper()
		c, err := AssertedCaller(name, via)
		if err != nil {
			t.Fatalf("AssertedCaller(%q): %v", name, err)
		}
		return c
	}
	for _, bad := range []string{OwnerName, "two words", "../x"} {
		if _, err := AssertedCaller(bad, via); !errors.Is(err, ErrInvalid) {
			t.Errorf("AssertedCaller(%q): %v, want ErrInvalid", bad, err)
		}
	}
	for _, tc := range []struct {
		c           Caller
		vault       string
		read, write error
	}{
		{asserted(""), "open", nil, nil},
		{asserted("nobody"), "open", nil, nil},
		{asserted(""), "team", ErrRestricted, ErrRestricted},
		{asserted("nobody"), "team", ErrRestricted, ErrRestricted},
		{asserted("writer"), "team", nil, nil},
		{asserted("reader"), "team", nil, ErrForbidden},
		{Caller{}, "open", ErrNotFound, ErrNotFound}, // the zero caller is still refused everywhere
	} {
		what := fmt.Sprintf("%s (asserted %q) on %s", tc.c, tc.c.Asserted(), tc.vault)
		_, err := e.svc.Docs(ctx, tc.c, tc.vault)
		wantErr(t, what+" reads", err, tc.read)
		if errors.Is(err, ErrRestricted) && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: a restricted refusal is not ErrNotFound for the other front ends: %v", what, err)
		}
		_, err = e.svc.WriteDoc(ctx, tc.c, tc.vault, "w.md", WriteDocRequest{Content: "x", Overwrite: true})
		wantErr(t, what+" writes", err, tc.write)
	}
	// An agent with a token, not attached: ErrRestricted as well.
	_, err := e.svc.Docs(ctx, e.agent(t, "stranger"), "team")
	wantErr(t, "stranger", err, ErrRestricted)
	// A missing vault is not restricted.
	_, err = e.svc.Docs(ctx, asserted(""), "nope")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrRestricted) {
		t.Errorf("a missing vault: %v", err)
	}
	// Lists: the public vaults, and the restricted ones the name is attached to.
	for name, want := range map[string]string{"": "open", "writer": "open,team"} {
		vs, err := e.svc.ListVaults(ctx, asserted(name))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range vs {
			got = append(got, v.Name)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%q lists %v, want %s", name, got, want)
		}
	}
	// Administration stays the owner's; creation in the default place is open.
	_, err = e.svc.Attach(ctx, asserted("writer"), "team", "reader", false)
	wantErr(t, "an asserted caller attaches", err, ErrForbidden)
	if _, err := e.svc.ActAs(ctx, asserted("writer"), "reader"); !errors.Is(err, ErrForbidden) {
		t.Errorf("an asserted caller acts as another: %v", err)
	}
	if _, err := e.svc.CreateVault(ctx, asserted(""), CreateVaultRequest{Name: "made"}); err != nil {
		t.Errorf("an asserted caller creates a vault: %v", err)
	}
	for _, req := range []CreateVaultRequest{{Name: "there", Path: filepath.Join(t.TempDir(), "x")}, {Name: "embedded", EmbeddingModel: "none"}} {
		_, err := e.svc.CreateVault(ctx, asserted(""), req)
		wantErr(t, "an asserted caller chooses "+req.Name, err, ErrForbidden)
	}
	// The audit log says how the identity came.
	evs, err := e.svc.Audit(ctx, Owner(), "team", 0)
	if err != nil {
		t.Fatal(err)
	}
	var ok, refused bool
	for _, ev := range evs {
		if ev.Agent == "writer" && ev.Outcome == "ok" && strings.Contains(ev.Detail, "asserted by "+via) {
			ok = true
		}
		if ev.Agent == "anonymous" && ev.Outcome == "refused" && strings.Contains(ev.Detail, "asserted by "+via) {
			refused = true
		}
	}
	if !ok || !refused {
		t.Errorf("the audit log does not say the identities were asserted (ok %v, refused %v): %+v", ok, refused, evs)
	}
}

// TestNoVaultSuggestions: a vault name not found suggests the nearest names
// among the vaults the caller may see, and never the name of a restricted
// vault it is not attached to. A restricted vault's own name answers exactly
// as a missing name does, suggestions included.
func TestNoVaultSuggestions(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "notes"})
	e.vault(t, CreateVaultRequest{Name: "nodes", Restricted: true})
	e.vault(t, CreateVaultRequest{Name: "secret", Restricted: true})
	alice, bob := e.agent(t, "alice"), e.agent(t, "bob")
	e.attach(t, "nodes", "bob", true)

	const list = "list the vaults to see the ones you can use"
	tests := []struct {
		name   string
		caller Caller
		vault  string
		fix    string
	}{
		{"owner, one near", Owner(), "notse", `did you mean "notes"? Or ` + list},
		{"owner, two near, nearest first", Owner(), "node", `did you mean "nodes" or "notes"? Or ` + list},
		{"owner, none near", Owner(), "zzzz", list},
		{"short name, no guess", Owner(), "x", list},
		{"attached agent sees its restricted vault", bob, "node", `did you mean "nodes" or "notes"? Or ` + list},
		{"agent not attached: no restricted name", alice, "node", `did you mean "notes"? Or ` + list},
		{"agent not attached: nothing near but restricted", alice, "secrte", list},
		{"agent not attached: a restricted name answers as a missing one", alice, "nodes", `did you mean "notes"? Or ` + list},
		{"the same missing name", alice, "nodez", `did you mean "notes"? Or ` + list},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.svc.DescribeVault(ctx, tt.caller, tt.vault)
			var ve *Error
			if !errors.As(err, &ve) || !errors.Is(err, ErrNotFound) {
				t.Fatalf("DescribeVault(%q): %v, want a not-found *Error", tt.vault, err)
			}
			if ve.Fix != tt.fix || ve.Msg != fmt.Sprintf("no vault named %q", tt.vault) {
				t.Errorf("DescribeVault(%q):\n got %q; %q\nwant fix %q", tt.vault, ve.Msg, ve.Fix, tt.fix)
			}
		})
	}
	// Operations that look a vault up before checking the owner answer alike.
	_, err := e.svc.Audit(ctx, Owner(), "notse", 0)
	var ve *Error
	if !errors.As(err, &ve) || ve.Fix != `did you mean "notes"? Or `+list {
		t.Errorf("Audit(notse): %v", err)
	}
}
