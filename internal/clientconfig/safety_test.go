package clientconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const cursorGitHub = `{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "gh-server"]
    }
  }
}
`

// add --force over an entry install wrapped keeps the install's original,
// so uninstall still gives back the user's entry.
func TestAddForceOverInstalledKeepsOriginal(t *testing.T) {
	f := newFixture(t)
	p := f.put("cursor", ScopeUser, []byte(cursorGitHub))
	ctx := t.Context()
	if _, err := f.in.Install(ctx, Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.in.Add(ctx, AddRequest{Client: "cursor", Server: Server{Name: "github", URL: "https://example.com/mcp"}, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	if got := string(read(t, p)); got != cursorGitHub {
		t.Errorf("after install, add --force, uninstall:\n%s\nwant the original:\n%s", got, cursorGitHub)
	}

	// add, add --force over it, uninstall: the added entry goes away.
	empty := "{\n  \"mcpServers\": {}\n}\n"
	f2 := newFixture(t)
	p2 := f2.put("cursor", ScopeUser, []byte(empty))
	if _, err := f2.in.Add(ctx, AddRequest{Client: "cursor", Server: Server{Name: "x", URL: "https://a.example/mcp"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f2.in.Add(ctx, AddRequest{Client: "cursor", Server: Server{Name: "x", URL: "https://b.example/mcp"}, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f2.in.Uninstall(ctx, Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	if got := string(read(t, p2)); got != empty {
		t.Errorf("after add, add --force, uninstall:\n%s\nwant:\n%s", got, empty)
	}
}

// An entry ctxkit add created and the user deleted is forgotten by
// uninstall, without --force and without a drift error.
func TestDeletedAddedEntryIsForgotten(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p := f.put("cursor", ScopeUser, []byte(cursorGitHub))
	if _, err := f.in.Add(ctx, AddRequest{Client: "cursor", Server: Server{Name: "x", URL: "https://a.example/mcp"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(cursorGitHub), 0o600); err != nil { // the user removes it by hand
		t.Fatal(err)
	}
	st, err := f.in.Status(ctx, "cursor")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st[0].Servers {
		if s.Name == "x" && strings.Contains(s.Drift, "--force") {
			t.Errorf("status of a deleted added entry asks for --force: %+v", s)
		}
	}
	res, err := f.in.Uninstall(ctx, Request{Client: "cursor"})
	if err != nil {
		t.Fatalf("uninstall: %v (%+v)", err, res)
	}
	if len(res.Changes) != 1 || res.Changes[0].Action != "forgotten" || res.Wrote {
		t.Errorf("changes %+v, wrote %v", res.Changes, res.Wrote)
	}
	m, err := loadManifest(f.in.opts.DataDir)
	if err != nil || len(m.Records) != 0 {
		t.Errorf("manifest still holds %+v (%v)", m.Records, err)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "cursor"}); errors.Is(err, ErrDrift) {
		t.Errorf("second uninstall: %v", err)
	}
}

// A configuration file that is a symlink (dotfiles managers) stays a
// symlink; its target is edited and backed up, and the manifest keeps the
// path the client uses.
func TestSymlinkedConfigKept(t *testing.T) {
	f := newFixture(t)
	p := f.put("cursor", ScopeUser, nil)
	target := filepath.Join(t.TempDir(), "dotfiles-mcp.json")
	if err := os.WriteFile(target, []byte(cursorGitHub), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	ctx := t.Context()
	res, err := f.in.Install(ctx, Request{Client: "cursor"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != p {
		t.Errorf("result path %s, want %s", res.Path, p)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symlink (%v, %v)", p, fi.Mode(), err)
	}
	if b := read(t, target); !strings.Contains(string(b), `"wrap"`) {
		t.Errorf("the symlink target was not updated:\n%s", b)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("target mode not kept: %v %v", fi.Mode(), err)
	}
	m, err := loadManifest(f.in.opts.DataDir)
	if err != nil || len(m.Records) != 1 || m.Records[0].Path != p {
		t.Errorf("manifest records %+v (%v), want the path %s", m.Records, err, p)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("uninstall replaced the symlink")
	}
	if got := string(read(t, target)); got != cursorGitHub {
		t.Errorf("after uninstall the target is\n%s", got)
	}
}

// A client that rewrites its file between ctxkit's read and its write does
// not lose its change: ctxkit edits the new content once more; if the file
// keeps changing, ctxkit refuses and writes nothing (file and manifest).
func TestConcurrentEditIsNotLost(t *testing.T) {
	ctx := t.Context()
	rewritten := strings.Replace(cursorGitHub, `"mcpServers"`, `"theme": "dark",
  "mcpServers"`, 1)

	f := newFixture(t)
	p := f.put("cursor", ScopeUser, []byte(cursorGitHub))
	calls := 0
	f.in.beforeReplace = func(string) {
		calls++
		if calls == 1 {
			if err := os.WriteFile(p, []byte(rewritten), 0o640); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := f.in.Install(ctx, Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	got := string(read(t, p))
	if !strings.Contains(got, `"theme": "dark"`) || !strings.Contains(got, `"wrap"`) {
		t.Errorf("the client's change or the install was lost:\n%s", got)
	}
	f.in.beforeReplace = nil
	if _, err := f.in.Uninstall(ctx, Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	if got := string(read(t, p)); got != rewritten {
		t.Errorf("after uninstall:\n%s\nwant:\n%s", got, rewritten)
	}

	// A file that changes every time: refused, nothing written.
	for _, op := range []string{"install", "add", "uninstall"} {
		t.Run(op, func(t *testing.T) {
			f := newFixture(t)
			p := f.put("cursor", ScopeUser, []byte(cursorGitHub))
			if op == "uninstall" {
				if _, err := f.in.Install(ctx, Request{Client: "cursor"}); err != nil {
					t.Fatal(err)
				}
			}
			m0, err := loadManifest(f.in.opts.DataDir)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			last := ""
			f.in.beforeReplace = func(string) {
				n++
				b := read(t, p)
				last = strings.Replace(string(b), "{", fmt.Sprintf("{\n  \"edit%d\": true,", n), 1)
				if err := os.WriteFile(p, []byte(last), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			switch op {
			case "install":
				_, err = f.in.Install(ctx, Request{Client: "cursor"})
			case "add":
				_, err = f.in.Add(ctx, AddRequest{Client: "cursor", Server: Server{Name: "x", Command: "y"}})
			default:
				_, err = f.in.Uninstall(ctx, Request{Client: "cursor"})
			}
			if !errors.Is(err, ErrConcurrentEdit) || n != 2 {
				t.Fatalf("err %v after %d attempts, want ErrConcurrentEdit after 2", err, n)
			}
			if got := string(read(t, p)); got != last {
				t.Errorf("file is\n%s\nwant the other program's last write\n%s", got, last)
			}
			if m1, err := loadManifest(f.in.opts.DataDir); err != nil || len(m1.Records) != len(m0.Records) || (len(m0.Records) > 0 && !reflect.DeepEqual(m1.Records, m0.Records)) {
				t.Errorf("manifest changed on refusal: %+v, was %+v (%v)", m1.Records, m0.Records, err)
			}
			if bs, _ := filepath.Glob(filepath.Join(f.in.opts.DataDir, "backups", "cursor", "*")); op != "uninstall" && len(bs) != 0 {
				t.Errorf("backups left by a refused write: %v", bs)
			}
		})
	}
}

// The lock is the system's: a lock file left behind (even old) does not
// block, a held lock is never broken however old its file, and one
// holder's unlock does not release another's.
func TestLockIsNotBroken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "install", "lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("12345\n"), 0o600); err != nil { // left by a crash
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	unlockA, err := lock(t.Context(), dir)
	if err != nil {
		t.Fatalf("a leftover lock file blocks: %v", err)
	}
	os.Chtimes(path, old, old) // A's lock looks stale by its age
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if unlockB, err := lock(done, dir); err == nil {
		unlockB()
		t.Fatal("a second locker broke a held lock")
	}
	unlockA()
	unlockB, err := lock(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	unlockA() // a second unlock by A must not release B
	if unlockC, err := lock(done, dir); err == nil {
		unlockC()
		t.Error("A's unlock released B's lock")
	}
	unlockB()
}

// No secret is ever an argument of ctxkit in a written entry (other local
// users read process arguments): a literal header value goes into env and
// --header-env, and a client that expands references in its arguments
// (all but Codex, Claude Desktop, Zed and Cline) finds none there.
func TestNoSecretInArgs(t *testing.T) {
	const secret = "sk-LITERAL-5ecret"
	ctx := t.Context()
	for _, c := range Clients() {
		t.Run(c.Name, func(t *testing.T) {
			f := newFixture(t)
			var text string
			switch {
			case c.Format == FormatTOML:
				text = "[mcp_servers.r]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"TOKEN\"\nhttp_headers = { \"X-Key\" = \"" + secret + "\" }\nenv_http_headers = { \"X-Ref\" = \"REF\" }\n"
			case len(c.d.urlKeys) > 0:
				ref := "${TOKEN}"
				if c.d.ref != nil {
					ref = c.d.ref("TOKEN")
				}
				text = `{"` + c.RootKey + `": {"r": {"` + c.d.urlKeys[0] + `": "https://h/mcp", "headers": {"X-Key": "Bearer ` + secret + `", "X-Ref": "` + ref + `"}}}}`
			default:
				text = `{"` + c.RootKey + `": {}}`
			}
			p := f.put(c.Name, ScopeUser, []byte(text))
			if _, err := f.in.Install(ctx, Request{Client: c.Name}); err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"Bearer " + secret, secret, "Bearer ${TOKEN}", "${TOKEN}"} {
				s := Server{Name: fmt.Sprintf("a%d", len(h)), URL: "https://h/mcp", Headers: []KV{{"Authorization", h}}}
				if _, err := f.in.Add(ctx, AddRequest{Client: c.Name, Server: s}); err != nil {
					t.Fatal(err)
				}
			}
			l, err := f.in.open(c.Name, ScopeUser)
			if err != nil {
				t.Fatal(err)
			}
			es, err := l.entries()
			if err != nil || len(es) == 0 {
				t.Fatalf("%d entries, %v", len(es), err)
			}
			for _, e := range es {
				if !e.wrapped {
					t.Errorf("%s not wrapped", e.name)
				}
				for _, a := range e.server.Args {
					if strings.Contains(a, secret) {
						t.Errorf("%s: the secret is an argument: %q\n%s", e.name, a, read(t, p))
					}
					if c.d.ref != nil && strings.Contains(a, "${") {
						t.Errorf("%s: %s expands references in arguments, and %q holds one\n%s", e.name, c.Title, a, read(t, p))
					}
				}
			}
			if c.Name == "claude-code" && !strings.Contains(string(read(t, p)), `"CTXKIT_HEADER_X_KEY": "Bearer `+secret+`"`) {
				t.Errorf("the header's value is not in env:\n%s", read(t, p))
			}
			if _, err := f.in.Uninstall(ctx, Request{Client: c.Name}); err != nil {
				t.Fatal(err)
			}
			if got := string(read(t, p)); got != text {
				t.Errorf("round trip:\n%s\nwant:\n%s", got, text)
			}
		})
	}
}

// Codex entries whose env is a table, inline or dotted keys get the
// generated variables in the same form, and the round trip is exact.
func TestCodexHeaderEnvForms(t *testing.T) {
	ctx := t.Context()
	for name, tc := range map[string]struct{ text, want string }{
		"table":  {"[mcp_servers.r]\nurl = \"https://h\"\nhttp_headers = { K = \"v\" }\n\n[mcp_servers.r.env]\nA = \"1\"\n\n[x]\n", "[mcp_servers.r.env]\nA = \"1\"\nCTXKIT_HEADER_K = \"v\"\n\n[x]\n"},
		"inline": {"[mcp_servers.r]\nurl = \"https://h\"\nenv = { A = \"1\" }\n\n[mcp_servers.r.http_headers]\nK = \"v\"\n", "env = { A = \"1\", CTXKIT_HEADER_K = \"v\" }\n"},
		"dotted": {"[mcp_servers.r]\nurl = \"https://h\"\nenv.A = \"1\"\nhttp_headers.K = \"v\"\n", "env.A = \"1\"\nenv.CTXKIT_HEADER_K = \"v\"\n"},
		"taken":  {"[mcp_servers.r]\nurl = \"https://h\"\nhttp_headers = { K = \"v\" }\nenv = { CTXKIT_HEADER_K = \"mine\" }", "env = { CTXKIT_HEADER_K = \"mine\", CTXKIT_HEADER_K_2 = \"v\" }"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			p := f.put("codex", ScopeUser, []byte(tc.text))
			res, err := f.in.Install(ctx, Request{Client: "codex"})
			if err != nil || len(res.Changes) != 1 || res.Changes[0].Action != "wrapped" {
				t.Fatalf("%+v %v", res, err)
			}
			got := string(read(t, p))
			if !strings.Contains(got, tc.want) || strings.Contains(got, "http_headers") || !strings.Contains(got, `"--header-env", "K=CTXKIT_HEADER_K`) {
				t.Errorf("after install:\n%s\nwant it to hold:\n%s", got, tc.want)
			}
			if _, err := f.in.Uninstall(ctx, Request{Client: "codex"}); err != nil {
				t.Fatal(err)
			}
			if got := string(read(t, p)); got != tc.text {
				t.Errorf("round trip:\n%q\nwant:\n%q", got, tc.text)
			}
		})
	}
}
