package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnparseableFilesAreRefused(t *testing.T) {
	cases := []struct {
		client, text, where string
	}{
		{"cursor", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}\n", "line 4, column 5"},
		{"zed", "{\n  // comment\n  \"context_servers\": {,}\n}\n", "line 3, column"},
		{"vscode", "[1, 2]", "not a JSON object"},
		{"codex", "model = \"x\"\n[mcp_servers.a]\ncommand = \n", "line 3, column"},
		{"codex", "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a]\ncommand = \"y\"\n", "line 3"},
	}
	for _, tc := range cases {
		t.Run(tc.client, func(t *testing.T) {
			f := newFixture(t)
			p := f.put(tc.client, ScopeUser, []byte(tc.text))
			for _, op := range []func() error{
				func() error { _, err := f.in.Install(t.Context(), Request{Client: tc.client}); return err },
				func() error {
					_, err := f.in.Add(t.Context(), AddRequest{Client: tc.client, Server: Server{Name: "n", Command: "x"}})
					return err
				},
			} {
				err := op()
				if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.where) {
					t.Errorf("error %v, want ErrParse naming %s and %q", err, p, tc.where)
				}
			}
			if got := read(t, p); string(got) != tc.text {
				t.Errorf("file changed: %q", got)
			}
			if _, err := os.Stat(filepath.Join(f.in.opts.DataDir, "backups")); err == nil {
				t.Error("a backup was made of a file that was not written")
			}
		})
	}
}

func TestMissingAndEmptyFiles(t *testing.T) {
	ctx := t.Context()
	for _, client := range []string{"cursor", "vscode", "codex", "zed", "opencode"} {
		t.Run(client, func(t *testing.T) {
			for _, initial := range [][]byte{nil, []byte(""), []byte("  \n")} {
				f := newFixture(t)
				p := f.put(client, ScopeUser, initial)
				res, err := f.in.Install(ctx, Request{Client: client})
				if err != nil || res.Wrote || len(res.Changes) != 0 {
					t.Fatalf("install on %q: %+v %v", initial, res, err)
				}
				if _, err := f.in.Add(ctx, AddRequest{Client: client, Server: Server{Name: "mem", Command: "npx", Args: []string{"-y", "server-memory"}}}); err != nil {
					t.Fatal(err)
				}
				got := read(t, p)
				if !bytes.HasSuffix(got, []byte("\n")) || !bytes.Contains(got, []byte(`"wrap", "--name", "mem", "--", "npx"`)) {
					t.Errorf("after add on %q:\n%s", initial, got)
				}
				if initial == nil {
					if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
						t.Errorf("new user file mode %v", fi.Mode())
					}
				}
				// The new file is itself a valid configuration with one wrapped server.
				l, err := f.in.open(client, ScopeUser)
				if err != nil {
					t.Fatal(err)
				}
				es, err := l.entries()
				if err != nil || len(es) != 1 || !es[0].wrapped {
					t.Errorf("entries after add: %+v %v", es, err)
				}
			}
		})
	}
}

