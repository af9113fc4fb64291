package vault

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// newRegistry gives a registry with its own data directory and project.
func newRegistry(t *testing.T) (*Registry, string, string) {
	t.Helper()
	root := t.TempDir()
	data, proj := filepath.Join(root, "data"), filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{DataDir: data, Cwd: proj})
	if err != nil {
		t.Fatal(err)
	}
	return r, data, proj
}

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
		{"openai:text-embedding-3-small", true}, {"ollama:library/x:latest", true},
		{"", false}, {"none:x", false}, {"ollama", false}, {"ollama:", false}, {"openai:a b", false},
		{"cohere:x", false}, {"builtin:", false},
	} {
		if err := ValidEmbeddingModel(tc.spec); (err == nil) != tc.ok {
			t.Errorf("ValidEmbeddingModel(%q) = %v, want ok=%v", tc.spec, err, tc.ok)
		}
	}
}

func TestInitListGetShadow(t *testing.T) {
	r, data, proj := newRegistry(t)
	ctx := t.Context()
	l, err := r.Init(ctx, InitOptions{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Type != Semantic || l.Scope != Local || l.EmbeddingModel != "none" || l.Dir != filepath.Join(proj, ".ctxkit", "vaults", "notes") {
		t.Fatalf("local vault: %+v", l)
	}
	g, err := r.Init(ctx, InitOptions{Name: "notes", Scope: Global, Type: Skill})
	if err != nil {
		t.Fatal(err)
	}
	if g.Dir != filepath.Join(data, "vaults", "notes") || g.EmbeddingModel != "" {
		t.Fatalf("global vault: %+v", g)
	}
	if fi, err := os.Stat(g.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("global folder mode: %v %v", fi, err)
	}
	if fi, err := os.Stat(r.ConfigPath(Global)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("global config mode: %v %v", fi, err)
	}
	if _, err := r.Init(ctx, InitOptions{Name: "notes"}); !errors.Is(err, ErrExists) {
		t.Fatalf("second local init: %v", err)
	}
	if _, err := r.Init(ctx, InitOptions{Name: "other", Path: ".ctxkit/vaults/notes"}); !errors.Is(err, ErrExists) {
		t.Fatalf("init on another vault's folder: %v", err)
	}
	for _, tc := range []struct {
		o    InitOptions
		want error
	}{
		{InitOptions{Name: "NOTES"}, ErrExists},
		{InitOptions{Name: "inner", Path: ".ctxkit/vaults/notes/inner"}, ErrInvalid},
		{InitOptions{Name: "outer", Path: ".ctxkit"}, ErrInvalid},
		{InitOptions{Name: "inglobal", Path: filepath.Join(data, "vaults", "notes", "x")}, ErrInvalid},
	} {
		if _, err := r.Init(ctx, tc.o); !errors.Is(err, tc.want) {
			t.Errorf("Init(%+v) = %v, want %v", tc.o, err, tc.want)
		}
	}
	for _, p := range []string{filepath.Join(proj, ".ctxkit", ".gitignore"), filepath.Join(l.DataDir(), ".gitignore")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("no .gitignore: %v", err)
		}
	}
	if _, err := r.Init(ctx, InitOptions{Name: "skills", Type: Skill, EmbeddingModel: "ollama:x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("skill vault with embedder: %v", err)
	}
	all, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Scope != Local || all[1].Scope != Global || all[0].Shadowed || !all[1].Shadowed {
		t.Fatalf("list: %+v %+v", all[0], all[1])
	}
	v, err := r.Get(ctx, "notes")
	if err != nil || v.Scope != Local {
		t.Fatalf("get prefers local: %+v %v", v, err)
	}
	if _, err := r.Get(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	// The config stores the local path relative to the project root, and a
	// registry opened in a subfolder finds it.
	b, err := os.ReadFile(r.ConfigPath(Local))
	if err != nil || !strings.Contains(string(b), `"path": ".ctxkit/vaults/notes"`) {
		t.Fatalf("local config: %s %v", b, err)
	}
	sub := filepath.Join(proj, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(Options{DataDir: data, Cwd: sub})
	if err != nil || r2.ProjectRoot() != proj {
		t.Fatalf("root from subfolder: %q %v", r2.ProjectRoot(), err)
	}
	if v, err := r2.Get(ctx, "notes"); err != nil || v.Dir != l.Dir {
		t.Fatalf("get from subfolder: %+v %v", v, err)
	}
	// --path from a subfolder is relative to it; outside the project it is
	// stored absolute.
	r3, _ := Open(Options{DataDir: data, Cwd: sub})
	d, err := r3.Init(ctx, InitOptions{Name: "docs", Path: "docs", Cwd: sub})
	if err != nil || d.Dir != filepath.Join(sub, "docs") {
		t.Fatalf("init --path: %+v %v", d, err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere")
	if _, err := r3.Init(ctx, InitOptions{Name: "far", Path: outside}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(r.ConfigPath(Local))
	if !strings.Contains(string(b), `"path": "a/b/docs"`) || !strings.Contains(string(b), fmt.Sprintf("%q", outside)) {
		t.Fatalf("stored paths: %s", b)
	}
}

func TestDataDirIsNotAProject(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, ".ctxkit")
	r, err := Open(Options{DataDir: data, Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Init(t.Context(), InitOptions{Name: "g", Scope: Global}); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "proj")
	os.MkdirAll(sub, 0o755)
	r2, _ := Open(Options{DataDir: data, Cwd: sub})
	if r2.ProjectRoot() != sub {
		t.Fatalf("data directory taken for a project: root %s", r2.ProjectRoot())
	}
	if _, err := r.Init(t.Context(), InitOptions{Name: "l"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("local init into the global config: %v", err)
	}
	all, err := r2.List(t.Context())
	if err != nil || len(all) != 1 || all[0].Scope != Global {
		t.Fatalf("list: %v %v", all, err)
	}
}

func TestConfigUnknownFieldsAndParseErrors(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := t.Context()
	path := r.ConfigPath(Local)
	os.MkdirAll(filepath.Dir(path), 0o755)
	orig := `{"comment": "mine", "vaults": {"kept": {"type": "episodic", "path": "k", "restricted": false, "color": "blue"}}}`
	os.WriteFile(path, []byte(orig), 0o644)
	if _, err := r.Init(ctx, InitOptions{Name: "new"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`"comment": "mine"`, `"color": "blue"`, `"new": {`, `"type": "episodic"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lost %s:\n%s", want, b)
		}
	}
	if _, err := r.Attach(ctx, "kept", "bot", false); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if !strings.Contains(string(b), `"color": "blue"`) {
		t.Errorf("attach lost an unknown field:\n%s", b)
	}

	for _, tc := range []struct{ text, want string }{
		{"{\n  \"vaults\": {\n    \"x\": {,}\n  }\n}\n", ":3:11:"},
		{"{\"vaults\": []}", "must be an object"},
		{"{\"vaults\": {\"x\": {\"path\": 3}}}", `vault "x"`},
	} {
		os.WriteFile(path, []byte(tc.text), 0o644)
		_, err := r.Init(ctx, InitOptions{Name: "later"})
		if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrParse naming %s and %q", tc.text, err, path, tc.want)
		}
		if b, _ := os.ReadFile(path); string(b) != tc.text {
			t.Errorf("bad config was changed: %s", b)
		}
		if _, err := os.Stat(filepath.Join(r.ProjectRoot(), ".ctxkit", "vaults", "later")); err == nil {
			t.Errorf("vault folder created despite the bad config")
		}
	}
	os.WriteFile(path, []byte(`{"vaults": {"x": {"type": "graph", "path": "x"}}}`), 0o644)
	if _, err := r.List(ctx); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown type: %v", err)
	}
}

func TestRequire(t *testing.T) {
	v := &Vault{Name: "mem", Type: Episodic}
	if err := v.Require(Episodic); err != nil {
		t.Fatal(err)
	}
	err := v.Require(Semantic, Skill)
	if !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), "episodic vault") ||
		!strings.Contains(err.Error(), "semantic or skill") || !strings.Contains(err.Error(), "write-episode") {
		t.Fatalf("Require: %v", err)
	}
}

func TestConcurrentInitGoroutines(t *testing.T) {
	r, _, _ := newRegistry(t)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() {
			_, err := r.Init(t.Context(), InitOptions{Name: fmt.Sprintf("l%d", i)})
			errs <- err
		})
		wg.Go(func() {
			_, err := r.Init(t.Context(), InitOptions{Name: fmt.Sprintf("g%d", i), Scope: Global})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	all, err := r.List(t.Context())
	if err != nil || len(all) != 2*n {
		t.Fatalf("after concurrent inits: %d vaults, %v", len(all), err)
	}
}

func TestConcurrentAgents(t *testing.T) {
	r, _, _ := newRegistry(t)
	const n = 10
	tokens := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tok, err := r.CreateAgent(t.Context(), fmt.Sprintf("a%d", i))
			if err != nil {
				t.Error(err)
			}
			tokens[i] = tok
		})
	}
	wg.Wait()
	for i, tok := range tokens {
		wg.Go(func() {
			if name, err := r.Authenticate(t.Context(), tok); err != nil || name != fmt.Sprintf("a%d", i) {
				t.Errorf("token %d: %q %v", i, name, err)
			}
		})
	}
	wg.Wait()
	if list, err := r.Agents(t.Context()); err != nil || len(list) != n {
		t.Fatalf("agents: %d %v", len(list), err)
	}
}

// TestConcurrentInitProcesses runs this test binary twice at once, each
// adding vaults to the same configs; none is lost.
func TestConcurrentInitProcesses(t *testing.T) {
	if os.Getenv("CTXKIT_VAULT_CHILD") != "" {
		r, err := Open(Options{DataDir: os.Getenv("CTXKIT_VAULT_DATA"), Cwd: os.Getenv("CTXKIT_VAULT_CWD")})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			name := fmt.Sprintf("%s-%d", os.Getenv("CTXKIT_VAULT_CHILD"), i)
			if _, err := r.Init(t.Context(), InitOptions{Name: name}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Init(t.Context(), InitOptions{Name: name, Scope: Global}); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	r, data, proj := newRegistry(t)
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for _, child := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentInitProcesses$")
		cmd.Env = append(os.Environ(), "CTXKIT_VAULT_CHILD="+child, "CTXKIT_VAULT_DATA="+data, "CTXKIT_VAULT_CWD="+proj)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
	}
	all, err := r.List(t.Context())
	if err != nil || len(all) != 40 {
		t.Fatalf("after two processes: %d vaults, %v", len(all), err)
	}
}
