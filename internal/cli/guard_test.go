package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/internal/llmemu"
	"github.com/ctxkit/ctxkit/tokenizer"
)

// startGuard runs `ctxkit guard` with opts (Listen: any free port) and
// returns its base URL and stop, which shuts it down and checks that it
// ended without error.
func startGuard(t *testing.T, opts GuardOptions) (base string, stop func()) {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runGuard(ctx, &globals{store: "memory:"}, &opts, IO{Err: io.Discard}, func(a string) { addr <- a })
	}()
	select {
	case a := <-addr:
		return "http://" + a, func() {
			t.Helper()
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	case err := <-done:
		cancel()
		t.Fatal(err)
		return "", nil
	}
}

// postDecode posts a JSON body to url and decodes the JSON answer into
// out.
func postDecode(t *testing.T, url, body string, out any) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestGuardCommand runs `ctxkit guard` in front of the Ollama emulator: an
// overflowing chat keeps its secret and carries the report.
func TestGuardCommand(t *testing.T) {
	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 2048}))
	defer emu.Close()
	base, stop := startGuard(t, GuardOptions{Ollama: emu.URL, Policy: "compact", KeepRecent: 4, Window: 4096, Reserve: 512, Margin: 128, Grace: 5 * time.Second})
	body := `{"model":"llama3.2","stream":false,"options":{"num_ctx":2048},"messages":[` +
		`{"role":"user","content":"SECRET: ANANAS-7734"},` +
		`{"role":"assistant","content":"noted"},` +
		`{"role":"user","content":"` + strings.Repeat("filler ", 3000) + `"},` +
		`{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":"What is the secret?"}]}`
	var out struct {
		Message struct{ Content string } `json:"message"`
		Ctxkit  struct {
			Compacted bool `json:"compacted"`
			Window    int  `json:"window"`
		} `json:"ctxkit"`
	}
	resp := postDecode(t, base+"/api/chat", body, &out)
	if out.Message.Content != "ANANAS-7734" || !out.Ctxkit.Compacted || out.Ctxkit.Window != 2048 || resp.Header.Get("X-Ctxkit-Compacted") != "true" {
		t.Errorf("%+v %v", out, resp.Header)
	}
	stop()
}

func TestGuardCommandFlags(t *testing.T) {
	for _, tc := range []struct {
		opts GuardOptions
		want string
	}{
		{GuardOptions{Listen: "127.0.0.1:0", Policy: "lenient"}, "lenient"},
		{GuardOptions{Listen: "127.0.0.1:0", Policy: "compact", KeepRecent: -1}, "--keep-recent"},
		{GuardOptions{Listen: "127.0.0.1:0", Policy: "compact", Ollama: "not a url"}, "not a url"},
		{GuardOptions{Listen: "0.0.0.0:11434", Policy: "compact"}, "--listen 0.0.0.0:11434 accepts connections from other machines and the guard does not authenticate what it proxies: give --insecure"},
		{GuardOptions{Listen: ":11434", Policy: "compact"}, "give --insecure"},
		// --insecure lets the address through (to the next check).
		{GuardOptions{Listen: "0.0.0.0:11434", Insecure: true, Policy: "lenient"}, "lenient"},
	} {
		err := runGuard(t.Context(), &globals{store: "memory:"}, &tc.opts, IO{Err: io.Discard}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestGuardTokenizer runs the guard with --tokenizer and without it on
// the same chat: the reports' tokens_before differ by exactly the
// tokenizer's count minus the estimate (the template and per-message
// overheads are the same on both sides, and a first request is not
// calibrated yet).
func TestGuardTokenizer(t *testing.T) {
	const path = "../../vault/embed/bert/testdata/tiny/tokenizer.json"
	tok, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"You are terse.", "Hello, world! Count these words: tokenization, café, 東京, 12345."}
	want := 0
	for _, s := range texts {
		want += tok.Count(s) - guard.Estimate(s)
	}
	if want == 0 {
		t.Fatal("the tokenizer counts the texts as the estimate does: the test could not fail")
	}
	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 8192}))
	defer emu.Close()
	before := func(tokenizerPath string) int {
		base, stop := startGuard(t, GuardOptions{Ollama: emu.URL, Policy: "compact",
			KeepRecent: 4, Window: 8192, Reserve: 512, Margin: 128, Grace: 5 * time.Second, Tokenizer: tokenizerPath})
		defer stop()
		msgs, _ := json.Marshal([]map[string]string{{"role": "system", "content": texts[0]}, {"role": "user", "content": texts[1]}})
		body := `{"model":"llama3.2","stream":false,"messages":` + string(msgs) + `}`
		var out struct {
			Ctxkit struct {
				TokensBefore int `json:"tokens_before"`
			} `json:"ctxkit"`
		}
		postDecode(t, base+"/api/chat", body, &out)
		if out.Ctxkit.TokensBefore == 0 {
			t.Fatalf("report: %+v", out)
		}
		return out.Ctxkit.TokensBefore
	}
	exact, estimated := before(path), before("")
	if got := exact - estimated; got != want {
		t.Errorf("tokens_before with the tokenizer %d, without %d: difference %d, want %d", exact, estimated, got, want)
	}
}

func TestGuardTokenizerErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(bad, []byte(`{"model":{"type":"Mystery"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(t.TempDir(), "missing.json"): "no such file",
		bad: `unsupported model type "Mystery"`,
	} {
		err := runGuard(t.Context(), &globals{store: "memory:"}, &GuardOptions{Listen: "127.0.0.1:0", Policy: "compact", Tokenizer: path}, IO{Err: io.Discard}, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--tokenizer") {
			t.Errorf("%s: %v, want an error with %q", path, err, want)
		}
	}
}

// TestGuardFaultFlags: the flags of the guard's limits and access reach
// it: the token of --token-env guards the evicted spans, --allowed-hosts
// adds a Host, and bad values are refused before anything listens.
func TestGuardFaultFlags(t *testing.T) {
	cmd := newGuardCmd(&globals{}, IO{})
	for name, want := range map[string]string{"upstream-timeout": "10m0s", "max-concurrent": "64", "allowed-hosts": "[]", "token-env": ""} {
		if f := cmd.Flags().Lookup(name); f == nil || f.DefValue != want || f.Usage == "" {
			t.Errorf("--%s: %+v, want default %q", name, f, want)
		}
	}

	t.Setenv("GUARD_TEST_TOKEN", "0123456789abcdef0123")
	t.Setenv("GUARD_SHORT_TOKEN", "short")
	for _, tc := range []struct {
		opts GuardOptions
		want string
	}{
		{GuardOptions{Policy: "compact", TokenEnv: "GUARD_UNSET_TOKEN"}, "$GUARD_UNSET_TOKEN is empty or unset"},
		{GuardOptions{Policy: "compact", TokenEnv: "GUARD_SHORT_TOKEN"}, "at least 16"},
		{GuardOptions{Policy: "compact", UpstreamTimeout: -time.Second}, "--upstream-timeout"},
		{GuardOptions{Policy: "compact", MaxConcurrent: -1}, "--max-concurrent"},
	} {
		tc.opts.Listen = "127.0.0.1:0"
		err := runGuard(t.Context(), &globals{store: "memory:"}, &tc.opts, IO{Err: io.Discard}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "0123456789abcdef0123") {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}

	emu := httptest.NewServer(llmemu.NewOllama(llmemu.OllamaOptions{}))
	defer emu.Close()
	base, stop := startGuard(t, GuardOptions{Ollama: emu.URL, Policy: "compact", TokenEnv: "GUARD_TEST_TOKEN", AllowedHosts: []string{"guard.example"},
		UpstreamTimeout: time.Minute, MaxConcurrent: 8, Grace: 5 * time.Second})
	defer stop()
	do := func(path, host, token string) int {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, host, token string
		want              int
	}{
		{"/ctxkit/evicted/evicted_00", "", "", http.StatusUnauthorized},
		{"/ctxkit/evicted/evicted_00", "", "0123456789abcdef0123", http.StatusNotFound},
		{"/ctxkit/health", "guard.example", "", http.StatusOK},
		{"/ctxkit/health", "other.example", "", http.StatusForbidden},
	} {
		if got := do(tc.path, tc.host, tc.token); got != tc.want {
			t.Errorf("GET %s (Host %q, token %v): %d, want %d", tc.path, tc.host, tc.token != "", got, tc.want)
		}
	}
}
