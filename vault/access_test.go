package vault

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	r, _, _ := newRegistry(t)
	v, err := r.Init(t.Context(), InitOptions{Name: "docs"})
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(v.Dir, "sub", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(v.Dir, "file.md"), []byte("x"), 0o644))
	must(os.Symlink(outside, filepath.Join(v.Dir, "out")))
	must(os.Symlink(filepath.Join(outside, "f"), filepath.Join(v.Dir, "outfile")))
	must(os.Symlink("sub", filepath.Join(v.Dir, "in")))
	must(os.Symlink("../..", filepath.Join(v.Dir, "sub", "up")))
	must(os.Symlink("missing-target", filepath.Join(v.Dir, "dangling")))
	root, _ := filepath.EvalSymlinks(v.Dir)

	for _, tc := range []struct {
		rel  string
		want string // "" means refused with ErrOutside
	}{
		{"", "."}, {".", "."}, {"file.md", "file.md"}, {"sub/deep/new.md", "sub/deep/new.md"},
		{"new/dir/x.md", "new/dir/x.md"}, {"sub/../file.md", "file.md"}, {"./a", "a"},
		{"in/x.md", "sub/x.md"}, {"in/deep", "sub/deep"}, {`sub\deep\n.md`, "sub/deep/n.md"},
		{"file.md/below", "file.md/below"}, {"..foo", "..foo"},
		{"..", ""}, {"../x", ""}, {"sub/../../x", ""}, {"/etc/passwd", ""}, {`\etc\passwd`, ""},
		{`..\x`, ""}, {"out", ""}, {"out/x", ""}, {"outfile", ""}, {"sub/up/x", ""},
		{"dangling", ""}, {".ctxkit-vault/audit.jsonl", ""}, {".ctxkit-vault", ""},
		{"sub/../.ctxkit-vault/x", ""}, {"a\x00b", ""},
	} {
		got, err := v.Resolve(tc.rel)
		if tc.want == "" {
			if !errors.Is(err, ErrOutside) {
				t.Errorf("Resolve(%q) = %q, %v; want ErrOutside", tc.rel, got, err)
			}
			continue
		}
		if err != nil || got != filepath.Join(root, filepath.FromSlash(tc.want)) {
			t.Errorf("Resolve(%q) = %q, %v; want %s", tc.rel, got, err, tc.want)
		}
	}
}

