package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store/transfer"
)

// TestStoreCopy copies the default store into another one: a table of
// every kind with both sides' counts and checksums, and a line saying
// they match; store URLs without their passwords.
func TestStoreCopy(t *testing.T) {
	root, _ := vaultEnv(t)
	mustRun(t, "vault", "init", "notes")
	mustRun(t, "vault", "write", "notes", "a.md", "--content", "# A\n\nsome words\n")
	mustRun(t, "vault", "init", "mem", "--type", "episodic")
	mustRun(t, "vault", "write-episode", "mem", "Alice leads the payments team")
	mustRun(t, "agent", "create", "bot")
	mustRun(t, "agent", "create", "gone")
	mustRun(t, "agent", "revoke", "gone")
	if code, _, stderr := ctxkitIn(t, `[{"a":1},{"a":2}]`, "offload", "put", "--tool", "t", "-"); code != 0 {
		t.Fatalf("offload put: %s", stderr)
	}

	db := filepath.Join(root, "data", "ctxkit.db")
	for _, args := range [][]string{
		{"store", "copy", "--to", "memory:"},
		{"store", "copy", "--from", "sqlite:" + db, "--to", "memory:"},
		{"--store", db, "store", "copy", "--to", "memory:"},
	} {
		code, out, stderr := ctxkit(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(transfer.Kinds)+2 || !strings.Contains(lines[0], "source checksum") {
			t.Fatalf("%q printed:\n%s", args, out)
		}
		for i, k := range transfer.Kinds {
			f := strings.Fields(strings.TrimPrefix(lines[i+1], string(k)))
			if !strings.HasPrefix(lines[i+1], string(k)) || len(f) != 5 || f[0] != f[1] || f[2] != f[3] || len(f[2]) != 16 {
				t.Errorf("%q: line of %s: %q", args, k, lines[i+1])
			}
		}
		for _, k := range []transfer.Kind{transfer.Workspaces, transfer.Vaults, transfer.Files, transfer.Episodes, transfer.Revoked} {
			for _, l := range lines {
				if strings.HasPrefix(l, string(k)) && strings.Fields(strings.TrimPrefix(l, string(k)))[0] == "0" {
					t.Errorf("%q: no %s copied: %q", args, k, l)
				}
			}
		}
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "every count and checksum matches: ") || !strings.HasSuffix(last, db+" is copied to memory:") {
			t.Errorf("%q: last line %q", args, lines[len(lines)-1])
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no destination", []string{"store", "copy"}, `"to" not set`},
		{"same store", []string{"store", "copy", "--from", db, "--to", "sqlite:" + db}, "the same store"},
		{"password", []string{"store", "copy", "--to", "postgres://u:secret@127.0.0.1:1/db?sslmode=disable"}, "u:***@"},
		{"unknown scheme", []string{"store", "copy", "--to", "nosuch:x"}, `unknown store scheme "nosuch"`},
	} {
		code, out, stderr := ctxkit(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr+out, "secret") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want a failure saying %q, and no password", tc.name, code, out, stderr, tc.want)
		}
	}
}
