package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/guard"
	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/home"
	"github.com/ctxkit/ctxkit/internal/httpserver"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/tokenizer"
)

// DefaultOllamaUpstream is where Ollama is expected when the guard takes
// its port and no backend flag is given.
const DefaultOllamaUpstream = "http://127.0.0.1:11435"

// GuardOptions are the inputs of `ctxkit guard`.
type GuardOptions struct {
	Listen                              string
	Ollama, LlamaCpp, OpenAI, Anthropic string
	Policy                              string
	KeepRecent                          int
	Window, Reserve, Margin             int
	Grace                               time.Duration
	// Insecure allows a Listen address other machines can reach.
	Insecure bool
	// Config is a TOML file of flag values (see applyConfigFile).
	Config string
	// Routes send models to backends (model → ollama, llamacpp, openai
	// or anthropic) before discovery; ModelWindows give named models
	// their window.
	Routes       map[string]string
	ModelWindows map[string]int
	// NoThink turns thinking off with each backend's own switch.
	NoThink bool
	// Recall adds the context_recall tool and answers its calls.
	Recall bool
	// Summarize puts a digest of each new evicted span in its notice,
	// written by SummarizerModel ("": the request's model) at
	// SummarizerURL ("": the backend serving that model).
	Summarize                      bool
	SummarizerModel, SummarizerURL string
	SummarizeTimeout               time.Duration
	// Tokenizer is a Hugging Face tokenizer.json whose exact counts
	// replace the estimate ("" keeps the estimate).
	Tokenizer string
	// Arbitrate and the fields below run the GPU arbiter (Ollama and
	// llama.cpp take turns); RuntimeState "" is guard-runtime.json under
	// the ctxkit home.
	Arbitrate                 bool
	LlamaCppCmd, RuntimeState string
	MinHold, QueueTimeout     time.Duration
	LlamaCppStartTimeout      time.Duration
	QueueLimit                int
	// UpstreamTimeout bounds the wait for an upstream's response headers
	// (0: none); MaxConcurrent caps the requests in flight (0: none).
	UpstreamTimeout time.Duration
	MaxConcurrent   int
	// AllowedHosts are Host names served on a loopback --listen address
	// besides this machine's (behind a reverse proxy).
	AllowedHosts []string
	// TokenEnv names the environment variable holding the token that
	// GET /ctxkit/evicted/ID and POST /ctxkit/runtime need.
	TokenEnv string
	// Limits are the server's (zero: the defaults; tests shorten them).
	Limits httpserver.Limits
}

// minGuardToken is the shortest token --token-env takes: the guard does
// not slow down guessers, so the token must not be guessable.
const minGuardToken = 16

