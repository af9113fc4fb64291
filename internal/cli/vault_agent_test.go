package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// TestVaultCommandsAsAnAgent: --agent NAME (trusted, the owner delegates)
// and --token-env VAR (verified) make the vault commands act as an agent,
// with its access: a restricted vault it is not attached to does not
// exist for it, a read-only grant cannot write, administration is the
// owner's, and a revoked agent's token no longer authenticates.
func TestVaultCommandsAsAnAgent(t *testing.T) {
	vaultEnv(t)
	tokens := map[string]string{}
	for _, name := range []string{"outsider", "reader", "writer", "gone"} {
		tokens[name] = strings.TrimSpace(mustRun(t, "agent", "create", name))
	}
	mustRun(t, "vault", "init", "restricted-vault", "--restricted")
	mustRun(t, "vault", "init", "mem", "--type", "episodic")
	mustRun(t, "vault", "attach", "restricted-vault", "reader", "--read-only")
	mustRun(t, "vault", "attach", "restricted-vault", "writer")
	mustRun(t, "vault", "attach", "restricted-vault", "gone")
	mustRun(t, "vault", "write", "restricted-vault", "plan.md", "--content", "# Plan\n\nCut cloud costs.\n")
	mustRun(t, "agent", "revoke", "gone")
	t.Setenv("READER_TOKEN", tokens["reader"])
	t.Setenv("WRITER_TOKEN", tokens["writer"])
	t.Setenv("GONE_TOKEN", tokens["gone"])

	// What a vault nobody has gets, word for word: a restricted vault the
	// agent is not attached to answers the same.
	_, _, missing := ctxkit(t, "vault", "query", "no-such-vault", "costs", "--agent", "outsider")
	missing = strings.ReplaceAll(missing, "no-such-vault", "restricted-vault")
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{"outsider: query", []string{"vault", "query", "restricted-vault", "costs", "--agent", "outsider"}, 1, "", missing},
		{"outsider: docs", []string{"vault", "docs", "restricted-vault", "--agent", "outsider"}, 1, "", missing},
		{"outsider: write", []string{"vault", "write", "restricted-vault", "x.md", "--content", "x", "--agent", "outsider"}, 1, "", missing},
		{"outsider: list", []string{"vault", "list", "--agent", "outsider"}, 0, "mem", ""},
		{"reader: query", []string{"vault", "query", "restricted-vault", "cloud", "--agent", "reader"}, 0, "1. plan.md › Plan", ""},
		{"reader: read", []string{"vault", "read", "restricted-vault", "plan.md", "--agent", "reader"}, 0, "Cut cloud costs.", ""},
		{"reader: write", []string{"vault", "write", "restricted-vault", "x.md", "--content", "x", "--agent", "reader"}, 1, "",
			`ctxkit: agent "reader" has read-only access to vault "restricted-vault"; read and query it, but write to a vault where your access is read-write, or ask the owner for write access` + "\n"},
		{"reader by token: query", []string{"vault", "query", "restricted-vault", "cloud", "--token-env", "READER_TOKEN"}, 0, "1. plan.md › Plan", ""},
		{"reader by token: delete", []string{"vault", "delete", "restricted-vault", "--path", "plan.md", "--token-env", "READER_TOKEN"}, 1, "", `agent "reader" has read-only access to vault "restricted-vault"`},
		{"writer by token: write", []string{"vault", "write", "restricted-vault", "notes/w.md", "--content", "# W\n\nby the writer\n", "--token-env", "WRITER_TOKEN"}, 0, "wrote and indexed notes/w.md", ""},
		{"writer: audit is the owner's", []string{"vault", "audit", "restricted-vault", "--agent", "writer"}, 1, "", "ctxkit: audit is for the vaults' owner only; ask the owner, or use the owner's token\n"},
		{"writer: attach is the owner's", []string{"vault", "attach", "restricted-vault", "outsider", "--agent", "writer"}, 1, "", "ctxkit: attach is for the vaults' owner only; ask the owner, or use the owner's token\n"},
		{"revoked agent's token", []string{"vault", "list", "--token-env", "GONE_TOKEN"}, 1, "", "ctxkit: the token in $GONE_TOKEN is not valid"},
		{"revoked agent's name", []string{"vault", "list", "--agent", "gone"}, 1, "", "ctxkit: no agent named gone; create it with ctxkit agent create gone (then attach it to its vaults), or act as the owner\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ctxkit(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
				t.Errorf("ctxkit %s: %d\nstdout: %s\nstderr: %s\nwant %d, stdout with %q, stderr with %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.out, tc.err)
			}
		})
	}
	if !strings.HasPrefix(missing, `ctxkit: no vault named "restricted-vault"`) {
		t.Errorf("a missing vault: %q", missing)
	}

	// An agent sees no folders and no other agents.
	var list []vault.VaultInfo
	if err := json.Unmarshal([]byte(mustRun(t, "vault", "list", "--json", "--agent", "reader")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "mem" || list[1].Name != "restricted-vault" || list[1].Access != "read-only" ||
		list[0].Path != "" || list[1].Path != "" || list[1].Agents != nil {
		t.Errorf("vault list --json as reader: %+v", list)
	}
	if out := mustRun(t, "vault", "list", "--agent", "outsider"); strings.Contains(out, "restricted-vault") {
		t.Errorf("vault list as outsider shows the restricted vault:\n%s", out)
	}

	// The audit log names who did what, and what was refused.
	var events []vault.AuditEvent
	if err := json.Unmarshal([]byte(mustRun(t, "vault", "audit", "restricted-vault", "--json", "-n", "0")), &events); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range events {
		seen[strings.TrimSpace(e.Agent+" "+e.Action+" "+e.Outcome+" "+e.Reason+" "+e.Path)] = true
	}
	for _, want := range []string{"owner write-doc ok  plan.md", "writer write-doc ok  notes/w.md", "reader write-doc refused read-only grant x.md",
		"reader delete-doc refused read-only grant plan.md", "outsider write-doc refused not attached x.md", "outsider query refused not attached",
		"writer audit refused owner only", "writer attach refused owner only"} {
		if !seen[want] {
			t.Errorf("no audit event %q in %+v", want, events)
		}
	}

	// An episode's source is the caller's name unless given.
	for _, tc := range []struct{ args []string }{{[]string{"--agent", "writer"}}, {[]string{"--token-env", "WRITER_TOKEN"}}} {
		var res struct {
			Episode episodeJSON `json:"episode"`
		}
		out := mustRun(t, append([]string{"vault", "write-episode", "mem", "the audit starts in March", "--json"}, tc.args...)...)
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Episode.Source != "writer" {
			t.Errorf("write-episode %v: %v %s", tc.args, err, out)
		}
	}
}