func TestOddJSONLayouts(t *testing.T) {
	ctx := t.Context()
	cases := map[string]string{
		"compact":          `{"mcpServers":{"a":{"command":"x","args":["1"]},"b":{"url":"https://h/mcp"}}}`,
		"trailing commas":  "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",},\n  },\n}",
		"comments":         "/* head */ {\n  // c1\n  \"mcpServers\": { /* c2 */ \"a\": /* c3 */ {\"command\": \"x\" /* c4 */} // c5\n  } // c6\n}\n// tail\n",
		"unrelated keys":   "{\"z\": [1, {\"mcpServers\": 1}], \"mcpServers\": {\"a\": {\"command\": \"x\"}}, \"a\": {\"command\": \"not a server\"}}\n",
		"crlf":             "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"x\"\r\n    },\r\n    \"b\": {\"url\": \"https://h\"}\r\n  }\r\n}\r\n",
		"tabs no newline":  "{\n\t\"mcpServers\": {\n\t\t\"a\": {\n\t\t\t\"command\": \"x\"\n\t\t}\n\t}\n}",
		"already wrapped":  `{"mcpServers": {"a": {"command": "C:\\Tools\\CTXKIT.EXE", "args": ["wrap", "--name", "a", "--", "x"]}, "b": {"command": "ctxkit", "args": ["wrap", "u"]}}}`,
		"empty servers":    `{"mcpServers": {}}`,
		"unicode and html": `{"mcpServers": {"é<>&": {"command": "ü", "args": ["<&>", "\u2028"]}}}`,
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			p := f.put("cursor", ScopeUser, []byte(text))
			if _, err := f.in.Install(ctx, Request{Client: "cursor"}); err != nil {
				t.Fatal(err)
			}
			after := read(t, p)
			if name == "already wrapped" || name == "empty servers" {
				if string(after) != text {
					t.Errorf("changed:\n%s", after)
				}
			}
			if name == "crlf" && bytes.Count(after, []byte("\n")) != bytes.Count(after, []byte("\r\n")) {
				t.Errorf("mixed line endings:\n%q", after)
			}
			if name == "comments" || name == "unrelated keys" {
				for _, keep := range []string{"/* head */", "// c1", "/* c2 */", "/* c3 */", "// c6", "// tail", `"z": [1, {"mcpServers": 1}]`} {
					if strings.Contains(text, keep) && !strings.Contains(string(after), keep) {
						t.Errorf("lost %q:\n%s", keep, after)
					}
				}
			}
			if _, err := f.in.Uninstall(ctx, Request{Client: "cursor"}); err != nil {
				t.Fatal(err)
			}
			if got := read(t, p); string(got) != text {
				t.Errorf("round trip:\n%s", Diff("f", []byte(text), got))
			}
		})
	}
}

func TestDuplicateServersAreRefused(t *testing.T) {
	f := newFixture(t)
	text := `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`
	p := f.put("cursor", ScopeUser, []byte(text))
	if _, err := f.in.Install(t.Context(), Request{Client: "cursor"}); !errors.Is(err, ErrShape) {
		t.Errorf("duplicate names: %v", err)
	}
	if string(read(t, p)) != text {
		t.Error("file changed")
	}
}

func TestNamedServersOnly(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	text := `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}}}`
	p := f.put("claude-desktop", ScopeUser, []byte(text))
	res, err := f.in.Install(ctx, Request{Client: "claude-desktop", Servers: []string{"b"}})
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Server != "b" {
		t.Fatalf("%+v %v", res, err)
	}
	if got := string(read(t, p)); !strings.Contains(got, `"a": {"command": "x"}`) || strings.Contains(got, `"command": "y"`) {
		t.Errorf("got %s", got)
	}
	if _, err := f.in.Install(ctx, Request{Client: "claude-desktop", Servers: []string{"nope"}}); !errors.Is(err, ErrNoServer) {
		t.Errorf("unknown server: %v", err)
	}
	if _, err := f.in.Install(ctx, Request{Client: "claude-desktop"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "claude-desktop", Servers: []string{"c"}}); err != nil {
		t.Fatal(err)
	}
	got := string(read(t, p))
	if !strings.Contains(got, `"c": {"command": "z"}`) || strings.Contains(got, `"command": "x"`) {
		t.Errorf("after uninstall c: %s", got)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "claude-desktop"}); err != nil {
		t.Fatal(err)
	}
	if got := string(read(t, p)); got != text {
		t.Errorf("round trip: %s", got)
	}
}