func newGuardCmd(g *globals, streams IO) *cobra.Command {
	opts := &GuardOptions{}
	cmd := &cobra.Command{
		Use:   "guard",
		Short: "Proxy in front of Ollama, llama.cpp, OpenAI and Anthropic servers that fits prompts into the window honestly",
		Long: "Run an HTTP proxy that takes Ollama's port (clients change nothing) and fits every chat into the window the backend " +
			"has loaded: old tool output and turns are evicted (tool calls with their results), a notice says what went and " +
			"where it is kept (GET /ctxkit/evicted/ID), and the response carries a ctxkit report and X-Ctxkit-* headers. " +
			"With no backend flag, Ollama is expected at " + DefaultOllamaUpstream + ". " +
			"Policies: compact (default), strict (413 instead of truncation), observe (pass through, report, detect silent " +
			"truncation), off. --recall lets the model read back what was removed, --summarize puts a digest in the notice, " +
			"--tokenizer counts exactly, --arbitrate lets Ollama and llama.cpp share one GPU; GET /metrics for Prometheus, " +
			"GET /ctxkit/health for the state (503 when no backend answers). On a loopback --listen address only requests whose Host names this " +
			"machine are served, as Ollama serves them (--allowed-hosts for a reverse proxy). The guard does not authenticate what it proxies: " +
			"a --listen address other machines can reach needs --insecure, and there GET /ctxkit/evicted/ID needs the token of --token-env.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Config != "" {
				if err := applyConfigFile(cmd.Flags(), opts.Config); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runGuard(ctx, g, opts, streams, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:11434", "address to listen on")
	f.BoolVar(&opts.Insecure, "insecure", false, "allow a --listen address other machines can reach: the guard does not authenticate what it proxies, so they use your backends (reading what was evicted needs --token-env)")
	f.StringVar(&opts.Ollama, "ollama", "", "Ollama's URL (default "+DefaultOllamaUpstream+" when no backend is given)")
	f.StringVar(&opts.LlamaCpp, "llamacpp", "", "llama.cpp server's URL")
	f.StringVar(&opts.OpenAI, "openai", "", "OpenAI-compatible server's URL")
	f.StringVar(&opts.Anthropic, "anthropic", "", "Anthropic API's URL")
	f.StringVar(&opts.Policy, "policy", "compact", "compact, strict, observe or off")
	f.IntVar(&opts.KeepRecent, "keep-recent", 4, "trailing messages never deleted")
	f.IntVar(&opts.Window, "window", guard.DefaultWindow, "window when the backend does not say (OpenAI, Anthropic, Ollama with nothing loaded)")
	f.IntVar(&opts.Reserve, "reserve", guard.DefaultReserve, "output tokens reserved when the request sets none")
	f.IntVar(&opts.Margin, "margin", guard.DefaultMargin, "tokens kept free on top of the reserve")
	f.DurationVar(&opts.Grace, "grace", 10*time.Second, "how long requests in flight may take to finish at shutdown")
	f.StringVar(&opts.Config, "config", "", "TOML file of flag values (keep-recent = 4, no-think = true, [route], [model-window]); flags on the command line win")
	f.StringToStringVar(&opts.Routes, "route", nil, "MODEL=BACKEND: send a model to ollama, llamacpp, openai or anthropic without asking the backends (repeatable)")
	f.StringToIntVar(&opts.ModelWindows, "model-window", nil, "MODEL=TOKENS: the window of a model whose backend does not say (repeatable)")
	f.BoolVar(&opts.NoThink, "no-think", false, "turn the models' thinking off with each backend's own switch (think, reasoning_effort, chat_template_kwargs)")
	f.BoolVar(&opts.Recall, "recall", false, "add a context_recall tool to chat requests that carry tools and answer its calls in the guard, so the model can read back what compaction removed")
	f.BoolVar(&opts.Summarize, "summarize", false, "put a digest of each evicted span in its notice (map-reduce over the whole span, cached in the store; on failure the plain notice)")
	f.StringVar(&opts.SummarizerModel, "summarizer-model", "", "with --summarize: the model that writes digests, e.g. gemma3:1b (default: the request's own model, already installed and loaded)")
	f.StringVar(&opts.SummarizerURL, "summarizer-url", "", "with --summarize: the summarizer's server, an Ollama URL or an OpenAI-compatible one ending in /v1 (default: the backend serving the summarizer model)")
	f.DurationVar(&opts.SummarizeTimeout, "summarize-timeout", guard.DefaultSummarizeTimeout, "with --summarize: how long the digests of one request may take before the plain notice is used")
	f.StringVar(&opts.Tokenizer, "tokenizer", "", "Hugging Face tokenizer.json of the model: count tokens exactly instead of estimating (calibration can still raise the count)")
	f.BoolVar(&opts.Arbitrate, "arbitrate", false, "one GPU, two runtimes: before a request for Ollama or llama.cpp, make the other release the GPU (needs --ollama and --llamacpp)")
	f.StringVar(&opts.LlamaCppCmd, "llamacpp-cmd", "", "with --arbitrate: command (sh -c) that starts llama-server at --llamacpp; the guard stops it to free the GPU and starts it again when needed (not needed in router mode)")
	f.DurationVar(&opts.MinHold, "min-hold", guard.DefaultMinHold, "with --arbitrate: how long a runtime keeps the GPU after a switch (0: no hold)")
	f.DurationVar(&opts.QueueTimeout, "queue-timeout", guard.DefaultQueueTimeout, "with --arbitrate: how long a request waits for the GPU before a 503 with Retry-After")
	f.IntVar(&opts.QueueLimit, "queue-limit", guard.DefaultQueueLimit, "with --arbitrate: how many requests may wait for the GPU")
	f.DurationVar(&opts.LlamaCppStartTimeout, "llamacpp-start-timeout", guard.DefaultStartTimeout, "with --arbitrate: how long a started llama-server (or a router-mode load) may take to answer /health")
	f.StringVar(&opts.RuntimeState, "runtime-state", "", "with --arbitrate: file keeping the runtime pin (default guard-runtime.json in the ctxkit home)")
	f.DurationVar(&opts.UpstreamTimeout, "upstream-timeout", guard.DefaultUpstreamTimeout, "how long an upstream may take to send its response headers (model load, prompt evaluation, and for an answer that is not streamed the whole generation) before the client gets 504; 0: no bound")
	f.IntVar(&opts.MaxConcurrent, "max-concurrent", guard.DefaultMaxConcurrent, "requests in flight at most; one more gets 503 with Retry-After (/ctxkit/* and /metrics not counted); 0: no cap")
	f.StringSliceVar(&opts.AllowedHosts, "allowed-hosts", nil, "Host names served on a loopback --listen address besides this machine's, for a reverse proxy in front: NAME, .DOMAIN for its subdomains, or * for any (comma-separated or repeated)")
	f.StringVar(&opts.TokenEnv, "token-env", "", "environment variable holding a token (at least 16 characters) that GET /ctxkit/evicted/ID and POST /ctxkit/runtime then need as Authorization: Bearer; without it they are served on a loopback address only")
	return cmd
}

// runGuard serves the guard until ctx ends; ready, if set, gets the
// address listened on.
func runGuard(ctx context.Context, g *globals, opts *GuardOptions, streams IO, ready func(addr string)) error {
	if err := httpserver.CheckAddr(opts.Listen, opts.Insecure); err != nil {
		return fmt.Errorf("--listen %w and the guard does not authenticate what it proxies: give --insecure to listen there anyway", err)
	}
	token, err := guardToken(opts.TokenEnv)
	if err != nil {
		return err
	}
	policy, err := guard.ParsePolicy(opts.Policy)
	if err != nil {
		return err
	}
	if opts.UpstreamTimeout < 0 {
		return errors.New("--upstream-timeout must be 0 (no bound) or more")
	}
	if opts.MaxConcurrent < 0 {
		return errors.New("--max-concurrent must be 0 (no cap) or more")
	}
	if opts.KeepRecent < 0 {
		return errors.New("--keep-recent must be 0 or more")
	}
	ollama := opts.Ollama
	if ollama == "" && opts.LlamaCpp == "" && opts.OpenAI == "" && opts.Anthropic == "" {
		ollama = DefaultOllamaUpstream
	}
	var counter compact.Counter // nil: the guard's estimate
	if opts.Tokenizer != "" {
		tok, err := tokenizer.Load(opts.Tokenizer)
		if err != nil {
			return fmt.Errorf("--tokenizer: %w", err)
		}
		counter = tok
	}
	logger := slog.New(slog.NewTextHandler(streams.Err, nil))
	b, err := g.openBackend(ctx, true)
	if err != nil {
		return err
	}
	defer b.Close()
	keep := opts.KeepRecent
	if keep == 0 {
		keep = -1 // compact: negative means none
	}
	arb := guard.ArbiterOptions{LlamaCppCmd: opts.LlamaCppCmd, MinHold: opts.MinHold, QueueLimit: opts.QueueLimit, QueueTimeout: opts.QueueTimeout, StateFile: opts.RuntimeState, StartTimeout: opts.LlamaCppStartTimeout}
	if arb.MinHold <= 0 {
		arb.MinHold = -1 // guard: negative means none
	}
	if opts.Arbitrate && arb.StateFile == "" {
		dir, err := home.Dir()
		if err != nil {
			return fmt.Errorf("--runtime-state: %w", err)
		}
		arb.StateFile = filepath.Join(dir, "guard-runtime.json")
	}
	upstreamTimeout, maxConcurrent := opts.UpstreamTimeout, opts.MaxConcurrent
	if upstreamTimeout == 0 {
		upstreamTimeout = -1 // guard: negative means none
	}
	if maxConcurrent == 0 {
		maxConcurrent = -1
	}
	if token == "" && !httpserver.Loopback(opts.Listen) {
		logger.Warn("GET /ctxkit/evicted and POST /ctxkit/runtime are refused to other machines: no --token-env", "listen", opts.Listen)
	}
	h, err := guard.New(guard.Options{
		ListenAddr: opts.Listen, AllowedHosts: opts.AllowedHosts, Token: token,
		UpstreamTimeout: upstreamTimeout, MaxConcurrent: maxConcurrent,
		Arbitrate: opts.Arbitrate, Arbiter: arb,
		Ollama: ollama, LlamaCpp: opts.LlamaCpp, OpenAI: opts.OpenAI, Anthropic: opts.Anthropic,
		Policy: policy, KeepRecent: keep, Recall: opts.Recall, Engine: offload.New(b.Workspaces(), offload.WithLogger(logger)), KV: b.KV(), Logger: logger,
		DefaultWindow: opts.Window, Reserve: opts.Reserve, Margin: opts.Margin, Counter: counter,
		Windows: opts.ModelWindows, Routes: opts.Routes, NoThink: opts.NoThink,
		Summarize: opts.Summarize, SummarizerModel: opts.SummarizerModel, SummarizerURL: opts.SummarizerURL, SummarizeTimeout: opts.SummarizeTimeout,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := h.Close(); err != nil {
			logger.Warn("stop llama.cpp", "err", err)
		}
	}()
	srv, err := httpserver.Listen(httpserver.Options{Addr: opts.Listen, Handler: h, Logger: logger, Grace: opts.Grace, Limits: opts.Limits})
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Err, "ctxkit guard: %s (policy %s)\n", srv.URL(), policy)
	if ready != nil {
		ready(srv.Addr().String())
	}
	return srv.Run(ctx)
}

// guardToken reads the token of --token-env NAME ("" without the flag).
func guardToken(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	tok := strings.TrimSpace(os.Getenv(name))
	if tok == "" {
		return "", fmt.Errorf("--token-env %s: $%s is empty or unset", name, name)
	}
	if len(tok) < minGuardToken {
		return "", fmt.Errorf("--token-env %s: the token has %d characters, want at least %d (e.g. openssl rand -hex 32)", name, len(tok), minGuardToken)
	}
	return tok, nil
}
