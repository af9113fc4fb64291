package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ctxkitIn runs ctxkit with args and stdin, and returns its exit status
// and output.
func ctxkitIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(t.Context(), args, IO{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// ctxkit runs ctxkit with args and no input.
func ctxkit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return ctxkitIn(t, "", args...)
}

// mustRun runs ctxkit with args, which must succeed, and returns its
// standard output.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := ctxkit(t, args...)
	if code != 0 {
		t.Fatalf("ctxkit %s: %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// run executes ctxkit with args against a store in dir and returns its
// exit status and output.
func run(t *testing.T, dir string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("CTXKIT_HOME", dir)
	t.Setenv(StoreEnvVar, "")
	return ctxkitIn(t, stdin, args...)
}

func TestOffloadCommands(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := run(t, dir, `[{"name":"a","n":1},{"name":"b","n":2},{"name":"c","n":3}]`, "offload", "put", "--tool", "list_things", "--key", "things", "-")
	if code != 0 {
		t.Fatalf("put: %d %s", code, stderr)
	}
	var notice map[string]any
	if err := json.Unmarshal([]byte(out), &notice); err != nil || notice["stored_result"] != "things" || notice["items"] != float64(3) {
		t.Fatalf("put printed %s (%v)", out, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "ctxkit.db")); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("default store: %v, %v", fi, err)
	}

	code, out, _ = run(t, dir, "", "offload", "call", "result_pipe", `{"workspace_id":"things","steps":[{"filter":{"n":{"$gte":2}}},{"count":true}]}`)
	if code != 0 || !strings.Contains(out, `"count": 2`) {
		t.Errorf("call: %d %s", code, out)
	}

	code, out, _ = run(t, dir, "", "offload", "call", "result_get_item", `{"workspace_id":"things","index":9}`)
	if code != 1 || !strings.Contains(out, `"suggested_action"`) {
		t.Errorf("call with a bad index: %d %s", code, out)
	}

	code, out, _ = run(t, dir, "", "offload", "ls")
	if code != 0 || !strings.HasPrefix(out, "things · list_things · list · 3 items from list_things") {
		t.Errorf("ls: %d %q", code, out)
	}

	code, out, _ = run(t, dir, "", "offload", "show", "things")
	if code != 0 || !strings.Contains(out, `"notice"`) || !strings.Contains(out, `"workspace"`) {
		t.Errorf("show: %d %s", code, out)
	}

	code, out, _ = run(t, dir, "", "offload", "drop", "things")
	if code != 0 || out != "dropped things\n" {
		t.Errorf("drop: %d %q", code, out)
	}
	code, _, stderr = run(t, dir, "", "offload", "show", "things")
	if code != 1 || !strings.Contains(stderr, `no workspace "things"`) {
		t.Errorf("show after drop: %d %q", code, stderr)
	}

	code, out, _ = run(t, dir, "", "offload", "sweep")
	if code != 0 || out != "swept 0 expired workspaces\n" {
		t.Errorf("sweep: %d %q", code, out)
	}
}

func TestSessionsFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, dir, "secret text", "offload", "--session", "a", "put", "--key", "k", "-"); code != 0 {
		t.Fatal(stderr)
	}
	code, out, _ := run(t, dir, "", "offload", "--session", "b", "ls")
	if code != 0 || out != "" {
		t.Errorf("session b sees %q", out)
	}
	code, out, _ = run(t, dir, "", "offload", "ls", "--all")
	if code != 0 || !strings.HasPrefix(out, "k_") {
		t.Errorf("ls --all: %q", out)
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := run(t, t.TempDir(), "", "version")
	if code != 0 || !strings.HasPrefix(out, "ctxkit ") {
		t.Errorf("version: %d %q", code, out)
	}
	// --version prints the same line (issue 16: a newcomer tries it first).
	if code, flag, _ := run(t, t.TempDir(), "", "--version"); code != 0 || flag != out {
		t.Errorf("--version: %d %q, want %q", code, flag, out)
	}
	_, out, _ = run(t, t.TempDir(), "", "--help")
	if !strings.Contains(out, "Offload (large tool results):\n  offload") {
		t.Errorf("help does not group commands by part:\n%s", out)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"offload", "put", filepath.Join(dir, "nope.json")}, "no such file"},
		{"bad ttl", []string{"offload", "put", "--ttl", "soon", "-"}, "invalid argument"},
		{"unknown command", []string{"offlod"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, dir, "", tt.args...)
			if code == 0 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want an error containing %q", code, stderr, tt.want)
			}
		})
	}
}

// TestReadmeCommands runs the ctxkit commands of the README's first block,
// as written, so that the README cannot drift from the binary.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := strings.SplitN(string(readme), "```sh\n", 2)[1]
	block = strings.SplitN(block, "```", 2)[0]
	dir := t.TempDir()
	t.Chdir("../..")
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		for _, part := range strings.Split(line, " && ") {
			words := shellWords(t, strings.TrimSpace(part))
			if len(words) == 0 || words[0] != "./ctxkit" {
				continue
			}
			code, out, stderr := run(t, dir, "", words[1:]...)
			if code != 0 {
				t.Errorf("%s: exit %d\n%s%s", part, code, out, stderr)
			}
			ran++
		}
	}
	if ran < 2 {
		t.Errorf("found %d ctxkit commands in the README's first block", ran)
	}
}

// shellWords splits a command line the way sh does for the simple quoting
// the README uses: words separated by spaces, single quotes kept literal.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
