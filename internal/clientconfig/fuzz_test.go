package clientconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// roundTrip installs into data as client's file, then uninstalls, and fails
// unless the bytes come back exactly. Inputs that do not parse are skipped.
func roundTrip(t *testing.T, client string, data []byte) {
	f := newFixture(t)
	p := f.put(client, ScopeUser, data)
	res, err := f.in.Install(t.Context(), Request{Client: client})
	if errors.Is(err, ErrParse) || errors.Is(err, ErrShape) {
		if !bytes.Equal(read(t, p), data) {
			t.Fatal("a refused file was changed")
		}
		return
	}
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	again, err := f.in.Install(t.Context(), Request{Client: client})
	if err != nil || again.Wrote {
		t.Fatalf("second install: %+v %v", again, err)
	}
	if _, err := f.in.Uninstall(t.Context(), Request{Client: client}); err != nil {
		t.Fatalf("uninstall: %v (changes %+v)", err, res.Changes)
	}
	if got := read(t, p); !bytes.Equal(got, data) {
		t.Fatalf("round trip changed the file:\n%s", Diff("f", data, got))
	}

	// add then uninstall gives the bytes back too, when the servers object
	// (JSON) existed: add does not remove the containers it created.
	l, err := f.in.open(client, ScopeUser)
	if err != nil {
		t.Fatal(err)
	}
	if l.jd != nil {
		if _, n, _ := l.jd.lookup(l.keys); n < len(l.keys) {
			return
		}
	}
	name := "ctxkit-fuzz-added"
	if es, _ := l.entries(); len(es) > 0 {
		if _, taken := find(es, name); taken {
			return
		}
	}
	for _, s := range []Server{{Name: name, Command: "npx", Args: []string{"-y", "x"}}, {Name: name + "-2", URL: "https://h/mcp", Headers: []KV{{"A", "${B}"}}}} {
		if _, err := f.in.Add(t.Context(), AddRequest{Client: client, Server: s}); err != nil {
			t.Fatalf("add: %v", err)
		}
	}
	if _, err := f.in.Uninstall(t.Context(), Request{Client: client}); err != nil {
		t.Fatalf("uninstall after add: %v", err)
	}
	if got := read(t, p); !bytes.Equal(got, data) {
		t.Fatalf("add then uninstall changed the file:\n%s", Diff("f", data, got))
	}
}

func seeds(f *testing.F, ext string) {
	names, _ := filepath.Glob(filepath.Join("testdata", "install", "*.before."+ext))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzRoundTripJSON(f *testing.F) {
	seeds(f, "json")
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"url":"u","headers":{"h":"v"}}}}`))
	f.Add([]byte("{\"mcpServers\":{\"a\":{/*c*/\"command\":\"x\",\"args\":[],},},}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, client := range []string{"cursor", "zed", "opencode", "claude-code"} {
			roundTrip(t, client, data)
		}
	})
}

func FuzzRoundTripTOML(f *testing.F) {
	seeds(f, "toml")
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.b]\nurl = \"u\"\nbearer_token_env_var = \"T\"\n[mcp_servers.b.http_headers]\nX = \"1\"\n"))
	f.Add([]byte("[mcp_servers.'a b']\ncommand = '''x'''\nargs = [\n'1', # c\n]"))
	// literal headers into each form of env: table, inline, dotted.
	f.Add([]byte("[mcp_servers.r]\nurl = \"u\"\nhttp_headers = { K = \"v\" }\n\n[mcp_servers.r.env]\nA = \"1\"\n\n[mcp_servers.r.oauth]\nx = 1\n"))
	f.Add([]byte("[mcp_servers.r]\nurl = \"u\"\nenv = { A = \"1\" }\n[mcp_servers.r.http_headers]\nK = \"v\""))
	f.Add([]byte("[mcp_servers.r]\nurl = \"u\"\nenv.A = \"1\"\nhttp_headers.K = \"v\" # c\nenv_http_headers.E = \"V\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, "codex", data)
	})
}