func TestScopes(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	// Project scope: .mcp.json in the working directory.
	proj := f.put("claude-code", ScopeProject, []byte(`{"mcpServers": {"p": {"command": "x"}}}`))
	if proj != filepath.Join(f.env.Cwd, ".mcp.json") {
		t.Fatalf("project path %s", proj)
	}
	// Local scope: projects["/abs"].mcpServers in ~/.claude.json.
	user := f.put("claude-code", ScopeUser, []byte("{\n  \"numStartups\": 3,\n  \"projects\": {\n    \""+f.env.Cwd+"\": {\n      \"allowedTools\": [],\n      \"mcpServers\": {\"l\": {\"command\": \"y\"}}\n    }\n  },\n  \"mcpServers\": {\"u\": {\"command\": \"z\"}}\n}\n"))
	before := read(t, user)
	res, err := f.in.Install(ctx, Request{Client: "claude-code", Scope: ScopeLocal})
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Server != "l" {
		t.Fatalf("local: %+v %v", res, err)
	}
	if got := string(read(t, user)); !strings.Contains(got, `"u": {"command": "z"}`) {
		t.Errorf("user entry touched by a local install: %s", got)
	}
	if res, err := f.in.Install(ctx, Request{Client: "claude-code", Scope: ScopeProject}); err != nil || res.Changes[0].Server != "p" {
		t.Fatalf("project: %+v %v", res, err)
	}
	if fi, _ := os.Stat(proj); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	st, err := f.in.Status(ctx, "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	wrapped := map[Scope]string{}
	for _, ls := range st {
		for _, s := range ls.Servers {
			wrapped[ls.Scope] += s.Name + "=" + s.State + ";"
		}
	}
	if wrapped[ScopeUser] != "u=not wrapped;" || wrapped[ScopeProject] != "p=wrapped;" || wrapped[ScopeLocal] != "l=wrapped;" {
		t.Errorf("status: %v", wrapped)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "claude-code", Scope: ScopeLocal}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, user), before) {
		t.Error("local round trip")
	}
	// Adding to the local scope of a project without an entry creates the path.
	f.env.Cwd = filepath.Join(filepath.Dir(f.env.Cwd), "other")
	f.in.opts.Env = f.env
	if _, err := f.in.Add(ctx, AddRequest{Client: "claude-code", Scope: ScopeLocal, Server: Server{Name: "n", Command: "x"}}); err != nil {
		t.Fatal(err)
	}
	l, _ := f.in.open("claude-code", ScopeLocal)
	if es, _ := l.entries(); len(es) != 1 || es[0].name != "n" {
		t.Errorf("local add: %s", read(t, user))
	}
	if _, err := f.in.Install(ctx, Request{Client: "windsurf", Scope: ScopeProject}); !errors.Is(err, ErrScope) {
		t.Errorf("windsurf project scope: %v", err)
	}
}

