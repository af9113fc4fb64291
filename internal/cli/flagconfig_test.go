package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// guardFlags returns a fresh `ctxkit guard` flag set, parsed from args.
func guardFlags(t testing.TB, args ...string) *pflag.FlagSet {
	t.Helper()
	cmd := newGuardCmd(&globals{store: "memory:"}, IO{Err: io.Discard})
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cmd.Flags()
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "guard.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigFileSetsFlags(t *testing.T) {
	path := writeConfig(t, `
# the guard in front of two runtimes
listen = "127.0.0.1:11500"
ollama = "http://127.0.0.1:11435"
llamacpp = "http://127.0.0.1:8080"
policy = "observe"
keep-recent = 6
no-think = true
grace = "3s"

[route]
"qwen3:8b" = "ollama"
"model.gguf" = "llamacpp"

[model-window]
"gpt-4o-mini" = 128000
`)
	fs := guardFlags(t, "--policy", "strict", "--route", "x=openai")
	if err := applyConfigFile(fs, path); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"listen":       "127.0.0.1:11500",
		"ollama":       "http://127.0.0.1:11435",
		"policy":       "strict", // the command line wins
		"keep-recent":  "6",
		"no-think":     "true",
		"grace":        "3s",
		"route":        "[x=openai]", // the command line's map replaces the file's
		"model-window": "[gpt-4o-mini=128000]",
		"margin":       "128", // not in the file: the default
	} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"not toml", "policy = \n", "line 1"},
		{"unknown key", `polcy = "strict"`, `unknown key "polcy" (known: `},
		{"config in config", `config = "other.toml"`, `unknown key "config"`},
		{"string for bool", `no-think = "yes"`, "no-think: want true or false"},
		{"bool for int", `keep-recent = true`, "keep-recent: want a whole number"},
		{"number for duration", `grace = 3`, "grace: want a duration"},
		{"bad duration", `grace = "3 parsecs"`, `grace: want a duration ("20s", "1m30s"), not "3 parsecs"`},
		{"table for scalar", "[policy]\nx = 1\n", "policy: want a string, not a table"},
		{"scalar for map", `route = "x=ollama"`, "route: want a table"},
		{"bad map key", "[route]\n\"a=b\" = \"ollama\"\n", `key "a=b"`},
		{"bad map value", "[model-window]\nm = \"big\"\n", `model-window.m: want a whole number, not "big"`},
		{"date", `listen = 1979-05-27`, "listen: want a string"},
		{"bad value after a good one", "keep-recent = 6\nmargin = \"wide\"\n", `margin: want a whole number, not "wide"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.text)
			fs := guardFlags(t)
			before := fs.Lookup("keep-recent").Value.String()
			err := applyConfigFile(fs, path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming the file and %q", err, tc.want)
			}
			if fs.Lookup("keep-recent").Value.String() != before {
				t.Errorf("a failed file changed a flag")
			}
		})
	}
	if err := applyConfigFile(guardFlags(t), filepath.Join(t.TempDir(), "absent.toml")); err == nil || !strings.Contains(err.Error(), "absent.toml") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzConfigFile(f *testing.F) {
	f.Add([]byte("policy = \"strict\"\nkeep-recent = 3\n[route]\nm = \"ollama\"\n"))
	f.Add([]byte("[model-window]\nm = 4096\n"))
	f.Add([]byte("no-think = true\ngrace = \"1s\"\n"))
	fs := guardFlags(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		sets, err := parseFlagConfig(fs, data)
		if err != nil {
			return
		}
		for _, s := range sets {
			if fs.Lookup(s.name) == nil {
				t.Fatalf("set of unknown flag %q", s.name)
			}
		}
	})
}

// TestConfigExample: the example in examples/guard.toml is a valid file.
func TestConfigExample(t *testing.T) {
	fs := guardFlags(t)
	if err := applyConfigFile(fs, "../../examples/guard.toml"); err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("route").Value.String(); got != "[gemma3:1b=ollama,qwen3-8b=llamacpp]" {
		t.Errorf("route = %s", got)
	}
}