// FuzzResolve: whatever the caller names, the result is inside the vault
// (following every symlink of its existing part) or the call fails.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../a", "/a", "out/x", "in/../../x", `..\..\x`, "sub/up/up", "a/./b//c", ".ctxkit-vault", "in/deep/../../out"} {
		f.Add(s)
	}
	base := f.TempDir()
	dir, outside := filepath.Join(base, "v"), filepath.Join(base, "o")
	for _, d := range []string{filepath.Join(dir, "sub", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	os.Symlink(outside, filepath.Join(dir, "out"))
	os.Symlink("sub", filepath.Join(dir, "in"))
	os.Symlink("../..", filepath.Join(dir, "sub", "up"))
	v := &Vault{Name: "f", Dir: dir}
	root, _ := filepath.EvalSymlinks(dir)
	f.Fuzz(func(t *testing.T, rel string) {
		got, err := v.Resolve(rel)
		if err != nil {
			return
		}
		// Follow what exists of got: it must stay under root.
		p := got
		for {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			p = filepath.Dir(p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatalf("Resolve(%q) = %q: existing part %s does not resolve: %v", rel, got, p, err)
		}
		if !within(root, real) || !within(root, got) {
			t.Fatalf("Resolve(%q) = %q leaves %s", rel, got, root)
		}
		if r, _ := filepath.Rel(root, got); strings.HasPrefix(filepath.ToSlash(r)+"/", DataDirName+"/") {
			t.Fatalf("Resolve(%q) = %q is in the data folder", rel, got)
		}
	})
}

func TestAccessControl(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := t.Context()
	v, err := r.Init(ctx, InitOptions{Name: "team"})
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		agent string
		op    Op
		want  error
	}
	run := func(v *Vault, checks []check) {
		t.Helper()
		for _, c := range checks {
			if err := v.Allowed(c.agent, c.op); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("restricted=%v Allowed(%q, %s) = %v, want %v", v.Restricted, c.agent, c.op, err, c.want)
			}
		}
	}
	run(v, []check{{"a", Read, nil}, {"a", Write, nil}, {"", Write, nil}, {Owner, Write, nil}})

	if _, err := r.Attach(ctx, "team", "writer", false); err != nil {
		t.Fatal(err)
	}
	v, err = r.Attach(ctx, "team", "reader", true)
	if err != nil {
		t.Fatal(err)
	}
	run(v, []check{
		{"writer", Read, nil}, {"writer", Write, nil}, {"reader", Read, nil}, {"reader", Write, ErrForbidden},
		{"stranger", Read, ErrNotFound}, {"", Read, ErrNotFound}, {Owner, Write, nil},
	})
	if _, err := r.Init(ctx, InitOptions{Name: "open", Scope: Global}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Init(ctx, InitOptions{Name: "team", Scope: Global}); err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string]string{"reader": "team,open", "stranger": "open", "": "open", Owner: "team,open"} {
		vs, err := r.Visible(ctx, agent)
		var names []string
		for _, v := range vs {
			names = append(names, v.Name)
		}
		if err != nil || strings.Join(names, ",") != want {
			t.Errorf("Visible(%q) = %v, %v; want %s", agent, names, err, want)
		}
	}
	if _, err := r.Attach(ctx, "team", Owner, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("attach owner: %v", err)
	}
	if _, err := r.Detach(ctx, "team", "stranger"); !errors.Is(err, ErrNoAgent) {
		t.Errorf("detach unattached: %v", err)
	}
	r.Detach(ctx, "team", "writer")
	v, err = r.Detach(ctx, "team", "reader")
	if err != nil {
		t.Fatal(err)
	}
	run(v, []check{{"writer", Read, ErrNotFound}, {Owner, Write, nil}})
	v, err = r.Publish(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if v.Restricted || len(v.Agents) != 0 {
		t.Fatalf("published: %+v", v)
	}
	run(v, []check{{"writer", Write, nil}})
	if _, err := r.Attach(ctx, "nope", "a", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("attach to a missing vault: %v", err)
	}
}

func TestAuditLog(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := t.Context()
	if _, err := r.Init(ctx, InitOptions{Name: "team", Restricted: true}); err != nil {
		t.Fatal(err)
	}
	v, err := r.Attach(ctx, "team", "reader", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Authorize(ctx, "reader", Read, "query", ""); err != nil {
		t.Fatal(err)
	}
	if err := v.Authorize(ctx, "reader", Write, "write", "notes/a.md"); !errors.Is(err, ErrForbidden) {
		t.Fatal(err)
	}
	if err := v.Authorize(ctx, "mallory", Read, "query", ""); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := v.Log(ctx, Event{Agent: "reader", Action: "write", Path: "x.md"}); err != nil {
		t.Fatal(err)
	}
	all, err := v.Audit(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all {
		got = append(got, strings.Join([]string{e.Agent, e.Action, e.Path, e.Outcome, e.Reason}, "|"))
		if e.Time.IsZero() || e.Time.Location() != time.UTC {
			t.Errorf("time %v not UTC", e.Time)
		}
	}
	want := []string{"owner|init||ok|", "owner|attach||ok|", "reader|write|notes/a.md|refused|read-only grant",
		"mallory|query||refused|not attached", "reader|write|x.md|ok|"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	last, _ := v.Audit(ctx, 2)
	if len(last) != 2 || last[1].Path != "x.md" {
		t.Fatalf("last 2: %+v", last)
	}
	path := filepath.Join(v.DataDir(), AuditFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file mode: %v %v", fi, err)
	}
	b, _ := os.ReadFile(path)
	line, _, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(line, `{"time":"`) || !strings.Contains(line[:40], "Z") || len(strings.Split(strings.Split(line, `"`)[3], ".")[1]) != 7 {
		t.Fatalf("first line %s: want time first, UTC, microseconds", line)
	}
	// A torn last line is skipped.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2026-`)
	f.Close()
	if all, err := v.Audit(ctx, 0); err != nil || len(all) != 5 {
		t.Fatalf("torn line: %d %v", len(all), err)
	}
}

func TestAgents(t *testing.T) {
	r, data, _ := newRegistry(t)
	ctx := t.Context()
	tok, err := r.CreateAgent(ctx, "bot")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, TokenPrefix) || len(tok) < 40 {
		t.Fatalf("token %q", tok)
	}
	tok2, _ := r.CreateAgent(ctx, "bot2")
	if _, err := r.CreateAgent(ctx, "bot"); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate: %v", err)
	}
	for _, bad := range []string{Owner, "a/b", ""} {
		if _, err := r.CreateAgent(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateAgent(%q): %v", bad, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(data, "agents.json"))
	if strings.Contains(string(b), tok) || strings.Contains(string(b), strings.TrimPrefix(tok, TokenPrefix)) {
		t.Fatalf("token stored in clear: %s", b)
	}
	if fi, _ := os.Stat(filepath.Join(data, "agents.json")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("agents.json mode %v", fi.Mode())
	}
	for _, tc := range []struct {
		token, agent string
	}{{tok, "bot"}, {tok2, "bot2"}, {tok + "x", ""}, {"", ""}, {strings.TrimPrefix(tok, TokenPrefix), ""}, {TokenPrefix, ""}} {
		got, err := r.Authenticate(ctx, tc.token)
		if got != tc.agent || (tc.agent == "") != errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) = %q, %v; want %q", tc.token, got, err, tc.agent)
		}
	}
	list, err := r.Agents(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "bot" || list[0].Created.IsZero() || list[0].LastUsed.IsZero() {
		t.Fatalf("agents: %+v %v", list, err)
	}
	if err := r.RevokeAgent(ctx, "bot"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Authenticate(ctx, tok); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked token: %v", err)
	}
	if err := r.RevokeAgent(ctx, "bot"); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("revoke twice: %v", err)
	}
	// A revoked name is not given out again: grants to it may remain in
	// vault configs, which a newcomer of that name must not inherit.
	if _, err := r.CreateAgent(ctx, "bot"); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("recreate a revoked agent: %v", err)
	}
}

func TestOwnerToken(t *testing.T) {
	r, data, _ := newRegistry(t)
	ctx := t.Context()
	if _, err := r.OwnerToken(ctx, false); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("before any: %v", err)
	}
	tok, err := r.OwnerToken(ctx, true)
	if err != nil || !strings.HasPrefix(tok, OwnerTokenPrefix) {
		t.Fatalf("create: %q %v", tok, err)
	}
	if again, err := r.OwnerToken(ctx, true); err != nil || again != tok {
		t.Errorf("created twice: %q %v", again, err)
	}
	fi, err := os.Stat(filepath.Join(data, "owner-token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v", fi, err)
	}
	agentTok, err := r.CreateAgent(ctx, "bot")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token, want string
	}{
		{tok, Owner},
		{agentTok, "bot"},
		{tok + "x", ""},
		{OwnerTokenPrefix, ""},
		{"owner", ""},
		{"", ""},
	} {
		got, err := r.Caller(ctx, tc.token)
		if got != tc.want || (tc.want == "") != errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Caller(%q) = %q, %v; want %q", tc.token, got, err, tc.want)
		}
	}
}