func TestDrift(t *testing.T) {
	ctx := t.Context()
	text := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"}\n  }\n}\n"
	f := newFixture(t)
	p := f.put("claude-desktop", ScopeUser, []byte(text))
	if _, err := f.in.Install(ctx, Request{Client: "claude-desktop"}); err != nil {
		t.Fatal(err)
	}
	// The client rewrites its file: reformatted (no drift), entry a
	// unwrapped by hand, entry b dropped.
	rewritten := "{\"mcpServers\":{\"a\":{\"command\":\"other\"}}}"
	if err := os.WriteFile(p, []byte(rewritten), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := f.in.Status(ctx, "claude-desktop")
	if err != nil {
		t.Fatal(err)
	}
	var drift []string
	for _, s := range st[0].Servers {
		if s.Drift != "" {
			drift = append(drift, s.Name+":"+s.State)
		}
	}
	if strings.Join(drift, ",") != "a:not wrapped,b:missing" {
		t.Errorf("drift %v in %+v", drift, st)
	}
	res, err := f.in.Uninstall(ctx, Request{Client: "claude-desktop"})
	if !errors.Is(err, ErrDrift) || res.Wrote {
		t.Fatalf("uninstall over drift: %+v %v", res, err)
	}
	if string(read(t, p)) != rewritten {
		t.Fatal("uninstall without --force changed a drifted file")
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "claude-desktop", Force: true}); err != nil {
		t.Fatal(err)
	}
	got := string(read(t, p))
	if !strings.Contains(got, `"a":{"command": "x"}`) || !strings.Contains(got, `"b": {"command": "y"}`) {
		t.Errorf("forced uninstall: %s", got)
	}

	// A reformatted but otherwise equal wrapped entry is not drift.
	f2 := newFixture(t)
	p2 := f2.put("cursor", ScopeUser, []byte(text))
	if _, err := f2.in.Install(ctx, Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	l, _ := f2.in.open("cursor", ScopeUser)
	l.jd.root.Format()
	if err := os.WriteFile(p2, l.jd.root.Pack(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f2.in.Uninstall(ctx, Request{Client: "cursor"}); err != nil {
		t.Errorf("reformatted entry counted as drift: %v", err)
	}
}

func TestCodexOddTables(t *testing.T) {
	ctx := t.Context()
	text := "[mcp_servers]\ninline = { command = \"x\" }\n\n[mcp_servers.split]\ncommand = \"y\"\n\n[other]\nk = 1\n\n[mcp_servers.split.env]\nA = \"b\"\n\n[mcp_servers.ok]\ncommand = \"z\"" // no final newline
	f := newFixture(t)
	p := f.put("codex", ScopeUser, []byte(text))
	res, err := f.in.Install(ctx, Request{Client: "codex"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range res.Changes {
		got[c.Server] = c.Action
	}
	if got["inline"] != "skipped" || got["split"] != "skipped" || got["ok"] != "wrapped" {
		t.Errorf("changes %+v", res.Changes)
	}
	after := string(read(t, p))
	if !strings.HasSuffix(after, "args = [\"wrap\", \"--name\", \"ok\", \"--\", \"z\"]") {
		t.Errorf("trailing newline state or args: %q", after)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "codex"}); err != nil {
		t.Fatal(err)
	}
	if string(read(t, p)) != text {
		t.Errorf("round trip: %q", read(t, p))
	}
}

func TestCodexCRLF(t *testing.T) {
	ctx := t.Context()
	text := "# c\r\n[mcp_servers.a]\r\nurl = \"https://h/mcp\"\r\nbearer_token_env_var = \"T\"\r\n\r\n[mcp_servers.a.http_headers]\r\nX = \"1\"\r\n\r\n[mcp_servers.b]\r\ncommand = \"x\"\r\n"
	f := newFixture(t)
	p := f.put("codex", ScopeUser, []byte(text))
	if _, err := f.in.Install(ctx, Request{Client: "codex"}); err != nil {
		t.Fatal(err)
	}
	after := read(t, p)
	if bytes.Count(after, []byte("\n")) != bytes.Count(after, []byte("\r\n")) || !bytes.Contains(after, []byte(`"-H", "Authorization:Bearer ${T}", "--header-env", "X=CTXKIT_HEADER_X"]`+"\r\nenv_vars = [\"T\"]\r\n\r\n[mcp_servers.a.env]\r\nCTXKIT_HEADER_X = \"1\"\r\n\r\n[mcp_servers.b]")) {
		t.Errorf("after install:\n%q", after)
	}
	if bytes.Contains(after, []byte("http_headers")) {
		t.Errorf("http_headers kept:\n%s", after)
	}
	if _, err := f.in.Uninstall(ctx, Request{Client: "codex"}); err != nil {
		t.Fatal(err)
	}
	if string(read(t, p)) != text {
		t.Errorf("round trip: %q", read(t, p))
	}
}

// TestConcurrentWriters: ctxkit processes serialise on the lock, so
// concurrent adds to one file all land and the manifest holds every record.
func TestConcurrentWriters(t *testing.T) {
	f := newFixture(t)
	p := f.put("cursor", ScopeUser, []byte("{}\n"))
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			// Each goroutine has its own Installer, like separate processes.
			in, err := New(f.in.opts)
			if err == nil {
				_, err = in.Add(t.Context(), AddRequest{Client: "cursor", Server: Server{Name: fmt.Sprintf("s%d", i), Command: "x"}})
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	l, err := f.in.open("cursor", ScopeUser)
	if err != nil {
		t.Fatal(err)
	}
	es, _ := l.entries()
	m, _ := loadManifest(f.in.opts.DataDir)
	if len(es) != n || len(m.Records) != n {
		t.Fatalf("%d entries, %d records:\n%s", len(es), len(m.Records), read(t, p))
	}
	if _, err := f.in.Uninstall(t.Context(), Request{Client: "cursor"}); err != nil {
		t.Fatal(err)
	}
	// The servers object add created stays, empty.
	if got := string(read(t, p)); got != "{\n  \"mcpServers\": {}\n}\n" {
		t.Errorf("after uninstall: %q", got)
	}
}
