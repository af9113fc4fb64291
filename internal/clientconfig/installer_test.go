package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const testExe = "/opt/ctxkit/bin/ctxkit"

// fixture is a temporary home, working directory and data directory.
type fixture struct {
	t    *testing.T
	home string
	in   *Installer
	env  Env
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cwd := filepath.Join(root, "project")
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{GOOS: "linux", Home: home, Cwd: cwd, Getenv: func(string) string { return "" }, Exists: exists}
	in, err := New(Options{Executable: testExe, Env: env, DataDir: filepath.Join(root, "ctxkit"),
		Now: func() time.Time { return time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, home: home, in: in, env: env}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// put writes the client's config file for scope and returns its path.
func (f *fixture) put(client string, scope Scope, data []byte) string {
	f.t.Helper()
	c, err := Lookup(client)
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := c.Path(scope, f.env)
	if err != nil {
		f.t.Fatal(err)
	}
	if data != nil {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			f.t.Fatal(err)
		}
	}
	return p
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/install/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "install", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, Diff(name, want, got))
	}
}

func clientFiles(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, c := range Clients() {
		ext := ".json"
		if c.Format == FormatTOML {
			ext = ".toml"
		}
		names = append(names, c.Name+".before"+ext)
	}
	return names
}

// TestGoldenPerClient runs, for every client's sample file: dry run,
// install, install again, uninstall (giving back the original bytes), add
// and --print, against golden files.
func TestGoldenPerClient(t *testing.T) {
	for _, file := range clientFiles(t) {
		client, ext, _ := strings.Cut(file, ".before")
		t.Run(client, func(t *testing.T) {
			ctx := t.Context()
			before := read(t, filepath.Join("testdata", "install", file))
			f := newFixture(t)
			path := f.put(client, ScopeUser, before)
			scrub := func(s string) []byte { return []byte(strings.ReplaceAll(s, f.home, "$HOME")) }

			dry, err := f.in.Install(ctx, Request{Client: client, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(read(t, path), before) {
				t.Fatal("dry run wrote the file")
			}
			golden(t, client+".dryrun.diff", scrub(dry.Diff))

			res, err := f.in.Install(ctx, Request{Client: client})
			if err != nil {
				t.Fatal(err)
			}
			after := read(t, path)
			golden(t, client+".after-install"+ext, after)
			golden(t, client+".install.changes.json", changesJSON(t, res.Changes))
			if res.Backup == "" || !bytes.Equal(read(t, res.Backup), before) {
				t.Errorf("backup %q does not hold the original", res.Backup)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("mode not kept: %v %v", fi.Mode(), err)
			}

			again, err := f.in.Install(ctx, Request{Client: client})
			if err != nil {
				t.Fatal(err)
			}
			if again.Wrote || !bytes.Equal(read(t, path), after) {
				t.Errorf("second install changed the file: %+v", again.Changes)
			}
			for _, ch := range again.Changes {
				if ch.Action == "wrapped" {
					t.Errorf("second install wrapped %s again", ch.Server)
				}
			}

			if _, err := f.in.Uninstall(ctx, Request{Client: client}); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); !bytes.Equal(got, before) {
				t.Fatalf("install then uninstall is not the original:\n%s", Diff(file, before, got))
			}

			// add: a remote server with a secret header and a stdio server.
			remote := Server{Name: "added-remote", URL: "https://mcp.example.com/mcp", Transport: "http",
				Headers: []KV{{"Authorization", "Bearer ${EXAMPLE_TOKEN}"}}}
			stdio := Server{Name: "added-stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"},
				Env: []KV{{"MEMORY_FILE", "/tmp/memory.json"}}}
			for _, s := range []Server{remote, stdio} {
				if _, err := f.in.Add(ctx, AddRequest{Client: client, Server: s}); err != nil {
					t.Fatal(err)
				}
			}
			golden(t, client+".after-add"+ext, read(t, path))
			if _, err := f.in.Add(ctx, AddRequest{Client: client, Server: stdio}); !errors.Is(err, ErrExists) {
				t.Errorf("adding an existing name: %v", err)
			}
			if _, err := f.in.Uninstall(ctx, Request{Client: client}); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); !bytes.Equal(got, before) {
				t.Fatalf("add then uninstall is not the original:\n%s", Diff(file, before, got))
			}

			var print bytes.Buffer
			for _, s := range []Server{remote, stdio} {
				sn, err := f.in.Snippet(client, s)
				if err != nil {
					t.Fatal(err)
				}
				print.WriteString(sn.Text)
				if sn.Link != "" {
					print.WriteString(sn.Link + "\n")
				}
			}
			golden(t, client+".print.txt", print.Bytes())
		})
	}
}

func changesJSON(t *testing.T, cs []Change) []byte {
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
